// Tiers "block_smem" and "block_uncached": one thread block per row, for rows longer than a block
// can hold in registers (block_regs_tier.cuh). Both make two passes over the row. The first folds
// every element into a running (max, sum) pair -- the online normaliser, so one pass finds both --
// and the block merges its threads' pairs once. The second pass writes exp(x - max) / sum.
//
// block_smem keeps the row in shared memory between the passes, so global memory sees exactly
// one read and one write. The row is stored in its own type (half the bytes of float32 for
// 16-bit inputs, so twice the row length fits) and pack by pack, each thread reading back only
// the packs it wrote: a warp's 16-byte accesses cover consecutive addresses, which shared memory
// serves without bank conflicts, and the passes need no barrier between them.
//
// block_uncached re-reads the row from global memory in the second pass. The re-read is served
// from L2 as long as the rows in flight fit there, so it costs far less than a second trip to
// device memory. It has no length limit.
//
// Both passes take kUnroll packs per thread at a time, loading all of them before using any, so
// that each thread keeps kUnroll loads in flight; the host sizes blocks so that a row gives each
// thread about that many packs. Loading a group before storing any of it is safe in place
// (y == x): a thread only ever writes the elements it has just read.
//
// Rows are handed out grid-stride: the host launches as many blocks as fit on the device at once.
// Columns [0, full_packs * P) move as packs; the remaining n % P columns element by element.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

template <typename T, int P, bool LOG, bool CACHED>
__device__ __forceinline__ void block_forward(const T* x, T* y, i64 rows, i64 n, i64 x_pitch, i64 y_pitch) {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    T* cache = reinterpret_cast<T*>(shared_bytes);
    const i64 full_packs = n / P;
    const i64 tail_start = full_packs * P;
    const i64 stride = blockDim.x;

    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* src = x + row * x_pitch;
        T* dst = y + row * y_pitch;

        MaxSum state = empty_maxsum();
        i64 p = threadIdx.x;
        for (; p + (kUnroll - 1) * stride < full_packs; p += kUnroll * stride) {
            Pack<T, P> packs[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) packs[u] = read_pack<T, P>(src + (p + u * stride) * P);
            float v[kUnroll * P];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                if constexpr (CACHED) write_pack<T, P>(cache + (p + u * stride) * P, packs[u]);
                unpack<T, P>(packs[u], v + u * P);
            }
            accumulate<kUnroll * P>(state, v);
        }
        for (; p < full_packs; p += stride) {
            const Pack<T, P> pack = read_pack<T, P>(src + p * P);
            if constexpr (CACHED) write_pack<T, P>(cache + p * P, pack);
            float v[P];
            unpack<T, P>(pack, v);
            accumulate<P>(state, v);
        }
        for (i64 c = tail_start + threadIdx.x; c < n; c += stride) {
            const T raw = src[c];
            if constexpr (CACHED) cache[c] = raw;
            const float v = to_float(raw);
            accumulate<1>(state, &v);
        }
        const RowScale scale = row_scale(block_maxsum(state));

        const T* from = CACHED ? cache : src;
        p = threadIdx.x;
        for (; p + (kUnroll - 1) * stride < full_packs; p += kUnroll * stride) {
            float v[kUnroll][P];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) load_pack<T, P>(from + (p + u * stride) * P, v[u]);
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
                for (int i = 0; i < P; ++i) v[u][i] = normalise<LOG, T>(v[u][i], scale);
                store_pack<T, P>(dst + (p + u * stride) * P, v[u]);
            }
        }
        for (; p < full_packs; p += stride) {
            float v[P];
            load_pack<T, P>(from + p * P, v);
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale);
            store_pack<T, P>(dst + p * P, v);
        }
        for (i64 c = tail_start + threadIdx.x; c < n; c += stride) {
            const float v = to_float(from[c]);
            dst[c] = from_float<T>(normalise<LOG, T>(v, scale));
        }
    }
}

// Backward needs one reduction (sum(dy * y) or sum(dy)) and no maximum. block_smem caches both
// y and dy: the host gives it 2 * n elements of shared memory, y first.
template <typename T, int P, bool LOG, bool CACHED>
__device__ __forceinline__ void block_backward(const T* y, const T* dy, T* dx, i64 rows, i64 n, i64 y_pitch,
                                               i64 dy_pitch, i64 dx_pitch) {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    T* y_cache = reinterpret_cast<T*>(shared_bytes);
    // dy's copy starts at the first 16-byte boundary after n elements, so its packs stay aligned
    T* dy_cache = y_cache + ((n + 15) / 16) * 16;
    const i64 full_packs = n / P;
    const i64 tail_start = full_packs * P;
    const i64 stride = blockDim.x;

    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        const T* y_row = y + row * y_pitch;
        const T* dy_row = dy + row * dy_pitch;
        T* dx_row = dx + row * dx_pitch;

        float partial = 0.0f;
        i64 p = threadIdx.x;
        for (; p + (kUnroll - 1) * stride < full_packs; p += kUnroll * stride) {
            Pack<T, P> y_packs[kUnroll], dy_packs[kUnroll];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                y_packs[u] = read_pack<T, P>(y_row + (p + u * stride) * P);
                dy_packs[u] = read_pack<T, P>(dy_row + (p + u * stride) * P);
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                if constexpr (CACHED) {
                    write_pack<T, P>(y_cache + (p + u * stride) * P, y_packs[u]);
                    write_pack<T, P>(dy_cache + (p + u * stride) * P, dy_packs[u]);
                }
                float yv[P], dyv[P];
                unpack<T, P>(y_packs[u], yv);
                unpack<T, P>(dy_packs[u], dyv);
#pragma unroll
                for (int i = 0; i < P; ++i) partial += backward_term<LOG>(yv[i], dyv[i]);
            }
        }
        for (; p < full_packs; p += stride) {
            const Pack<T, P> y_pack = read_pack<T, P>(y_row + p * P);
            const Pack<T, P> dy_pack = read_pack<T, P>(dy_row + p * P);
            if constexpr (CACHED) {
                write_pack<T, P>(y_cache + p * P, y_pack);
                write_pack<T, P>(dy_cache + p * P, dy_pack);
            }
            float yv[P], dyv[P];
            unpack<T, P>(y_pack, yv);
            unpack<T, P>(dy_pack, dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) partial += backward_term<LOG>(yv[i], dyv[i]);
        }
        for (i64 c = tail_start + threadIdx.x; c < n; c += stride) {
            const T y_raw = y_row[c];
            const T dy_raw = dy_row[c];
            if constexpr (CACHED) {
                y_cache[c] = y_raw;
                dy_cache[c] = dy_raw;
            }
            partial += backward_term<LOG>(to_float(y_raw), to_float(dy_raw));
        }
        const float total = block_sum(partial);

        const T* y_from = CACHED ? y_cache : y_row;
        const T* dy_from = CACHED ? dy_cache : dy_row;
        p = threadIdx.x;
        for (; p + (kUnroll - 1) * stride < full_packs; p += kUnroll * stride) {
            float yv[kUnroll][P], dyv[kUnroll][P];
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
                load_pack<T, P>(y_from + (p + u * stride) * P, yv[u]);
                load_pack<T, P>(dy_from + (p + u * stride) * P, dyv[u]);
            }
#pragma unroll
            for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
                for (int i = 0; i < P; ++i) yv[u][i] = input_grad<LOG>(yv[u][i], dyv[u][i], total);
                store_pack<T, P>(dx_row + (p + u * stride) * P, yv[u]);
            }
        }
        for (; p < full_packs; p += stride) {
            float yv[P], dyv[P];
            load_pack<T, P>(y_from + p * P, yv);
            load_pack<T, P>(dy_from + p * P, dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total);
            store_pack<T, P>(dx_row + p * P, yv);
        }
        for (i64 c = tail_start + threadIdx.x; c < n; c += stride) {
            const float yv = to_float(y_from[c]);
            const float dyv = to_float(dy_from[c]);
            dx_row[c] = from_float<T>(input_grad<LOG>(yv, dyv, total));
        }
    }
}

}  // namespace fastsoftmax
