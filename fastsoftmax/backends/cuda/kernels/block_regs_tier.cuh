// Tier "block_regs": one thread block per row, the whole row held in registers. For rows longer
// than a warp holds well and short enough for one block's registers (32768 columns forward; 32768
// backward for 16-bit types, 16384 for float32).
//
// Why a tier of its own, beside block_smem: with the row in registers each element is read once
// and nothing waits on shared memory between the passes. And one block per row, launched one block
// per row rather than grid-stride over resident blocks: the hardware starts a new block the moment
// one ends, so one row's reduction overlaps other rows' loads without the kernel arranging it.
//
// Thread t holds packs t, t + blockDim.x, ..., PACKS of them, so at each step the block reads one
// contiguous stretch of blockDim.x * P elements. Columns past the row end read as -inf (their
// exponential is 0) and are never written; a pack that straddles the end goes element by element.
// WINDOW: a row off a 16-byte boundary is held in the 16-byte packs of the aligned window around it,
// as in the warp tier (warp_tier.cuh): pack columns start `shift` elements before the row's first.
//
// Two block reductions per row, the maximum and then the sum, each with a single barrier
// (block_allreduce). Merging per-thread (max, sum) pairs instead would save the second barrier, but
// every level of that merge costs exponentials: measured on an H100, it cut 16-bit rows of 512 to
// 4096 columns from 0.99 to 0.73-0.90 of copy bandwidth.
//
// Storage, RAW: the row's bytes in flight per SM are what hides memory latency, and registers bound
// them. Held as float32, a 16-bit row takes twice its size in registers; held RAW, as the loaded
// 16-bit packs, twice as many rows fit, at the price of a second exponential per element when
// writing. The host takes RAW for all 16-bit backward, which needs no exponential for softmax.
//
// Storage, STAGED: the longest 16-bit rows outgrow the registers even raw (64 elements a thread
// leave room for one row per SM, and every barrier then idles the SM). STAGED keeps the raw packs
// in shared memory instead, filled by asynchronous copies (cp.async, sm_80+) that go from global
// to shared memory without passing through registers: a thread needs registers for one pack at a
// time, a 32768-column row takes 64 KiB, and three rows share an SM, so two rows' loads stay in
// flight while the third reduces. Each thread reads back only the slots it filled itself, so its
// own cp.async.wait_all is the only synchronisation the copies need. 16-byte packs only (the copy
// size), which the host guarantees by taking STAGED for 16-byte packs only (rows aligned to 16
// bytes, or held in their window). Measured on an
// H100 against RAW at 64 elements a thread (benchmarks/cuda_probe.py, alternated in one process):
// 32768 columns 0.96 of copy against 0.85-0.90, 12288 columns 0.95 against 0.82.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

// Reduce v over the block and return the result in every thread, with a single barrier. `slots`
// holds one partial per warp. A fast warp can reach the next call while a slow one has not yet read
// the slots, so consecutive calls must use two different slot arrays: a warp can only write array A
// again after passing the barrier on array B, which every warp reaches after it has read A.
template <typename V, typename WarpReduce>
__device__ __forceinline__ V block_allreduce(V v, V identity, V* slots, WarpReduce warp_reduce) {
    const int lane = threadIdx.x & 31;
    v = warp_reduce(v);
    if (lane == 0) slots[threadIdx.x >> 5] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? slots[lane] : identity;
    return warp_reduce(v);
}

// Where a thread's share of the row lives (see the header).
enum Storage { kFloat = 0, kRaw = 1, kStaged = 2 };

// Waits until at most `pending` (0..3) of this thread's newest groups are still in flight.
__device__ __forceinline__ void wait_async_groups(int pending) {
    switch (pending) {
        case 0: copy_async_wait_group<0>(); break;
        case 1: copy_async_wait_group<1>(); break;
        case 2: copy_async_wait_group<2>(); break;
        default: copy_async_wait_group<3>(); break;
    }
}

// A thread's share of a row: PACKS packs of P elements, as float32, as the raw loaded packs, or
// as raw packs staged in (dynamic) shared memory. Columns are 32-bit: rows of this tier hold at
// most 32768 elements.
template <typename T, int P, int PACKS, int STORAGE, bool WINDOW>
struct RowShare {
    float f[STORAGE == kFloat ? PACKS : 1][P];
    Pack<T, P> raw[STORAGE == kRaw ? PACKS : 1];
    Pack<T, P>* staged;  // kStaged: this thread's pack u is staged[u * blockDim.x]
    // Register storage indexes its arrays with constants only: loops over packs unroll fully. The
    // staged loops unroll in steps, so that the compiler does not hoist every pack's shared
    // memory read (registers for all of them) and three blocks still fit per SM.
    static constexpr int kPackUnroll = STORAGE == kStaged ? 2 : PACKS;

    static __device__ __forceinline__ int column(int u) { return (threadIdx.x + u * blockDim.x) * P; }

    // shift: the row's columns start `shift` into the first pack (WINDOW, see warp_tier.cuh), else 0;
    // span: where a pack across the row's edges may be read whole.
    __device__ __forceinline__ void load(const T* src, int n, int shift, const DenseSpan<T>& span) {
        if constexpr (STORAGE == kStaged) {
            static_assert(sizeof(Pack<T, P>) == 16, "staged rows move as 16-byte packs");
            extern __shared__ __align__(16) unsigned char shared_bytes[];
            staged = reinterpret_cast<Pack<T, P>*>(shared_bytes) + threadIdx.x;
        }
#pragma unroll (kPackUnroll)
        for (int u = 0; u < PACKS; ++u) {
            const int col = column(u) - shift;
            const bool touches = col < n && col + P > 0;
            // Aligned rows keep the form they had before windows existed (shift 0, so col >= 0):
            // the shared form with the window's tests compiled to slower code for them (H100, bf16
            // 8192 x 8192 forward 0.83 of copy against 0.96, benchmarks/results/2026-11-24_h100_s8)
            const bool whole = WINDOW ? touches && pack_readable<T, P>(src, col, n, span) : col + P <= n;
            if (whole) {
                if constexpr (STORAGE == kStaged) {
                    copy_async<16>(&staged[u * blockDim.x], src + col);
                } else if constexpr (STORAGE == kRaw) {
                    raw[u] = read_pack<T, P>(src + col);
                } else {
                    load_pack<T, P>(src + col, f[u]);
                }
            } else if constexpr (WINDOW) {
                // the padding of a raw pack is -inf in T itself
                const Pack<T, P> pack = gather_pack<T, P>(src, col, touches ? n : 0, from_float<T>(neg_inf()));
                if constexpr (STORAGE == kStaged) {
                    staged[u * blockDim.x] = pack;
                } else if constexpr (STORAGE == kRaw) {
                    raw[u] = pack;
                } else {
                    unpack<T, P>(pack, f[u]);
                }
            } else {
                float v[P];
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = col + i < n ? to_float(src[col + i]) : neg_inf();
                if constexpr (STORAGE == kStaged) {
                    staged[u * blockDim.x] = make_pack<T, P>(v);
                } else if constexpr (STORAGE == kRaw) {
                    raw[u] = make_pack<T, P>(v);
                } else {
#pragma unroll
                    for (int i = 0; i < P; ++i) f[u][i] = v[i];
                }
            }
        }
        if constexpr (STORAGE == kStaged) copy_async_wait();
        if constexpr (WINDOW) {  // edge packs read whole: their neighbours' elements become padding
#pragma unroll (kPackUnroll)
            for (int u = 0; u < PACKS; ++u) {
                const int col = column(u) - shift;
                if (col >= 0 && col + P <= n) continue;
                if constexpr (STORAGE == kStaged) {
                    clip_pack<T, P>(staged[u * blockDim.x].elems(), col, n, from_float<T>(neg_inf()));
                } else if constexpr (STORAGE == kRaw) {
                    clip_pack<T, P>(raw[u].elems(), col, n, from_float<T>(neg_inf()));
                } else {
                    clip_pack<T, P>(f[u], col, n, neg_inf());
                }
            }
        }
    }

    // Pack u as float32.
    __device__ __forceinline__ void get(int u, float (&v)[P]) const {
        if constexpr (STORAGE == kStaged) {
            unpack<T, P>(staged[u * blockDim.x], v);
        } else if constexpr (STORAGE == kRaw) {
            unpack<T, P>(raw[u], v);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = f[u][i];
        }
    }

    static __device__ __forceinline__ void store(T* dst, int n, int shift, int u, const float (&v)[P]) {
        const int col = column(u) - shift;
        if constexpr (WINDOW) {
            if (col >= 0 && col + P <= n && pack_aligned<T, P>(dst + col)) {
                store_pack<T, P>(dst + col, v);
            } else if (col < n && col + P > 0) {
                store_edge_pack<T, P>(dst, col, n, v);
            }
        } else if (col + P <= n) {  // as load: the form aligned rows had before windows
            store_pack<T, P>(dst + col, v);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i)
                if (col + i < n) dst[col + i] = from_float<T>(v[i]);
        }
    }
};

template <typename T, int P, int PACKS, bool LOG, int STORAGE, bool WINDOW>
__device__ __forceinline__ void block_regs_forward(const T* x, T* y, i64 rows, i64 n64, i64 x_pitch, i64 y_pitch) {
    typedef RowShare<T, P, PACKS, STORAGE, WINDOW> Share;
    __shared__ float max_slots[32];
    __shared__ float sum_slots[32];
    const int n = (int)n64;
    const DenseSpan<T> span(x, rows, n64, x_pitch);
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        Share share;
        const int window = window_shift<T, P, WINDOW>(x + row * x_pitch);
        share.load(x + row * x_pitch, n, window, span);

        float m = neg_inf();
#pragma unroll (Share::kPackUnroll)
        for (int u = 0; u < PACKS; ++u) {
            float v[P];
            share.get(u, v);
#pragma unroll
            for (int i = 0; i < P; ++i) m = fmaxf(m, v[i]);
        }
        m = block_allreduce(m, neg_inf(), max_slots, WarpMax());
        // A row of -inf subtracts 0: its elements give exp(-inf) = 0, the sum 0 and every output
        // NaN (0 * inf, or -inf - log(0)), as torch gives. A NaN or +inf element makes the sum NaN.
        const float shift = m == neg_inf() ? 0.0f : m;

        float s = 0.0f;
#pragma unroll (Share::kPackUnroll)
        for (int u = 0; u < PACKS; ++u) {
            float v[P];
            share.get(u, v);
#pragma unroll
            for (int i = 0; i < P; ++i) {
                // a held exponential becomes an output (subnormal results kept); one only summed
                // takes the hardware exp2 alone
                const float e = STORAGE == kFloat ? fast_exp(v[i] - shift) : sum_exp(v[i] - shift);
                s += e;
                if constexpr (STORAGE == kFloat) share.f[u][i] = LOG ? v[i] - shift : e;
            }
        }
        s = block_allreduce(s, 0.0f, sum_slots, WarpSum());
        const RowScale scale{shift, 1.0f / s, logf(s)};

        T* dst = y + row * y_pitch;
#pragma unroll (Share::kPackUnroll)
        for (int u = 0; u < PACKS; ++u) {
            float v[P];
            if constexpr (STORAGE != kFloat) {  // the exponential again, from the input
                share.get(u, v);
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale);
            } else {
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = LOG ? share.f[u][i] - scale.log_sum : share.f[u][i] * scale.inv_sum;
            }
            share.store(dst, n, window, u, v);
        }
    }
}

// Backward needs one sum (of dy * y, or of dy for log-softmax) and no maximum.
template <typename T, int P, int PACKS, bool LOG, int STORAGE, bool WINDOW>
__device__ __forceinline__ void block_regs_backward(const T* y, const T* dy, T* dx, i64 rows, i64 n64, i64 y_pitch,
                                                    i64 dy_pitch, i64 dx_pitch) {
    static_assert(STORAGE != kStaged, "y and dy cannot both be staged at the start of shared memory");
    __shared__ float slots[2][32];
    const int n = (int)n64;
    const DenseSpan<T> y_span(y, rows, n64, y_pitch), dy_span(dy, rows, n64, dy_pitch);
    int parity = 0;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
        RowShare<T, P, PACKS, STORAGE, WINDOW> ys, dys;
        const int shift = window_shift<T, P, WINDOW>(y + row * y_pitch);
        ys.load(y + row * y_pitch, n, shift, y_span);
        dys.load(dy + row * dy_pitch, n, shift, dy_span);
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < PACKS; ++u) {
            float yv[P], dyv[P];
            ys.get(u, yv);
            dys.get(u, dyv);
            const int col = ys.column(u) - shift;
#pragma unroll
            for (int i = 0; i < P; ++i)
                // padding reads as -inf in both: skip it rather than add -inf * -inf
                if ((!WINDOW || col + i >= 0) && col + i < n) s += backward_term<LOG>(yv[i], dyv[i]);
        }
        const float total = block_allreduce(s, 0.0f, slots[parity], WarpSum());
        T* dst = dx + row * dx_pitch;
#pragma unroll
        for (int u = 0; u < PACKS; ++u) {
            float yv[P], dyv[P];
            ys.get(u, yv);
            dys.get(u, dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total);
            ys.store(dst, n, shift, u, yv);
        }
    }
}

}  // namespace fastsoftmax
