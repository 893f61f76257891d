// Tier "split_row": rows so long, and so few, that one block per row would leave most of the GPU
// idle (a 128256-entry vocabulary at decode time, a 2^24-element vector). Each row is cut into
// `splits` chunks, one block per chunk, in two kernels:
//
//   1. split_partials: every block folds its chunk into a (max, sum) pair -- sum(dy * y) or
//      sum(dy) for backward -- and writes it to a small float32 workspace;
//   2. split_finish:   every block merges all partials of its row (a few hundred values, read by
//                      every block of the row from L2), then writes its own chunk, re-reading the
//                      chunk it reduced in kernel 1 (from L2 when the input fits there).
//
// Chunks start at multiples of 16 elements, so every chunk is as aligned as the row itself and
// packs never straddle two chunks. Block b of the first grid takes chunk b % splits of row
// b / splits; the second grid runs in reverse (its block b takes what block gridDim.x - 1 - b
// took), because blocks start roughly in order: the chunks kernel 1 read last, still in L2, are
// then the first ones kernel 2 re-reads, before later traffic can evict them.
//
// Loops take kUnroll packs per thread at a time, all loaded before any is used: a chunk gives
// each thread tens of packs, and one load in flight per thread would leave the memory idle.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

// Chunk [begin, end) of the row handled by this block; begin is a multiple of 16 (hence of P).
struct Chunk {
    i64 row, split, begin, end;
};

__device__ __forceinline__ Chunk this_chunk(i64 n, i64 chunk, i64 splits, bool reverse) {
    const i64 block = reverse ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    Chunk c;
    c.row = block / splits;
    c.split = block - c.row * splits;
    c.begin = c.split * chunk;
    c.end = min(n, c.begin + chunk);
    return c;
}

template <typename T, int P>
__device__ __forceinline__ MaxSum chunk_maxsum(const T* src, const Chunk& c) {
    MaxSum state = empty_maxsum();
    const i64 packs = (c.end - c.begin) / P;
    const i64 stride = blockDim.x;
    const T* base = src + c.begin;
    i64 p = threadIdx.x;
    for (; p + (kUnroll - 1) * stride < packs; p += kUnroll * stride) {
        float v[kUnroll * P];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) load_pack<T, P>(base + (p + u * stride) * P, v + u * P);
        accumulate<kUnroll * P>(state, v);
    }
    for (; p < packs; p += stride) {
        float v[P];
        load_pack<T, P>(base + p * P, v);
        accumulate<P>(state, v);
    }
    for (i64 i = c.begin + packs * P + threadIdx.x; i < c.end; i += blockDim.x) {
        const float v = to_float(src[i]);
        accumulate<1>(state, &v);
    }
    return state;
}

template <typename T, int P>
__device__ __forceinline__ void split_forward_partials(const T* x, float* partials, i64 n, i64 x_pitch, i64 chunk,
                                                       i64 splits) {
    const Chunk c = this_chunk(n, chunk, splits, false);
    const MaxSum total = block_maxsum(chunk_maxsum<T, P>(x + c.row * x_pitch, c));
    if (threadIdx.x == 0) {
        partials[2 * blockIdx.x] = total.max;
        partials[2 * blockIdx.x + 1] = total.sum;
    }
}

template <typename T, int P, bool LOG>
__device__ __forceinline__ void split_forward_finish(const T* x, T* y, const float* partials, i64 n, i64 x_pitch,
                                                     i64 y_pitch, i64 chunk, i64 splits) {
    const Chunk c = this_chunk(n, chunk, splits, true);
    MaxSum state = empty_maxsum();
    const float* row_partials = partials + 2 * c.row * splits;
    for (i64 s = threadIdx.x; s < splits; s += blockDim.x)
        state = merge(state, MaxSum{row_partials[2 * s], row_partials[2 * s + 1]});
    const RowScale scale = row_scale(block_maxsum(state));

    const T* src = x + c.row * x_pitch;
    T* dst = y + c.row * y_pitch;
    const i64 packs = (c.end - c.begin) / P;
    const i64 stride = blockDim.x;
    i64 p = threadIdx.x;
    for (; p + (kUnroll - 1) * stride < packs; p += kUnroll * stride) {
        float v[kUnroll][P];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) load_pack<T, P>(src + c.begin + (p + u * stride) * P, v[u]);
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
            for (int i = 0; i < P; ++i) v[u][i] = normalise<LOG, T>(v[u][i], scale);
            store_pack_global<T, P>(dst + c.begin + (p + u * stride) * P, v[u]);
        }
    }
    for (; p < packs; p += stride) {
        float v[P];
        load_pack<T, P>(src + c.begin + p * P, v);
#pragma unroll
        for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale);
        store_pack_global<T, P>(dst + c.begin + p * P, v);
    }
    for (i64 i = c.begin + packs * P + threadIdx.x; i < c.end; i += blockDim.x)
        dst[i] = from_float<T>(normalise<LOG, T>(to_float(src[i]), scale));
}

template <typename T, int P, bool LOG>
__device__ __forceinline__ void split_backward_partials(const T* y, const T* dy, float* partials, i64 n, i64 y_pitch,
                                                        i64 dy_pitch, i64 chunk, i64 splits) {
    const Chunk c = this_chunk(n, chunk, splits, false);
    const T* y_row = y + c.row * y_pitch;
    const T* dy_row = dy + c.row * dy_pitch;
    float sum = 0.0f;
    const i64 packs = (c.end - c.begin) / P;
    const i64 stride = blockDim.x;
    i64 p = threadIdx.x;
    for (; p + (kUnroll - 1) * stride < packs; p += kUnroll * stride) {
        float yv[kUnroll][P], dyv[kUnroll][P];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            load_pack<T, P>(y_row + c.begin + (p + u * stride) * P, yv[u]);
            load_pack<T, P>(dy_row + c.begin + (p + u * stride) * P, dyv[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
            for (int i = 0; i < P; ++i) sum += backward_term<LOG>(yv[u][i], dyv[u][i]);
    }
    for (; p < packs; p += stride) {
        float yv[P], dyv[P];
        load_pack<T, P>(y_row + c.begin + p * P, yv);
        load_pack<T, P>(dy_row + c.begin + p * P, dyv);
#pragma unroll
        for (int i = 0; i < P; ++i) sum += backward_term<LOG>(yv[i], dyv[i]);
    }
    for (i64 i = c.begin + packs * P + threadIdx.x; i < c.end; i += blockDim.x)
        sum += backward_term<LOG>(to_float(y_row[i]), to_float(dy_row[i]));
    const float total = block_sum(sum);
    if (threadIdx.x == 0) partials[blockIdx.x] = total;
}

template <typename T, int P, bool LOG>
__device__ __forceinline__ void split_backward_finish(const T* y, const T* dy, T* dx, const float* partials, i64 n,
                                                      i64 y_pitch, i64 dy_pitch, i64 dx_pitch, i64 chunk,
                                                      i64 splits) {
    const Chunk c = this_chunk(n, chunk, splits, true);
    float sum = 0.0f;
    for (i64 s = threadIdx.x; s < splits; s += blockDim.x) sum += partials[c.row * splits + s];
    const float total = block_sum(sum);

    const T* y_row = y + c.row * y_pitch;
    const T* dy_row = dy + c.row * dy_pitch;
    T* dx_row = dx + c.row * dx_pitch;
    const i64 packs = (c.end - c.begin) / P;
    const i64 stride = blockDim.x;
    i64 p = threadIdx.x;
    for (; p + (kUnroll - 1) * stride < packs; p += kUnroll * stride) {
        float yv[kUnroll][P], dyv[kUnroll][P];
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
            load_pack<T, P>(y_row + c.begin + (p + u * stride) * P, yv[u]);
            load_pack<T, P>(dy_row + c.begin + (p + u * stride) * P, dyv[u]);
        }
#pragma unroll
        for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
            for (int i = 0; i < P; ++i) yv[u][i] = input_grad<LOG>(yv[u][i], dyv[u][i], total);
            store_pack_global<T, P>(dx_row + c.begin + (p + u * stride) * P, yv[u]);
        }
    }
    for (; p < packs; p += stride) {
        float yv[P], dyv[P];
        load_pack<T, P>(y_row + c.begin + p * P, yv);
        load_pack<T, P>(dy_row + c.begin + p * P, dyv);
#pragma unroll
        for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total);
        store_pack_global<T, P>(dx_row + c.begin + p * P, yv);
    }
    for (i64 i = c.begin + packs * P + threadIdx.x; i < c.end; i += blockDim.x)
        dx_row[i] = from_float<T>(input_grad<LOG>(to_float(y_row[i]), to_float(dy_row[i]), total));
}

}  // namespace fastsoftmax
