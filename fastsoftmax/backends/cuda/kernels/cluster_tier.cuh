// Tier "cluster" (sm_90+): one thread-block cluster per row, the row read from device memory once.
//
// Rows longer than one SM holds (past ~32K elements) otherwise take two reads: block_smem and
// block_uncached re-read the row, split_row re-reads its chunks in a second kernel. Here a cluster
// of C CTAs (1 to 16, given at launch: one compiled instance serves every C) shares the row:
// CTA rank r stages columns [r * chunk, (r + 1) * chunk) in its shared memory with asynchronous
// 16-byte copies, reduces them to one (max, sum of exp) pair, and the C pairs are exchanged through
// distributed shared memory, so every CTA normalises its staged columns and writes them once.
//
// Per row:
//   1. stage: cp.async of every whole 16-byte pack of the slice; the (at most two) packs that
//      straddle the slice's edges, or the row's own ends, go element by element;
//   2. reduce: each thread takes the maximum of the packs it staged, then the sum of exp(x - that
//      maximum): two passes over shared memory and no rescaling per pack; the per-thread pairs
//      merge across the warp and the block (block_allreduce: one barrier);
//   3. exchange: thread 0 posts the CTA's pair in its shared memory, a cluster barrier, and every
//      warp reads the C posted pairs (lane l reads rank l) and merges them: no further barrier;
//   4. write: each CTA normalises its slice from shared memory and stores it.
//
// Alignment: a 16-byte copy needs a 16-byte aligned source, and a row's start is aligned to
// anything from one element up (a view x[:, 1:], or an odd pitch, which changes it row by row).
// Slices start at multiples of P columns, so every slice of a row has the row's misalignment
// `shift` (0..P-1 elements): slot j of a staged slice holds columns [begin - shift + jP, ... + P),
// aligned in memory, and only the first and last slot are partial. The output (and dy backward)
// may be aligned differently from the input; then the write walks the output's own packs and reads
// the staged input element by element (shared memory serves that at a fraction of its bandwidth):
// every global access is still a 16-byte access except at most two packs per slice.
//
// Lifetime of shared memory that peers read: the posted pair of row i sits in slot i % 2. A CTA
// overwrites slot i % 2 at row i + 2, after the barrier of row i + 1, which each peer reaches only
// after it has read row i's pairs. The kernel ends with one more cluster barrier so that no CTA
// exits (releasing its shared memory) while a peer may still read its last pair.
//
// Rows: cluster k of the grid takes rows k, k + clusters, ...; the host launches one cluster per
// row forward (the hardware starts a cluster as one finishes) and the resident clusters backward,
// which measured faster each way (instances.cluster_grid).
//
// Measured on an H100 (benchmarks/cluster_probe.py, results in benchmarks/results/2026-11-23_h100):
// what limits this tier is how many CTAs an SM holds, since CTAs in other phases keep the memory
// busy while one waits for its copies or at the cluster barrier. Holding the slots in registers
// as well (one exponential per element instead of two) cut the CTAs per SM and fell from 0.76 to
// 0.57 of copy bandwidth at 1024 x 128256 bf16; a persistent grid that staged the next row into a
// second buffer during the exchange fell to 0.58 (half the CTAs per SM, and its eight more
// registers also cost the one-row-per-cluster launch 0.76 -> 0.64). Without the exchange (wrong
// results, timing only) the same shape ran at 0.85: the cluster barrier, where the slowest CTA of
// the cluster sets the pace, is the largest single cost.
//
// Loads and stores go through small functors in the style of OneFlow's softmax: LOAD converts
// staged storage to float32 (a fused scale or mask would go there), STORE converts and writes (a
// fused dropout would go there). The staging itself is a raw byte copy.
#pragma once

#include "common.cuh"
#include "block_regs_tier.cuh"  // copy_async_16, wait_async_copies, block_allreduce

namespace fastsoftmax {

// ---- cluster primitives (PTX, sm_90) ---------------------------------------------------------
// cooperative_groups offers the same through this_cluster(), but its headers cost seconds of
// NVRTC time per translation unit for five instructions.
__device__ __forceinline__ unsigned cluster_ctarank() {
    unsigned rank = 0;
#if __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_ctarank;\n" : "=r"(rank));
#endif
    return rank;
}

__device__ __forceinline__ unsigned cluster_nctarank() {
    unsigned count = 1;
#if __CUDA_ARCH__ >= 900
    asm volatile("mov.u32 %0, %%cluster_nctarank;\n" : "=r"(count));
#endif
    return count;
}

// Every thread of every CTA of the cluster arrives and waits; release/acquire order the shared
// memory writes before it with the peers' reads after it. Also a barrier of the CTA's own threads.
__device__ __forceinline__ void cluster_barrier() {
#if __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#else
    __syncthreads();
#endif
}

// The address of `local`'s twin in the shared memory of cluster CTA `rank`, as a generic pointer
// that ordinary loads can dereference.
template <typename V>
__device__ __forceinline__ const V* peer_shared(const V* local, unsigned rank) {
#if __CUDA_ARCH__ >= 900
    unsigned long long peer;
    asm volatile("mapa.u64 %0, %1, %2;\n" : "=l"(peer) : "l"(local), "r"(rank));
    return reinterpret_cast<const V*>(peer);
#else
    return local;
#endif
}

// ---- load and store functors ------------------------------------------------------------------
template <typename T>
struct DirectLoad {
    const T* src;
    i64 pitch;
    __device__ __forceinline__ const T* row_ptr(i64 row) const { return src + row * pitch; }
    template <int P>
    __device__ __forceinline__ void convert(const Pack<T, P>& raw, float* out, i64 /*row*/, i64 /*col*/) const {
        unpack<T, P>(raw, out);
    }
    __device__ __forceinline__ float convert1(T raw, i64 /*row*/, i64 /*col*/) const { return to_float(raw); }
};

template <typename T>
struct DirectStore {
    T* dst;
    i64 pitch;
    __device__ __forceinline__ T* row_ptr(i64 row) const { return dst + row * pitch; }
    template <int P>
    __device__ __forceinline__ void store(const float* v, i64 row, i64 col) const {
        store_pack<T, P>(dst + row * pitch + col, v);
    }
    __device__ __forceinline__ void store1(float v, i64 row, i64 col) const {
        dst[row * pitch + col] = from_float<T>(v);
    }
};

// ---- a CTA's slice of a row -------------------------------------------------------------------
// chunk: columns per CTA, a multiple of P; the host sizes shared memory from the same formula
// (instances.cluster_smem_bytes): slots_per_tensor() 16-byte slots per staged tensor.
template <int P>
struct ClusterSlice {
    i64 begin, end;  // columns [begin, end) of this CTA; begin is a multiple of P

    static __device__ __forceinline__ i64 chunk(i64 n, unsigned ctas) {
        const i64 per_cta = (n + ctas - 1) / ctas;
        return (per_cta + P - 1) / P * P;
    }
    static __device__ __forceinline__ int slots_per_tensor(i64 n, unsigned ctas) {
        return (int)(chunk(n, ctas) / P) + 1;
    }

    __device__ __forceinline__ ClusterSlice(i64 n, unsigned rank, unsigned ctas) {
        const i64 c = chunk(n, ctas);
        begin = min(n, (i64)rank * c);
        end = min(n, begin + c);
    }
};

// Elements before the first 16-byte boundary of a row, in the pack's terms: 0..P-1.
template <typename T, int P>
__device__ __forceinline__ int misalignment(const T* row) {
    return (int)((reinterpret_cast<unsigned long long>(row) / sizeof(T)) % P);
}

// One tensor's slice staged in shared memory: slot j holds columns [first + jP, first + jP + P).
template <typename T, int P>
struct Staged {
    Pack<T, P>* slots;
    i64 first;  // column of slot 0's first element: begin - shift
    int count;  // slots holding at least one column of the slice

    __device__ __forceinline__ Staged(Pack<T, P>* storage, const T* row, const ClusterSlice<P>& s) : slots(storage) {
        first = s.begin - misalignment<T, P>(row);
        count = s.end > s.begin ? (int)((s.end - first + P - 1) / P) : 0;
    }

    // Start the copies of the slots this thread owns (j = threadIdx.x, + blockDim.x, ...).
    __device__ __forceinline__ void stage(const T* row, const ClusterSlice<P>& s) const {
        static_assert(sizeof(Pack<T, P>) == 16, "slices are staged as 16-byte packs");
        for (int j = threadIdx.x; j < count; j += blockDim.x) {
            const i64 col = first + (i64)j * P;
            if (col >= s.begin && col + P <= s.end) {
                copy_async_16(&slots[j], row + col);
            } else {
                T* elems = slots[j].elems();
#pragma unroll
                for (int i = 0; i < P; ++i)
                    if (col + i >= s.begin && col + i < s.end) elems[i] = row[col + i];
            }
        }
    }

    // The staged element of column col (inside the slice).
    __device__ __forceinline__ T at(i64 col) const {
        return reinterpret_cast<const T*>(slots)[col - first];
    }
};

// P columns from `col` on of a staged tensor, as float32; columns outside the slice read as
// `pad`. When `col` starts a slot of the tensor the slot is read whole.
template <typename T, int P, typename LOAD>
__device__ __forceinline__ void gather(const Staged<T, P>& t, const LOAD& load, const ClusterSlice<P>& s, i64 row,
                                       i64 col, float pad, float* out) {
    const i64 offset = col - t.first;
    if (offset % P == 0 && col >= s.begin && col + P <= s.end) {
        load.template convert<P>(t.slots[offset / P], out, row, col);
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i)
            out[i] = col + i >= s.begin && col + i < s.end ? load.convert1(t.at(col + i), row, col + i) : pad;
    }
}

template <typename T, int P, typename STORE>
__device__ __forceinline__ void scatter(const STORE& store, const ClusterSlice<P>& s, i64 row, i64 col,
                                        const float* v) {
    if (col >= s.begin && col + P <= s.end) {
        store.template store<P>(v, row, col);
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i)
            if (col + i >= s.begin && col + i < s.end) store.store1(v[i], row, col + i);
    }
}

// Merge of the C posted values of the cluster, identical in every warp of every CTA: lane l reads
// rank l's post, and the butterfly leaves the result in every lane.
template <typename V, typename WarpReduce>
__device__ __forceinline__ V cluster_combine(const V* posted, unsigned ctas, V identity, WarpReduce warp_reduce) {
    const unsigned lane = threadIdx.x & 31;
    const V v = lane < ctas ? *peer_shared(posted, lane) : identity;
    return warp_reduce(v);
}

// ---- forward ------------------------------------------------------------------------------------
template <typename T, int P, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_forward(const LOAD& load, const STORE& store, i64 rows, i64 n) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    __shared__ MaxSum slots[32];
    __shared__ MaxSum posted[2];
    const unsigned ctas = cluster_nctarank();
    const unsigned rank = cluster_ctarank();
    const ClusterSlice<P> slice(n, rank, ctas);
    Pack<T, P>* storage = reinterpret_cast<Pack<T, P>*>(shared_bytes);
    const i64 clusters = gridDim.x / ctas;
    int parity = 0;
    for (i64 row = blockIdx.x / ctas; row < rows; row += clusters, parity ^= 1) {
        const T* src = load.row_ptr(row);
        const Staged<T, P> x(storage, src, slice);
        x.stage(src, slice);
        wait_async_copies();

        // The thread's own slots: the ones it staged, so its own wait covers them.
        float m = neg_inf();
        for (int j = threadIdx.x; j < x.count; j += blockDim.x) {
            float v[P];
            gather<T, P>(x, load, slice, row, x.first + (i64)j * P, neg_inf(), v);
#pragma unroll
            for (int i = 0; i < P; ++i) m = fmaxf(m, v[i]);
        }
        // A thread whose elements are all -inf subtracts 0 (exp(-inf) = 0 rather than NaN); a NaN
        // or +inf element makes its sum NaN, and the merge carries that to the whole row.
        const float shift = m == neg_inf() ? 0.0f : m;
        float sum = 0.0f;
        for (int j = threadIdx.x; j < x.count; j += blockDim.x) {
            float v[P];
            gather<T, P>(x, load, slice, row, x.first + (i64)j * P, neg_inf(), v);
#pragma unroll
            for (int i = 0; i < P; ++i) sum += fast_exp(v[i] - shift);
        }
        const MaxSum cta = block_allreduce(MaxSum{m, sum}, empty_maxsum(), slots, WarpMaxSum());
        if (threadIdx.x == 0) posted[parity] = cta;
        cluster_barrier();
        const MaxSum total = cluster_combine(&posted[parity], ctas, empty_maxsum(), WarpMaxSum());

        // As block_regs: a row of -inf gives 0 * inf or -inf - -inf, NaN, as torch does.
        const float row_shift = total.max == neg_inf() ? 0.0f : total.max;
        const float inv_sum = 1.0f / total.sum;
        const float log_sum = logf(total.sum);
        // The output's own packs; the block_allreduce barrier made every thread's staging visible.
        if (slice.end > slice.begin) {
            const i64 first = slice.begin - misalignment<T, P>(store.row_ptr(row));
            const int count = (int)((slice.end - first + P - 1) / P);
            for (int j = threadIdx.x; j < count; j += blockDim.x) {
                const i64 col = first + (i64)j * P;
                float v[P];
                gather<T, P>(x, load, slice, row, col, 0.0f, v);
#pragma unroll
                for (int i = 0; i < P; ++i)
                    v[i] = LOG ? (v[i] - row_shift) - log_sum : fast_exp(v[i] - row_shift) * inv_sum;
                scatter<T, P>(store, slice, row, col, v);
            }
        }
        // the next row's copies overwrite slots other threads may still be reading
        if (row + clusters < rows) __syncthreads();
    }
    cluster_barrier();
#else
    __trap();
#endif
}

// ---- backward -----------------------------------------------------------------------------------
// One sum per row: sum(dy * y) for softmax, sum(dy) for log-softmax. y and dy are staged side by
// side (slots_per_tensor slots each).
template <typename T, int P, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_backward(const LOAD& load_y, const LOAD& load_dy, const STORE& store, i64 rows,
                                                 i64 n) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    __shared__ float slots[32];
    __shared__ float posted[2];
    const unsigned ctas = cluster_nctarank();
    const unsigned rank = cluster_ctarank();
    const ClusterSlice<P> slice(n, rank, ctas);
    Pack<T, P>* storage = reinterpret_cast<Pack<T, P>*>(shared_bytes);
    Pack<T, P>* storage_dy = storage + ClusterSlice<P>::slots_per_tensor(n, ctas);
    const i64 clusters = gridDim.x / ctas;
    int parity = 0;
    for (i64 row = blockIdx.x / ctas; row < rows; row += clusters, parity ^= 1) {
        const T* y_row = load_y.row_ptr(row);
        const T* dy_row = load_dy.row_ptr(row);
        const Staged<T, P> y(storage, y_row, slice);
        const Staged<T, P> dy(storage_dy, dy_row, slice);
        y.stage(y_row, slice);
        dy.stage(dy_row, slice);
        wait_async_copies();
        // dy may be aligned differently from y, and then it is read from other threads' slots
        __syncthreads();

        float sum = 0.0f;
        for (int j = threadIdx.x; j < y.count; j += blockDim.x) {
            const i64 col = y.first + (i64)j * P;
            float yv[P], dyv[P];
            gather<T, P>(y, load_y, slice, row, col, 0.0f, yv);
            gather<T, P>(dy, load_dy, slice, row, col, 0.0f, dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) sum += backward_term<LOG>(yv[i], dyv[i]);
        }
        const float cta = block_allreduce(sum, 0.0f, slots, WarpSum());
        if (threadIdx.x == 0) posted[parity] = cta;
        cluster_barrier();
        const float total = cluster_combine(&posted[parity], ctas, 0.0f, WarpSum());

        if (slice.end > slice.begin) {
            const i64 first = slice.begin - misalignment<T, P>(store.row_ptr(row));
            const int count = (int)((slice.end - first + P - 1) / P);
            for (int j = threadIdx.x; j < count; j += blockDim.x) {
                const i64 col = first + (i64)j * P;
                float yv[P], dyv[P];
                gather<T, P>(y, load_y, slice, row, col, 0.0f, yv);
                gather<T, P>(dy, load_dy, slice, row, col, 0.0f, dyv);
#pragma unroll
                for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total);
                scatter<T, P>(store, slice, row, col, yv);
            }
        }
        if (row + clusters < rows) __syncthreads();
    }
    cluster_barrier();
#else
    __trap();
#endif
}

}  // namespace fastsoftmax
