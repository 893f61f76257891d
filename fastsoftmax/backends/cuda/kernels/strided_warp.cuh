// Tier "strided_warp": softmax over axis 1 of (outer, n, inner), inner > 1, for reduced axes short
// enough to live in the registers of a few warps: channel softmax over NCHW images (n of 21 to 150
// classes over H x W columns), short axes over wide columns ((64, 32, 2048) over dim 1) and the like.
// Element (o, k, c) lies at o * s0 + k * s1 + c, or at o * s0 + k * s1 + 2c in inputs that step by
// two along inner (x[..., ::2]; the LOAD's kStep): a lane then reads the two 16-byte packs of its
// columns' span and keeps every other element (the bytes between lie in the same sectors).
//
// Why a tier of its own: the staged tiles (strided_staged.cuh) copy a tile of n rows by 128-256
// columns into shared memory, reduce it there and write it from there. On short axes a thread then
// holds only about 150 elements of its tile, so the code that runs once a tile (index arithmetic,
// the merges through shared memory) is a third of all instructions, and the CTA's phases (copy in,
// reduce, merge, write) follow each other with little to overlap them: the H200 ran the bf16
// forward of (8, 150, 128, 128) over dim 1 at 0.54 of copy, bound by issue and latency.
//
// Here the loads go straight to registers and stay there: each element is read once and written
// once, with no copy through shared memory. A group of `row_warps` consecutive warps of the CTA
// owns `lanes` x P neighbouring columns of one outer index and all n rows of them. Lane (ln, lc) =
// (lane / lanes, lane % lanes) of row warp j holds columns lc * P .. lc * P + P - 1 of the group at
// rows k = j * 32 / lanes + ln + r * step, step = row_warps x 32 / lanes, r < ROWS. One access moves
// one pack of P elements, and a warp's request covers 32 / lanes rows of lanes x P columns: the host
// picks lanes so that a row's part is 128 bytes where the axis allows, else as wide as it allows
// (narrower parts, 32 bytes a row, ran the bf16 backward of (8, 150, 128, 128) at 0.52 of copy
// against 0.77 at 128 bytes on an H200), then the split with the fewest empty slots, then the
// fewest row warps for axes up to 64 rows and the most for longer ones, and the fewest ROWS that
// hold the lane's rows (strided.warp_columns_shape).
//
// A column's maximum and sum merge over the lanes that share it by xor shuffles, then, where several
// warps share the group, through shared memory: each warp posts its lanes' partial values, and the
// group's threads share out its columns, each merging one column's posts and working out that
// column's constants (its maximum; then its output's scale) once, for every thread to read back.
// Every thread working them out for its own P columns instead cost the bf16 forward of (8, 150,
// 128, 128) 51 instructions an element at 40 elements a thread (H200, Nsight Compute: issue slots
// 62% busy at 0.41 of copy). A group of one warp needs no shared memory and no barrier.
//
// Packs of P > 1 need inner, the row strides and the pointers on P-element boundaries (the host's
// choice). Where they are not (odd H x W: rows at several 16-byte phases), the SPREAD kernels take
// any layout: a lane's P columns step by `lanes` (lc, lc + lanes, ...) and move one element an
// access, so that a warp's access still covers `lanes` neighbouring elements of each of its rows,
// and the work done once a row (its test against n, its address) is shared by P elements. Single
// elements a lane (P == 1, what these kernels replaced) paid that work on every element: H200, bf16
// (16, 21, 513, 513) over dim 1 forward 0.36 of copy, spread 0.63. Loads go
// through the strided LOAD / STORE functors (StridedDirectLoad / StridedDirectStore), so fused forms
// reach this tier by a functor, not a copy of the kernel.
#pragma once

#include "strided_staged.cuh"

namespace fastsoftmax {

// Rows every lane holds inside n in a forward kernel of ROWS rows a lane: the host takes the fewest
// ROWS of strided.WARP_COLUMNS_ROWS[False] (2, 3, 4, 5, 6, 8, 10, 12, 16) that cover its rows, and
// refuses forced ROWS past them, so the axis is longer than the next fewer kernel's rows a step and
// those rows need no test against n (strided.warp_full_rows mirrors this). The backward keeps every
// test: dropping them there measured level to slower (results 2026-11-29_h200_s37).
template <int ROWS>
__device__ constexpr int forward_full_rows() {
    return ROWS <= 2 ? 0 : ROWS <= 6 ? ROWS - 1 : ROWS <= 12 ? ROWS - 2 : 12;
}

// A lane's place: its outer index, its first column (>= inner, or an outer index past the tensor:
// the lane holds padding only), the columns between its P columns (1; lanes where spread), how many
// of them lie inside inner, its first row and the rows between its rows, and its group of row warps.
// `bits`: log2 lanes | log2 row_warps << 8.
struct WarpColumns {
    i64 o, c;
    int row, step, lane_bits, row_warps, group_thread, group_slot, columns, first, column_step, held;
    bool live;

    __device__ __forceinline__ WarpColumns(int P, bool spread, i64 outer, i64 inner, unsigned groups, int bits) {
        lane_bits = bits & 7;
        const int row_warp_bits = bits >> 8;
        const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
        const int lanes = 1 << lane_bits, rows_a_warp = 32 >> lane_bits;
        row_warps = 1 << row_warp_bits;
        columns = lanes * P;
        column_step = spread ? lanes : 1;
        first = (int)(lane & (lanes - 1)) * (spread ? 1 : P);
        group_slot = (int)(warp >> row_warp_bits);
        group_thread = (int)(threadIdx.x & (32 * row_warps - 1));
        const unsigned group = blockIdx.x * ((blockDim.x >> 5) >> row_warp_bits) + group_slot;
        const unsigned oo = group / groups;
        o = oo;
        c = (i64)(group - oo * groups) * columns + first;
        row = (group_thread >> 5) * rows_a_warp + (int)(lane >> lane_bits);
        step = rows_a_warp * row_warps;
        live = oo < outer && c < inner;
        // packs: inner is a whole number of them, so a live lane holds all P
        held = !live ? 0 : spread ? (int)min((i64)P, (inner - c + lanes - 1) >> lane_bits) : P;
    }

    // the group's column of the lane's i-th
    __device__ __forceinline__ int column(int i) const { return first + i * column_step; }

    // whether the lane's row r lies inside the axis (the first FULL rows do in every lane)
    template <int FULL>
    __device__ __forceinline__ bool holds_row(int r, int n) const {
        return r < FULL || row + r * step < n;
    }

    // whether every one of the P columns of the lane that holds the group's column j has maxima its
    // sums may fuse (all_fused)
    template <int P>
    __device__ __forceinline__ bool lane_fused(const float* maxima, int j) const {
        return all_fused<P>(maxima + (column_step == 1 ? j / P * P : j & (column_step - 1)), column_step);
    }
};

// The CTA's shared memory for groups of several row warps: each warp's posts (lanes x P values) and
// three values a column of the CTA's groups (shared: the host sizes it, warp_columns_smem_floats).
struct ColumnTable {
    float* posts;
    float* results;
    int stride;  // floats between two of a column's results

    __device__ __forceinline__ ColumnTable(float* shared, const WarpColumns& w) {
        const int warps = (int)(blockDim.x >> 5);
        posts = shared;
        stride = warps / w.row_warps * w.columns;
        results = shared + warps * w.columns;
    }

    __device__ __forceinline__ float* result(const WarpColumns& w, int k) const {
        return results + k * stride + w.group_slot * w.columns;
    }
};

// Merges P values a lane over the warp's lanes that hold the same columns (xor shuffles).
template <int P, typename OP>
__device__ __forceinline__ void merge_in_warp(const WarpColumns& w, float (&v)[P], OP op) {
#pragma unroll
    for (int i = 0; i < P; ++i) {
        for (int mask = 1 << w.lane_bits; mask < 32; mask <<= 1) v[i] = op(v[i], __shfl_xor_sync(kFullMask, v[i], mask));
    }
}

// Posts a warp's merged values (its first row of lanes), then each column's merge over the group's
// warps goes to the thread that f(j, merged) takes column j of the group; every thread of the CTA
// takes part, and f's writes are visible to all once this returns.
template <int P, typename OP, typename F>
__device__ __forceinline__ void merge_across_warps(const WarpColumns& w, const ColumnTable& table,
                                                   const float (&v)[P], OP op, F f) {
    const int warp = (int)(threadIdx.x >> 5);
    const int first_warp = warp & ~(w.row_warps - 1);
    if ((int)(threadIdx.x & 31) < (1 << w.lane_bits)) {
#pragma unroll
        for (int i = 0; i < P; ++i) table.posts[warp * w.columns + w.column(i)] = v[i];
    }
    __syncthreads();
    for (int j = w.group_thread; j < w.columns; j += 32 * w.row_warps) {
        const float* post = table.posts + first_warp * w.columns + j;
        float merged = post[0];
        for (int q = 1; q < w.row_warps; ++q) merged = op(merged, post[q * w.columns]);
        f(j, merged);
    }
    __syncthreads();
}

template <int P>
__device__ __forceinline__ void read_columns(const float* column, const WarpColumns& w, float (&v)[P]) {
#pragma unroll
    for (int i = 0; i < P; ++i) v[i] = column[w.column(i)];
}

// The two constants of a column's output from its maximum m and its sum s (of ExpShift's fused
// terms where `fused`): FusedNormaliser's (offset, factor) for a 16-bit softmax whose pack is fused,
// else RowScale's (inv_sum, log_sum) (its max being m).
template <bool LOG, typename T>
__device__ __forceinline__ float2 column_constants(float m, float s, bool fused) {
    const MaxSum total{m, fused ? s * ExpShift(m).rebase() : s};
    if (!LOG && sizeof(T) == 2 && fused) {
        const FusedNormaliser<T> f(total);
        return make_float2(f.offset, f.factor);
    }
    const RowScale r = row_scale(total);
    return make_float2(r.inv_sum, r.log_sum);
}

// One element of device memory read or written as its bits, at an address the caller has worked
// out: spelled out, so that the compiler neither rebuilds the address from the kernel's parameters
// and 64-bit indices (five instructions an element instead of one IMAD.WIDE) nor leaves the global
// space for generic accesses.
template <typename T>
__device__ __forceinline__ void load_element(const T* src, T& out) {
    if constexpr (sizeof(T) == 2) {
        unsigned short bits;
        asm volatile("ld.global.b16 %0, [%1];" : "=h"(bits) : "l"(src));
        *reinterpret_cast<unsigned short*>(&out) = bits;
    } else {
        unsigned bits;
        asm volatile("ld.global.b32 %0, [%1];" : "=r"(bits) : "l"(src));
        *reinterpret_cast<unsigned*>(&out) = bits;
    }
}

template <typename T>
__device__ __forceinline__ void store_element(T* dst, const T& value) {
    if constexpr (sizeof(T) == 2) {
        asm volatile("st.global.b16 [%0], %1;" ::"l"(dst), "h"(*reinterpret_cast<const unsigned short*>(&value))
                     : "memory");
    } else {
        asm volatile("st.global.b32 [%0], %1;" ::"l"(dst), "r"(*reinterpret_cast<const unsigned*>(&value)) : "memory");
    }
}

// A spread lane's ROWS packs of a tensor, element by element, `column_step` apart; a lane of the
// last group of columns holds `pad` past inner (EDGE: held < P).
template <typename T, int P, int ROWS, int FULL, bool EDGE, typename LOAD>
__device__ __forceinline__ void load_spread_rows(const LOAD& load, const WarpColumns& w, int n, T pad,
                                                 Pack<T, P> (&raw)[ROWS]) {
    const T* p = load.at(w.o, w.row, w.c);
    const i64 step = w.step * load.s1;
#pragma unroll
    for (int r = 0; r < ROWS; ++r, p += step) {
        const bool inside = w.live && w.holds_row<FULL>(r, n);
#pragma unroll
        for (int i = 0; i < P; ++i) {
            raw[r].elems()[i] = pad;
            if (inside && (!EDGE || i < w.held)) load_element<T>(p + (unsigned)(i * w.column_step), raw[r].elems()[i]);
        }
    }
}

// The lane's ROWS packs of a tensor, every load issued before any is used; rows past n, and lanes
// past inner, hold `pad` and read nothing. The first FULL rows are inside n in every lane.
template <typename T, int P, int ROWS, int FULL, bool SPREAD, typename LOAD>
__device__ __forceinline__ void load_column_rows(const LOAD& load, const WarpColumns& w, int n, T pad,
                                                 Pack<T, P> (&raw)[ROWS]) {
    static_assert(!SPREAD || LOAD::kStep == 1, "spread columns take unit steps along inner");
    if constexpr (SPREAD) {
        if (w.held == P) {
            load_spread_rows<T, P, ROWS, FULL, false>(load, w, n, pad, raw);
        } else {
            load_spread_rows<T, P, ROWS, FULL, true>(load, w, n, pad, raw);
        }
        return;
    }
    const T* p = load.at(w.o, w.row, w.c);
    const i64 step = w.step * load.s1;
    // One conditional expression, not an if/else: written as branches, the 16-bit stepped kernels
    // (two 16-byte reads a row, half of each kept) were compiled to 128-213 registers at 12-16 rows
    // and spilled 72-104 bytes at 8-10; as a select, 108-138 and 8-16 (NVRTC 13.5), and the bf16
    // forward went from 0.36-0.39 of copy to 0.62-0.67 on the H200, the backward from 0.44-0.47
    // to 0.57-0.58 (results 2026-12-01_h200_s39/select_ab.txt).
#pragma unroll
    for (int r = 0; r < ROWS; ++r, p += step)
        raw[r] = w.live && w.holds_row<FULL>(r, n) ? read_columns_pack<T, P, LOAD::kStep>(p)
                                                    : gather_pack<T, P>(p, 0, 0, pad);
}

// A spread lane's pack of one row, element by element, `column_step` apart (EDGE: those inside
// inner only).
template <typename T, int P, bool EDGE>
__device__ __forceinline__ void store_spread_pack(T* dst, const WarpColumns& w, const Pack<T, P>& pack) {
#pragma unroll
    for (int i = 0; i < P; ++i)
        if (!EDGE || i < w.held) store_element<T>(dst + (unsigned)(i * w.column_step), pack.elems()[i]);
}

// Stores a lane's pack of one row: whole, or SPREAD element by element (those inside inner).
template <typename T, int P, bool SPREAD>
__device__ __forceinline__ void store_column_pack(T* dst, const WarpColumns& w, const Pack<T, P>& pack) {
    if constexpr (SPREAD) {
        if (w.held == P) {
            store_spread_pack<T, P, false>(dst, w, pack);
        } else {
            store_spread_pack<T, P, true>(dst, w, pack);
        }
    } else {
        write_pack_global<T, P>(dst, pack);
    }
}

// write(r, dst) for each of the lane's rows inside n, dst being the row's pack in the output (the
// first FULL rows inside in every lane).
template <int ROWS, int FULL, typename STORE, typename WRITE>
__device__ __forceinline__ void each_column_row(const STORE& store, const WarpColumns& w, int n, WRITE write) {
    if (!w.live) return;
    auto* p = store.at(w.o, w.row, w.c);
    const i64 step = w.step * store.s1;
#pragma unroll
    for (int r = 0; r < ROWS; ++r, p += step) {
        if (w.holds_row<FULL>(r, n)) write(r, p);
    }
}

// s[i]: this lane's sum of exp(x - m[i]) over its rows of column i, by ShiftedSums' terms (FUSED: not
// yet rebased). Rows r with r * step >= n are padding in every lane: skipped by the whole group.
template <bool FUSED, typename T, int P, int ROWS, typename LOAD>
__device__ __forceinline__ void lane_sums(const LOAD& load, const WarpColumns& w, int n, const Pack<T, P> (&raw)[ROWS],
                                          const float (&m)[P], float (&s)[P]) {
    const ShiftedSums<FUSED, P> sums(m, s);
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        if (r * w.step < n) {
            float v[P];
            load.template convert<P>(raw[r], v);
            sums.add(s, v);
        }
    }
}

template <typename T, int P, int ROWS, bool LOG, bool SPREAD, typename LOAD, typename STORE>
__device__ __forceinline__ void warp_columns_forward(const LOAD& load, const STORE& store, i64 outer, i64 n64,
                                                     i64 inner, i64 groups, i64 bits) {
    extern __shared__ float4 warp_columns_shared[];
    const WarpColumns w(P, SPREAD, outer, inner, (unsigned)groups, (int)bits);
    const ColumnTable table(reinterpret_cast<float*>(warp_columns_shared), w);
    const int n = (int)n64;
    Pack<T, P> raw[ROWS];
    load_column_rows<T, P, ROWS, forward_full_rows<ROWS>(), SPREAD>(load, w, n, from_float<T>(neg_inf()), raw);

    Pack<T, P> top = raw[0];
#pragma unroll
    for (int r = 1; r < ROWS; ++r)
        if (r * w.step < n) pack_max_into<T, P>(top, raw[r]);
    float m[P];
    unpack<T, P>(top, m);
    merge_in_warp<P>(w, m, MaxOp());
    float* maxima = table.result(w, 0);
    if (w.row_warps > 1) {
        merge_across_warps<P>(w, table, m, MaxOp(), [&](int j, float merged) { maxima[j] = merged; });
        read_columns<P>(maxima, w, m);
    }

    const bool fused = all_fused<P>(m);
    float s[P];
    if (fused) {
        lane_sums<true, T, P, ROWS>(load, w, n, raw, m, s);
    } else {
        lane_sums<false, T, P, ROWS>(load, w, n, raw, m, s);
    }
    merge_in_warp<P>(w, s, AddOp());
    float a[P], b[P];  // each column's output constants (column_constants)
    if (w.row_warps > 1) {
        float* firsts = table.result(w, 1);
        float* seconds = table.result(w, 2);
        merge_across_warps<P>(w, table, s, AddOp(), [&](int j, float merged) {
            const float2 k = column_constants<LOG, T>(maxima[j], merged, w.lane_fused<P>(maxima, j));
            firsts[j] = k.x;
            seconds[j] = k.y;
        });
        read_columns<P>(firsts, w, a);
        read_columns<P>(seconds, w, b);
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i) {
            const float2 k = column_constants<LOG, T>(m[i], s[i], fused);
            a[i] = k.x;
            b[i] = k.y;
        }
    }

    if constexpr (!LOG && sizeof(T) == 2) {
        if (fused) {  // FusedNormaliser: one FFMA, the flushing ex2 and a multiply an element
            each_column_row<ROWS, forward_full_rows<ROWS>()>(store, w, n, [&](int r, T* dst) {
                float v[P];
                load.template convert<P>(raw[r], v);
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = ex2_ftz(fmaf(v[i], kLog2e, a[i])) * b[i];
                store_column_pack<T, P, SPREAD>(dst, w, store.template convert<P>(v));
            });
            return;
        }
    }
    each_column_row<ROWS, forward_full_rows<ROWS>()>(store, w, n, [&](int r, T* dst) {
        float v[P];
        load.template convert<P>(raw[r], v);
#pragma unroll
        for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], RowScale{m[i], a[i], b[i]});
        store_column_pack<T, P, SPREAD>(dst, w, store.template convert<P>(v));
    });
}

// Backward: y and dy held as the forward holds x (padding 0: it adds nothing to the sums),
// total = sum(dy * y) (softmax) or sum(dy) (log-softmax) per column, then dx.
template <typename T, int P, int ROWS, bool LOG, bool SPREAD, typename LOAD, typename STORE>
__device__ __forceinline__ void warp_columns_backward(const LOAD& y_load, const LOAD& dy_load, const STORE& store,
                                                      i64 outer, i64 n64, i64 inner, i64 groups, i64 bits) {
    extern __shared__ float4 warp_columns_shared[];
    const WarpColumns w(P, SPREAD, outer, inner, (unsigned)groups, (int)bits);
    const ColumnTable table(reinterpret_cast<float*>(warp_columns_shared), w);
    const int n = (int)n64;
    const T zero = from_float<T>(0.0f);
    Pack<T, P> y_raw[ROWS], dy_raw[ROWS];
    load_column_rows<T, P, ROWS, 0, SPREAD>(y_load, w, n, zero, y_raw);
    load_column_rows<T, P, ROWS, 0, SPREAD>(dy_load, w, n, zero, dy_raw);

    float total[P];
#pragma unroll
    for (int i = 0; i < P; ++i) total[i] = 0.0f;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
        if (r * w.step < n) {
            float y[P], dy[P];
            y_load.template convert<P>(y_raw[r], y);
            dy_load.template convert<P>(dy_raw[r], dy);
#pragma unroll
            for (int i = 0; i < P; ++i) total[i] += backward_term<LOG>(y[i], dy[i]);
        }
    }
    merge_in_warp<P>(w, total, AddOp());
    if (w.row_warps > 1) {
        float* totals = table.result(w, 0);
        merge_across_warps<P>(w, table, total, AddOp(), [&](int j, float merged) { totals[j] = merged; });
        read_columns<P>(totals, w, total);
    }

    each_column_row<ROWS, 0>(store, w, n, [&](int r, T* dst) {
        float y[P], dy[P];
        y_load.template convert<P>(y_raw[r], y);
        dy_load.template convert<P>(dy_raw[r], dy);
#pragma unroll
        for (int i = 0; i < P; ++i) y[i] = input_grad<LOG>(y[i], dy[i], total[i]);
        store_column_pack<T, P, SPREAD>(dst, w, store.template convert<P>(y));
    });
}

}  // namespace fastsoftmax
