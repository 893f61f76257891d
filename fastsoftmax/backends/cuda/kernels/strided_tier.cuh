// Tier "strided": softmax over axis 1 of (outer, n, inner) with inner > 1, i.e. over a dim that
// is not the innermost in memory. Each element (o, k, c) lies at o * s0 + k * s1 + c * s2, where
// the step s2 is 1 but for inputs that skip elements along inner (x[..., ::2]); outputs have
// s2 == 1. A pack of P > 1 elements is one access where s2 is 1; kernels instanced STEPPED take
// inputs of s2 == 2 (every input), reading the two packs of the 2P-element span and keeping every
// other element (the bytes between are in the same sectors: a kernel cannot read less); kernels of
// P == 1 take any step.
//
// A block is a tile of W * P neighbouring columns along `inner` (contiguous) by S slices along n:
// thread (tx, ty) owns the P columns tx * P .. tx * P + P - 1 of the tile, moved as one packed
// (up to 16-byte) access per row, and rows k = ty, ty + S, ... of its range of n. A warp thus
// reads whole 128-byte lines of W * P columns from 32 / W rows at once. Each thread folds its
// rows into one (max, sum) pair per column, kUnroll rows per step (all loaded before any is used,
// and one rescale per step), and the S pairs of a column merge by a tree in shared memory.
//
// How n is covered depends on the host's `splits`:
//   * splits == 1, stage kWhole: one block reduces its columns over all of n, then writes them,
//     re-reading the input (from L2 while the tiles in flight fit there).
//   * splits > 1, when there are too few tiles to fill the GPU (a long reduced axis, few columns):
//     n is cut into `splits` chunks of `chunk` rows, one block per (tile, chunk), in two kernels.
//     Stage kPartials writes each block's per-column (max, sum) pairs -- sum(dy * y) or sum(dy)
//     for backward -- to a float32 workspace; stage kFinish merges a column's pairs over all
//     chunks and writes its own chunk. kFinish runs its blocks in reverse order, so the chunks
//     kPartials read last, still in L2, are the first ones re-read.
//   * many splits: every kFinish block merging all `splits` pairs of its columns reads the
//     workspace splits times over (H100, bf16 (1048576, 128) over dim 0: 1056 splits, a gigabyte
//     of pairs). A kernel of its own between the two, strided_merge, merges them once into each
//     tile's first slot, and kFinish (with kMerged) reads that one, every thread for itself, with
//     no merge over the block's slices. Slots are read in 16- or 8-byte loads (read_slot): a float
//     at a time, the merge of bf16 (1048576, 128) kept L1 80% busy and took 20 us, 6% of the call.
//
// Dense problems (kFlat, with kFinish | kMerged): where every tensor is one contiguous run of whole
// packs (outer indices one after another; the forward: one outer index), the finish need not walk
// tiles: its blocks sweep the tensor's packs as an elementwise kernel does -- one consecutive run of
// memory a block, from the end backwards, where kPartials' interleaved sweep ended (in L2) -- and,
// where there is one outer index and a block's threads x P elements are a multiple of inner (which the
// forward needs), every thread keeps to the same P columns throughout, their merged results in
// registers (else each pack's are read from the workspace). The launch passes kFinish's arguments but
// for `chunk`, which carries the number of outer indices.
//
// Rows of a chunk (kInterleaved): with contiguous chunks, the blocks resident at once stream from
// as many places spread over the whole tensor. Interleaved, a block's rows are groups of kUnroll x
// S rows, group g going to chunk g % splits, so the resident blocks' groups at each step lie
// together and sweep the tensor as one window, the way an elementwise kernel's blocks do; kFinish
// sweeps it backwards, starting where kPartials ended (in L2).
//
// Columns past `inner` in the last tile hold -inf (empty pairs) and are never written.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

constexpr int kStridedMaxThreads = 256;
constexpr int kWhole = 0;
constexpr int kPartials = 1;
constexpr int kFinish = 2;
// the kernels' `mode`: the stage in its low bits, the block order (see strided_tile), and whether
// strided_merge ran before kFinish
constexpr int kStageMask = 3;
constexpr int kChunkMajor = 4;
constexpr int kMerged = 8;
constexpr int kInterleaved = 16;
constexpr int kFlat = 32;
// kPartials with twice the rows in flight where its walk reads one tensor (the forward's x, the
// log-softmax backward's dy): kDeepUnroll rows a step, as many loads as the softmax backward's y and
// dy over kUnroll rows
constexpr int kDeepPartials = 64;
constexpr int kDeepUnroll = 2 * kUnroll;
// 16-bit forwards only: the float32 forward kernel with the deep walk compiled in took 80 registers
// against 62 (NVRTC 13.5, sm_90), a CTA an SM fewer whichever walk runs
template <typename T>
constexpr bool kDeepForward = sizeof(T) == 2;
// packs a thread has in flight in the flat sweep, per tensor
constexpr int kFlatUnroll = 4;

// V consecutive floats of the workspace, in 16- or 8-byte loads where V allows: a thread's values
// of one slot start on such a boundary (slot offsets are multiples of the tile's width, thread
// offsets of P).
template <int V>
__device__ __forceinline__ void read_slot(const float* src, float* out) {
    if constexpr (V % 4 == 0) {
#pragma unroll
        for (int j = 0; j < V / 4; ++j) {
            const float4 q = reinterpret_cast<const float4*>(src)[j];
            out[4 * j] = q.x;
            out[4 * j + 1] = q.y;
            out[4 * j + 2] = q.z;
            out[4 * j + 3] = q.w;
        }
    } else if constexpr (V % 2 == 0) {
#pragma unroll
        for (int j = 0; j < V / 2; ++j) {
            const float2 q = reinterpret_cast<const float2*>(src)[j];
            out[2 * j] = q.x;
            out[2 * j + 1] = q.y;
        }
    } else {
#pragma unroll
        for (int i = 0; i < V; ++i) out[i] = src[i];
    }
}

// Slots s = threadIdx.y, + S, .. < splits of V floats each (slot s at first + s * stride):
// use(values) for each. The unmerged kFinish reads up to 16 slots a thread from L2 (more go to
// strided_merge); one at a time, each waited for its load: slots of whole 16-byte loads are read
// two or four (at most 32 floats) before any is used.
template <int V, typename F>
__device__ __forceinline__ void read_slots(const float* first, i64 stride, i64 splits, F use) {
    constexpr int U = V >= 16 ? 2 : (V >= 4 ? 4 : 1);
    const i64 slices = blockDim.y;
    i64 s = threadIdx.y;
    for (; s + (U - 1) * slices < splits; s += U * slices) {
        float values[U][V];
#pragma unroll
        for (int u = 0; u < U; ++u) read_slot<V>(first + (s + u * slices) * stride, values[u]);
#pragma unroll
        for (int u = 0; u < U; ++u) use(values[u]);
    }
    for (; s < splits; s += slices) {
        float values[V];
        read_slot<V>(first + s * stride, values);
        use(values);
    }
}

struct StridedTile {
    i64 o;       // outer index
    i64 column;  // first column of this thread's pack
    int valid;   // columns of the pack inside `inner` (0 .. P)
    i64 k_begin, k_end;
    i64 split;   // chunk index
    i64 tile;    // tile index
    i64 slot;    // (tile, chunk) as tile * splits + chunk: where its partial results go
};

// The block's tile and chunk of n. Tile-major order (block = tile * splits + chunk) runs a tile's
// chunks together; chunk-major (block = chunk * tiles + tile, `chunk_major`) runs every tile of a
// range of rows together, so the blocks resident at once read whole rows rather than one tile's
// columns of many rows.
template <int P>
__device__ __forceinline__ StridedTile strided_tile(i64 n, i64 inner, i64 chunk, i64 splits, bool reverse,
                                                    bool chunk_major) {
    const i64 block = reverse ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    i64 tile, split;
    if (chunk_major) {
        const i64 tiles = gridDim.x / splits;
        split = block / tiles;
        tile = block - split * tiles;
    } else {
        tile = block / splits;
        split = block - tile * splits;
    }
    const i64 tile_width = (i64)blockDim.x * P;
    const i64 tiles_per_outer = (inner + tile_width - 1) / tile_width;
    StridedTile t;
    t.o = tile / tiles_per_outer;
    t.column = (tile - t.o * tiles_per_outer) * tile_width + (i64)threadIdx.x * P;
    const i64 left = inner - t.column;
    t.valid = left <= 0 ? 0 : (left >= P ? P : (int)left);
    t.k_begin = split * chunk;
    t.k_end = min(n, t.k_begin + chunk);
    t.split = split;
    t.tile = tile;
    t.slot = tile * splits + split;
    return t;
}

// Where this thread's P columns of workspace slot `slot` (a (tile, chunk) pair, tile * splits +
// chunk) begin, in floats: a slot holds V floats for each of the tile's blockDim.x * P columns (a
// (max, sum) pair forward, one sum backward).
template <int P, int V>
__device__ __forceinline__ i64 slot_offset(i64 slot) {
    return V * (slot * blockDim.x * P + (i64)threadIdx.x * P);
}

// The block's tile and chunk.
template <int P>
__device__ __forceinline__ StridedTile stage_tile(int mode, i64 n, i64 inner, i64 chunk, i64 splits) {
    const int stage = mode & kStageMask;
    return strided_tile<P>(n, inner, chunk, splits, stage == kFinish, mode & kChunkMajor);
}

// The rows of the block's chunk, in steps of U x S rows: full(k) for a whole step (rows k, k + S,
// .. k + (U - 1) S of this thread), one(k) for each row of a partial one. Contiguous chunks walk
// [k_begin, k_end); interleaved ones (kInterleaved) the groups split, split + splits, .. of n (groups
// of U x S rows), backwards for kFinish. The stages need not share U: every row is counted once in
// kPartials whatever its groups, and kFinish writes every row of its own.
template <int U = kUnroll, typename Full, typename One>
__device__ __forceinline__ void walk_rows(const StridedTile& t, i64 n, i64 splits, int mode, Full full, One one) {
    const i64 slices = blockDim.y;
    if (!(mode & kInterleaved)) {
        i64 k = t.k_begin + threadIdx.y;
        for (; k + (U - 1) * slices < t.k_end; k += U * slices) full(k);
        for (; k < t.k_end; k += slices) one(k);
        return;
    }
    const i64 group = U * slices;
    const i64 groups = (n + group - 1) / group;
    const i64 mine = t.split < groups ? (groups - 1 - t.split) / splits + 1 : 0;
    const bool backwards = (mode & kStageMask) == kFinish;
    for (i64 i = 0; i < mine; ++i) {
        const i64 base = (t.split + (backwards ? mine - 1 - i : i) * splits) * group;
        if (base + group <= n) {
            full(base + threadIdx.y);
        } else {
            for (i64 k = base + threadIdx.y; k < n; k += slices) one(k);
        }
    }
}

// P columns of one row as a raw pack: one packed access when all are inside `inner` (the two of
// the span for STEPPED); past it `pad`, -inf (forward) or 0 (backward), in the pack's own type
// (both exact in every type). (A pack of one element is a single one whatever the step: the
// column's offset holds it.) The unrolled loops hold their kUnroll rows this way until each value
// is used: 16-bit packs take half the registers of their float32 values, and registers bound how
// many blocks share an SM.
template <typename T, int P, bool STEPPED>
__device__ __forceinline__ Pack<T, P> load_raw_columns(const T* src, int valid, float pad) {
    constexpr int kStep = STEPPED ? 2 : 1;
    if (valid == P) return read_columns_pack<T, P, kStep>(src);
    Pack<T, P> pack;
#pragma unroll
    for (int i = 0; i < P; ++i) pack.elems()[i] = i < valid ? src[i * kStep] : from_float<T>(pad);
    return pack;
}

// Rows k, k + S, .. k + (U - 1) S of this thread's columns, as raw packs (`pad` past inner).
template <typename T, int P, bool STEPPED, int U>
__device__ __forceinline__ void load_rows(Pack<T, P> (&raw)[U], const T* col, i64 stride, i64 k, int valid,
                                          float pad) {
    const i64 slices = blockDim.y;
#pragma unroll
    for (int u = 0; u < U; ++u)
        raw[u] = load_raw_columns<T, P, STEPPED>(col + (k + u * slices) * stride, valid, pad);
}

// One input's columns for this thread: where its pack of row 0 lies and the stride between rows.
template <typename T>
struct Columns {
    const T* first;
    i64 stride;
};

// The backward's rows of y and dy over walk_rows, kUnroll of each loaded before any is used:
// f(y pack, dy pack, k) for each row k.
template <typename T, int P, bool STEPPED, typename F>
__device__ __forceinline__ void walk_pairs(const StridedTile& t, i64 n, i64 splits, int mode, Columns<T> y,
                                           Columns<T> dy, F f) {
    const i64 slices = blockDim.y;
    walk_rows(
        t, n, splits, mode,
        [&](i64 k) {
            Pack<T, P> y_raw[kUnroll], dy_raw[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                const i64 row = k + u * slices;
                y_raw[u] = load_raw_columns<T, P, STEPPED>(y.first + row * y.stride, t.valid, 0.0f);
                dy_raw[u] = load_raw_columns<T, P, STEPPED>(dy.first + row * dy.stride, t.valid, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) f(y_raw[u], dy_raw[u], k + u * slices);
        },
        [&](i64 k) {
            f(load_raw_columns<T, P, STEPPED>(y.first + k * y.stride, t.valid, 0.0f),
              load_raw_columns<T, P, STEPPED>(dy.first + k * dy.stride, t.valid, 0.0f), k);
        });
}

template <typename T, int P>
__device__ __forceinline__ void store_columns(T* dst, int valid, const float* in) {
    if (valid == P) {
        store_pack_global<T, P>(dst, in);
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i)
            if (i < valid) dst[i] = from_float<T>(in[i]);
    }
}

struct MergeMaxSum {
    __device__ __forceinline__ MaxSum operator()(MaxSum a, MaxSum b) const { return merge(a, b); }
};
struct AddFloat {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// Merges the S slices' values of each column; afterwards slot [0][c] holds column c's result.
template <int P, typename V, typename Merge>
__device__ __forceinline__ void merge_slices(V* shared, const V* mine, Merge merge_fn) {
    const int row_width = blockDim.x * P;
    V* slot = shared + threadIdx.y * row_width + threadIdx.x * P;
#pragma unroll
    for (int i = 0; i < P; ++i) slot[i] = mine[i];
    __syncthreads();
    for (int half = blockDim.y / 2; half > 0; half /= 2) {
        if (threadIdx.y < half) {
#pragma unroll
            for (int i = 0; i < P; ++i) slot[i] = merge_fn(slot[i], slot[i + half * row_width]);
        }
        __syncthreads();
    }
}

// ---- kFlat: the merged finish as one elementwise sweep ----------------------------------------
// Calls f(first element, raw pack) over this block's packs of [0, total / P): block b takes the runs
// of kFlatUnroll x threads packs counted from the end b, b + gridDim.x, ..; within a run, thread t
// the packs t, t + threads, .. (every pack of the run loaded before any is used). `load(element)`
// reads one pack. The host launches one run a block: a persistent grid of the resident blocks
// finished 4-5% slower (H200, results 2026-11-29_h200_s37/flat_ab.txt: bf16 (65536, 2048) over dim 0
// backward 190 -> 182 us, float32 (1048576, 128) 384 -> 362, forward 274 -> 257; sweeping from the
// start rather than the end measured level to 2 us slower).
template <int P, typename Raw, typename Load, typename F>
__device__ __forceinline__ void sweep_back(i64 total, Load load, F f) {
    const i64 threads = (i64)blockDim.x * blockDim.y;
    const i64 tid = (i64)threadIdx.y * blockDim.x + threadIdx.x;
    const i64 run = threads * kFlatUnroll;
    for (i64 end = total / P - blockIdx.x * run; end > 0; end -= (i64)gridDim.x * run) {
        Raw raw[kFlatUnroll];
#pragma unroll
        for (int u = 0; u < kFlatUnroll; ++u) {
            const i64 pack = end - (u + 1) * threads + tid;
            if (pack >= 0) raw[u] = load(pack * P);
        }
#pragma unroll
        for (int u = 0; u < kFlatUnroll; ++u) {
            const i64 pack = end - (u + 1) * threads + tid;
            if (pack >= 0) f(pack * P, raw[u]);
        }
    }
}

// Where the merged results of column `column` and the next P - 1 lie in the workspace: its tile's
// first slot (strided_merge's output), whose tiles are blockDim.x * P columns wide as in every other stage
// (columns below 2^31: the host's condition).
template <int P>
__device__ __forceinline__ i64 merged_slot(i64 column, i64 splits) {
    const unsigned tile_width = blockDim.x * P;
    const unsigned tile = (unsigned)column / tile_width;
    return (i64)tile * splits * tile_width + (column - (i64)tile * tile_width);
}

// The flat sweep's columns: where threads x P is a multiple of inner and there is one outer index
// (FIXED), every element a thread meets lies in the P columns of its first, whose merged results it
// reads once and holds; otherwise each pack's column is worked out (in 32 bits where every element
// index fits) and its results read from the workspace, which L1 and L2 hold. Kernels of 16-byte packs
// (OUTER) sweep several outer indices as well, where every element index fits 32 bits (the host's
// conditions): column c of outer index o lies in tile o * tiles_per_outer + c / tile_width, which
// merged_slot finds as column o * padded + c. Compiled into the kernels of narrower packs, the outer
// index's division took them from 48 registers to 64 (NVRTC 13.5, sm_90): a block an SM fewer.
template <int P, bool FIXED, bool OUTER>
struct FlatColumns {
    i64 outer, block, inner, splits, own, padded;
    bool narrow;

    __device__ __forceinline__ FlatColumns(i64 outer_, i64 n, i64 inner_, i64 splits_)
        : outer(outer_), block(n * inner_), inner(inner_), splits(splits_) {
        narrow = outer * block <= 0xffffffffLL;
        const i64 tile_width = (i64)blockDim.x * P;
        padded = (inner + tile_width - 1) / tile_width * tile_width;
        own = merged_slot<P>((((i64)threadIdx.y * blockDim.x + threadIdx.x) * P) % inner, splits);
    }
    // the workspace slot of element e's pack
    __device__ __forceinline__ i64 slot(i64 e) const {
        if constexpr (FIXED) return own;
        if (!narrow) return merged_slot<P>(e % inner, splits);  // one outer index
        const unsigned u = (unsigned)e;
        if constexpr (OUTER) {
            if (outer > 1) {
                const unsigned o = u / (unsigned)block;
                return merged_slot<P>((i64)o * padded + (u - o * (unsigned)block) % (unsigned)inner, splits);
            }
        }
        return merged_slot<P>(u % (unsigned)inner, splits);
    }
};

// The forward's flat finish holds its columns' scales (the host's condition: threads x P a multiple
// of inner). Reading each pack's pair and working out its scales lost to the tiles' finish (H200,
// results 2026-11-29_h200_s37/flat_general.txt: bf16 (65536, 1000) over dim 0 88 -> 111 us).
template <typename T, int P, bool LOG>
__device__ __forceinline__ void strided_forward_flat(const T* x, T* y, const float* partials, i64 n, i64 inner,
                                                     i64 splits) {
    const FlatColumns<P, true, false> columns(1, n, inner, splits);
    float pair[2 * P];
    read_slot<2 * P>(partials + 2 * columns.own, pair);
    RowScale scale[P];
#pragma unroll
    for (int i = 0; i < P; ++i) scale[i] = row_scale(MaxSum{pair[2 * i], pair[2 * i + 1]});
    sweep_back<P, Pack<T, P>>(
        n * inner, [&](i64 e) { return read_pack<T, P>(x + e); },
        [&](i64 e, const Pack<T, P>& raw) {
            float v[P];
            unpack<T, P>(raw, v);
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale[i]);
            store_pack_global<T, P>(y + e, v);
        });
}

template <typename T, int P, bool LOG, bool FIXED>
__device__ __forceinline__ void strided_backward_flat(const T* y, const T* dy, T* dx, const float* partials,
                                                      i64 outer, i64 n, i64 inner, i64 splits) {
    const FlatColumns<P, FIXED, P * sizeof(T) == 16> columns(outer, n, inner, splits);
    float held[P];
    if constexpr (FIXED) read_slot<P>(partials + columns.own, held);
    struct Raw {
        Pack<T, P> y, dy;
    };
    sweep_back<P, Raw>(
        outer * n * inner, [&](i64 e) { return Raw{read_pack<T, P>(y + e), read_pack<T, P>(dy + e)}; },
        [&](i64 e, const Raw& raw) {
            float total[P];
            if constexpr (FIXED) {
#pragma unroll
                for (int i = 0; i < P; ++i) total[i] = held[i];
            } else {
                read_slot<P>(partials + columns.slot(e), total);
            }
            float yv[P], dyv[P];
            unpack<T, P>(raw.y, yv);
            unpack<T, P>(raw.dy, dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total[i]);
            store_pack_global<T, P>(dx + e, yv);
        });
}

// Whether every element of the flat sweep a thread meets lies in the same P columns of one outer index.
template <int P>
__device__ __forceinline__ bool flat_columns_fixed(i64 outer, i64 inner) {
    return outer == 1 && (i64)blockDim.x * blockDim.y * P % inner == 0;
}

// Kernels instanced PARTIALS_ONLY run stage kPartials alone (the host launches the two-stage kernel for
// the finish): the stage bits fixed here let the compiler drop every finishing path, so that the
// kernel takes the registers of its walk alone and more blocks share an SM. That is their memory
// parallelism, so they have no deep walk, whose rows in flight would take the registers. Why: the
// two-stage kernel's 80 registers held the bf16 log-softmax backward's partials to three blocks of
// 256 threads an SM at 3.07 TB/s, where Inductor's split reduction of the same sums ran 2048 threads
// an SM at 3.71 (Nsight Compute, H200, results 2026-12-04_h200_s56/c11/). At five blocks the bf16
// pass ran no faster (c12/); in 8-byte packs (P = 4 for 16-bit types: instances of their own, launched
// over twice the threads across a tile and half the slices, so that the tile and its workspace slots
// are the two-stage kernel's) at 32 registers and eight blocks an SM the 16-bit log-softmax
// backward's sums of dy read near a read-only sweep's rate (results 2026-12-04_h200_s57/c5/, c6/).
__device__ __forceinline__ int partials_mode(int mode) { return (mode & ~(kStageMask | kFlat | kMerged)) | kPartials; }

// The forward's (max, sum) pair of each of this thread's P columns over the rows of its chunk, U rows
// a step (all loaded before any is used, one rescale a step).
template <int U, typename T, int P, bool STEPPED>
__device__ __forceinline__ void column_pairs(const StridedTile& t, i64 n, i64 splits, int mode, const T* src,
                                             i64 stride, MaxSum (&state)[P]) {
    walk_rows<U>(
        t, n, splits, mode,
        [&](i64 k) {
            Pack<T, P> raw[U];
            load_rows<T, P, STEPPED>(raw, src, stride, k, t.valid, neg_inf());
#pragma unroll
            for (int i = 0; i < P; ++i) {
                float column[U];
#pragma unroll
                for (int u = 0; u < U; ++u) column[u] = to_float(raw[u].elems()[i]);
                accumulate<U>(state[i], column);
            }
        },
        [&](i64 k) {
            float v[P];
            unpack<T, P>(load_raw_columns<T, P, STEPPED>(src + k * stride, t.valid, neg_inf()), v);
#pragma unroll
            for (int i = 0; i < P; ++i) accumulate<1>(state[i], v + i);
        });
}

// The log-softmax backward's sum of dy in each of this thread's P columns over the rows of its chunk
// (y is not read), U rows a step.
template <int U, typename T, int P, bool STEPPED>
__device__ __forceinline__ void column_sums(const StridedTile& t, i64 n, i64 splits, int mode, Columns<T> dy,
                                            float (&sum)[P]) {
    const auto add = [&](const Pack<T, P>& raw) {
        float v[P];
        unpack<T, P>(raw, v);
#pragma unroll
        for (int i = 0; i < P; ++i) sum[i] += v[i];
    };
    walk_rows<U>(
        t, n, splits, mode,
        [&](i64 k) {
            Pack<T, P> raw[U];
            load_rows<T, P, STEPPED>(raw, dy.first, dy.stride, k, t.valid, 0.0f);
#pragma unroll
            for (int u = 0; u < U; ++u) add(raw[u]);
        },
        [&](i64 k) { add(load_raw_columns<T, P, STEPPED>(dy.first + k * dy.stride, t.valid, 0.0f)); });
}

template <typename T, int P, bool LOG, bool STEPPED, bool PARTIALS_ONLY = false>
__device__ __forceinline__ void strided_forward(const T* x, T* y, float* partials, i64 n, i64 inner, i64 xs0,
                                                i64 xs1, i64 xs2, i64 ys0, i64 ys1, i64 chunk, i64 splits,
                                                int mode) {
    if constexpr (PARTIALS_ONLY) mode = partials_mode(mode);
    if constexpr (!STEPPED) {  // the sweep reads dense tensors
        if (mode & kFlat) {
            strided_forward_flat<T, P, LOG>(x, y, partials, n, inner, splits);
            return;
        }
    }
    __shared__ MaxSum shared[kStridedMaxThreads * P];
    const int stage = mode & kStageMask;
    const StridedTile t = stage_tile<P>(mode, n, inner, chunk, splits);
    const i64 slices = blockDim.y;
    const T* src = x + t.o * xs0 + t.column * xs2;

    MaxSum state[P];
#pragma unroll
    for (int i = 0; i < P; ++i) state[i] = empty_maxsum();
    // a column's pairs over every chunk: chunk s of this tile sits at slot tile * splits + s, and
    // after strided_merge the tile's first slot holds them merged, which every thread then reads
    const float* pairs = partials + slot_offset<P, 2>(t.tile * splits);
    const bool merged = stage == kFinish && (mode & kMerged);
    if (merged) {
        float pair[2 * P];
        read_slot<2 * P>(pairs, pair);
#pragma unroll
        for (int i = 0; i < P; ++i) state[i] = MaxSum{pair[2 * i], pair[2 * i + 1]};
    } else if (stage == kFinish) {
        read_slots<2 * P>(pairs, 2 * blockDim.x * P, splits, [&](const float* pair) {
#pragma unroll
            for (int i = 0; i < P; ++i) state[i] = merge(state[i], MaxSum{pair[2 * i], pair[2 * i + 1]});
        });
    } else if (kDeepForward<T> && !PARTIALS_ONLY && (mode & kDeepPartials)) {
        column_pairs<kDeepUnroll, T, P, STEPPED>(t, n, splits, mode, src, xs1, state);
    } else {
        column_pairs<kUnroll, T, P, STEPPED>(t, n, splits, mode, src, xs1, state);
    }
    if (!merged) merge_slices<P>(shared, state, MergeMaxSum());
    if (stage == kPartials) {
        if (threadIdx.y == 0) {
            float* out = partials + slot_offset<P, 2>(t.slot);
#pragma unroll
            for (int i = 0; i < P; ++i) {
                const MaxSum m = shared[threadIdx.x * P + i];
                out[2 * i] = m.max;
                out[2 * i + 1] = m.sum;
            }
        }
        return;
    }
    RowScale scale[P];
#pragma unroll
    for (int i = 0; i < P; ++i) scale[i] = row_scale(merged ? state[i] : shared[threadIdx.x * P + i]);
    if (t.valid == 0) return;

    T* dst = y + t.o * ys0 + t.column;
    const auto write_row = [&](const Pack<T, P>& raw, i64 k) {
        float v[P];
        unpack<T, P>(raw, v);
#pragma unroll
        for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale[i]);
        store_columns<T, P>(dst + k * ys1, t.valid, v);
    };
    walk_rows(
        t, n, splits, mode,
        [&](i64 k) {
            Pack<T, P> raw[kUnroll];
            load_rows<T, P, STEPPED>(raw, src, xs1, k, t.valid, 0.0f);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) write_row(raw[u], k + u * slices);
        },
        [&](i64 k) { write_row(load_raw_columns<T, P, STEPPED>(src + k * xs1, t.valid, 0.0f), k); });
}

template <typename T, int P, bool LOG, bool STEPPED, bool PARTIALS_ONLY = false>
__device__ __forceinline__ void strided_backward(const T* y, const T* dy, T* dx, float* partials, i64 n, i64 inner,
                                                 i64 ys0, i64 ys1, i64 ys2, i64 dys0, i64 dys1, i64 dys2,
                                                 i64 dxs0, i64 dxs1, i64 chunk, i64 splits, int mode) {
    if constexpr (PARTIALS_ONLY) mode = partials_mode(mode);
    if constexpr (!STEPPED) {
        if (mode & kFlat) {
            // a flat finish walks no chunks: the host passes the outer indices it sweeps in `chunk`
            const i64 outer = chunk;
            if (flat_columns_fixed<P>(outer, inner)) {
                strided_backward_flat<T, P, LOG, true>(y, dy, dx, partials, outer, n, inner, splits);
            } else {
                strided_backward_flat<T, P, LOG, false>(y, dy, dx, partials, outer, n, inner, splits);
            }
            return;
        }
    }
    __shared__ float shared[kStridedMaxThreads * P];
    const int stage = mode & kStageMask;
    const StridedTile t = stage_tile<P>(mode, n, inner, chunk, splits);
    const i64 slices = blockDim.y;
    const Columns<T> y_cols{y + t.o * ys0 + t.column * ys2, ys1};
    const Columns<T> dy_cols{dy + t.o * dys0 + t.column * dys2, dys1};

    float sum[P];
#pragma unroll
    for (int i = 0; i < P; ++i) sum[i] = 0.0f;
    const float* parts = partials + slot_offset<P, 1>(t.tile * splits);
    const bool merged = stage == kFinish && (mode & kMerged);
    if (merged) {
        read_slot<P>(parts, sum);
    } else if (stage == kFinish) {
        read_slots<P>(parts, blockDim.x * P, splits, [&](const float* part) {
#pragma unroll
            for (int i = 0; i < P; ++i) sum[i] += part[i];
        });
    } else if constexpr (LOG && PARTIALS_ONLY) {
        column_sums<kUnroll, T, P, STEPPED>(t, n, splits, mode, dy_cols, sum);
    } else if (LOG && (mode & kDeepPartials)) {
        column_sums<kDeepUnroll, T, P, STEPPED>(t, n, splits, mode, dy_cols, sum);
    } else {
        walk_pairs<T, P, STEPPED>(t, n, splits, mode, y_cols, dy_cols,
                                  [&](const Pack<T, P>& y_raw, const Pack<T, P>& dy_raw, i64) {
                                      float yv[P], dyv[P];
                                      unpack<T, P>(y_raw, yv);
                                      unpack<T, P>(dy_raw, dyv);
#pragma unroll
                                      for (int i = 0; i < P; ++i) sum[i] += backward_term<LOG>(yv[i], dyv[i]);
                                  });
    }
    if (!merged) merge_slices<P>(shared, sum, AddFloat());
    if (stage == kPartials) {
        if (threadIdx.y == 0) {
            float* out = partials + slot_offset<P, 1>(t.slot);
#pragma unroll
            for (int i = 0; i < P; ++i) out[i] = shared[threadIdx.x * P + i];
        }
        return;
    }
    float total[P];
#pragma unroll
    for (int i = 0; i < P; ++i) total[i] = merged ? sum[i] : shared[threadIdx.x * P + i];
    if (t.valid == 0) return;

    T* dx_col = dx + t.o * dxs0 + t.column;
    walk_pairs<T, P, STEPPED>(t, n, splits, mode, y_cols, dy_cols,
                              [&](const Pack<T, P>& y_raw, const Pack<T, P>& dy_raw, i64 k) {
                                  float yv[P], dyv[P];
                                  unpack<T, P>(y_raw, yv);
                                  unpack<T, P>(dy_raw, dyv);
#pragma unroll
                                  for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total[i]);
                                  store_columns<T, P>(dx_col + k * dxs1, t.valid, yv);
                              });
}

// ---- strided_merge: the split pairs merged once, in a kernel of their own ---------------------
// The workspace holds, for each tile, `splits` slots of `width` columns of V floats each (a (max,
// sum) pair forward, a sum backward); each column's values over the slots are merged into the
// tile's first slot. A block is C = blockDim.x neighbouring columns of one tile by R = blockDim.y
// slices: thread (x, y) reads slots y, y + R, .. of its column, kMergeUnroll loads in flight, then
// the R slices merge by merge_slices' tree in shared memory. As a stage of the strided kernel the
// merge ran one block per tile (8 blocks for bf16 (65536, 2048) over dim 0, one for (1048576,
// 128)), each thread through dozens of slots in chains of four; the host now picks R so that a
// thread reads about kMergeUnroll slots, and C (8 to 32) so that the grid has a block for every SM
// where it can.
constexpr int kMergeUnroll = 8;
constexpr int kMergeMaxThreads = 1024;

template <int V>
struct SlotValue;

template <>
struct SlotValue<1> {
    using Type = float;
    using Merge = AddFloat;
    static __device__ __forceinline__ float empty() { return 0.0f; }
    static __device__ __forceinline__ float load(const float* src) {
        float v;
        read_slot<1>(src, &v);
        return v;
    }
    static __device__ __forceinline__ void store(float* dst, float v) { *dst = v; }
};

template <>
struct SlotValue<2> {
    using Type = MaxSum;
    using Merge = MergeMaxSum;
    static __device__ __forceinline__ MaxSum empty() { return empty_maxsum(); }
    static __device__ __forceinline__ MaxSum load(const float* src) {
        float pair[2];
        read_slot<2>(src, pair);
        return MaxSum{pair[0], pair[1]};
    }
    static __device__ __forceinline__ void store(float* dst, MaxSum v) {
        *reinterpret_cast<float2*>(dst) = make_float2(v.max, v.sum);
    }
};

template <int V>
__device__ __forceinline__ void strided_merge(float* partials, i64 splits, i64 width) {
    using S = SlotValue<V>;
    using Value = typename S::Type;
    __shared__ Value shared[kMergeMaxThreads];
    const i64 groups = width / blockDim.x;  // column groups a tile
    const i64 tile = blockIdx.x / groups;
    const i64 column = (blockIdx.x - tile * groups) * blockDim.x + threadIdx.x;
    float* first = partials + V * (tile * splits * width + column);
    const i64 stride = V * width;
    const i64 slices = blockDim.y;

    const typename S::Merge merge_fn;
    Value acc = S::empty();
    i64 s = threadIdx.y;
    for (; s + (kMergeUnroll - 1) * slices < splits; s += kMergeUnroll * slices) {
        Value v[kMergeUnroll];
#pragma unroll
        for (int u = 0; u < kMergeUnroll; ++u) v[u] = S::load(first + (s + u * slices) * stride);
#pragma unroll
        for (int u = 0; u < kMergeUnroll; ++u) acc = merge_fn(acc, v[u]);
    }
    for (; s < splits; s += slices) acc = merge_fn(acc, S::load(first + s * stride));
    merge_slices<1>(shared, &acc, merge_fn);
    // into the first slot, which every thread of the block has read by now (the column is this
    // block's alone)
    if (threadIdx.y == 0) S::store(first, shared[threadIdx.x]);
}

}  // namespace fastsoftmax
