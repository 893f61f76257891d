// Tier "grid_row": one huge row (2^20 .. 2^27 elements), or a few, spread over every CTA the GPU
// can hold at once, in one cooperative launch that reads the row from device memory once where
// it fits on chip.
//
// split_row takes such rows in two kernels (per-chunk statistics, then normalise), reading the
// row twice: 0.46 of copy bandwidth on an H100 for 1 x 2^24 bf16. Here the grid is exactly the
// CTAs that can be resident together (the host sizes it from the occupancy query; a cooperative
// launch refuses a grid that cannot be co-resident instead of letting it deadlock), so a CTA can
// wait for all others in the middle of the kernel. Rows go one after another, each over the whole
// grid; CTA b owns `chunk` columns of it (ClusterSlice: chunks of the row's 16-byte packs), and
// per row:
//   1. hold: the first K x threads slots of the slice (slot j: columns first + jP ..) are loaded
//      into registers, the next `smem_slots` copied into dynamic shared memory with cp.async, and
//      the rest, if the chip cannot hold the whole slice, is streamed for its statistics and left
//      in device memory; the streamed part is read last, so that phase 2, which starts with it,
//      finds as much of it as possible still in L2;
//   2. the CTA's (max, sum of exp(x - max)) (backward: sum(dy * y), or sum(dy) for log-softmax)
//      goes to a global workspace of one pair per CTA, then a grid-wide barrier
//      (cooperative_groups' grid sync: the driver's barrier word of the cooperative launch, which
//      resets itself, so repeated launches and CUDA graph replays need no clearing of ours);
//   3. every CTA merges all pairs (a few hundred, from L2) in a block reduction, normalises what
//      it holds and re-reads only the streamed rest, writing y once.
// Pairs of consecutive rows alternate between two halves of the workspace: a CTA can be at most
// one row ahead of another (it passes row r + 1's barrier only once every CTA arrived there, after
// it read row r's pairs), so it never overwrites pairs still being read.
//
// Alignment: slices meet at 16-byte boundaries of the row's memory (ClusterSlice), so only the
// row's own first and last slot are partial: those are read and written element by element,
// never touching bytes outside the row (outside the tensor: initcheck). Rows whose tensors are
// misaligned differently
// (a view x[:, 1:] written to a fresh y) are not held: phase 1 streams its statistics, and phase 2
// re-reads x element by element at the output's packs. Two reads for those, still one launch;
// a per-pack realignment as cluster_tier.cuh's `realign` would keep one read, at the cost of a
// shared-memory buffer as large as the held slice.
//
// -inf / +inf / NaN follow common.cuh and cluster_tier.cuh: a row of -inf gives NaN (as torch),
// +inf or NaN anywhere makes the whole row NaN.
//
// Measured on an H100 against split_row (benchmarks/grid_row_probe.py, alternated in one process):
// faster for the backward of rows that mostly fit on chip (1 x 2^24: 0.67 of copy against 0.48)
// and for float32 forward (1 x 2^24: 0.58 against 0.40), slower for 16-bit forward (bf16 1 x 2^24:
// 0.43 against 0.46) and for rows many times the chip (2^26 16-bit backward). tiers.choose_tier
// takes it where it won (GRID_ROW_ROW_BYTES). About 10 us of a launch are fixed (1 x 2^20 takes
// 12.8 us for 4 MiB moved): the grid barrier and the cooperative launch of a full grid.
//
// Launch: cooperative only (grid.sync() reads the barrier the driver provides with a cooperative
// launch); the thread count is any multiple of 32 up to the launch bound (the host takes 512, one
// CTA per SM, and K packs a thread that compile without spilling: instances.GRID_ROW_HELD_PACKS).
// cooperative_groups.h costs NVRTC about 2.5 s per translation unit, once per instance.
#pragma once

#include <cooperative_groups.h>

#include "common.cuh"
#include "block_regs_tier.cuh"  // copy_async_16, wait_async_copies, block_allreduce
#include "cluster_tier.cuh"     // DirectLoad, DirectStore, ClusterSlice, load_slots, scatter, slot_of, ...

namespace fastsoftmax {

// streamed slots a thread has in flight at once: forward, and backward per tensor (two tensors,
// the same bytes in flight)
constexpr int kGridRowUnroll = 4;
constexpr int kGridRowUnrollBackward = 2;

// The raw pack of slot `col` of a tensor: one 16-byte load when the tensor's packs start at col
// (`aligned`: its misalignment is that of the slots being walked) and the pack lies inside the
// slice, else element by element, the columns outside the slice set to `pad`.
template <typename T, int P, typename LOAD>
__device__ __forceinline__ Pack<T, P> read_slot(const LOAD& load, const T* row, const ClusterSlice<P>& s, i64 col,
                                                bool aligned, float pad) {
    if (aligned && col >= s.begin && col + P <= s.end) return load.template read<P>(row, col);
    Pack<T, P> out;
    const T padding = from_float<T>(pad);
#pragma unroll
    for (int i = 0; i < P; ++i)
        out.elems()[i] = col + i >= s.begin && col + i < s.end ? load.read1(row, col + i) : padding;
    return out;
}

// Slots [from, to) of the slice, walked with first column `first`: thread t takes from + t,
// + blockDim.x, ..., kGridRowUnroll loads in flight before any is used; f(pack, col) each.
template <typename T, int P, typename LOAD, typename F>
__device__ __forceinline__ void stream_slots(const LOAD& load, const T* row, const ClusterSlice<P>& s, i64 first,
                                             int from, int to, bool aligned, float pad, F f) {
    const int step = blockDim.x;
    int j = from + threadIdx.x;
    for (; j + (kGridRowUnroll - 1) * step < to; j += kGridRowUnroll * step) {
        Pack<T, P> raw[kGridRowUnroll];
#pragma unroll
        for (int u = 0; u < kGridRowUnroll; ++u)
            raw[u] = read_slot<T, P>(load, row, s, first + (i64)(j + u * step) * P, aligned, pad);
#pragma unroll
        for (int u = 0; u < kGridRowUnroll; ++u) f(raw[u], first + (i64)(j + u * step) * P);
    }
    for (; j < to; j += step) f(read_slot<T, P>(load, row, s, first + (i64)j * P, aligned, pad), first + (i64)j * P);
}

// stream_slots for the backward's two tensors: slots [from, to) of y and dy walked together,
// kGridRowUnrollBackward pairs of loads in flight; f(y values, dy values, col) each, as floats.
template <typename T, int P, typename LOAD_Y, typename LOAD_DY, typename F>
__device__ __forceinline__ void stream_pairs(const LOAD_Y& load_y, const T* y_row, const LOAD_DY& load_dy,
                                             const T* dy_row, const ClusterSlice<P>& s, i64 row, i64 first, int from,
                                             int to, bool y_aligned, bool dy_aligned, F f) {
    const int step = blockDim.x;
    const auto use = [&](const Pack<T, P>& yr, const Pack<T, P>& dyr, i64 col) {
        float yv[P], dyv[P];
        load_y.template convert<P>(yr, yv, row, col);
        load_dy.template convert<P>(dyr, dyv, row, col);
        f(yv, dyv, col);
    };
    int j = from + threadIdx.x;
    for (; j + (kGridRowUnrollBackward - 1) * step < to; j += kGridRowUnrollBackward * step) {
        Pack<T, P> yr[kGridRowUnrollBackward], dyr[kGridRowUnrollBackward];
#pragma unroll
        for (int u = 0; u < kGridRowUnrollBackward; ++u) {
            const i64 col = first + (i64)(j + u * step) * P;
            yr[u] = read_slot<T, P>(load_y, y_row, s, col, y_aligned, 0.0f);
            dyr[u] = read_slot<T, P>(load_dy, dy_row, s, col, dy_aligned, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < kGridRowUnrollBackward; ++u) use(yr[u], dyr[u], first + (i64)(j + u * step) * P);
    }
    for (; j < to; j += step) {
        const i64 col = first + (i64)j * P;
        use(read_slot<T, P>(load_y, y_row, s, col, y_aligned, 0.0f),
            read_slot<T, P>(load_dy, dy_row, s, col, dy_aligned, 0.0f), col);
    }
}

// Shared-memory slots [0, count) hold slice slots from + 0, from + 1, ...: full packs by cp.async,
// the partial ones element by element with padding. Thread t copies (and later reads) only slots
// t, t + blockDim.x, ...: its own wait_async_copies makes them visible to it, no block barrier.
// Whole slots are told by WholeSlots' two integer compares and the column advances by one add
// (64-bit compares and a multiply a slot cost this loop 31 instructions a slot).
template <typename T, int P>
__device__ __forceinline__ void stage_slots(Pack<T, P>* staged, const T* row, const ClusterSlice<P>& s, i64 first,
                                            int from, int count, float pad) {
    const WholeSlots<P> whole(s, first, slot_count(s, first));
    const i64 step = (i64)blockDim.x * P;
    i64 col = first + (i64)(from + (int)threadIdx.x) * P;
    for (int j = threadIdx.x; j < count; j += blockDim.x, col += step) {
        if (whole(from + j)) {
            copy_async_16(&staged[j], row + col);
        } else {
            const T padding = from_float<T>(pad);
#pragma unroll
            for (int i = 0; i < P; ++i)
                staged[j].elems()[i] = col + i >= s.begin && col + i < s.end ? row[col + i] : padding;
        }
    }
}

// Where a row's slots live: [0, regs) in registers, [regs, regs + smem) in shared memory, the
// rest in device memory. Nothing is held when the tensors' misalignments differ.
struct GridRowHeld {
    int regs, smem;
    __device__ __forceinline__ GridRowHeld(bool hold, int count, int reg_slots, i64 smem_slots) {
        regs = hold ? min(count, reg_slots) : 0;
        smem = hold ? (int)min((i64)(count - regs), smem_slots) : 0;
    }
    __device__ __forceinline__ int total() const { return regs + smem; }
};

// The sum of e.term<FUSED> over a thread's shared-memory slots (thread t: t, t + blockDim.x, ...).
template <bool FUSED, typename T, int P, typename LOAD>
__device__ __forceinline__ float staged_sum(const LOAD& load, const Pack<T, P>* staged, const GridRowHeld& held,
                                            i64 row, i64 first, const ExpShift& e) {
    float sum = 0.0f;
    for (int j = threadIdx.x; j < held.smem; j += blockDim.x) {
        float v[P];
        load.template convert<P>(staged[j], v, row, first + (i64)(held.regs + j) * P);
#pragma unroll
        for (int i = 0; i < P; ++i) sum += e.template term<FUSED>(v[i]);
    }
    return sum;
}

// The (max, sum) pair of a thread's shared-memory slots: their maximum first, then one
// exponential per element against it (FUSE: as held_pair).
template <bool FUSE, typename T, int P, typename LOAD>
__device__ __forceinline__ MaxSum staged_pair(const LOAD& load, const Pack<T, P>* staged, const GridRowHeld& held,
                                              i64 row, i64 first) {
    float m = neg_inf();
    for (int j = threadIdx.x; j < held.smem; j += blockDim.x)
        m = fmaxf(m, load.template max_of<P>(staged[j], row, first + (i64)(held.regs + j) * P));
    const ExpShift e(m);
    if (FUSE && e.fused) return e.template pair<true>(staged_sum<true, T, P>(load, staged, held, row, first, e));
    return e.template pair<false>(staged_sum<false, T, P>(load, staged, held, row, first, e));
}

// ---- forward -------------------------------------------------------------------------------------
template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void grid_row_forward(const LOAD& load, const STORE& store, float* ws, i64 rows, i64 n,
                                                 i64 smem_slots) {
    extern __shared__ __align__(16) unsigned char grid_row_smem[];
    __shared__ MaxSum cta_slots[32];
    __shared__ MaxSum merge_slots[32];
    Pack<T, P>* staged = reinterpret_cast<Pack<T, P>*>(grid_row_smem);
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    const int ctas = (int)gridDim.x;

    for (i64 row = 0; row < rows; ++row) {
        const T* src = load.row_ptr(row);
        const int shift = misalignment<T, P>(src);
        const int out_shift = misalignment<T, P>(store.row_ptr(row));
        const ClusterSlice<P> slice(n, shift, blockIdx.x, gridDim.x);
        const i64 first = slice.first(shift);
        const int count = slot_count(slice, first);
        const GridRowHeld held(shift == out_shift, count, K * (int)blockDim.x, smem_slots);

        Pack<T, P> x[K];
        load_slots<T, P, K>(load, src, slice, first, held.regs, neg_inf(), x);
        stage_slots<T, P>(staged, src, slice, first, held.regs, held.smem, neg_inf());

        MaxSum state = empty_maxsum();
        stream_slots<T, P>(load, src, slice, first, held.total(), count, true, neg_inf(),
                           [&](const Pack<T, P>& raw, i64 col) {
                               float v[P];
                               load.template convert<P>(raw, v, row, col);
                               accumulate<P>(state, v);
                           });
        // the registers (their loads came first), then shared memory once its copies landed: each
        // the maximum first, then one exponential per element against it
        state = merge(state, held_pair<!LOG, T, P, K>(load, x, held.regs, row, first,
                                                      held_max<T, P, K>(load, x, held.regs, row, first)));
        wait_async_copies();
        state = merge(state, staged_pair<!LOG, T, P>(load, staged, held, row, first));

        const MaxSum cta = block_allreduce(state, empty_maxsum(), cta_slots, WarpMaxSum());
        float* pairs = ws + 2 * (row & 1) * ctas;
        if (threadIdx.x == 0) {
            pairs[2 * blockIdx.x] = cta.max;
            pairs[2 * blockIdx.x + 1] = cta.sum;
        }
        grid.sync();
        // L2 reads (__ldcg): this SM's L1 may still hold the pairs of two rows ago
        MaxSum all = empty_maxsum();
        for (int b = threadIdx.x; b < ctas; b += blockDim.x)
            all = merge(all, MaxSum{__ldcg(pairs + 2 * b), __ldcg(pairs + 2 * b + 1)});
        const MaxSum total = block_allreduce(all, empty_maxsum(), merge_slots, WarpMaxSum());

        // As the cluster tier: a row of -inf gives 0 * inf or -inf - -inf, NaN, as torch does.
        const RowOutput<LOG, T> out(total);
        const auto write = [&](float* v, i64 col) {
            out.template apply<P>(v);
            scatter<T, P>(store, slice, row, col, v);
        };
        // the streamed rest first: the most recently read, the likeliest still in L2
        const i64 out_first = slice.first(out_shift);
        stream_slots<T, P>(load, src, slice, out_first, held.total(), slot_count(slice, out_first),
                           shift == out_shift, 0.0f, [&](const Pack<T, P>& raw, i64 col) {
                               float v[P];
                               load.template convert<P>(raw, v, row, col);
                               write(v, col);
                           });
        for (int j = threadIdx.x; j < held.smem; j += blockDim.x) {
            const i64 col = first + (i64)(held.regs + j) * P;
            float v[P];
            load.template convert<P>(staged[j], v, row, col);
            write(v, col);
        }
        write_held<T, P, K>(load, store, slice, x, held.regs, row, first, out);
        // the next row's copies land in shared memory this thread may still be reading
        if (row + 1 < rows) __syncthreads();
    }
}

// ---- backward ------------------------------------------------------------------------------------
// f(y values, dy values, col) over the slots the backward holds: registers, then shared memory.
// A function template, not a generic lambda: NVRTC before 13.5 takes a generic lambda in device
// code for a host function.
template <typename T, int P, int K, typename LOAD, typename F>
__device__ __forceinline__ void each_held_pair(const LOAD& load_y, const LOAD& load_dy, Pack<T, P> (&y)[K],
                                               Pack<T, P> (&dy)[K], const Pack<T, P>* staged_y,
                                               const Pack<T, P>* staged_dy, const GridRowHeld& held, i64 row,
                                               i64 first, const F& f) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (slot_of(k) < held.regs) {
            const i64 col = first + (i64)slot_of(k) * P;
            float yv[P], dyv[P];
            load_y.template convert<P>(y[k], yv, row, col);
            load_dy.template convert<P>(dy[k], dyv, row, col);
            f(yv, dyv, col);
        }
    }
    wait_async_copies();
    for (int j = threadIdx.x; j < held.smem; j += blockDim.x) {
        const i64 col = first + (i64)(held.regs + j) * P;
        float yv[P], dyv[P];
        load_y.template convert<P>(staged_y[j], yv, row, col);
        load_dy.template convert<P>(staged_dy[j], dyv, row, col);
        f(yv, dyv, col);
    }
}

// y and dy held side by side (K register slots and smem_slots shared-memory slots each), when y,
// dy and dx share their misalignment.
template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void grid_row_backward(const LOAD& load_y, const LOAD& load_dy, const STORE& store,
                                                  float* ws, i64 rows, i64 n, i64 smem_slots) {
    extern __shared__ __align__(16) unsigned char grid_row_smem[];
    __shared__ float cta_slots[32];
    __shared__ float merge_slots[32];
    Pack<T, P>* staged_y = reinterpret_cast<Pack<T, P>*>(grid_row_smem);
    Pack<T, P>* staged_dy = staged_y + smem_slots;
    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    const int ctas = (int)gridDim.x;

    for (i64 row = 0; row < rows; ++row) {
        const T* y_row = load_y.row_ptr(row);
        const T* dy_row = load_dy.row_ptr(row);
        const int shift = misalignment<T, P>(y_row);
        const int dy_shift = misalignment<T, P>(dy_row);
        const int out_shift = misalignment<T, P>(store.row_ptr(row));
        const ClusterSlice<P> slice(n, shift, blockIdx.x, gridDim.x);
        const i64 first = slice.first(shift);
        const int count = slot_count(slice, first);
        const GridRowHeld held(shift == dy_shift && shift == out_shift, count, K * (int)blockDim.x, smem_slots);

        Pack<T, P> y[K], dy[K];
        load_slots<T, P, K>(load_y, y_row, slice, first, held.regs, 0.0f, y);
        load_slots<T, P, K>(load_dy, dy_row, slice, first, held.regs, 0.0f, dy);
        stage_slots<T, P>(staged_y, y_row, slice, first, held.regs, held.smem, 0.0f);
        stage_slots<T, P>(staged_dy, dy_row, slice, first, held.regs, held.smem, 0.0f);

        float sum = 0.0f;
        const auto accumulate = [&](const float* yv, const float* dyv, i64) {
#pragma unroll
            for (int i = 0; i < P; ++i) sum += backward_term<LOG>(yv[i], dyv[i]);
        };
        // the rest, walked at y's packs: dy in packs too where it shares y's misalignment
        stream_pairs<T, P>(load_y, y_row, load_dy, dy_row, slice, row, first, held.total(), count, true,
                           dy_shift == shift, accumulate);
        each_held_pair<T, P, K>(load_y, load_dy, y, dy, staged_y, staged_dy, held, row, first, accumulate);

        const float cta = block_allreduce(sum, 0.0f, cta_slots, WarpSum());
        float* sums = ws + (row & 1) * ctas;
        if (threadIdx.x == 0) sums[blockIdx.x] = cta;
        grid.sync();
        float all = 0.0f;
        for (int b = threadIdx.x; b < ctas; b += blockDim.x) all += __ldcg(sums + b);
        const float total = block_allreduce(all, 0.0f, merge_slots, WarpSum());

        const auto write = [&](float* yv, const float* dyv, i64 col) {
#pragma unroll
            for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total);
            scatter<T, P>(store, slice, row, col, yv);
        };
        const i64 out_first = slice.first(out_shift);
        stream_pairs<T, P>(load_y, y_row, load_dy, dy_row, slice, row, out_first, held.total(),
                           slot_count(slice, out_first), shift == out_shift, dy_shift == out_shift, write);
        each_held_pair<T, P, K>(load_y, load_dy, y, dy, staged_y, staged_dy, held, row, first, write);
        if (row + 1 < rows) __syncthreads();
    }
}

}  // namespace fastsoftmax
