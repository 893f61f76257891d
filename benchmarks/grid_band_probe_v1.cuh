// The grid_band probe's first form (benchmarks/grid_band_probe.py, variants v1...): one grid barrier
// a band (cooperative_groups), the band written right after its merge. Softmax over a long axis of
// (outer, n, inner) whose columns are too long for one CTA or cluster ((65536, 2048) over dim 0),
// read once; see grid_band_probe.cuh for the current form and what both measured.
//
// The "strided" tier reads such an axis twice (partials, then a finish that re-reads it: at most
// 0.67 of copy), and the staged teams of strided_staged, which hold a tile of columns across a
// team of CTAs, run every CTA of a team through load, exchange and write in step (0.49 of copy on
// bf16 (65536, 2048) on an H100). Here every resident CTA (one an SM, one cooperative launch)
// holds `rows` rows of a band of W columns (W x itemsize = band_packs x 16 bytes of each row),
// and the bands follow each other through NBUF shared-memory buffers: while a band's pairs are
// exchanged across the grid and its output written, the copies of the next NBUF - 1 bands are in
// flight, so device memory sees reads and writes at once.
//
// Per band: the CTA's per-column maxima, then sums of exp(x - max), over its rows (thread t keeps
// to pack t % band_packs of every row, rows t / band_packs + k (threads / band_packs)); the CTA's
// W pairs go to a global workspace (two halves, alternating by band: a CTA is at most one band
// ahead of another, see grid_row_tier.cuh); a grid barrier; every CTA merges the G pairs of each
// column, then writes its rows of the band.
#pragma once

#include <cooperative_groups.h>

#include "common.cuh"

namespace fastsoftmax {

constexpr int kBandThreads = 512;
constexpr int kBandMaxCols = 512;
constexpr int kBandMergeLoads = 16;

// Dynamic shared memory of a launch: NBUF buffers of rows x band_packs 16-byte packs, then the
// reduction scratch (threads x P floats), the column statistics and the merge's partial pairs.
template <typename T>
__host__ __device__ constexpr i64 grid_band_smem(int nbuf, i64 rows, int band_packs) {
    return nbuf * rows * band_packs * 16 + kBandThreads * (16 / (int)sizeof(T)) * 4 + 2 * kBandMaxCols * 8;
}

template <typename T, int NBUF, bool LOG>
__device__ __forceinline__ void grid_band_forward(const T* x, T* y, float2* ws, i64 outer, i64 n, i64 inner, i64 xs0,
                                                  i64 xs1, i64 ys0, i64 ys1, int band_packs, int rows_per_cta,
                                                  int probe_flags = 0) {
    constexpr int P = 16 / (int)sizeof(T);
    extern __shared__ __align__(16) unsigned char band_smem[];
    const int PR = band_packs, W = PR * P, R = rows_per_cta;
    Pack<T, P>* bufs = reinterpret_cast<Pack<T, P>*>(band_smem);
    float* scratch = reinterpret_cast<float*>(band_smem + (i64)NBUF * R * PR * 16);
    MaxSum* stats = reinterpret_cast<MaxSum*>(scratch + kBandThreads * P);
    MaxSum* partial = stats + kBandMaxCols;

    cooperative_groups::grid_group grid = cooperative_groups::this_grid();
    const int G = (int)gridDim.x;
    const i64 r0 = (i64)blockIdx.x * R;
    const int rows = (int)max((i64)0, min((i64)R, n - r0));
    const int tid = (int)threadIdx.x;
    const int p = tid % PR, g = tid / PR, RG = kBandThreads / PR;
    const i64 per_outer = inner / W;
    const i64 bands = outer * per_outer;

    const auto issue = [&](i64 t) {
        if (t < bands) {
            const i64 o = t / per_outer, c0 = (t % per_outer) * W;
            Pack<T, P>* buf = bufs + (int)(t % NBUF) * R * PR;
            const T* src = x + o * xs0 + r0 * xs1 + c0 + p * P;
            for (int r = g; r < rows; r += RG) copy_async<16>(&buf[r * PR + p], src + r * xs1);
        }
        copy_async_commit();
    };
#pragma unroll
    for (int t = 0; t < NBUF; ++t) issue(t);

    for (i64 t = 0; t < bands; ++t) {
        copy_async_wait_group<NBUF - 1>();
        __syncthreads();
        const Pack<T, P>* buf = bufs + (int)(t % NBUF) * R * PR;
        const i64 o = t / per_outer, c0 = (t % per_outer) * W;

        float m[P];
#pragma unroll
        for (int i = 0; i < P; ++i) m[i] = neg_inf();
        for (int r = g; r < rows; r += RG) {
            float v[P];
            unpack_lean<T, P>(buf[r * PR + p], v);
#pragma unroll
            for (int i = 0; i < P; ++i) m[i] = fmaxf(m[i], v[i]);
        }
#pragma unroll
        for (int i = 0; i < P; ++i) scratch[g * W + p * P + i] = m[i];
        __syncthreads();
        if (tid < W) {
            float mm = neg_inf();
            for (int k = 0; k < RG; ++k) mm = fmaxf(mm, scratch[k * W + tid]);
            stats[tid].max = mm;
        }
        __syncthreads();
        float shift[P], s[P];
#pragma unroll
        for (int i = 0; i < P; ++i) {
            const float cm = stats[p * P + i].max;
            shift[i] = cm == neg_inf() ? 0.0f : cm;
            s[i] = 0.0f;
        }
        for (int r = g; r < rows; r += RG) {
            float v[P];
            unpack_lean<T, P>(buf[r * PR + p], v);
#pragma unroll
            for (int i = 0; i < P; ++i) s[i] += sum_exp(v[i] - shift[i]);
        }
#pragma unroll
        for (int i = 0; i < P; ++i) scratch[g * W + p * P + i] = s[i];
        __syncthreads();
        float2* pairs = ws + (t & 1) * (i64)G * W;
        if (tid < W) {
            float ss = 0.0f;
            for (int k = 0; k < RG; ++k) ss += scratch[k * W + tid];
            pairs[(i64)blockIdx.x * W + tid] = make_float2(stats[tid].max, ss);
        }
        if (!(probe_flags & 1)) grid.sync();  // probe: 1 leaves the barrier out (timing only)

        // every CTA merges the G pairs of each column: thread (column tid % W, part tid / W), its
        // pairs loaded kBandMergeLoads at a time before any is used (one at a time, each waited
        // for, the merge took most of a band's time: L2 latency a pair)
        const int S = kBandThreads / W;
        if (tid < S * W && !(probe_flags & 2)) {  // probe: 2 leaves the merge out (timing only)
            const int c = tid % W;
            MaxSum acc = empty_maxsum();
            for (int b = tid / W; b < G; b += kBandMergeLoads * S) {
                float2 q[kBandMergeLoads];
#pragma unroll
                for (int u = 0; u < kBandMergeLoads; ++u)
                    q[u] = b + u * S < G ? __ldcg(pairs + (i64)(b + u * S) * W + c) : make_float2(neg_inf(), 0.0f);
                float mm = acc.max;
#pragma unroll
                for (int u = 0; u < kBandMergeLoads; ++u) mm = fmaxf(mm, q[u].x);
                float ss = rescaled_sum(acc.max, acc.sum, mm);
#pragma unroll
                for (int u = 0; u < kBandMergeLoads; ++u) ss += rescaled_sum(q[u].x, q[u].y, mm);
                acc = MaxSum{mm, ss};
            }
            partial[tid] = acc;
        }
        __syncthreads();
        if (tid < W) {
            MaxSum acc = partial[tid];
            for (int k = 1; k < S; ++k) acc = merge(acc, partial[k * W + tid]);
            if (probe_flags & 2) acc = MaxSum{stats[tid].max, 1.0f};
            stats[tid] = MaxSum{acc.max, LOG ? __logf(acc.sum) : 1.0f / acc.sum};
        }
        __syncthreads();
        float cmax[P], scale[P];
#pragma unroll
        for (int i = 0; i < P; ++i) {
            cmax[i] = stats[p * P + i].max;
            scale[i] = stats[p * P + i].sum;
        }
        T* dst = y + o * ys0 + r0 * ys1 + c0 + p * P;
        for (int r = g; r < rows; r += RG) {
            float v[P];
            unpack_lean<T, P>(buf[r * PR + p], v);
#pragma unroll
            for (int i = 0; i < P; ++i)
                v[i] = LOG ? v[i] - cmax[i] - scale[i] : fast_exp(v[i] - cmax[i]) * scale[i];
            store_pack_global<T, P>(dst + r * ys1, v);
        }
        __syncthreads();  // every read of this buffer is done
        issue(t + NBUF);
    }
}

}  // namespace fastsoftmax
