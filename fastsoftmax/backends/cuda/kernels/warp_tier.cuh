// Tier "warp": a group of GROUP lanes (a whole warp, or 1/2 .. 1/32 of one for short rows) owns
// ROWS rows and keeps them in registers, so each element is read once and written once and the
// reductions never leave the register file. Suits rows of up to 1024 columns; longer rows would
// need more registers per thread than a warp can keep without spilling.
//
// Lane `lane` of a group holds packs p = 0 .. COLS/P - 1 at columns (p * GROUP + lane) * P: at
// each step the group reads GROUP * P consecutive elements, so a warp's access stays contiguous.
// Columns past the row end are padding: they read as -inf (exp gives 0) and are never written.
// The last pack of a row may be partial; it falls back to element-wise access.
//
// Two rows per group (ROWS = 2) give each thread two independent chains of loads and shuffles to
// overlap when the rows are too short to keep the memory system busy otherwise.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

template <typename T, int P, int COLS, int GROUP>
__device__ __forceinline__ void warp_load_row(const T* src, i64 n, int lane, bool valid, float* out) {
#pragma unroll
    for (int p = 0; p < COLS / P; ++p) {
        const i64 col = (i64)(p * GROUP + lane) * P;
        if (valid && col + P <= n) {
            load_pack<T, P>(src + col, out + p * P);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i) out[p * P + i] = (valid && col + i < n) ? to_float(src[col + i]) : neg_inf();
        }
    }
}

template <typename T, int P, int COLS, int GROUP>
__device__ __forceinline__ void warp_store_row(T* dst, i64 n, int lane, bool valid, const float* in) {
    if (!valid) return;
#pragma unroll
    for (int p = 0; p < COLS / P; ++p) {
        const i64 col = (i64)(p * GROUP + lane) * P;
        if (col + P <= n) {
            store_pack<T, P>(dst + col, in + p * P);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i)
                if (col + i < n) dst[col + i] = from_float<T>(in[p * P + i]);
        }
    }
}

// Every lane runs the shuffles, even in a group past the last row: the shuffles name all 32 lanes.
template <typename T, int P, int COLS, int GROUP, int ROWS, bool LOG>
__device__ __forceinline__ void warp_forward(const T* x, T* y, i64 rows, i64 n, i64 x_pitch, i64 y_pitch) {
    static_assert(COLS % P == 0 && 32 % GROUP == 0, "bad warp tier shape");
    const int lane = threadIdx.x % GROUP;
    const i64 first_row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / GROUP * ROWS;

    float buf[ROWS][COLS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const i64 row = first_row + r;
        warp_load_row<T, P, COLS, GROUP>(x + row * x_pitch, n, lane, row < rows, buf[r]);
    }
    float row_max[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        float m = buf[r][0];
#pragma unroll
        for (int i = 1; i < COLS; ++i) m = fmaxf(m, buf[r][i]);
        row_max[r] = group_max<GROUP>(m);
    }
    float row_sum[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < COLS; ++i) {
            if constexpr (LOG) {
                buf[r][i] -= row_max[r];
                s += sum_exp(buf[r][i]);
            } else {
                buf[r][i] = fast_exp(buf[r][i] - row_max[r]);
                s += buf[r][i];
            }
        }
        row_sum[r] = group_sum<GROUP>(s);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        if constexpr (LOG) {
            const float log_sum = logf(row_sum[r]);
#pragma unroll
            for (int i = 0; i < COLS; ++i) buf[r][i] -= log_sum;
        } else {
            const float inv_sum = 1.0f / row_sum[r];
#pragma unroll
            for (int i = 0; i < COLS; ++i) buf[r][i] *= inv_sum;
        }
        const i64 row = first_row + r;
        warp_store_row<T, P, COLS, GROUP>(y + row * y_pitch, n, lane, row < rows, buf[r]);
    }
}

template <typename T, int P, int COLS, int GROUP, int ROWS, bool LOG>
__device__ __forceinline__ void warp_backward(const T* y, const T* dy, T* dx, i64 rows, i64 n, i64 y_pitch,
                                              i64 dy_pitch, i64 dx_pitch) {
    static_assert(COLS % P == 0 && 32 % GROUP == 0, "bad warp tier shape");
    const int lane = threadIdx.x % GROUP;
    const i64 first_row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / GROUP * ROWS;

    float y_buf[ROWS][COLS];
    float dy_buf[ROWS][COLS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const i64 row = first_row + r;
        warp_load_row<T, P, COLS, GROUP>(y + row * y_pitch, n, lane, row < rows, y_buf[r]);
        warp_load_row<T, P, COLS, GROUP>(dy + row * dy_pitch, n, lane, row < rows, dy_buf[r]);
    }
    float total[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < COLS; ++i) {
            // padding reads as -inf in both: skip it rather than add -inf * -inf
            const i64 col = (i64)((i / P) * GROUP + lane) * P + i % P;
            if (col < n) s += backward_term<LOG>(y_buf[r][i], dy_buf[r][i]);
        }
        total[r] = group_sum<GROUP>(s);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int i = 0; i < COLS; ++i) y_buf[r][i] = input_grad<LOG>(y_buf[r][i], dy_buf[r][i], total[r]);
        const i64 row = first_row + r;
        warp_store_row<T, P, COLS, GROUP>(dx + row * dx_pitch, n, lane, row < rows, y_buf[r]);
    }
}

}  // namespace fastsoftmax
