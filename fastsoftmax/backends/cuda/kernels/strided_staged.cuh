// Tier "strided_staged": softmax over axis 1 of (outer, n, inner), inner > 1, reading the input
// from device memory once. Element (o, k, c) lies at o * s0 + k * s1 + c.
//
// The "strided" tier reduces a tile of columns over n and then re-reads it: from L2 only while the
// tiles in flight fit there, which long axes defeat (3 passes over device memory instead of 2).
// Here a CTA copies its piece of a tile -- `rows` rows of n by `tile_cols` columns -- into shared
// memory with cp.async (every copy in flight at once), reduces it there, and writes the result
// from there. Two layouts of a piece in memory:
//   * flat: the tile is all of inner and s1 == inner (small inner sizes, contiguous n x inner
//     blocks): the piece is one contiguous run of rows * inner elements, moved in 16-byte copies
//     that span several rows and columns at once;
//   * rows: one run of tile_cols elements per row (a 128-byte line or more of each row).
// A flat run of an inner shorter than a pack may come as rows of lcm(inner, pack) columns, merged by
// its true columns (the geometry's fold; see fold_pairs).
// Threads then read the staged piece as P-element packs: thread t owns the pack j = t % L of the
// row (L = tile_cols / P) and rows g, g + G, ... (g = t / L, G = threads / L), so every thread
// keeps to the same P columns. Per-column (max, sum) pairs merge over the G row groups by a tree
// in shared memory.
//
// A CTA's rows of a tile (its chunk) are held in shared memory throughout when they fit
// (`stage_rows` >= chunk): one read. (Tried and dropped: two buffers a CTA, a persistent grid in
// which each CTA copied its next tile's piece in with cp.async while it reduced and wrote the
// current one. In the A/B on an H100 it lost on every layout, e.g. bf16 (4096, 64, 512) over dim 1
// 0.60 of copy against 0.80 and (8192, 16384) over dim 0 0.35 against 0.50: half-size pieces mean
// twice the teams' exchanges, and Nsight Compute showed DRAM throughput falling from 63% to 43%.) Where even the shared memory of every resident CTA cannot hold
// a tile (a tile of 32 MB: (2^20, 128) over dim 0), the chunk streams through the buffer twice,
// once for the statistics and once to write (the statistics' last staging, a whole one, is written
// first, without a re-read; the chunk's partial last piece is staged first for that): three
// passes, each at full copy width, less what the kept staging saves.
//
// When a tile of all n rows does not fit one CTA, n is split over `splits` CTAs (a team) that
// exchange their per-column pairs through global memory: each CTA publishes its pairs, counts
// itself in on the tile's counter and waits until the whole team has, then merges every pair of
// the team. The launch is cooperative (all CTAs resident, so waiting on a team mate cannot
// deadlock) and persistent: team m takes tiles m, m + teams, ... in order. The counters start at
// zero: each launch leaves them so (team_barrier).
//
// Backward stages y and dy and exchanges per-column sums of dy * y (softmax) or dy (log-softmax).
//
// Rows in their 16-byte windows (WINDOW kernels): a view with a storage offset (x[..., 1:]) puts
// every row off a 16-byte boundary, an inner size of no whole number of 16-byte pieces (1023) puts
// every tile but the first off one, and a row stride of no whole number of pieces ((16, 21, 513, 513)
// over dim 1) puts consecutive rows at different phases. Copies 16 bytes wide then cannot start at a
// tile's first column, and 16-bit types fell to 2-byte copies (0.14-0.24 of copy on an H100; float32
// keeps its 4-byte copies: strided.window_tiles). Instead the tiles' rows are staged in their 16-byte
// windows, in one of two forms (the host's choice, bit 30 of the geometry):
//   * at the inputs' one phase, where every input row shares it: tile t covers columns
//     [t * tile_cols - lead, (t + 1) * tile_cols - lead) of inner (lead: the first input's elements
//     before its boundary), so every 16-byte piece of a tile's row is one aligned copy and the rows
//     read back unshifted;
//   * each at its own phase (rows at several phases, or inputs off their boundaries over outputs on
//     theirs): tiles keep the output's columns, and each staged row holds the aligned pieces of its
//     device row from the one that holds the tile's column 0 (one piece more than the tile: the
//     stage's pitch); the row's phase -- where column 0 lies in that piece, from the row's address --
//     is applied as the row is read back (window_pack: two aligned 16-byte reads of shared memory and
//     funnel shifts).
// Pieces that straddle inner's ends move element by element; nothing outside the tensor is read, and a
// staged slot outside [0, inner) is never stored. An output row on its boundary is stored straight;
// one off its boundary gets each pack stored shifted, its last elements and the next lane's first ones
// in one 16-byte store (store_window), the row's two ends element by element. Packs are 16 bytes (the
// host's choice), and a row's L packs lie in one warp. Kernels of their own (WINDOW): the others
// compile as before. H100 (results 2026-11-25_h100_s17/window_probe*.txt): the first form is the
// faster where it applies (bf16 forward, inputs and output one element in: 0.64 of copy against 0.36
// in the second); the second took the backward of inputs one element in over outputs on their
// boundaries from 0.43 to 0.52 ((32, 4096, 1024) over dim 1), and rows at several phases run at
// 0.31-0.43, under Triton's tiles (dispatch.STAGGERED_TRITON_MAX_N).
//
// Inputs that step by 2 along inner (x[..., ::2], read where they lie; STEPPED kernels, whose LOAD
// functor's kStep is 2): each tile row is staged as its span, the tile's columns and the elements
// between them, in 16-byte pieces (twice the shared memory of a dense row), and read back as every
// other element (read_span2). Device memory serves whole sectors either way, so the span is what a
// step view costs to read at all; the "strided" tier read it twice (its second walk), and torch.compile's
// reductions do too. Rows on their 16-byte boundaries only (the host's choice); the output is dense.
//
// Memory access goes through the LOAD / STORE functors below (the strided analogue of the row
// tiers' DirectLoad / DirectStore): they address (o, k) rows and convert packs, so a fused form
// replaces them without touching the kernel.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

constexpr int kStagedThreads = 256;
// the second copy group of a staging starts this many rows in (whole 16-byte pieces when flat)
constexpr int kStagedHalfAlign = 16;

// STEP: elements between consecutive columns of inner (2: an input that steps along inner,
// x[..., ::2]; its tile rows are staged as their spans, STEPPED below)
template <typename T, int STEP = 1>
struct StridedDirectLoad {
    static constexpr int kStep = STEP;
    const T* base;
    i64 s0, s1;
    __device__ __forceinline__ const T* row(i64 o, i64 k) const { return base + o * s0 + k * s1; }
    // row (o, k) at column c
    __device__ __forceinline__ const T* at(i64 o, i64 k, i64 c) const { return row(o, k) + c * STEP; }
    template <int P>
    __device__ __forceinline__ void convert(const Pack<T, P>& raw, float* out) const {
        unpack_lean<T, P>(raw, out);
    }
    // The elementwise maximum of U packs, converted: 16-bit packs compare as pairs first (exact, and
    // like fmaxf a pair maximum returns the other operand of a NaN), one conversion per column.
    template <int P, int U>
    __device__ __forceinline__ void max_of(const Pack<T, P> (&raw)[U], float* out) const {
        if constexpr (sizeof(T) == 2 && P % 2 == 0) {
            typedef typename PairOf<T>::type T2;
            Pack<T, P> m = raw[0];
            T2* pairs = reinterpret_cast<T2*>(&m.raw);
#pragma unroll
            for (int u = 1; u < U; ++u) {
                const T2* other = reinterpret_cast<const T2*>(&raw[u].raw);
#pragma unroll
                for (int i = 0; i < P / 2; ++i) pairs[i] = __hmax2(pairs[i], other[i]);
            }
            convert<P>(m, out);
        } else {
            convert<P>(raw[0], out);
#pragma unroll
            for (int u = 1; u < U; ++u) {
                float v[P];
                convert<P>(raw[u], v);
#pragma unroll
                for (int i = 0; i < P; ++i) out[i] = fmaxf(out[i], v[i]);
            }
        }
    }
};

template <typename T>
struct StridedDirectStore {
    T* base;
    i64 s0, s1;
    __device__ __forceinline__ T* row(i64 o, i64 k) const { return base + o * s0 + k * s1; }
    __device__ __forceinline__ T* at(i64 o, i64 k, i64 c) const { return row(o, k) + c; }
    template <int P>
    __device__ __forceinline__ Pack<T, P> convert(const float* in) const {
        return make_pack<T, P>(in);
    }
};

// ---- copies between device and shared memory (copy_async and its waits: common.cuh) -----------

// One run of `count` elements from src (device) to dst (shared) or back, in W-byte pieces (W
// divides the byte offset of both ends' start and, for a run that must end exactly, its length);
// the elements past the last whole piece move one at a time. `first`/`step` spread the pieces of
// all runs of a piece over the CTA's threads.
template <typename T, int W, bool TO_SHARED>
__device__ __forceinline__ void copy_run(T* shared, T* global, int count, int first, int step) {
    constexpr int E = W / (int)sizeof(T);
    const int pieces = count / E;
    for (int v = first; v < pieces; v += step) {
        if constexpr (TO_SHARED) {
            if constexpr (W >= 4) {
                copy_async<W>(shared + v * E, global + v * E);
            } else {
                shared[v * E] = global[v * E];
            }
        } else {
            *reinterpret_cast<typename RawBits<W>::type*>(global + v * E) =
                *reinterpret_cast<const typename RawBits<W>::type*>(shared + v * E);
        }
    }
    for (int e = pieces * E + first; e < count; e += step) {
        if constexpr (TO_SHARED) {
            shared[e] = global[e];
        } else {
            global[e] = shared[e];
        }
    }
}

// The piece (rows x cols at row k0, column c0 of outer index o, starting at row0) between device
// memory and the staging buffer (pitch `pitch` elements).
template <typename T, int W, bool TO_SHARED>
__device__ __forceinline__ void copy_piece(T* stage, T* row0, i64 s1, int rows, int cols, int pitch, bool flat) {
    if (flat) {
        // rows * cols contiguous elements, the same layout in shared memory (pitch == cols)
        copy_run<T, W, TO_SHARED>(stage, row0, rows * cols, threadIdx.x, blockDim.x);
        return;
    }
    constexpr int E = W / (int)sizeof(T);
    const int per_row = cols / E;  // the host makes cols a multiple of E
    const auto move = [&](int r, int q) {
        T* s = stage + r * pitch + q;
        T* g = row0 + r * s1 + q;
        if constexpr (TO_SHARED) {
            if constexpr (W >= 4) {
                copy_async<W>(s, g);
            } else {
                *s = *g;
            }
        } else {
            *reinterpret_cast<typename RawBits<W>::type*>(g) = *reinterpret_cast<const typename RawBits<W>::type*>(s);
        }
    };
    if (per_row > 0 && blockDim.x % per_row == 0) {
        // a thread keeps to one piece of every step-th row: no division a piece, whose 40
        // instructions were a sixth of the bf16 forward of (8, 150, 128, 128) over dim 1 (Nsight
        // Compute). H100, alternated in one process: backward bf16 (128, 1024, 1024) over dim 1
        // 0.88 -> 0.93 of copy, (32, 4096, 1024) 0.74 -> 0.77, float32 (128, 1024, 1024) 0.93 ->
        // 0.96; forward within 0.01 either way (results 2026-11-24_h100_s11/staged_copies_ab.txt)
        const int step = blockDim.x / per_row;
        const int first = threadIdx.x / per_row;
        const int q = (threadIdx.x - first * per_row) * E;
        for (int r = first; r < rows; r += step) move(r, q);
        return;
    }
    const int pieces = rows * per_row;
    for (int v = threadIdx.x; v < pieces; v += blockDim.x) {
        const int r = v / per_row;
        move(r, (v - r * per_row) * E);
    }
}

template <typename T, bool TO_SHARED>
__device__ __forceinline__ void copy_piece_any(int width, T* stage, T* row0, i64 s1, int rows, int cols, int pitch,
                                               bool flat) {
    // the width is the same for every CTA of a launch: a uniform branch
    if (width == 16) {
        copy_piece<T, 16, TO_SHARED>(stage, row0, s1, rows, cols, pitch, flat);
    } else if (width == 8) {
        copy_piece<T, 8, TO_SHARED>(stage, row0, s1, rows, cols, pitch, flat);
    } else if (width == 4 || sizeof(T) == 4) {
        copy_piece<T, 4, TO_SHARED>(stage, row0, s1, rows, cols, pitch, flat);
    } else {
        copy_piece<T, 2, TO_SHARED>(stage, row0, s1, rows, cols, pitch, flat);
    }
}

// ---- rows in their 16-byte windows ----------------------------------------------------------
// The phase of each staged row: elements from its first aligned piece's start to the tile's column 0,
// from the low bits of the row's address (row 0's, plus r row strides).
template <typename T>
struct WindowPhases {
    unsigned first;  // row 0's address at the tile's column 0, low 32 bits
    unsigned step;   // the row stride in bytes, low 32 bits
    __device__ __forceinline__ static WindowPhases of(const T* row0, i64 s1) {
        return WindowPhases{(unsigned)reinterpret_cast<unsigned long long>(row0), (unsigned)(s1 * (i64)sizeof(T))};
    }
    __device__ __forceinline__ int at(int r) const { return (int)(((first + (unsigned)r * step) & 15u) / sizeof(T)); }
};

// A window tile's rows, columns [lo, cols) of each, from device to shared memory: each row's 16-byte
// pieces from the one holding column 0, as copies of that width, the pieces that reach outside inner
// (columns [from, hi) are inner's) element by element, the columns needed only. Threads past the
// block's last whole row of pieces (pitch / E) idle.
template <typename T>
__device__ __forceinline__ void copy_window_piece(T* stage, const T* row0, i64 s1, int rows, int lo, int cols,
                                                  int from, int hi, int pitch) {
    constexpr int E = 16 / (int)sizeof(T);
    const int per_row = pitch / E;
    const int step = blockDim.x / per_row;
    const int first = threadIdx.x / per_row;
    const int q = (threadIdx.x - first * per_row) * E;
    if (first >= step) return;
    const WindowPhases<T> phases = WindowPhases<T>::of(row0, s1);
    for (int r = first; r < rows; r += step) {
        const int m = phases.at(r);
        const int c = q - m;  // the piece's first column
        if (c >= cols || c + E <= lo) continue;
        T* s = stage + r * pitch + q;
        const T* g = row0 + r * s1 + c;
        if (c >= from && c + E <= hi) {
            copy_async<16>(s, g);
        } else {
#pragma unroll
            for (int e = 0; e < E; ++e)
                if (c + e >= lo && c + e < cols) s[e] = g[e];
        }
    }
}

// Bytes [e0 * sizeof(T), + 16) of the 32 of two 16-byte packs, without a branch (the rows a warp reads
// at once may lie at different phases)
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> shifted_pack(const Pack<T, P>& own, const Pack<T, P>& next, int e0) {
    static_assert(sizeof(T) * P == 16, "window packs are 16 bytes");
    const unsigned w[8] = {own.raw.x, own.raw.y, own.raw.z, own.raw.w, next.raw.x, next.raw.y, next.raw.z, next.raw.w};
    const int bytes = e0 * (int)sizeof(T);
    const int a = bytes >> 2;
    const unsigned bits = (bytes & 3) * 8;
    unsigned v[5];
#pragma unroll
    for (int i = 0; i < 5; ++i) v[i] = a == 0 ? w[i] : a == 1 ? w[i + 1] : a == 2 ? w[i + 2] : w[i + 3];
    Pack<T, P> out;
    out.raw = make_uint4(__funnelshift_r(v[0], v[1], bits), __funnelshift_r(v[1], v[2], bits),
                         __funnelshift_r(v[2], v[3], bits), __funnelshift_r(v[3], v[4], bits));
    return out;
}

// The pack at `p` (a staged row's slot of pack j) of a row at phase e0: the pieces it straddles,
// realigned. A row at phase 0 reads one piece (its next may never have been staged).
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> window_pack(const T* p, int e0) {
    const Pack<T, P> own = read_pack<T, P>(p);
    if (e0 == 0) return own;
    return shifted_pack<T, P>(own, read_pack<T, P>(p + P), e0);
}

// Stores a window tile's pack j (columns jP .. jP + P - 1 of the tile, `row` at its column 0),
// leaving columns outside [lo, hi) alone. Where the output row's 16-byte boundaries fall at the tile's
// columns e0 (mod P) > 0, lane j stores columns jP + e0 .. (j + 1)P + e0 - 1, the tail of its pack
// and the head of lane j + 1's (every lane of the row's L, in one warp, takes part in the shuffle),
// lane 0 also its head and lane L - 1 its tail, element by element.
template <typename T, int P>
__device__ __forceinline__ void store_window(T* row, const Pack<T, P>& pack, int j, int L, int lo, int hi) {
    const int x = j * P;
    const int e0 = (P - misalignment<T, P>(row)) % P;  // the same for the row's lanes
    if (e0 == 0) {
        if (x >= lo && x + P <= hi) {
            write_pack_global<T, P>(row + x, pack);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i)
                if (x + i >= lo && x + i < hi) row[x + i] = pack.elems()[i];
        }
        return;
    }
    const int lane = threadIdx.x & 31;
    const unsigned mask = L >= 32 ? 0xffffffffu : ((1u << L) - 1) << (lane & ~(L - 1));
    Pack<T, P> next;
    next.raw.x = __shfl_down_sync(mask, pack.raw.x, 1, L);
    next.raw.y = __shfl_down_sync(mask, pack.raw.y, 1, L);
    next.raw.z = __shfl_down_sync(mask, pack.raw.z, 1, L);
    next.raw.w = __shfl_down_sync(mask, pack.raw.w, 1, L);
    const bool inside = j + 1 < L && x + e0 >= lo && x + e0 + P <= hi;
    if (inside) {
        write_pack_global<T, P>(row + x + e0, shifted_pack<T, P>(pack, next, e0));
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i)
            if (i >= e0 && x + i >= lo && x + i < hi) row[x + i] = pack.elems()[i];
        if (j + 1 < L) {
#pragma unroll
            for (int i = 0; i < P; ++i)
                if (i < e0 && x + P + i >= lo && x + P + i < hi) row[x + P + i] = next.elems()[i];
        }
    }
    if (j == 0) {
#pragma unroll
        for (int i = 0; i < P; ++i)
            if (i < e0 && x + i >= lo && x + i < hi) row[x + i] = pack.elems()[i];
    }
}

// ---- the geometry of one launch --------------------------------------------------------------
// geometry = tile_cols | width << 16 | fold << 21 | input_phase << 30 | outer_fastest << 31 |
// stage_rows << 32 (16 bits) | first wave's wait in microseconds << 48 | its teams << 54 (one 8-byte
// kernel parameter; stagger_first_tile reads the last two)
struct StagedGeometry {
    int tile_cols;       // columns of a tile (a multiple of P; all of inner in the flat layout)
    int width;           // bytes per copy between device and shared memory: 16, 8, 4 or 2
    int fold;            // a folded run's true inner (see fold_pairs), else 0
    int lead;            // WINDOW: the first input's elements before its 16-byte boundary where tiles
                         // keep to the inputs' phase, else 0 (tiles keep to the output's columns)
    int pitch;           // elements a staged row takes: tile_cols, one 16-byte piece more in a window
                         // whose rows lie at their own phases, the span of tile_cols columns (twice
                         // as many elements) where the inputs step along inner
    bool outer_fastest;  // consecutive tiles: the same columns of consecutive outer indices
    int stage_rows;      // rows the staging buffer holds
    i64 outer, tiles_per_outer, tiles;
    int packs_per_row;  // L
    int groups;         // G
};

// Teams of odd index among the first wave's wait before their first tile (bits 48-53 of the geometry:
// microseconds; bits 54-62: the teams resident at once, at most 511, those past it starting at once).
// Persistent teams that start together stay in step as clusters do (stagger_first_wave): all stage
// their pieces, all meet, all write.
__device__ __forceinline__ void stagger_first_tile(i64 geometry, i64 team) {
    const long long us = (geometry >> 48) & 0x3f;
    if (us) stagger_first_wave(team, (geometry >> 54) & 0x1ff, us * 1000);
}

// `first_input`: where the first input's (o, k) = (0, 0) row starts
template <int P, bool WINDOW, int STEP, typename T>
__device__ __forceinline__ StagedGeometry staged_geometry(i64 outer, i64 inner, i64 geometry, const T* first_input) {
    StagedGeometry g;
    g.tile_cols = (int)(geometry & 0xffff);
    g.width = (int)((geometry >> 16) & 0x1f);
    g.fold = (int)((geometry >> 21) & 0x1ff);
    const bool input_phase = WINDOW && ((geometry >> 30) & 1);  // tiles keep to the inputs' one phase
    g.lead = input_phase ? misalignment<T, 16 / sizeof(T)>(first_input) : 0;
    g.pitch = g.tile_cols * STEP + (WINDOW && !input_phase ? 16 / (int)sizeof(T) : 0);
    g.outer_fastest = (geometry >> 31) & 1;
    g.stage_rows = (int)((geometry >> 32) & 0xffff);
    g.outer = outer;
    g.tiles_per_outer = (inner + g.lead + g.tile_cols - 1) / g.tile_cols;
    g.tiles = outer * g.tiles_per_outer;
    g.packs_per_row = g.tile_cols / P;
    g.groups = blockDim.x / g.packs_per_row;
    return g;
}

// The scratch: one slot of P floats per thread (kStagedThreads, the block size of every launch).
// SPREAD (the forward): value i of slot t lies at i * kStagedThreads + t, so that a warp's accesses
// to one value fall on consecutive words. Side by side (t * P + i), the forward's 8-byte (max, sum)
// pairs of a warp lay 64 bytes apart, 16-way bank conflicts: Nsight Compute on an H100, bf16
// (128, 1024, 1024) over dim 1, 57% of the kernel's shared-memory wavefronts excessive (2% spread),
// in merges that nothing overlaps; spread, the 16-bit forward gained 0.04-0.10 of copy on most
// shapes (results 2026-11-24_h100_s4/staged_scratch_ab.txt). The forward's values are floats since
// (merge_pairs). The backward's sums stay side by side, its code as before: spread, bf16 backward
// of (128, 1024, 1024) lost 0.05 and of (4096, 64, 512) 0.04 (staged_scratch_spread_backward_ab.txt).
template <int P, bool SPREAD>
struct StagedScratch {
    float* base;
    __device__ __forceinline__ float& at(int slot, int i) const {
        return SPREAD ? base[i * kStagedThreads + slot] : base[slot * P + i];
    }
    // the result for column c of the tile: value c % P of slot (0, c / P) after the merges
    __device__ __forceinline__ float& column(int c) const { return SPREAD ? at(c / P, c % P) : base[c]; }
};

// Merges the G row groups' values of each column: slot (g, j) holds group g's P values of pack j;
// afterwards slot (0, j) holds the pack's result. Any G from 1 to the thread count.
template <int P, bool SPREAD, typename Merge>
__device__ __forceinline__ void merge_groups(const StagedScratch<P, SPREAD>& scratch, int groups, int packs_per_row,
                                             Merge merge_fn) {
    const int t = threadIdx.x;
    const int g = t / packs_per_row;
    int span = 1;
    while (span < groups) span *= 2;
    for (int half = span / 2; half > 0; half /= 2) {
        __syncthreads();
        if (g < half && g + half < groups) {
            const int other = t + half * packs_per_row;
#pragma unroll
            for (int i = 0; i < P; ++i) {
                float& mine = scratch.at(t, i);
                mine = merge_fn(mine, scratch.at(other, i));
            }
        }
    }
    __syncthreads();
}

// ---- teams as thread-block clusters (sm_90+) -----------------------------------------------------
// A team launched as a cluster (grid = tiles x splits, one tile a team, no persistent loop) is
// co-scheduled by the hardware, so it needs no cooperative launch, and teams start and finish at
// their own pace instead of in step across the whole GPU. Each CTA posts its per-column results in
// its shared memory and reads its peers' posts after a cluster barrier (ClusterTeam below); a second
// barrier, waited on after the writes, keeps every post readable until the whole team has read it.
// The cluster exchange is compiled into kernels of its own (CLUSTER): present beside the global
// one, it cost the 16-bit backward 3-10% on an H100 even where it never ran.

// Workspace: one int counter per tile (common.cuh's counter_words), then the partial results.

__device__ __forceinline__ MaxSum load_cg(const MaxSum* p) {
    const float2 v = __ldcg(reinterpret_cast<const float2*>(p));
    return MaxSum{v.x, v.y};
}
__device__ __forceinline__ float load_cg(const float* p) { return __ldcg(p); }

// A team exchanging through global memory (the persistent cooperative launch): a tile's slots
// hold splits x tile_cols values.
template <typename V>
struct GlobalTeam {
    V* slots;
    int* counter;
    i64 split, splits;
    int tile_cols;
    // where this CTA posts its result for column c, and its arrival once posted
    __device__ __forceinline__ V& own(int c) const { return slots[split * tile_cols + c]; }
    __device__ __forceinline__ void arrive() const { team_barrier(counter, splits); }
    __device__ __forceinline__ V read(i64 q, int c) const { return load_cg(slots + q * tile_cols + c); }
    __device__ __forceinline__ void done() const {}
    __device__ __forceinline__ void release() const {}
};

// A team launched as one cluster: a post a tile column in each CTA's shared memory (the host sizes
// them: at least strided.STAGED_POST_COLS).
template <typename V>
struct ClusterTeam {
    V* post;
    __device__ __forceinline__ V& own(int c) const { return post[c]; }
    __device__ __forceinline__ void arrive() const {
        cluster_arrive();
        cluster_wait();
    }
    __device__ __forceinline__ V read(i64 q, int c) const { return read_peer(post + c, (unsigned)q); }
    __device__ __forceinline__ void done() const { cluster_arrive(); }  // the peers' posts are read
    __device__ __forceinline__ void release() const { cluster_wait(); }  // so are this CTA's
};

// The team's sum of slot (0, j) of every CTA's scratch (after merge_groups; the backward): row
// group g adds the results of team members g, g + G, ... and the groups add up again; afterwards
// slot (0, j) holds the team's sum in every CTA (added in the same order in each).
template <int P, bool SPREAD, typename Team>
__device__ __forceinline__ void merge_team_sums(const Team& team, const StagedScratch<P, SPREAD>& scratch, int groups,
                                                int packs_per_row, int cols, i64 splits) {
    const int t = threadIdx.x;
    const int j = t % packs_per_row;
    const int g = t / packs_per_row;
    if (t < cols) team.own(t) = scratch.column(t);
    team.arrive();
    if (g < groups) {
        float total[P];
#pragma unroll
        for (int i = 0; i < P; ++i) total[i] = 0.0f;
        if (j * P < cols) {
            for (i64 q = g; q < splits; q += groups) {
#pragma unroll
                for (int i = 0; i < P; ++i) total[i] += team.read(q, j * P + i);
            }
        }
#pragma unroll
        for (int i = 0; i < P; ++i) scratch.at(t, i) = total[i];
    }
    team.done();
    merge_groups<P>(scratch, (int)min((i64)groups, splits), packs_per_row, AddOp());
}

// Merges the (max, sum) pairs of the row groups below `groups` over a float scratch, by two trees:
// the maxima, then the sums, each rescaled once to its column's maximum. Half the shared memory of
// a tree over pairs: the bf16 forward of (128, 1024, 1024) over dim 1 then holds three CTAs an SM
// instead of two (74 KB each), and with registers for three (strided.py) it went from 0.73 to
// 0.85 of copy on an H100 (results 2026-11-24_h100_s4/staged_float_scratch_*.txt: two processes
// in one device call, this kernel's host geometry differing from the one before). Afterwards
// every thread's `pair` holds its pack's result.
template <int P>
__device__ __forceinline__ void merge_pairs(const StagedScratch<P, true>& scratch, MaxSum (&pair)[P], int groups,
                                            int packs_per_row) {
    const int t = threadIdx.x;
    const int j = t % packs_per_row;
    const int g = t / packs_per_row;
    if (g < groups) {
#pragma unroll
        for (int i = 0; i < P; ++i) scratch.at(t, i) = pair[i].max;
    }
    merge_groups<P>(scratch, groups, packs_per_row, MaxOp());
    float m[P];
#pragma unroll
    for (int i = 0; i < P; ++i) m[i] = scratch.at(j, i);
    __syncthreads();  // every maximum is read before the sums take their place
    if (g < groups) {
#pragma unroll
        for (int i = 0; i < P; ++i) scratch.at(t, i) = rescaled_sum(pair[i].max, pair[i].sum, m[i]);
    }
    merge_groups<P>(scratch, groups, packs_per_row, AddOp());
#pragma unroll
    for (int i = 0; i < P; ++i) pair[i] = MaxSum{m[i], scratch.at(j, i)};
}

// merge_team_sums for (max, sum) pairs held in registers (merge_pairs' results): row group 0 posts its
// packs' pairs, row group g merges those of team members g, g + G, ..., and merge_pairs merges the
// groups; afterwards `pair` holds the team's result in every CTA (merged in the same order in each).
template <int P, typename Team>
__device__ __forceinline__ void merge_team_pairs(const Team& team, const StagedScratch<P, true>& scratch,
                                                 MaxSum (&pair)[P], int groups, int packs_per_row, int cols,
                                                 i64 splits) {
    const int t = threadIdx.x;
    const int j = t % packs_per_row;
    const int g = t / packs_per_row;
    if (g == 0) {
#pragma unroll
        for (int i = 0; i < P; ++i)
            if (j * P + i < cols) team.own(j * P + i) = pair[i];
    }
    team.arrive();
    const int team_groups = (int)min((i64)groups, splits);
#pragma unroll
    for (int i = 0; i < P; ++i) pair[i] = empty_maxsum();
    if (g < team_groups && j * P < cols) {
        for (i64 q = g; q < splits; q += team_groups) {
#pragma unroll
            for (int i = 0; i < P; ++i) pair[i] = merge(pair[i], team.read(q, j * P + i));
        }
    }
    team.done();
    merge_pairs<P>(scratch, pair, team_groups, packs_per_row);
}

// Folded runs. A flat n x inner block whose inner is shorter than a 16-byte pack is read back from
// shared memory in packs of what divides inner: an element at a time for an odd inner (the H100 ran
// bf16 (4096, 4096, 3) over dim 1 at 56 instructions an element, the issue slots 82% busy). The host
// may view such a block as rows of W = lcm(inner, pack) columns instead (a multiple of inner, so
// every virtual row starts at inner's column 0), so that packs are whole again; virtual column u
// holds inner's column u % fold (fold: the true inner). The host folds where measured faster
// (strided.folds_by_default: the 16-bit backward, 0.93 -> 0.97 of copy on that block; the forward
// measured slower folded). The merge over the row groups goes by true column: a
// tree over W virtual columns of P values a thread, and a fold after it, cost more than the packs
// saved (a tile is 48 elements a thread there; folded_runs_tree_not_kept.txt). Each thread
// writes its P values to the scratch side by side (entry e = t P + i, the virtual column of
// position i of pack j is j P + i, and t = g L + j, so entry e lies in true column e % fold); each
// thread merges the P entries e with e / fold = t (mod threads), one running value per true column,
// then the warps' lanes by shuffles, then the warps through the scratch. Every position then takes
// its true column's value: the team merges that follow, and the output, see the virtual columns as
// before, each holding its true column's result.
// Folded tiles run kernels of their own (FOLD): the fold's merge present in every kernel as a runtime
// branch changed how the others compiled and cost them up to 0.12 of copy on an H100 (bf16 backward
// (64, 2048, 1024) over dim 1 0.88 -> 0.78, float32 (32, 4096, 1024) 0.90 -> 0.78; results
// 2026-11-28_h100_s28/fold_branch_ab.txt; under NVRTC 13.5 it took the 16-bit backward with packs of 8
// from 110 registers to 80; the device's NVRTC 13.0 was not compared).
//
// The CTA's value of each true column (c < fold) of the entries scratch[e], e < threads x P, merged
// by OP into table[c] (a region of the scratch past the warps' values).
template <int P, typename OP>
__device__ __forceinline__ void fold_entries(float* scratch, float* table, int fold, float identity, OP op) {
    const int t = threadIdx.x, lane = t & 31, warp = t >> 5, warps = blockDim.x >> 5;
    const int entries = blockDim.x * P;
    float part[P];
#pragma unroll
    for (int c = 0; c < P; ++c) part[c] = identity;
    for (int q = t; q * fold < entries; q += blockDim.x) {
#pragma unroll
        for (int c = 0; c < P; ++c)
            if (c < fold && q * fold + c < entries) part[c] = op(part[c], scratch[q * fold + c]);
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) {
#pragma unroll
        for (int c = 0; c < P; ++c)
            if (c < fold) part[c] = op(part[c], __shfl_xor_sync(kFullMask, part[c], o));
    }
    __syncthreads();  // every entry is read: the warps' values take their place
    if (lane == 0) {
#pragma unroll
        for (int c = 0; c < P; ++c)
            if (c < fold) scratch[warp * P + c] = part[c];
    }
    __syncthreads();
    if (t < fold) {
        float value = identity;
        for (int w = 0; w < warps; ++w) value = op(value, scratch[w * P + t]);
        table[t] = value;
    }
    __syncthreads();
}

// The true column of each of a thread's positions (pack j: virtual columns j P ..).
template <int P>
__device__ __forceinline__ void true_columns(int j, int fold, int (&col)[P]) {
    int c = (j * P) % fold;
#pragma unroll
    for (int i = 0; i < P; ++i) {
        col[i] = c;
        c = c + 1 == fold ? 0 : c + 1;
    }
}

// merge_pairs for a folded tile: afterwards every thread's pair[i] holds the CTA's pair of position
// i's true column. Positions of threads past the row groups hold empty pairs.
template <int P>
__device__ __forceinline__ void fold_pairs(float* scratch, MaxSum (&pair)[P], int packs_per_row, int fold) {
    const int t = threadIdx.x;
    int col[P];
    true_columns<P>(t % packs_per_row, fold, col);
    float* table = scratch + (blockDim.x >> 5) * P;  // fold values past the warps' ones
#pragma unroll
    for (int i = 0; i < P; ++i) scratch[t * P + i] = pair[i].max;
    __syncthreads();
    fold_entries<P>(scratch, table, fold, neg_inf(), MaxOp());
    float m[P];
#pragma unroll
    for (int i = 0; i < P; ++i) m[i] = table[col[i]];
    __syncthreads();  // every maximum is read before the sums take the entries' place
#pragma unroll
    for (int i = 0; i < P; ++i) scratch[t * P + i] = rescaled_sum(pair[i].max, pair[i].sum, m[i]);
    __syncthreads();
    fold_entries<P>(scratch, table, fold, 0.0f, AddOp());
#pragma unroll
    for (int i = 0; i < P; ++i) pair[i] = MaxSum{m[i], table[col[i]]};
    __syncthreads();  // the table is read before anything else takes the scratch
}

// The backward's merge of a folded tile's sums: afterwards scratch.column(u) holds the CTA's sum of
// virtual column u's true column, for every u < cols (the tile's W), as merge_groups leaves it.
template <int P>
__device__ __forceinline__ void fold_sums(const StagedScratch<P, false>& scratch, const float (&sum)[P], int cols,
                                          int fold) {
    const int t = threadIdx.x;
    float* table = scratch.base + (blockDim.x >> 5) * P;
#pragma unroll
    for (int i = 0; i < P; ++i) scratch.base[t * P + i] = sum[i];
    __syncthreads();
    fold_entries<P>(scratch.base, table, fold, 0.0f, AddOp());
    const float value = t < cols ? table[t % fold] : 0.0f;
    __syncthreads();  // the table is read before the columns' values may cover it
    if (t < cols) scratch.column(t) = value;
    __syncthreads();
}

// One CTA's place in the launch and in its current tile.
struct StagedPiece {
    i64 o, c0, k0;   // c0: inner's column at the tile's column 0 (negative in a window's first tile)
    int lo;          // the tile's first column inside inner (0 but in a window's first tile)
    int cols;        // the tile's columns up to inner's end: those in [lo, cols) are inner's
    int from, reach;  // the staged columns that are inner's: [from, reach), at most a staged row
    int posts;       // the columns a team's members post: cols, whole packs in a window (every value
                     // a member reads was written, a window's ragged end included)
    int rows;        // rows of this CTA's chunk
    int sub_pieces;  // stagings the chunk takes (1: held in shared memory throughout)

    __device__ __forceinline__ int sub_rows(int sub, int stage_rows) const { return min(stage_rows, rows - sub * stage_rows); }
    // The sub-piece the statistics' walk stages p-th: the chunk's last, partial one first, then the
    // others in order, so that the one left staged for the writes (the walk's last) is a whole
    // staging and only the rest is read again (bf16 (1, 4194304, 4) forward: 0.12 of a chunk, not 0.88;
    // its pieces keep their places, whole stagings from the chunk's start, for the copies' alignment).
    // H100, alternated in one process with the whole stagings first (results 2026-12-06_h100_s74/c6/):
    // bf16 (1, 4194304, 4) over dim 1 forward 0.502 of copy against 0.443, float32 (4, 1048576, 8)
    // 0.584 against 0.516, its bf16 backward 0.531 against 0.472; chunks of one staging within 0.005 (c7/).
    __device__ __forceinline__ int staging(int p) const { return p == 0 ? sub_pieces - 1 : p - 1; }
};

template <int P, bool WINDOW>
__device__ __forceinline__ StagedPiece staged_piece(const StagedGeometry& geo, i64 tile, i64 split, i64 n,
                                                    i64 inner, i64 chunk) {
    StagedPiece p;
    // Outer index fastest where an input is broadcast along outer (stride 0): the tiles that read
    // the same memory then run together and share it through L2, instead of each outer index
    // reading the whole broadcast input again after it left L2.
    if (geo.outer_fastest) {
        const i64 column_tile = tile / geo.outer;
        p.o = tile - column_tile * geo.outer;
        p.c0 = column_tile * geo.tile_cols - geo.lead;
    } else {
        p.o = tile / geo.tiles_per_outer;
        p.c0 = (tile - p.o * geo.tiles_per_outer) * geo.tile_cols - geo.lead;
    }
    p.lo = (int)max((i64)0, -p.c0);
    p.cols = (int)min((i64)geo.tile_cols, inner - p.c0);
    p.from = (int)max(-p.c0, (i64)-16);  // a staged row reaches at most one 16-byte piece back
    p.reach = (int)min((i64)geo.pitch, inner - p.c0);
    p.posts = WINDOW ? (p.cols + P - 1) / P * P : p.cols;
    p.k0 = split * chunk;
    p.rows = (int)max((i64)0, min(chunk, n - p.k0));  // a cluster's last ranks may have no rows
    p.sub_pieces = (p.rows + geo.stage_rows - 1) / geo.stage_rows;
    return p;
}

// Stages `rows` rows of a piece's tile from `row0` (its row at column c0): each in its window, or in
// copies of the launch's width.
template <typename T, bool WINDOW, int STEP>
__device__ __forceinline__ void stage_piece_rows(const StagedGeometry& geo, const StagedPiece& pc, T* stage, const T* row0,
                                                 i64 s1, int rows, int pitch, bool flat) {
    if constexpr (WINDOW) {
        copy_window_piece<T>(stage, row0, s1, rows, pc.lo, pc.cols, pc.from, pc.reach, pitch);
    } else {
        // STEPPED: a row's span, its columns and the elements between them, in whole 16-byte pieces
        // (the host's width; the span's last element shares a piece with the row's last column)
        copy_piece_any<T, true>(geo.width, stage, const_cast<T*>(row0), s1, rows, pc.cols * STEP, pitch, flat);
    }
}

// A thread's pack of results for row `row` (at the tile's column 0) to device memory: straight, or
// shifted into the output's 16-byte boundaries in a window (store_window).
template <typename T, int P, bool WINDOW>
__device__ __forceinline__ void store_staged(T* row, const Pack<T, P>& pack, int j, int L, const StagedPiece& pc) {
    if constexpr (WINDOW) {
        store_window<T, P>(row, pack, j, L, pc.lo, pc.cols);
    } else {
        write_pack_global<T, P>(row + j * P, pack);
    }
}

// write(r, row) for the rows r = first, first + step, ... < rows of a piece whose row 0 lies at row0
// in device memory, rows s1 elements apart. STEPPED: the row's address stepped rather than multiplied
// out, a 64-bit multiply-add and its carries a row fewer (H200, float32 forward of (16, 21, 513, 513)
// over dim 1: 0.61 -> 0.65 of copy with staged_stats' changes). Window kernels keep the product:
// stepped, their 16-bit forward spilled at its register cap. The forward's output only: the
// backward's measured level to 0.06 slower.
template <bool STEPPED, typename T, typename WRITE>
__device__ __forceinline__ void each_output_row(T* row0, i64 s1, int rows, int first, int step, WRITE write) {
    if constexpr (STEPPED) {
        T* row = row0 + first * s1;
        const i64 row_step = step * s1;
        for (int r = first; r < rows; r += step, row += row_step) write(r, row);
    } else {
        for (int r = first; r < rows; r += step) write(r, row0 + r * s1);
    }
}

// A thread's slot of pack j in the staged rows: read straight, or realigned in a row's window.
// STEP 2: the pack's columns are every other element of its span (read_span2).
template <typename T, int P, bool WINDOW, int STEP>
struct StagedRows {
    const T* p;  // row 0's slot of pack j
    int pitch;
    WindowPhases<T> phases;  // WINDOW: the device rows' phases
    __device__ __forceinline__ Pack<T, P> read(int r) const {
        if constexpr (WINDOW) {
            return window_pack<T, P>(p + r * pitch, phases.at(r));
        } else {
            return read_columns_pack<T, P, STEP>(p + r * pitch);
        }
    }
};

template <typename T, int P, bool WINDOW, int STEP>
__device__ __forceinline__ StagedRows<T, P, WINDOW, STEP> staged_rows(const T* stage, int j, int pitch, const T* row0,
                                                                      i64 s1) {
    static_assert(STEP == 1 || (STEP == 2 && !WINDOW), "inputs that step along inner are staged on their boundaries");
    return StagedRows<T, P, WINDOW, STEP>{stage + j * P * STEP, pitch, WindowPhases<T>::of(row0, s1)};
}

// Each of a thread's P columns' sum of exp(x - m[i]) over `rows` staged rows, m[i] its maximum there
// (ShiftedSums).
template <bool FUSED, typename T, int P, bool WINDOW, int STEP, typename LOAD>
__device__ __forceinline__ void staged_sums(const LOAD& in, const StagedRows<T, P, WINDOW, STEP>& staged, int rows,
                                            int first, int step, const float (&m)[P], float (&s)[P]) {
    const ShiftedSums<FUSED, P> sums(m, s);
    int r = first;
    for (; r + 3 * step < rows; r += 4 * step) {
        float v[4][P];
#pragma unroll
        for (int u = 0; u < 4; ++u) in.template convert<P>(staged.read(r + u * step), v[u]);
#pragma unroll
        for (int u = 0; u < 4; ++u) sums.add(s, v[u]);
    }
    for (; r < rows; r += step) {
        float v[P];
        in.template convert<P>(staged.read(r), v);
        sums.add(s, v);
    }
    sums.finish(m, s);
}

// The (max, sum) pairs of a thread's P columns over `rows` staged rows: the maximum first, then the
// sum of exp(x - max) in a second walk over shared memory (one exponential per element), by
// ExpShift's one FFMA where FUSE (softmax; see held_pair) and every column's maximum allows, a
// subtract an element fewer (not in a window, whose 16-bit kernel then spilled). The pairs are taken
// as `state` where `first_rows` (merged with an empty pair, to the same values, they cost P
// rescales), else merged into it. With each_output_row, alternated with the earlier form on the
// H200: bf16 level, float32 level to 0.04 of copy ahead (results 2026-11-28_h200_s33/staged_final_ab.txt;
// Nsight Compute had counted 26 instructions an element on bf16 (8, 150, 128, 128), a third of them
// once a tile: ncu_source_staged_bf16.txt).
template <bool FUSE, typename T, int P, bool WINDOW, int STEP, typename LOAD>
__device__ __forceinline__ void staged_stats(const LOAD& in, const StagedRows<T, P, WINDOW, STEP>& staged, int rows,
                                             int first, int step, MaxSum* state, bool first_rows) {
    float m[P], s[P];
#pragma unroll
    for (int i = 0; i < P; ++i) m[i] = neg_inf();
    int r = first;
    for (; r + 3 * step < rows; r += 4 * step) {
        Pack<T, P> raw[4];
#pragma unroll
        for (int u = 0; u < 4; ++u) raw[u] = staged.read(r + u * step);
        float v[P];
        in.template max_of<P, 4>(raw, v);
#pragma unroll
        for (int i = 0; i < P; ++i) m[i] = fmaxf(m[i], v[i]);
    }
    for (; r < rows; r += step) {
        float v[P];
        in.template convert<P>(staged.read(r), v);
#pragma unroll
        for (int i = 0; i < P; ++i) m[i] = fmaxf(m[i], v[i]);
    }
    if (FUSE && all_fused<P>(m)) {
        staged_sums<true>(in, staged, rows, first, step, m, s);
    } else {
        staged_sums<false>(in, staged, rows, first, step, m, s);
    }
    if (first_rows) {
#pragma unroll
        for (int i = 0; i < P; ++i) state[i] = MaxSum{m[i], s[i]};
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i) state[i] = merge(state[i], MaxSum{m[i], s[i]});
    }
}

template <typename T, int P, bool LOG, bool CLUSTER, bool WINDOW, bool FOLD, typename LOAD, typename STORE>
__device__ __forceinline__ void staged_forward(LOAD in, STORE out, float* ws, i64 outer, i64 n, i64 inner,
                                               i64 geometry, i64 chunk, i64 splits) {
    extern __shared__ __align__(16) unsigned char staged_smem[];
    constexpr int S = LOAD::kStep;
    const StagedGeometry geo = staged_geometry<P, WINDOW, S, T>(outer, inner, geometry, in.base);
    T* stage = reinterpret_cast<T*>(staged_smem);
    const i64 stage_bytes = ((i64)geo.stage_rows * geo.pitch * (i64)sizeof(T) + 15) / 16 * 16;
    const StagedScratch<P, true> scratch{reinterpret_cast<float*>(staged_smem + stage_bytes)};
    MaxSum* post = reinterpret_cast<MaxSum*>(scratch.base + kStagedThreads * P);  // a pair a tile column
    int* counters = reinterpret_cast<int*>(ws);
    MaxSum* pairs = reinterpret_cast<MaxSum*>(ws + counter_words(geo.tiles));

    const int t = threadIdx.x;
    const int L = geo.packs_per_row;
    const int G = geo.groups;
    const int j = t % L;
    const int g = t / L;
    const int pitch = geo.pitch;
    const i64 teams = gridDim.x / splits;
    const i64 team = blockIdx.x / splits;
    const i64 split = blockIdx.x - team * splits;
    const bool flat = !WINDOW && S == 1 && geo.tile_cols == inner && in.s1 == inner && out.s1 == inner;
    // the output's rows take P-element packs where copies were allowed that wide (always for a
    // stepped input: the host stages its spans in 16-byte pieces)
    const bool direct = S > 1 || geo.width >= P * (int)sizeof(T);

    stagger_first_tile(geometry, team);
    for (i64 tile = team; tile < geo.tiles; tile += teams) {
        const StagedPiece pc = staged_piece<P, WINDOW>(geo, tile, split, n, inner, chunk);
        const bool active = g < G && j * P < pc.cols && (!WINDOW || (j + 1) * P > pc.lo);
        MaxSum state[P];
#pragma unroll
        for (int i = 0; i < P; ++i) state[i] = empty_maxsum();
        for (int p = 0; p < pc.sub_pieces; ++p) {
            const int sub = pc.staging(p);
            const i64 k = pc.k0 + (i64)sub * geo.stage_rows;
            const int rows = pc.sub_rows(sub, geo.stage_rows);
            // two halves in two copy groups: the first half's statistics overlap the second's copy
            const int half = rows / 2 / kStagedHalfAlign * kStagedHalfAlign;
            __syncthreads();  // the buffer is free again
            stage_piece_rows<T, WINDOW, S>(geo, pc, stage, in.at(pc.o, k, pc.c0), in.s1, half, pitch, flat);
            copy_async_commit();
            stage_piece_rows<T, WINDOW, S>(geo, pc, stage + half * pitch, in.at(pc.o, k + half, pc.c0), in.s1,
                                           rows - half, pitch, flat);
            copy_async_commit();
            copy_async_wait_group<1>();
            __syncthreads();
            if (active) {
                const T* row0 = in.at(pc.o, k, pc.c0);
                const auto staged = staged_rows<T, P, WINDOW, S>(stage, j, pitch, row0, in.s1);
                staged_stats<!LOG && !WINDOW>(in, staged, half, g, G, state, p == 0);
            }
            copy_async_wait_group<0>();
            __syncthreads();
            if (active) {
                const T* row0 = in.at(pc.o, k + half, pc.c0);
                const T* staged = stage + half * pitch;
                const auto rest = staged_rows<T, P, WINDOW, S>(staged, j, pitch, row0, in.s1);
                staged_stats<!LOG && !WINDOW>(in, rest, rows - half, g, G, state, false);
            }
        }
        if constexpr (FOLD) {
            fold_pairs<P>(scratch.base, state, L, geo.fold);
        } else {
            merge_pairs<P>(scratch, state, G, L);
        }
        if constexpr (CLUSTER) {
            merge_team_pairs<P>(ClusterTeam<MaxSum>{post}, scratch, state, G, L, pc.posts, splits);
        } else if (splits > 1) {
            const GlobalTeam<MaxSum> team{pairs + tile * splits * geo.tile_cols, counters + tile, split, splits,
                                          geo.tile_cols};
            merge_team_pairs<P>(team, scratch, state, G, L, pc.posts, splits);
        }
        // (FusedNormaliser's output, an FFMA fewer an element and no logf a column, measured 0.01-0.03
        // of copy slower on the H200 in bf16: results 2026-11-28_h200_s33/staged_forward_variants.txt)
        RowScale scale[P];
#pragma unroll
        for (int i = 0; i < P; ++i) scale[i] = row_scale(state[i]);

        // the walk's last sub-piece is still staged: write it first, then re-stage the others
        for (int p = pc.sub_pieces - 1; p >= 0; --p) {
            const int sub = pc.staging(p);
            const i64 k = pc.k0 + (i64)sub * geo.stage_rows;
            const int rows = pc.sub_rows(sub, geo.stage_rows);
            if (p != pc.sub_pieces - 1) {
                __syncthreads();
                stage_piece_rows<T, WINDOW, S>(geo, pc, stage, in.at(pc.o, k, pc.c0), in.s1, rows, pitch, flat);
                copy_async_wait();
                __syncthreads();
            }
            if (WINDOW || direct) {
                // packs go straight to device memory: as wide there as in shared memory (a window's
                // every lane takes part: store_window's shuffle)
                if (WINDOW || active) {
                    const auto staged = staged_rows<T, P, WINDOW, S>(stage, j, pitch, in.at(pc.o, k, pc.c0), in.s1);
                    each_output_row<!WINDOW>(out.at(pc.o, k, pc.c0), out.s1, rows, g, G, [&](int r, T* dst) {
                        float v[P];
                        in.template convert<P>(staged.read(r), v);
#pragma unroll
                        for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale[i]);
                        store_staged<T, P, WINDOW>(dst, out.template convert<P>(v), j, L, pc);
                    });
                }
                continue;
            }
            if (active) {
                T* ps = stage + j * P;
                for (int r = g; r < rows; r += G) {
                    float v[P];
                    in.template convert<P>(read_pack<T, P>(ps + r * pitch), v);
#pragma unroll
                    for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale[i]);
                    write_pack<T, P>(ps + r * pitch, out.template convert<P>(v));
                }
            }
            __syncthreads();
            copy_piece_any<T, false>(geo.width, stage, out.row(pc.o, k) + pc.c0, out.s1, rows, pc.cols, pitch, flat);
        }
        __syncthreads();  // the next tile overwrites the buffer and the scratch read above
        if constexpr (CLUSTER) ClusterTeam<MaxSum>{post}.release();
    }
}

template <typename T, int P, bool LOG, bool CLUSTER, bool WINDOW, bool FOLD, typename LOAD, typename STORE>
__device__ __forceinline__ void staged_backward(LOAD y_in, LOAD dy_in, STORE dx_out, float* ws, i64 outer, i64 n,
                                                i64 inner, i64 geometry, i64 chunk, i64 splits) {
    extern __shared__ __align__(16) unsigned char staged_smem[];
    constexpr int S = LOAD::kStep;
    const StagedGeometry geo = staged_geometry<P, WINDOW, S, T>(outer, inner, geometry, y_in.base);
    const i64 stage_bytes = ((i64)geo.stage_rows * geo.pitch * (i64)sizeof(T) + 15) / 16 * 16;
    T* stage_y = reinterpret_cast<T*>(staged_smem);
    T* stage_dy = reinterpret_cast<T*>(staged_smem + stage_bytes);
    const StagedScratch<P, false> scratch{reinterpret_cast<float*>(staged_smem + 2 * stage_bytes)};
    float* post = scratch.base + blockDim.x * P;  // a value a tile column
    int* counters = reinterpret_cast<int*>(ws);
    float* sums = ws + counter_words(geo.tiles);

    const int t = threadIdx.x;
    const int L = geo.packs_per_row;
    const int G = geo.groups;
    const int j = t % L;
    const int g = t / L;
    const int pitch = geo.pitch;
    const i64 teams = gridDim.x / splits;
    const i64 team = blockIdx.x / splits;
    const i64 split = blockIdx.x - team * splits;
    const bool flat = !WINDOW && S == 1 && geo.tile_cols == inner && y_in.s1 == inner && dy_in.s1 == inner &&
                      dx_out.s1 == inner;
    const bool direct = S > 1 || geo.width >= P * (int)sizeof(T);

    stagger_first_tile(geometry, team);
    for (i64 tile = team; tile < geo.tiles; tile += teams) {
        const StagedPiece pc = staged_piece<P, WINDOW>(geo, tile, split, n, inner, chunk);
        const bool active = g < G && j * P < pc.cols && (!WINDOW || (j + 1) * P > pc.lo);
        float sum[P];
#pragma unroll
        for (int i = 0; i < P; ++i) sum[i] = 0.0f;
        for (int p = 0; p < pc.sub_pieces; ++p) {
            const int sub = pc.staging(p);
            const i64 k = pc.k0 + (i64)sub * geo.stage_rows;
            const int rows = pc.sub_rows(sub, geo.stage_rows);
            __syncthreads();
            // the log-softmax's sum reads dy alone: dy's copies in a group of their own, waited on
            // before the sum; y staged only where the write pass keeps it (the walk's last piece), its
            // copies landing while the sums merge and the team meets
            const bool stage_y_after = LOG && p == pc.sub_pieces - 1;
            if constexpr (!LOG)
                stage_piece_rows<T, WINDOW, S>(geo, pc, stage_y, y_in.at(pc.o, k, pc.c0), y_in.s1, rows, pitch, flat);
            stage_piece_rows<T, WINDOW, S>(geo, pc, stage_dy, dy_in.at(pc.o, k, pc.c0), dy_in.s1, rows, pitch, flat);
            copy_async_commit();
            if (stage_y_after) {
                stage_piece_rows<T, WINDOW, S>(geo, pc, stage_y, y_in.at(pc.o, k, pc.c0), y_in.s1, rows, pitch, flat);
                copy_async_commit();
                copy_async_wait_group<1>();
            } else {
                copy_async_wait_group<0>();
            }
            __syncthreads();
            // (two halves in two copy groups, as the forward, the first half's sums overlapping the second's
            // copy, measured 0.03-0.17 of copy slower on the H200: results
            // 2026-11-28_h200_s33/staged_forward_ab.txt)
            if (active) {
                const auto ys = staged_rows<T, P, WINDOW, S>(stage_y, j, pitch, y_in.at(pc.o, k, pc.c0), y_in.s1);
                const auto dys = staged_rows<T, P, WINDOW, S>(stage_dy, j, pitch, dy_in.at(pc.o, k, pc.c0), dy_in.s1);
                int r = g;
                for (; r + 3 * G < rows; r += 4 * G) {
                    float yv[4][P], dyv[4][P];
#pragma unroll
                    for (int u = 0; u < 4; ++u) {
                        // (the log-softmax's sum never reads y: its copies may still be landing)
                        if constexpr (!LOG) y_in.template convert<P>(ys.read(r + u * G), yv[u]);
                        dy_in.template convert<P>(dys.read(r + u * G), dyv[u]);
                    }
#pragma unroll
                    for (int u = 0; u < 4; ++u)
#pragma unroll
                        for (int i = 0; i < P; ++i) sum[i] += backward_term<LOG>(LOG ? 0.0f : yv[u][i], dyv[u][i]);
                }
                for (; r < rows; r += G) {
                    float yv[P], dyv[P];
                    if constexpr (!LOG) y_in.template convert<P>(ys.read(r), yv);
                    dy_in.template convert<P>(dys.read(r), dyv);
#pragma unroll
                    for (int i = 0; i < P; ++i) sum[i] += backward_term<LOG>(LOG ? 0.0f : yv[i], dyv[i]);
                }
            }
        }
        if constexpr (FOLD) {
            fold_sums<P>(scratch, sum, geo.tile_cols, geo.fold);
        } else {
            if (g < G) {
#pragma unroll
                for (int i = 0; i < P; ++i) scratch.at(t, i) = sum[i];
            }
            merge_groups<P>(scratch, G, L, AddOp());
        }

        if constexpr (CLUSTER) {
            merge_team_sums<P>(ClusterTeam<float>{post}, scratch, G, L, pc.posts, splits);
        } else if (splits > 1) {
            float* tile_sums = sums + tile * splits * geo.tile_cols;
            if (t < pc.posts) tile_sums[split * geo.tile_cols + t] = scratch.column(t);
            team_barrier(counters + tile, splits);
            float total[P];
#pragma unroll
            for (int i = 0; i < P; ++i) total[i] = 0.0f;
            if (active) {
                for (i64 q = g; q < splits; q += G) {
                    const float* part = tile_sums + q * geo.tile_cols + j * P;
#pragma unroll
                    for (int i = 0; i < P; ++i) total[i] += __ldcg(part + i);
                }
            }
            if (g < G) {
#pragma unroll
                for (int i = 0; i < P; ++i) scratch.at(t, i) = total[i];
            }
            merge_groups<P>(scratch, G, L, AddOp());
        }
        float total[P];
#pragma unroll
        for (int i = 0; i < P; ++i) total[i] = scratch.at(j, i);
        if constexpr (LOG) {  // the walk's last piece's y, staged behind its dy
            copy_async_wait();
            __syncthreads();
        }

        for (int p = pc.sub_pieces - 1; p >= 0; --p) {
            const int sub = pc.staging(p);
            const i64 k = pc.k0 + (i64)sub * geo.stage_rows;
            const int rows = pc.sub_rows(sub, geo.stage_rows);
            if (p != pc.sub_pieces - 1) {
                __syncthreads();
                stage_piece_rows<T, WINDOW, S>(geo, pc, stage_y, y_in.at(pc.o, k, pc.c0), y_in.s1, rows, pitch, flat);
                stage_piece_rows<T, WINDOW, S>(geo, pc, stage_dy, dy_in.at(pc.o, k, pc.c0), dy_in.s1, rows, pitch, flat);
                copy_async_wait();
                __syncthreads();
            }
            if (WINDOW || direct) {
                // a window's every lane takes part (store_window's shuffle)
                if (WINDOW || active) {
                    const auto ys = staged_rows<T, P, WINDOW, S>(stage_y, j, pitch, y_in.at(pc.o, k, pc.c0), y_in.s1);
                    const auto dys =
                        staged_rows<T, P, WINDOW, S>(stage_dy, j, pitch, dy_in.at(pc.o, k, pc.c0), dy_in.s1);
                    // (each_output_row's stepped addresses measured level to 0.06 of copy slower here on the
                    // H200: results 2026-11-28_h200_s33/staged_final_ab.txt)
                    T* dst = dx_out.at(pc.o, k, pc.c0);
                    for (int r = g; r < rows; r += G) {
                        float yv[P], dyv[P];
                        y_in.template convert<P>(ys.read(r), yv);
                        dy_in.template convert<P>(dys.read(r), dyv);
#pragma unroll
                        for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total[i]);
                        store_staged<T, P, WINDOW>(dst + r * dx_out.s1, dx_out.template convert<P>(yv), j, L, pc);
                    }
                }
                continue;
            }
            if (active) {
                T* py = stage_y + j * P;
                const T* pdy = stage_dy + j * P;
                for (int r = g; r < rows; r += G) {
                    float yv[P], dyv[P];
                    y_in.template convert<P>(read_pack<T, P>(py + r * pitch), yv);
                    dy_in.template convert<P>(read_pack<T, P>(pdy + r * pitch), dyv);
#pragma unroll
                    for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total[i]);
                    write_pack<T, P>(py + r * pitch, dx_out.template convert<P>(yv));
                }
            }
            __syncthreads();
            copy_piece_any<T, false>(geo.width, stage_y, dx_out.row(pc.o, k) + pc.c0, dx_out.s1, rows, pc.cols, pitch,
                                     flat);
        }
        __syncthreads();
        if constexpr (CLUSTER) ClusterTeam<float>{post}.release();
    }
}

}  // namespace fastsoftmax
