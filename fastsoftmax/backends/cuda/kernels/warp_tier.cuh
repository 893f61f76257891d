// Tier "warp": a group of GROUP lanes (a whole warp, or 1/2 .. 1/32 of one for short rows) owns
// ROWS rows and keeps them in registers, so each element is read once and written once and the
// reductions never leave the register file. Suits rows of up to 1024 columns; the 16-bit forward
// holds rows of up to 3072 on 16-byte boundaries over a whole warp too (96 columns a lane in about 110
// registers: instances.WARP_LONG_COLS_16BIT, tiers.warp_takes_long_rows; a forced tier, rows off them
// in their window too); the backward's two tensors take about 215 there (not built).
//
// Lane `lane` of a group holds packs p = 0 .. COLS/P - 1 at columns (p * GROUP + lane) * P: at
// each step the group reads GROUP * P consecutive elements, so a warp's access stays contiguous.
// Columns past the row end are padding: they read as -inf (exp gives 0) and are never written.
// The last pack of a row may be partial; it falls back to element-wise access.
//
// ROWS rows per group (a group's rows consecutive) give each thread ROWS independent chains of loads
// and shuffles; a warp's first load then takes every other row and its second the rows between. One
// row a group is the default (instances.WARP_ROWS, measured there).
//
// WINDOW: rows that start off a pack boundary (16-bit rows of odd length, or of 100 columns, whose
// widest common alignment is 2 or 4 bytes) are held in the packs of the aligned window around
// each row (common.cuh, pack_readable): column c of the group's packs is row column c - shift,
// shift being the row's misalignment in the first tensor (x forward, y backward), so that every
// pack but the row's two edge ones moves as one 16-byte access. A warp of 2-byte loads moves 64
// bytes an instruction; of 16-byte ones, 512. A tensor misaligned otherwise than the first is read
// and written element by element (pack_aligned fails for it), which is correct, only slow; the
// host sizes the group for n + P - 1 columns.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

// Column of pack p of a lane in the row (negative, or past n, in a window's padding).
template <int P, int GROUP>
__device__ __forceinline__ int warp_column(int p, int lane, int shift) {
    return (p * GROUP + lane) * P - shift;
}

// Every pack is requested before any is converted: a branch that used a pack's values would make
// the warp wait for that load before issuing the next.
template <typename T, int P, int COLS, int GROUP, bool WINDOW>
__device__ __forceinline__ void warp_load_row(const T* src, int n, int shift, const DenseSpan<T>& span, int lane,
                                              bool valid, float* out) {
    const T pad = from_float<T>(neg_inf());
    Pack<T, P> raw[COLS / P];
#pragma unroll
    for (int p = 0; p < COLS / P; ++p) {
        const int col = warp_column<P, GROUP>(p, lane, shift);
        const bool touches = valid && col < n && col + P > 0;
        const bool whole = col >= 0 && col + P <= n;
        if (!touches) {
            raw[p] = gather_pack<T, P>(src, col, 0, pad);  // padding only: no loads
        } else if (WINDOW ? pack_readable<T, P>(src, col, n, span) : whole) {
            raw[p] = read_pack<T, P>(src + col);
        } else {
            raw[p] = gather_pack<T, P>(src, col, n, pad);
        }
    }
#pragma unroll
    for (int p = 0; p < COLS / P; ++p) {
        const int col = warp_column<P, GROUP>(p, lane, shift);
        if (WINDOW && !(col >= 0 && col + P <= n)) clip_pack<T, P>(raw[p].elems(), col, n, pad);
        unpack<T, P>(raw[p], out + p * P);
    }
}

template <typename T, int P, int COLS, int GROUP, bool WINDOW>
__device__ __forceinline__ void warp_store_row(T* dst, int n, int shift, int lane, bool valid, const float* in) {
    if (!valid) return;
#pragma unroll
    for (int p = 0; p < COLS / P; ++p) {
        const int col = warp_column<P, GROUP>(p, lane, shift);
        if (col >= 0 && col + P <= n && (!WINDOW || pack_aligned<T, P>(dst + col))) {
            store_pack<T, P>(dst + col, in + p * P);
        } else if (col < n && col + P > 0) {
            store_edge_pack<T, P>(dst, col, n, in + p * P);
        }
    }
}

// Every lane runs the shuffles, even in a group past the last row: the shuffles name all 32 lanes.
template <typename T, int P, int COLS, int GROUP, int ROWS, bool LOG, bool WINDOW>
__device__ __forceinline__ void warp_forward(const T* x, T* y, i64 rows, i64 n64, i64 x_pitch, i64 y_pitch) {
    static_assert(COLS % P == 0 && 32 % GROUP == 0, "bad warp tier shape");
    const int lane = threadIdx.x % GROUP;
    const int n = (int)n64;
    const i64 first_row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / GROUP * ROWS;
    const DenseSpan<T> span(x, rows, n64, x_pitch);

    float buf[ROWS][COLS];
    int shift[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const i64 row = first_row + r;
        shift[r] = window_shift<T, P, WINDOW>(x + row * x_pitch);
        warp_load_row<T, P, COLS, GROUP, WINDOW>(x + row * x_pitch, n, shift[r], span, lane, row < rows, buf[r]);
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
        warp_store_row<T, P, COLS, GROUP, WINDOW>(y + row * y_pitch, n, shift[r], lane, row < rows, buf[r]);
    }
}

template <typename T, int P, int COLS, int GROUP, int ROWS, bool LOG, bool WINDOW>
__device__ __forceinline__ void warp_backward(const T* y, const T* dy, T* dx, i64 rows, i64 n64, i64 y_pitch,
                                              i64 dy_pitch, i64 dx_pitch) {
    static_assert(COLS % P == 0 && 32 % GROUP == 0, "bad warp tier shape");
    const int lane = threadIdx.x % GROUP;
    const int n = (int)n64;
    const i64 first_row = ((i64)blockIdx.x * blockDim.x + threadIdx.x) / GROUP * ROWS;
    const DenseSpan<T> y_span(y, rows, n64, y_pitch), dy_span(dy, rows, n64, dy_pitch);

    float y_buf[ROWS][COLS];
    float dy_buf[ROWS][COLS];
    int shift[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        const i64 row = first_row + r;
        const bool valid = row < rows;
        shift[r] = window_shift<T, P, WINDOW>(y + row * y_pitch);
        warp_load_row<T, P, COLS, GROUP, WINDOW>(y + row * y_pitch, n, shift[r], y_span, lane, valid, y_buf[r]);
        warp_load_row<T, P, COLS, GROUP, WINDOW>(dy + row * dy_pitch, n, shift[r], dy_span, lane, valid, dy_buf[r]);
    }
    float total[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        float s = 0.0f;
#pragma unroll
        for (int i = 0; i < COLS; ++i) {
            // padding reads as -inf in both: skip it rather than add -inf * -inf
            const int col = warp_column<P, GROUP>(i / P, lane, shift[r]) + i % P;
            if (col >= 0 && col < n) s += backward_term<LOG>(y_buf[r][i], dy_buf[r][i]);
        }
        total[r] = group_sum<GROUP>(s);
    }
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
#pragma unroll
        for (int i = 0; i < COLS; ++i) y_buf[r][i] = input_grad<LOG>(y_buf[r][i], dy_buf[r][i], total[r]);
        const i64 row = first_row + r;
        warp_store_row<T, P, COLS, GROUP, WINDOW>(dx + row * dx_pitch, n, shift[r], lane, row < rows, y_buf[r]);
    }
}

}  // namespace fastsoftmax
