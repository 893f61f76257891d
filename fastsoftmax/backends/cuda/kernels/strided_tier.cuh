// Tier "strided": softmax over axis 1 of (outer, n, inner) with inner > 1, i.e. over a dim that
// is not the innermost in memory. Each element (o, k, c) lies at o * s0 + k * s1 + c.
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
//     of pairs). A stage kMerge between the two, one block per tile, merges them once into the
//     tile's first slot, and kFinish (with kMerged) reads that one.
//
// Columns past `inner` in the last tile hold -inf (empty pairs) and are never written.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

constexpr int kStridedMaxThreads = 256;
constexpr int kWhole = 0;
constexpr int kPartials = 1;
constexpr int kFinish = 2;
constexpr int kMerge = 3;
// the kernels' `mode`: the stage in its low bits, the block order (see strided_tile), and whether
// kMerge ran before kFinish
constexpr int kStageMask = 3;
constexpr int kChunkMajor = 4;
constexpr int kMerged = 8;


// Pairs (or sums) a thread merges before the block's tree: kFinish reads every chunk's, or only
// the tile's first slot once kMerge has merged them there; kMerge reads every chunk's.
__device__ __forceinline__ i64 stage_slots(int mode, i64 splits) {
    return (mode & kStageMask) == kFinish && (mode & kMerged) ? 1 : splits;
}

struct StridedTile {
    i64 o;       // outer index
    i64 column;  // first column of this thread's pack
    int valid;   // columns of the pack inside `inner` (0 .. P)
    i64 k_begin, k_end;
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
    t.tile = tile;
    t.slot = tile * splits + split;
    return t;
}

// The block's tile and chunk; kMerge runs one block per tile.
template <int P>
__device__ __forceinline__ StridedTile stage_tile(int mode, i64 n, i64 inner, i64 chunk, i64 splits) {
    const int stage = mode & kStageMask;
    if (stage == kMerge) return strided_tile<P>(n, inner, n, 1, false, false);
    return strided_tile<P>(n, inner, chunk, splits, stage == kFinish, mode & kChunkMajor);
}

// P columns of one row: one packed access when all are inside `inner`; -inf (forward) or 0
// (backward) for columns past it.
template <typename T, int P>
__device__ __forceinline__ void load_columns(const T* src, int valid, float pad, float* out) {
    if (valid == P) {
        load_pack<T, P>(src, out);
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i) out[i] = i < valid ? to_float(src[i]) : pad;
    }
}

// The same as the raw pack, the padding in its own type (-inf and 0 are exact in every type). The
// unrolled loops hold their kUnroll rows this way until each value is used: 16-bit packs take half
// the registers of their float32 values, and registers bound how many blocks share an SM.
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> load_raw_columns(const T* src, int valid, float pad) {
    if (valid == P) return read_pack<T, P>(src);
    Pack<T, P> pack;
#pragma unroll
    for (int i = 0; i < P; ++i) pack.elems()[i] = i < valid ? src[i] : from_float<T>(pad);
    return pack;
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

template <typename T, int P, bool LOG>
__device__ __forceinline__ void strided_forward(const T* x, T* y, float* partials, i64 n, i64 inner, i64 xs0,
                                                i64 xs1, i64 ys0, i64 ys1, i64 chunk, i64 splits, int mode) {
    __shared__ MaxSum shared[kStridedMaxThreads * P];
    const int stage = mode & kStageMask;
    const StridedTile t = stage_tile<P>(mode, n, inner, chunk, splits);
    const i64 slices = blockDim.y;
    const T* src = x + t.o * xs0 + t.column;
    const int tile_width = blockDim.x * P;

    MaxSum state[P];
#pragma unroll
    for (int i = 0; i < P; ++i) state[i] = empty_maxsum();
    if (stage == kFinish || stage == kMerge) {
        // a column's pairs over every chunk: chunk s of this tile sits at slot tile * splits + s
        for (i64 s = threadIdx.y; s < stage_slots(mode, splits); s += slices) {
            const float* pair = partials + 2 * ((t.tile * splits + s) * tile_width + threadIdx.x * P);
#pragma unroll
            for (int i = 0; i < P; ++i) state[i] = merge(state[i], MaxSum{pair[2 * i], pair[2 * i + 1]});
        }
    } else {
        i64 k = t.k_begin + threadIdx.y;
        for (; k + (kUnroll - 1) * slices < t.k_end; k += kUnroll * slices) {
            Pack<T, P> raw[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u)
                raw[u] = load_raw_columns<T, P>(src + (k + u * slices) * xs1, t.valid, neg_inf());
#pragma unroll
            for (int i = 0; i < P; ++i) {
                float column[kUnroll];
#pragma unroll
                for (int u = 0; u < kUnroll; ++u) column[u] = to_float(raw[u].elems()[i]);
                accumulate<kUnroll>(state[i], column);
            }
        }
        for (; k < t.k_end; k += slices) {
            float v[P];
            load_columns<T, P>(src + k * xs1, t.valid, neg_inf(), v);
#pragma unroll
            for (int i = 0; i < P; ++i) accumulate<1>(state[i], v + i);
        }
    }
    merge_slices<P>(shared, state, MergeMaxSum());
    if (stage == kPartials || stage == kMerge) {
        // kMerge: into the tile's first slot, which every thread of the block has read by now
        if (threadIdx.y == 0) {
            const i64 slot = stage == kMerge ? t.tile * splits : t.slot;
            float* out = partials + 2 * (slot * tile_width + threadIdx.x * P);
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
    for (int i = 0; i < P; ++i) scale[i] = row_scale(shared[threadIdx.x * P + i]);
    if (t.valid == 0) return;

    T* dst = y + t.o * ys0 + t.column;
    i64 k = t.k_begin + threadIdx.y;
    for (; k + (kUnroll - 1) * slices < t.k_end; k += kUnroll * slices) {
        Pack<T, P> raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) raw[u] = load_raw_columns<T, P>(src + (k + u * slices) * xs1, t.valid, 0.0f);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            float v[P];
            unpack<T, P>(raw[u], v);
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale[i]);
            store_columns<T, P>(dst + (k + u * slices) * ys1, t.valid, v);
        }
    }
    for (; k < t.k_end; k += slices) {
        float v[P];
        load_columns<T, P>(src + k * xs1, t.valid, 0.0f, v);
#pragma unroll
        for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale[i]);
        store_columns<T, P>(dst + k * ys1, t.valid, v);
    }
}

template <typename T, int P, bool LOG>
__device__ __forceinline__ void strided_backward(const T* y, const T* dy, T* dx, float* partials, i64 n, i64 inner,
                                                 i64 ys0, i64 ys1, i64 dys0, i64 dys1, i64 dxs0, i64 dxs1,
                                                 i64 chunk, i64 splits, int mode) {
    __shared__ float shared[kStridedMaxThreads * P];
    const int stage = mode & kStageMask;
    const StridedTile t = stage_tile<P>(mode, n, inner, chunk, splits);
    const i64 slices = blockDim.y;
    const T* y_col = y + t.o * ys0 + t.column;
    const T* dy_col = dy + t.o * dys0 + t.column;
    const int tile_width = blockDim.x * P;

    float sum[P];
#pragma unroll
    for (int i = 0; i < P; ++i) sum[i] = 0.0f;
    if (stage == kFinish || stage == kMerge) {
        for (i64 s = threadIdx.y; s < stage_slots(mode, splits); s += slices) {
            const float* part = partials + (t.tile * splits + s) * tile_width + threadIdx.x * P;
#pragma unroll
            for (int i = 0; i < P; ++i) sum[i] += part[i];
        }
    } else {
        i64 k = t.k_begin + threadIdx.y;
        for (; k + (kUnroll - 1) * slices < t.k_end; k += kUnroll * slices) {
            Pack<T, P> y_raw[kUnroll], dy_raw[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                y_raw[u] = load_raw_columns<T, P>(y_col + (k + u * slices) * ys1, t.valid, 0.0f);
                dy_raw[u] = load_raw_columns<T, P>(dy_col + (k + u * slices) * dys1, t.valid, 0.0f);
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                float yv[P], dyv[P];
                unpack<T, P>(y_raw[u], yv);
                unpack<T, P>(dy_raw[u], dyv);
#pragma unroll
                for (int i = 0; i < P; ++i) sum[i] += backward_term<LOG>(yv[i], dyv[i]);
            }
        }
        for (; k < t.k_end; k += slices) {
            float yv[P], dyv[P];
            load_columns<T, P>(y_col + k * ys1, t.valid, 0.0f, yv);
            load_columns<T, P>(dy_col + k * dys1, t.valid, 0.0f, dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) sum[i] += backward_term<LOG>(yv[i], dyv[i]);
        }
    }
    merge_slices<P>(shared, sum, AddFloat());
    if (stage == kPartials || stage == kMerge) {
        if (threadIdx.y == 0) {
            const i64 slot = stage == kMerge ? t.tile * splits : t.slot;
            float* out = partials + slot * tile_width + threadIdx.x * P;
#pragma unroll
            for (int i = 0; i < P; ++i) out[i] = shared[threadIdx.x * P + i];
        }
        return;
    }
    float total[P];
#pragma unroll
    for (int i = 0; i < P; ++i) total[i] = shared[threadIdx.x * P + i];
    if (t.valid == 0) return;

    T* dx_col = dx + t.o * dxs0 + t.column;
    i64 k = t.k_begin + threadIdx.y;
    for (; k + (kUnroll - 1) * slices < t.k_end; k += kUnroll * slices) {
        Pack<T, P> y_raw[kUnroll], dy_raw[kUnroll];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            y_raw[u] = load_raw_columns<T, P>(y_col + (k + u * slices) * ys1, t.valid, 0.0f);
            dy_raw[u] = load_raw_columns<T, P>(dy_col + (k + u * slices) * dys1, t.valid, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            float yv[P], dyv[P];
            unpack<T, P>(y_raw[u], yv);
            unpack<T, P>(dy_raw[u], dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total[i]);
            store_columns<T, P>(dx_col + (k + u * slices) * dxs1, t.valid, yv);
        }
    }
    for (; k < t.k_end; k += slices) {
        float yv[P], dyv[P];
        load_columns<T, P>(y_col + k * ys1, t.valid, 0.0f, yv);
        load_columns<T, P>(dy_col + k * dys1, t.valid, 0.0f, dyv);
#pragma unroll
        for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total[i]);
        store_columns<T, P>(dx_col + k * dxs1, t.valid, yv);
    }
}

}  // namespace fastsoftmax
