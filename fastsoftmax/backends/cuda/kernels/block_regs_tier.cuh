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
//
// Two block reductions per row, the maximum and then the sum, each with a single barrier
// (block_allreduce). Merging per-thread (max, sum) pairs instead would save the second barrier, but
// every level of that merge costs exponentials: measured on an H100, it cut 16-bit rows of 512 to
// 4096 columns from 0.99 to 0.73-0.90 of copy bandwidth.
//
// Storage, RAW: the row's bytes in flight per SM are what hides memory latency, and registers bound
// them. Held as float32, a 16-bit row takes twice its size in registers; held RAW, as the loaded
// 16-bit packs, twice as many rows fit, at the price of a second exponential per element when
// writing. The host takes RAW for long 16-bit rows (forward) and for all 16-bit backward, which
// needs no exponential for softmax.
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

// A thread's share of a row: PACKS packs of P elements, as float32 or as the raw loaded packs.
// Columns are 32-bit: rows of this tier hold at most 32768 elements.
template <typename T, int P, int PACKS, bool RAW>
struct RowShare {
    float f[RAW ? 1 : PACKS][P];
    Pack<T, P> raw[RAW ? PACKS : 1];

    static __device__ __forceinline__ int column(int u) { return (threadIdx.x + u * blockDim.x) * P; }

    __device__ __forceinline__ void load(const T* src, int n) {
#pragma unroll
        for (int u = 0; u < PACKS; ++u) {
            const int col = column(u);
            if (col + P <= n) {
                if constexpr (RAW) {
                    raw[u] = read_pack<T, P>(src + col);
                } else {
                    load_pack<T, P>(src + col, f[u]);
                }
            } else {
                // the padding of a raw pack is -inf in T itself
                float v[P];
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = col + i < n ? to_float(src[col + i]) : neg_inf();
                if constexpr (RAW) {
                    raw[u] = make_pack<T, P>(v);
                } else {
#pragma unroll
                    for (int i = 0; i < P; ++i) f[u][i] = v[i];
                }
            }
        }
    }

    // Pack u as float32.
    __device__ __forceinline__ void get(int u, float (&v)[P]) const {
        if constexpr (RAW) {
            unpack<T, P>(raw[u], v);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = f[u][i];
        }
    }

    static __device__ __forceinline__ void store(T* dst, int n, int u, const float (&v)[P]) {
        const int col = column(u);
        if (col + P <= n) {
            store_pack<T, P>(dst + col, v);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i)
                if (col + i < n) dst[col + i] = from_float<T>(v[i]);
        }
    }
};

template <typename T, int P, int PACKS, bool LOG, bool RAW>
__device__ __forceinline__ void block_regs_forward(const T* x, T* y, i64 rows, i64 n64, i64 x_pitch, i64 y_pitch) {
    __shared__ float max_slots[32];
    __shared__ float sum_slots[32];
    const int n = (int)n64;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        RowShare<T, P, PACKS, RAW> share;
        share.load(x + row * x_pitch, n);

        float m = neg_inf();
#pragma unroll
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
#pragma unroll
        for (int u = 0; u < PACKS; ++u) {
            float v[P];
            share.get(u, v);
#pragma unroll
            for (int i = 0; i < P; ++i) {
                const float e = fast_exp(v[i] - shift);
                s += e;
                if constexpr (!RAW) share.f[u][i] = LOG ? v[i] - shift : e;
            }
        }
        s = block_allreduce(s, 0.0f, sum_slots, WarpSum());
        const float inv_sum = 1.0f / s;
        const float log_sum = logf(s);

        T* dst = y + row * y_pitch;
#pragma unroll
        for (int u = 0; u < PACKS; ++u) {
            float v[P];
            if constexpr (RAW) {  // the exponential again, from the input
                share.get(u, v);
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = LOG ? (v[i] - shift) - log_sum : fast_exp(v[i] - shift) * inv_sum;
            } else {
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = LOG ? share.f[u][i] - log_sum : share.f[u][i] * inv_sum;
            }
            share.store(dst, n, u, v);
        }
    }
}

// Backward needs one sum (of dy * y, or of dy for log-softmax) and no maximum.
template <typename T, int P, int PACKS, bool LOG, bool RAW>
__device__ __forceinline__ void block_regs_backward(const T* y, const T* dy, T* dx, i64 rows, i64 n64, i64 y_pitch,
                                                    i64 dy_pitch, i64 dx_pitch) {
    __shared__ float slots[2][32];
    const int n = (int)n64;
    int parity = 0;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
        RowShare<T, P, PACKS, RAW> ys, dys;
        ys.load(y + row * y_pitch, n);
        dys.load(dy + row * dy_pitch, n);
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < PACKS; ++u) {
            float yv[P], dyv[P];
            ys.get(u, yv);
            dys.get(u, dyv);
            const int col = ys.column(u);
#pragma unroll
            for (int i = 0; i < P; ++i)
                // padding reads as -inf in both: skip it rather than add -inf * -inf
                if (col + i < n) s += backward_term<LOG>(yv[i], dyv[i]);
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
            ys.store(dst, n, u, yv);
        }
    }
}

}  // namespace fastsoftmax
