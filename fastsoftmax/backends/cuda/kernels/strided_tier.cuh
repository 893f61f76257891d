// Tier "strided": softmax over axis 1 of (outer, n, inner) with inner > 1, i.e. over a dim that
// is not the innermost in memory. Neighbouring threads take neighbouring columns along `inner`
// (contiguous, stride 1), so every load of a warp is coalesced, and each column's n elements lie
// stride_n apart.
//
// A block is W columns wide (W = 2 .. 32, the power of two covering `inner`, so short inner dims
// do not leave lanes idle) and SLICES threads deep: thread (c, s) folds elements s, s + SLICES,
// ... of column c into a (max, sum) pair, the SLICES pairs of a column merge by a tree in shared
// memory, and the second pass writes the column, re-reading it from L2.
// blockDim = (W, SLICES) with W * SLICES <= 256, both powers of two.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

constexpr int kStridedMaxThreads = 256;

template <typename T, bool LOG>
__device__ __forceinline__ void strided_forward(const T* x, T* y, i64 outer, i64 n, i64 inner, i64 x_outer_stride,
                                                i64 x_n_stride, i64 y_outer_stride, i64 y_n_stride) {
    __shared__ MaxSum partial[kStridedMaxThreads];
    const int width = blockDim.x;
    const int slices = blockDim.y;
    const int slot = threadIdx.y * width + threadIdx.x;
    const i64 tiles_per_outer = (inner + width - 1) / width;

    for (i64 tile = blockIdx.x; tile < outer * tiles_per_outer; tile += gridDim.x) {
        const i64 o = tile / tiles_per_outer;
        const i64 column = (tile - o * tiles_per_outer) * width + threadIdx.x;
        const bool valid = column < inner;
        const T* src = x + o * x_outer_stride + column;
        T* dst = y + o * y_outer_stride + column;

        MaxSum state = empty_maxsum();
        if (valid) {
            for (i64 k = threadIdx.y; k < n; k += slices) {
                const float v = to_float(src[k * x_n_stride]);
                accumulate<1>(state, &v);
            }
        }
        partial[slot] = state;
        __syncthreads();
        for (int half = slices / 2; half > 0; half /= 2) {
            if (threadIdx.y < half) partial[slot] = merge(partial[slot], partial[slot + half * width]);
            __syncthreads();
        }
        const RowScale scale = row_scale(partial[threadIdx.x]);
        if (valid) {
            for (i64 k = threadIdx.y; k < n; k += slices) {
                dst[k * y_n_stride] = from_float<T>(normalise<LOG>(to_float(src[k * x_n_stride]), scale));
            }
        }
        __syncthreads();  // partial[] is rewritten by the next tile
    }
}

template <typename T, bool LOG>
__device__ __forceinline__ void strided_backward(const T* y, const T* dy, T* dx, i64 outer, i64 n, i64 inner,
                                                 i64 y_outer_stride, i64 y_n_stride, i64 dy_outer_stride,
                                                 i64 dy_n_stride, i64 dx_outer_stride, i64 dx_n_stride) {
    __shared__ float partial[kStridedMaxThreads];
    const int width = blockDim.x;
    const int slices = blockDim.y;
    const int slot = threadIdx.y * width + threadIdx.x;
    const i64 tiles_per_outer = (inner + width - 1) / width;

    for (i64 tile = blockIdx.x; tile < outer * tiles_per_outer; tile += gridDim.x) {
        const i64 o = tile / tiles_per_outer;
        const i64 column = (tile - o * tiles_per_outer) * width + threadIdx.x;
        const bool valid = column < inner;
        const T* y_col = y + o * y_outer_stride + column;
        const T* dy_col = dy + o * dy_outer_stride + column;
        T* dx_col = dx + o * dx_outer_stride + column;

        float sum = 0.0f;
        if (valid) {
            for (i64 k = threadIdx.y; k < n; k += slices)
                sum += backward_term<LOG>(to_float(y_col[k * y_n_stride]), to_float(dy_col[k * dy_n_stride]));
        }
        partial[slot] = sum;
        __syncthreads();
        for (int half = slices / 2; half > 0; half /= 2) {
            if (threadIdx.y < half) partial[slot] += partial[slot + half * width];
            __syncthreads();
        }
        const float total = partial[threadIdx.x];
        if (valid) {
            for (i64 k = threadIdx.y; k < n; k += slices) {
                const float g = input_grad<LOG>(to_float(y_col[k * y_n_stride]), to_float(dy_col[k * dy_n_stride]), total);
                dx_col[k * dx_n_stride] = from_float<T>(g);
            }
        }
        __syncthreads();
    }
}

}  // namespace fastsoftmax
