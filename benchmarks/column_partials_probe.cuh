// The column-partials probe (benchmarks/column_partials_probe.py): the first pass of a softmax over
// a long axis -- per-column partial results of a dense (n, inner) tensor over chunks of its n rows --
// as one small kernel family whose access shape is all template parameters, to find the shape that
// reads at the device's bandwidth. A probe, not a tier of the library.
//
// Why: the strided tier's partials pass reads at 2.4-3.4 TB/s on an H200 where Inductor's split
// reduction of the same sums reads at 3.7 (results 2026-12-04_h200_s56/c11: bf16 column sums of
// (8192, 8192), ours 256-column tiles x 8 slices x 4 rows in flight, 80 registers, 3 CTAs an SM;
// Inductor's 64 columns x 8 rows, 32 registers, 16 CTAs an SM), and neither more CTAs an SM nor
// more rows in flight moved ours.
//
// Block = W x S threads; thread (tx, ty) owns the P columns tile * W * P + tx * P .. + P - 1 and the
// rows ty, ty + S, .. of its chunk, U rows loaded before any is used. Chunks: contiguous runs of
// ceil(n / splits) rows, or (kProbeInterleaved) groups of U x S rows dealt round robin. The S slices
// merge through shared memory and slice 0 writes the chunk's results: a float a column (sums), or a
// (max, sum) pair (kProbePair).
#pragma once

#include "common.cuh"

namespace fastsoftmax {

constexpr int kProbeSum = 0;   // sum of x: the log-softmax backward's sum of dy
constexpr int kProbeDot = 1;   // sum of x * y: the softmax backward's sum of dy * y
constexpr int kProbePair = 2;  // (max, sum of exp(x - max)): the forward

constexpr int kProbeChunkMajor = 1;  // block b = chunk * tiles + tile (else tile * splits + chunk)
constexpr int kProbeInterleaved = 2;

// HINT 0: a plain load; 1: evict-first streaming (ld.global.cs); 2: the read-only path (ld.global.nc)
template <typename T, int P, int HINT>
__device__ __forceinline__ Pack<T, P> probe_load(const T* p) {
    using Raw = typename Pack<T, P>::Raw;
    Pack<T, P> pack;
    if constexpr (HINT == 0) {
        pack.raw = *reinterpret_cast<const Raw*>(p);
    } else if constexpr (HINT == 1) {
        pack.raw = __ldcs(reinterpret_cast<const Raw*>(p));
    } else {
        pack.raw = __ldg(reinterpret_cast<const Raw*>(p));
    }
    return pack;
}

// rows k, k + S, .. k + (V - 1) S of this thread's columns, all loaded before any is used
template <typename T, int P, int S, int V, int OP, int HINT>
__device__ __forceinline__ void probe_fold(const T* xc, const T* yc, i64 k, i64 inner, float (&sum)[P],
                                           MaxSum (&pair)[P]) {
    Pack<T, P> xr[V], yr[V];
#pragma unroll
    for (int u = 0; u < V; ++u) {
        xr[u] = probe_load<T, P, HINT>(xc + (k + u * S) * inner);
        if constexpr (OP == kProbeDot) yr[u] = probe_load<T, P, HINT>(yc + (k + u * S) * inner);
    }
#pragma unroll
    for (int i = 0; i < P; ++i) {
        float column[V];
#pragma unroll
        for (int u = 0; u < V; ++u) {
            column[u] = to_float(xr[u].elems()[i]);
            if constexpr (OP == kProbeDot) column[u] *= to_float(yr[u].elems()[i]);
        }
        if constexpr (OP == kProbePair) {
            accumulate<V>(pair[i], column);
        } else {
#pragma unroll
            for (int u = 0; u < V; ++u) sum[i] += column[u];
        }
    }
}

template <typename T, int P, int W, int S, int U, int OP, int HINT>
__device__ __forceinline__ void column_partials_probe(const T* x, const T* y, float* out, i64 n, i64 inner,
                                                      i64 splits, int flags) {
    const i64 tiles = inner / (W * P);
    i64 tile, split;
    if (flags & kProbeChunkMajor) {
        split = blockIdx.x / tiles;
        tile = blockIdx.x - split * tiles;
    } else {
        tile = blockIdx.x / splits;
        split = blockIdx.x - tile * splits;
    }
    const int tx = threadIdx.x % W, ty = threadIdx.x / W;
    const i64 col = tile * (W * P) + tx * P;
    const T* xc = x + col;
    const T* yc = y + col;
    float sum[P];
    MaxSum pair[P];
#pragma unroll
    for (int i = 0; i < P; ++i) {
        sum[i] = 0.0f;
        pair[i] = empty_maxsum();
    }
    if (flags & kProbeInterleaved) {
        const i64 group = U * S;
        const i64 groups = (n + group - 1) / group;
        for (i64 g = split; g < groups; g += splits) {
            const i64 base = g * group;
            if (base + group <= n) {
                probe_fold<T, P, S, U, OP, HINT>(xc, yc, base + ty, inner, sum, pair);
            } else {
                for (i64 k = base + ty; k < n; k += S) probe_fold<T, P, S, 1, OP, HINT>(xc, yc, k, inner, sum, pair);
            }
        }
    } else {
        const i64 chunk = (n + splits - 1) / splits;
        const i64 end = min(n, (split + 1) * chunk);
        i64 k = split * chunk + ty;
        for (; k + (U - 1) * S < end; k += U * S) probe_fold<T, P, S, U, OP, HINT>(xc, yc, k, inner, sum, pair);
        for (; k < end; k += S) probe_fold<T, P, S, 1, OP, HINT>(xc, yc, k, inner, sum, pair);
    }
    constexpr int V = OP == kProbePair ? 2 : 1;
    __shared__ float shared[S][W * P * V];
#pragma unroll
    for (int i = 0; i < P; ++i) {
        if constexpr (OP == kProbePair) {
            shared[ty][2 * (tx * P + i)] = pair[i].max;
            shared[ty][2 * (tx * P + i) + 1] = pair[i].sum;
        } else {
            shared[ty][tx * P + i] = sum[i];
        }
    }
    __syncthreads();
    for (int half = S / 2; half > 0; half /= 2) {
        if (ty < half) {
#pragma unroll
            for (int i = 0; i < P; ++i) {
                const int c = tx * P + i;
                if constexpr (OP == kProbePair) {
                    const MaxSum m = merge(MaxSum{shared[ty][2 * c], shared[ty][2 * c + 1]},
                                           MaxSum{shared[ty + half][2 * c], shared[ty + half][2 * c + 1]});
                    shared[ty][2 * c] = m.max;
                    shared[ty][2 * c + 1] = m.sum;
                } else {
                    shared[ty][c] += shared[ty + half][c];
                }
            }
        }
        __syncthreads();
    }
    if (ty == 0) {
#pragma unroll
        for (int i = 0; i < P * V; ++i) out[V * (split * inner + col) + i] = shared[0][V * tx * P + i];
    }
}

// The read ceiling: every 16-byte pack of the tensor read once, U in flight a thread, one float a
// thread written (so that the loads are not dropped).
template <int U, int HINT>
__device__ __forceinline__ void read_ceiling_probe(const uint4* x, float* out, i64 packs) {
    const i64 threads = (i64)gridDim.x * blockDim.x;
    const i64 first = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    unsigned acc = 0;
    i64 p = first;
    for (; p + (U - 1) * threads < packs; p += U * threads) {
        uint4 v[U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            if constexpr (HINT == 1) {
                v[u] = __ldcs(x + p + u * threads);
            } else {
                v[u] = x[p + u * threads];
            }
        }
#pragma unroll
        for (int u = 0; u < U; ++u) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
    }
    for (; p < packs; p += threads) {
        const uint4 v = x[p];
        acc ^= v.x ^ v.y ^ v.z ^ v.w;
    }
    out[first] = __uint_as_float(acc);
}

}  // namespace fastsoftmax
