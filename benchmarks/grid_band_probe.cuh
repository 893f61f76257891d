// The grid_band probe (benchmarks/grid_band_probe.py), current form: softmax over a long axis of
// (outer, n, inner) whose columns are too long for one CTA or cluster ((65536, 2048) over dim 0: a
// column of 64K elements), read from device memory once. A probe, not a tier of the library: on an
// H100 it measured slower than the strided tier's three passes (results 2026-11-27_h100_s20).
//
// The "strided" tier reads such an axis twice (partials, then a finish that re-reads it: at most
// 0.67 of copy), and the staged teams of strided_staged hold a tile of columns across a team of
// CTAs that load, exchange and write in step (0.49 of copy on bf16 (65536, 2048)). Here every
// resident CTA (one an SM, one cooperative launch) holds `rows` rows of a band of W columns (W x
// itemsize = band_packs x 16 bytes of each row), and the bands follow each other through NBUF
// shared-memory buffers. Per band: the CTA's per-column maxima, then sums of exp(x - max), over its
// rows (thread t keeps to pack t % band_packs of every row, rows t / band_packs + k (threads /
// band_packs)); the CTA's W pairs go to a global workspace (a ring of kBandSlots); a grid barrier
// split into arrive and wait; every CTA merges the G pairs of each column, then writes its rows.
// Iteration t waits on, merges and writes band t - 1 (its copies of bands t and t + 1 in flight
// meanwhile), then reduces band t and arrives at its barrier (the first form, grid_band_probe_v1.cuh
// at commit 76ad63b, waited on band t's barrier right after arriving).
//
// Measured (bf16 (65536, 2048), every variant in one process): 0.41 of copy, 0.57 with the barrier
// and the merge left out (timing only); the first form 0.41 and 0.60. Reading 128 bytes of each of
// 64K rows 4 KB apart, band after band, is no faster than the strided tier's whole rows read twice.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

constexpr int kBandThreads = 512;
constexpr int kBandMaxCols = 512;
constexpr int kBandMergeLoads = 16;

// The grid barrier of band t, split: arrive (after the CTA's pairs are written), wait (before
// they are merged). Counters in a ring of kBandSlots (zero at launch), counter t % kBandSlots
// reaching (t / kBandSlots + 1) x G once every CTA arrived at band t: a CTA arrives at band
// t + kBandSlots only after waiting on band t + 2, for which every CTA arrived at band t.
constexpr int kBandSlots = 4;

__device__ __forceinline__ void band_arrive(unsigned* counters, i64 t) {
    __syncthreads();  // the CTA's pairs are written
    if (threadIdx.x == 0) {
        __threadfence();
        atomicAdd(counters + t % kBandSlots, 1u);
    }
}

__device__ __forceinline__ void band_wait(unsigned* counters, i64 t, unsigned ctas) {
    if (threadIdx.x == 0) {
        const unsigned target = (unsigned)(t / kBandSlots + 1) * ctas;
        const unsigned* counter = counters + t % kBandSlots;
        unsigned seen;
        do {
            asm volatile("ld.acquire.gpu.global.u32 %0, [%1];\n" : "=r"(seen) : "l"(counter) : "memory");
        } while (seen < target);
    }
    __syncthreads();
}

template <typename T, int NBUF, bool LOG>
__device__ __forceinline__ void grid_band_forward(const T* x, T* y, float2* ws, unsigned* counters, i64 outer, i64 n,
                                                  i64 inner, i64 xs0, i64 xs1, i64 ys0, i64 ys1, int band_packs,
                                                  int rows_per_cta, int probe_flags = 0) {
    static_assert(NBUF >= 3, "a band is written while the next is reduced and the one after lands");
    constexpr int P = 16 / (int)sizeof(T);
    // dynamic shared memory: NBUF buffers of rows x band_packs 16-byte packs, then the reduction
    // scratch (threads x P floats), the merge's partial pairs (threads), the column maxima and the
    // column totals (kBandMaxCols each)
    extern __shared__ __align__(16) unsigned char band_smem[];
    const int PR = band_packs, W = PR * P, R = rows_per_cta;
    Pack<T, P>* bufs = reinterpret_cast<Pack<T, P>*>(band_smem);
    float* scratch = reinterpret_cast<float*>(band_smem + (i64)NBUF * R * PR * 16);
    MaxSum* partial = reinterpret_cast<MaxSum*>(scratch + kBandThreads * P);  // kBandThreads
    float* colmax = reinterpret_cast<float*>(partial + kBandThreads);      // kBandMaxCols
    MaxSum* totals = reinterpret_cast<MaxSum*>(colmax + kBandMaxCols);     // kBandMaxCols

    const unsigned G = gridDim.x;
    const i64 r0 = (i64)blockIdx.x * R;
    const int rows = (int)max((i64)0, min((i64)R, n - r0));
    const int tid = (int)threadIdx.x;
    const int p = tid % PR, g = tid / PR, RG = kBandThreads / PR;
    const i64 per_outer = inner / W;
    const i64 bands = outer * per_outer;
    const auto slot_pairs = [&](i64 t) { return ws + (t % kBandSlots) * (i64)G * W; };

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

    // iteration t: band t - 1's barrier, merge and output, the copies of band t - 1 + NBUF into its
    // buffer, then band t's pairs (arrive): while a CTA waits on a barrier or merges, the copies of
    // the next two bands are in flight
    for (i64 t = 0; t <= bands; ++t) {
        if (t > 0) {
            const i64 u = t - 1;  // the band merged and written now
            if (!(probe_flags & 1)) band_wait(counters, u, G);

            // every CTA merges the G pairs of each column: thread (column tid % W, part tid / W), its
            // pairs loaded kBandMergeLoads at a time before any is used (one at a time, each waited
            // for, the merge took most of a band's time: L2 latency a pair)
            const int S = kBandThreads / W;
            const float2* pairs = slot_pairs(u);
            if (tid < S * W && !(probe_flags & 2)) {  // probe: 2 leaves the merge out
                const int c = tid % W;
                MaxSum acc = empty_maxsum();
                for (int b = tid / W; b < (int)G; b += kBandMergeLoads * S) {
                    float2 q[kBandMergeLoads];
    #pragma unroll
                    for (int k = 0; k < kBandMergeLoads; ++k)
                        q[k] = b + k * S < (int)G ? __ldcg(pairs + (i64)(b + k * S) * W + c)
                                              : make_float2(neg_inf(), 0.0f);
                    float mm = acc.max;
    #pragma unroll
                    for (int k = 0; k < kBandMergeLoads; ++k) mm = fmaxf(mm, q[k].x);
                    float ss = rescaled_sum(acc.max, acc.sum, mm);
    #pragma unroll
                    for (int k = 0; k < kBandMergeLoads; ++k) ss += rescaled_sum(q[k].x, q[k].y, mm);
                    acc = MaxSum{mm, ss};
                }
                partial[tid] = acc;
            }
            __syncthreads();
            if (tid < W) {
                MaxSum acc = empty_maxsum();
                if (probe_flags & 2) {
                    const float2 own = __ldcg(pairs + (i64)blockIdx.x * W + tid);
                    acc = MaxSum{own.x, own.y};
                } else {
                    for (int k = 0; k < S; ++k) acc = merge(acc, partial[k * W + tid]);
                }
                totals[tid] = MaxSum{acc.max, LOG ? __logf(acc.sum) : 1.0f / acc.sum};
            }
            __syncthreads();
            float cmax[P], scale[P];
    #pragma unroll
            for (int i = 0; i < P; ++i) {
                cmax[i] = totals[p * P + i].max;
                scale[i] = totals[p * P + i].sum;
            }
            const i64 o = u / per_outer, c0 = (u % per_outer) * W;
            const Pack<T, P>* buf = bufs + (int)(u % NBUF) * R * PR;
            T* dst = y + o * ys0 + r0 * ys1 + c0 + p * P;
            for (int r = g; r < rows; r += RG) {
                float v[P];
                unpack_lean<T, P>(buf[r * PR + p], v);
    #pragma unroll
                for (int i = 0; i < P; ++i)
                    v[i] = LOG ? v[i] - cmax[i] - scale[i] : fast_exp(v[i] - cmax[i]) * scale[i];
                store_pack_global<T, P>(dst + r * ys1, v);
            }
            __syncthreads();  // every read of band u's buffer is done
            issue(u + NBUF);
        }
        if (t < bands) {
            copy_async_wait_group<NBUF - 1>();  // band t has landed (bands t + 1, t + 2 may still be in flight)
            __syncthreads();
            const Pack<T, P>* buf = bufs + (int)(t % NBUF) * R * PR;
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
                colmax[tid] = mm;
            }
            __syncthreads();
            float shift[P], s[P];
#pragma unroll
            for (int i = 0; i < P; ++i) {
                const float cm = colmax[p * P + i];
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
            if (tid < W) {
                float ss = 0.0f;
                for (int k = 0; k < RG; ++k) ss += scratch[k * W + tid];
                slot_pairs(t)[(i64)blockIdx.x * W + tid] = make_float2(colmax[tid], ss);
            }
            if (!(probe_flags & 1)) band_arrive(counters, t);  // probe: 1 leaves the barrier out
        }
    }
}

}  // namespace fastsoftmax
