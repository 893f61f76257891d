// The softmax ladder: seven float32 row-softmax kernels, each one step faster than the last.
// Read them in order; each header says what changed from the previous step and why it helps.
// All take a contiguous (rows, n) input and write a (rows, n) output:
//     y[r, i] = exp(x[r, i] - max_r) / sum_j exp(x[r, j] - max_r)
// Softmax moves 8 bytes per element (one float read, one written) and does about 5 flops on it
// (max, subtract, exp, sum, divide), far below what the GPU can compute in that time: every step
// is about using the memory system better, and the last ones reach its copy bandwidth.
//
// Launch shapes (set by fastsoftmax/ladder.py): step 1 runs one thread per element; steps 2-7 run
// one block per row, with a power-of-two block size for steps 2-5 and the template block size for
// steps 6-7.

typedef long long i64;

#define NEG_INF __int_as_float(0xff800000)

// ------------------------------------------------------------------------------------------------
// Step 1: naive. One thread per output element, and each thread walks the whole row twice to find
// the maximum and the sum for itself: a row of n elements is read 2 * n times.
// ------------------------------------------------------------------------------------------------
extern "C" __global__ void ladder_1_naive(const float* x, float* y, i64 rows, i64 n) {
    const i64 idx = (i64)blockIdx.x * blockDim.x + threadIdx.x;
    if (idx >= rows * n) return;
    const float* row = x + (idx / n) * n;
    float max_val = NEG_INF;
    for (i64 i = 0; i < n; ++i) max_val = fmaxf(max_val, row[i]);
    float sum = 0.0f;
    for (i64 i = 0; i < n; ++i) sum += expf(row[i] - max_val);
    y[idx] = expf(x[idx] - max_val) / sum;
}

// ------------------------------------------------------------------------------------------------
// Step 2: one block per row, reductions as a tree in shared memory.
// Changed: the threads of a block share the row. Each thread reduces its own contiguous chunk of
// n / blockDim elements, then log2(blockDim) rounds of pairwise combining in shared memory give
// the row's maximum (and then its sum) to everyone. Each element is now read three times in
// total (max, sum, output) instead of 2 * n times.
// Still slow: thread t reads chunk t, so at any instant the 32 threads of a warp read 32
// addresses a whole chunk apart -- 32 separate memory transactions for 32 floats.
// ------------------------------------------------------------------------------------------------
__device__ float tree_reduce_max(float* scratch, float v) {
    scratch[threadIdx.x] = v;
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (threadIdx.x < stride) scratch[threadIdx.x] = fmaxf(scratch[threadIdx.x], scratch[threadIdx.x + stride]);
    }
    __syncthreads();
    const float result = scratch[0];
    __syncthreads();  // scratch is reused by the next reduction
    return result;
}

__device__ float tree_reduce_sum(float* scratch, float v) {
    scratch[threadIdx.x] = v;
    for (int stride = blockDim.x / 2; stride > 0; stride /= 2) {
        __syncthreads();
        if (threadIdx.x < stride) scratch[threadIdx.x] += scratch[threadIdx.x + stride];
    }
    __syncthreads();
    const float result = scratch[0];
    __syncthreads();
    return result;
}

extern "C" __global__ void ladder_2_shared_tree(const float* x, float* y, i64 rows, i64 n) {
    __shared__ float scratch[1024];
    const float* src = x + blockIdx.x * n;
    float* dst = y + blockIdx.x * n;
    const i64 chunk = (n + blockDim.x - 1) / blockDim.x;
    const i64 begin = threadIdx.x * chunk;
    const i64 end = min(begin + chunk, n);

    float max_val = NEG_INF;
    for (i64 i = begin; i < end; ++i) max_val = fmaxf(max_val, src[i]);
    max_val = tree_reduce_max(scratch, max_val);
    float sum = 0.0f;
    for (i64 i = begin; i < end; ++i) sum += expf(src[i] - max_val);
    sum = tree_reduce_sum(scratch, sum);
    for (i64 i = begin; i < end; ++i) dst[i] = expf(src[i] - max_val) / sum;
}

// ------------------------------------------------------------------------------------------------
// Step 3: coalesced access.
// Changed: thread t reads elements t, t + blockDim, t + 2 * blockDim, ... (a block-strided loop)
// instead of a contiguous chunk. Now the 32 threads of a warp read 32 consecutive floats at each
// step: one 128-byte transaction serves the whole warp.
// ------------------------------------------------------------------------------------------------
extern "C" __global__ void ladder_3_coalesced(const float* x, float* y, i64 rows, i64 n) {
    __shared__ float scratch[1024];
    const float* src = x + blockIdx.x * n;
    float* dst = y + blockIdx.x * n;

    float max_val = NEG_INF;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) max_val = fmaxf(max_val, src[i]);
    max_val = tree_reduce_max(scratch, max_val);
    float sum = 0.0f;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) sum += expf(src[i] - max_val);
    sum = tree_reduce_sum(scratch, sum);
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) dst[i] = expf(src[i] - max_val) / sum;
}

// ------------------------------------------------------------------------------------------------
// Step 4: warp-shuffle reductions.
// Changed: the 32 lanes of a warp exchange registers directly (__shfl_xor_sync), five butterfly
// rounds leaving the warp's result in every lane. Only one value per warp goes through shared
// memory, and the first warp reduces those the same way: two barriers per reduction instead of
// log2(blockDim), and no shared-memory round trip inside a warp.
// The division becomes one reciprocal per row and a multiply per element.
// ------------------------------------------------------------------------------------------------
__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

__device__ float block_max(float* per_warp, float v) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_max(v);
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x / 32) ? per_warp[lane] : NEG_INF;
    v = warp_max(v);  // every warp reduces the 32 partials itself: no broadcast step needed
    __syncthreads();  // per_warp is reused by the next reduction
    return v;
}

__device__ float block_sum(float* per_warp, float v) {
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    v = warp_sum(v);
    if (lane == 0) per_warp[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x / 32) ? per_warp[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}

extern "C" __global__ void ladder_4_warp_shuffle(const float* x, float* y, i64 rows, i64 n) {
    __shared__ float per_warp[32];
    const float* src = x + blockIdx.x * n;
    float* dst = y + blockIdx.x * n;

    float max_val = NEG_INF;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) max_val = fmaxf(max_val, src[i]);
    max_val = block_max(per_warp, max_val);
    float sum = 0.0f;
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) sum += expf(src[i] - max_val);
    const float inv_sum = 1.0f / block_sum(per_warp, sum);
    for (i64 i = threadIdx.x; i < n; i += blockDim.x) dst[i] = expf(src[i] - max_val) * inv_sum;
}

// ------------------------------------------------------------------------------------------------
// Step 5: 128-bit vectorised loads and stores.
// Changed: each thread moves a float4 (16 bytes) per instruction. A quarter of the load and
// store instructions, and of the index arithmetic, for the same bytes; more bytes in flight per
// thread. A float4 access must be 16-byte aligned: a row whose start is not (n not a multiple of
// 4) handles its first few elements one by one, then float4s, then the last few one by one.
// ------------------------------------------------------------------------------------------------
struct RowSplit {
    i64 head;    // elements before the first 16-byte boundary
    i64 quads;   // float4s in the aligned body
    i64 tail;    // index of the first element after the body
};

__device__ __forceinline__ RowSplit split_row(const float* row, i64 n) {
    const i64 misaligned = ((unsigned long long)row / sizeof(float)) % 4;
    RowSplit s;
    s.head = min((4 - misaligned) % 4, n);
    s.quads = (n - s.head) / 4;
    s.tail = s.head + 4 * s.quads;
    return s;
}

extern "C" __global__ void ladder_5_float4(const float* x, float* y, i64 rows, i64 n) {
    __shared__ float per_warp[32];
    const float* src = x + blockIdx.x * n;
    float* dst = y + blockIdx.x * n;
    // x and y rows share their alignment: both tensors are contiguous with the same shape
    const RowSplit s = split_row(src, n);
    const float4* src4 = reinterpret_cast<const float4*>(src + s.head);
    float4* dst4 = reinterpret_cast<float4*>(dst + s.head);

    float max_val = NEG_INF;
    for (i64 i = threadIdx.x; i < s.quads; i += blockDim.x) {
        const float4 v = src4[i];
        max_val = fmaxf(max_val, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    for (i64 i = threadIdx.x; i < s.head; i += blockDim.x) max_val = fmaxf(max_val, src[i]);
    for (i64 i = s.tail + threadIdx.x; i < n; i += blockDim.x) max_val = fmaxf(max_val, src[i]);
    max_val = block_max(per_warp, max_val);

    float sum = 0.0f;
    for (i64 i = threadIdx.x; i < s.quads; i += blockDim.x) {
        const float4 v = src4[i];
        sum += expf(v.x - max_val) + expf(v.y - max_val) + expf(v.z - max_val) + expf(v.w - max_val);
    }
    for (i64 i = threadIdx.x; i < s.head; i += blockDim.x) sum += expf(src[i] - max_val);
    for (i64 i = s.tail + threadIdx.x; i < n; i += blockDim.x) sum += expf(src[i] - max_val);
    const float inv_sum = 1.0f / block_sum(per_warp, sum);

    for (i64 i = threadIdx.x; i < s.quads; i += blockDim.x) {
        const float4 v = src4[i];
        dst4[i] = make_float4(expf(v.x - max_val) * inv_sum, expf(v.y - max_val) * inv_sum,
                              expf(v.z - max_val) * inv_sum, expf(v.w - max_val) * inv_sum);
    }
    for (i64 i = threadIdx.x; i < s.head; i += blockDim.x) dst[i] = expf(src[i] - max_val) * inv_sum;
    for (i64 i = s.tail + threadIdx.x; i < n; i += blockDim.x) dst[i] = expf(src[i] - max_val) * inv_sum;
}

// ------------------------------------------------------------------------------------------------
// Step 6: unrolling, with the block size and unroll factor as compile-time constants.
// Changed: BLOCK and UNROLL are template parameters, searched by `fastsoftmax bench ladder`.
// Unrolling lets a thread issue UNROLL independent float4 loads before it needs the first one,
// hiding memory latency with fewer warps; a constant BLOCK turns the warp count and the loop
// strides into immediates. The loop bodies are otherwise those of step 5.
// ------------------------------------------------------------------------------------------------
template <int BLOCK, int UNROLL>
__device__ __forceinline__ void ladder_6_body(const float* x, float* y, i64 n) {
    __shared__ float per_warp[32];
    const float* src = x + blockIdx.x * n;
    float* dst = y + blockIdx.x * n;
    const RowSplit s = split_row(src, n);
    const float4* src4 = reinterpret_cast<const float4*>(src + s.head);
    float4* dst4 = reinterpret_cast<float4*>(dst + s.head);

    float max_val = NEG_INF;
#pragma unroll UNROLL
    for (i64 i = threadIdx.x; i < s.quads; i += BLOCK) {
        const float4 v = src4[i];
        max_val = fmaxf(max_val, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
    }
    for (i64 i = threadIdx.x; i < s.head; i += BLOCK) max_val = fmaxf(max_val, src[i]);
    for (i64 i = s.tail + threadIdx.x; i < n; i += BLOCK) max_val = fmaxf(max_val, src[i]);
    max_val = block_max(per_warp, max_val);

    float sum = 0.0f;
#pragma unroll UNROLL
    for (i64 i = threadIdx.x; i < s.quads; i += BLOCK) {
        const float4 v = src4[i];
        sum += expf(v.x - max_val) + expf(v.y - max_val) + expf(v.z - max_val) + expf(v.w - max_val);
    }
    for (i64 i = threadIdx.x; i < s.head; i += BLOCK) sum += expf(src[i] - max_val);
    for (i64 i = s.tail + threadIdx.x; i < n; i += BLOCK) sum += expf(src[i] - max_val);
    const float inv_sum = 1.0f / block_sum(per_warp, sum);

#pragma unroll UNROLL
    for (i64 i = threadIdx.x; i < s.quads; i += BLOCK) {
        const float4 v = src4[i];
        dst4[i] = make_float4(expf(v.x - max_val) * inv_sum, expf(v.y - max_val) * inv_sum,
                              expf(v.z - max_val) * inv_sum, expf(v.w - max_val) * inv_sum);
    }
    for (i64 i = threadIdx.x; i < s.head; i += BLOCK) dst[i] = expf(src[i] - max_val) * inv_sum;
    for (i64 i = s.tail + threadIdx.x; i < n; i += BLOCK) dst[i] = expf(src[i] - max_val) * inv_sum;
}

// ------------------------------------------------------------------------------------------------
// Step 7: the online normaliser (Milakov & Gimelshein, 2018).
// Changed: the maximum and the sum come out of one pass. Each thread keeps a running maximum m
// and a running sum d of exp(x - m); when a larger value m' arrives, the terms already summed
// were computed against the old maximum, and exp(x - m') = exp(x - m) * exp(m - m'), so
//     d' = d * exp(m - m') + exp(x_new - m').
// Partial (m, d) pairs from two threads merge by the same rule: rescale the one with the smaller
// maximum to the larger. The row is now read twice (one reduction pass, one output pass) instead
// of three times, and one block reduction replaces two.
// ------------------------------------------------------------------------------------------------
struct Running {
    float max;
    float sum;
};

__device__ __forceinline__ Running combine(Running a, Running b) {
    const float m = fmaxf(a.max, b.max);
    // equal maxima need no rescale; testing for it also avoids exp(-inf - -inf) = NaN when both
    // partials are still empty
    const float da = a.max == m ? a.sum : a.sum * expf(a.max - m);
    const float db = b.max == m ? b.sum : b.sum * expf(b.max - m);
    return Running{m, da + db};
}

__device__ __forceinline__ Running warp_combine(Running r) {
    for (int offset = 16; offset > 0; offset /= 2) {
        Running other;
        other.max = __shfl_xor_sync(0xffffffffu, r.max, offset);
        other.sum = __shfl_xor_sync(0xffffffffu, r.sum, offset);
        r = combine(r, other);
    }
    return r;
}

__device__ __forceinline__ void absorb(Running& r, float v) {
    if (v > r.max) {
        r.sum *= expf(r.max - v);
        r.max = v;
    }
    r.sum += expf(v - r.max);
}

template <int BLOCK, int UNROLL>
__device__ __forceinline__ void ladder_7_body(const float* x, float* y, i64 n) {
    __shared__ Running per_warp[32];
    const float* src = x + blockIdx.x * n;
    float* dst = y + blockIdx.x * n;
    const RowSplit s = split_row(src, n);
    const float4* src4 = reinterpret_cast<const float4*>(src + s.head);
    float4* dst4 = reinterpret_cast<float4*>(dst + s.head);

    Running r = {NEG_INF, 0.0f};
#pragma unroll UNROLL
    for (i64 i = threadIdx.x; i < s.quads; i += BLOCK) {
        const float4 v = src4[i];
        // one rescale per float4 rather than per element
        const float m = fmaxf(r.max, fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w)));
        r.sum = (r.max == m ? r.sum : r.sum * expf(r.max - m)) + expf(v.x - m) + expf(v.y - m) +
                expf(v.z - m) + expf(v.w - m);
        r.max = m;
    }
    for (i64 i = threadIdx.x; i < s.head; i += BLOCK) absorb(r, src[i]);
    for (i64 i = s.tail + threadIdx.x; i < n; i += BLOCK) absorb(r, src[i]);

    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    r = warp_combine(r);
    if (lane == 0) per_warp[warp] = r;
    __syncthreads();
    r = lane < BLOCK / 32 ? per_warp[lane] : Running{NEG_INF, 0.0f};
    r = warp_combine(r);
    const float max_val = r.max;
    const float inv_sum = 1.0f / r.sum;

#pragma unroll UNROLL
    for (i64 i = threadIdx.x; i < s.quads; i += BLOCK) {
        const float4 v = src4[i];
        dst4[i] = make_float4(expf(v.x - max_val) * inv_sum, expf(v.y - max_val) * inv_sum,
                              expf(v.z - max_val) * inv_sum, expf(v.w - max_val) * inv_sum);
    }
    for (i64 i = threadIdx.x; i < s.head; i += BLOCK) dst[i] = expf(src[i] - max_val) * inv_sum;
    for (i64 i = s.tail + threadIdx.x; i < n; i += BLOCK) dst[i] = expf(src[i] - max_val) * inv_sum;
}

// Step 6 and 7 instances, one per (BLOCK, UNROLL) in the search space.
#define LADDER_INSTANCE(STEP, BLOCK, UNROLL)                                                              \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                                   \
        ladder_##STEP##_b##BLOCK##_u##UNROLL(const float* x, float* y, i64 rows, i64 n) {                 \
        ladder_##STEP##_body<BLOCK, UNROLL>(x, y, n);                                                     \
    }
#define LADDER_BLOCKS(STEP, UNROLL) \
    LADDER_INSTANCE(STEP, 128, UNROLL) \
    LADDER_INSTANCE(STEP, 256, UNROLL) \
    LADDER_INSTANCE(STEP, 512, UNROLL) \
    LADDER_INSTANCE(STEP, 1024, UNROLL)
#define LADDER_SEARCH(STEP) \
    LADDER_BLOCKS(STEP, 1) LADDER_BLOCKS(STEP, 2) LADDER_BLOCKS(STEP, 4) LADDER_BLOCKS(STEP, 8)

LADDER_SEARCH(6)
LADDER_SEARCH(7)
