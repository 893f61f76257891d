// Building blocks shared by every production tier: element types, packed memory access,
// the exponential, and reductions across a thread group, a warp and a block.
//
// Every tier computes in float32 whatever the storage type: a softmax sum over tens of thousands
// of half-precision terms would otherwise lose most of its digits.
#pragma once

#include <cuda_fp16.h>
#include <cuda_bf16.h>

namespace fastsoftmax {

typedef long long i64;

constexpr unsigned kFullMask = 0xffffffffu;
constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float neg_inf() { return __int_as_float(0xff800000); }

// exp(x) through the hardware base-2 exponential. exp2f keeps subnormal results (the .ftz
// variant behind __expf would flush them), and the argument is always x - max, so its rounding
// costs at most |x - max| * 2^-24 of relative error, which only matters for outputs that are
// already far below one unit in the last place of the largest output.
__device__ __forceinline__ float fast_exp(float x) { return exp2f(x * kLog2e); }

// exp(x) as a term of a sum that holds a 1 (its maximum's term): the hardware exp2 alone
// (ex2.approx.ftz: a term below 2^-126 flushes to zero, 2^-126 of that 1). exp2f spends a compare
// and two multiplies around the same instruction to keep subnormal results, which only an output
// needs.
__device__ __forceinline__ float ex2_ftz(float e) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(e));
    return y;
}

__device__ __forceinline__ float sum_exp(float x) { return ex2_ftz(x * kLog2e); }

// 2^(e - 64) from an exponent e lifted by 64: the flushing ex2 on e, then an exact multiply that
// lands in the subnormal range where the result belongs there.
__device__ __forceinline__ float exp2_lifted(float e) { return ex2_ftz(e) * 0x1p-64f; }

// ---- storage type <-> float32 ---------------------------------------------------------------
__device__ __forceinline__ float to_float(float v) { return v; }
__device__ __forceinline__ float to_float(__half v) { return __half2float(v); }
__device__ __forceinline__ float to_float(__nv_bfloat16 v) { return __bfloat162float(v); }

template <typename T> __device__ __forceinline__ T from_float(float v);
template <> __device__ __forceinline__ float from_float<float>(float v) { return v; }
template <> __device__ __forceinline__ __half from_float<__half>(float v) { return __float2half_rn(v); }
template <> __device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float v) {
    return __float2bfloat16_rn(v);
}

// Two 16-bit values convert as one 32-bit register: half the conversion instructions.
template <typename T> struct PairOf;
template <> struct PairOf<__half> {
    typedef __half2 type;
    static constexpr bool top_half_of_float = false;
    static __device__ __forceinline__ float2 to_float2(__half2 v) { return __half22float2(v); }
    static __device__ __forceinline__ __half2 from_floats(float a, float b) { return __floats2half2_rn(a, b); }
};
template <> struct PairOf<__nv_bfloat16> {
    typedef __nv_bfloat162 type;
    static constexpr bool top_half_of_float = true;  // a bfloat16's bits are its float32's top half
    static __device__ __forceinline__ float2 to_float2(__nv_bfloat162 v) { return __bfloat1622float2(v); }
    static __device__ __forceinline__ __nv_bfloat162 from_floats(float a, float b) {
        return __floats2bfloat162_rn(a, b);
    }
};

// ---- packs: P consecutive elements moved by one aligned memory instruction -----------------
// A pack of 16 bytes (4 floats, 8 halves) is the widest load a thread can issue; the host picks
// the widest P that the pointers and row pitches are aligned to. The pack is held as raw bits of
// its full width (uint4 for 16 bytes) so the compiler emits a single vector access: a struct of
// eight __half would be copied member by member.
template <int BYTES> struct RawBits;
template <> struct RawBits<16> { typedef uint4 type; };
template <> struct RawBits<8> { typedef uint2 type; };
template <> struct RawBits<4> { typedef unsigned int type; };
template <> struct RawBits<2> { typedef unsigned short type; };

template <typename T, int P> struct Pack {
    typedef typename RawBits<sizeof(T) * P>::type Raw;
    Raw raw;
    __device__ __forceinline__ const T* elems() const { return reinterpret_cast<const T*>(&raw); }
    __device__ __forceinline__ T* elems() { return reinterpret_cast<T*>(&raw); }
};

template <typename T, int P>
__device__ __forceinline__ Pack<T, P> read_pack(const T* src) {
    Pack<T, P> pack;
    pack.raw = *reinterpret_cast<const typename Pack<T, P>::Raw*>(src);
    return pack;
}

// Every other element of the 2P elements from src (device or shared memory), as a pack: the two
// packs of the span, read whole (src on a pack boundary; the span's last element shares a pack with
// the one before it). The strided tier and the staged tiles read inputs that step by 2 along inner so.
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> read_span2(const T* src) {
    const Pack<T, P> lo = read_pack<T, P>(src), hi = read_pack<T, P>(src + P);
    Pack<T, P> pack;
#pragma unroll
    for (int i = 0; i < P / 2; ++i) {
        pack.elems()[i] = lo.elems()[2 * i];
        pack.elems()[P / 2 + i] = hi.elems()[2 * i];
    }
    return pack;
}

// P neighbouring columns of a row whose elements lie STEP (1 or 2) apart in memory: one packed
// access, or the two packs of their span with every other element kept (read_span2).
template <typename T, int P, int STEP>
__device__ __forceinline__ Pack<T, P> read_columns_pack(const T* src) {
    static_assert(STEP == 1 || STEP == 2, "columns one or two elements apart");
    if constexpr (STEP == 2) {
        return read_span2<T, P>(src);
    } else {
        return read_pack<T, P>(src);
    }
}

template <typename T, int P>
__device__ __forceinline__ void write_pack(T* dst, const Pack<T, P>& pack) {
    *reinterpret_cast<typename Pack<T, P>::Raw*>(dst) = pack.raw;
}

template <typename T, int P>
__device__ __forceinline__ void unpack(const Pack<T, P>& pack, float* out) {
    if constexpr (sizeof(T) == 2 && P % 2 == 0) {
        typedef typename PairOf<T>::type T2;
        const T2* pairs = reinterpret_cast<const T2*>(&pack.raw);
#pragma unroll
        for (int i = 0; i < P / 2; ++i) {
            const float2 f = PairOf<T>::to_float2(pairs[i]);
            out[2 * i] = f.x;
            out[2 * i + 1] = f.y;
        }
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i) out[i] = to_float(pack.elems()[i]);
    }
}

template <typename T, int P>
__device__ __forceinline__ Pack<T, P> make_pack(const float* in) {
    Pack<T, P> pack;
    if constexpr (sizeof(T) == 2 && P % 2 == 0) {
        typedef typename PairOf<T>::type T2;
        T2* pairs = reinterpret_cast<T2*>(&pack.raw);
#pragma unroll
        for (int i = 0; i < P / 2; ++i) pairs[i] = PairOf<T>::from_floats(in[2 * i], in[2 * i + 1]);
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i) pack.elems()[i] = from_float<T>(in[i]);
    }
    return pack;
}

// unpack with bfloat16 pairs split by bit operations: a bfloat16 is the top half of its float32,
// so the pair's high element is the word masked (one LOP3) and the low one the word shifted (one
// shift), where the generic conversion spends a PRMT and a shift on the high element.
template <typename T, int P>
__device__ __forceinline__ void unpack_lean(const Pack<T, P>& pack, float* out) {
    if constexpr (sizeof(T) == 2 && P % 2 == 0) {
        if constexpr (PairOf<T>::top_half_of_float) {
            const unsigned* words = reinterpret_cast<const unsigned*>(&pack.raw);
#pragma unroll
            for (int i = 0; i < P / 2; ++i) {
                out[2 * i] = __uint_as_float(words[i] << 16);
                out[2 * i + 1] = __uint_as_float(words[i] & 0xffff0000u);
            }
            return;
        }
    }
    unpack<T, P>(pack, out);
}

// The largest value of a pack as float32. 16-bit packs compare as pairs (max.bf16x2 / max.f16x2:
// exact, and like fmaxf they return the other operand of a NaN) and convert once: 3 pair maxima,
// 2 conversions and 2 float maxima for 8 elements instead of 8 conversions and 8 maxima.
template <typename T, int P>
__device__ __forceinline__ float pack_max(const Pack<T, P>& pack) {
    if constexpr (sizeof(T) == 2 && P % 2 == 0) {
        typedef typename PairOf<T>::type T2;
        const T2* pairs = reinterpret_cast<const T2*>(&pack.raw);
        T2 m = pairs[0];
#pragma unroll
        for (int i = 1; i < P / 2; ++i) m = __hmax2(m, pairs[i]);
        const float2 f = PairOf<T>::to_float2(m);
        return fmaxf(f.x, f.y);
    } else {
        float v[P];
        unpack<T, P>(pack, v);
        float m = v[0];
#pragma unroll
        for (int i = 1; i < P; ++i) m = fmaxf(m, v[i]);
        return m;
    }
}

// Element-wise maxima of packs: acc = max(acc, pack), 16-bit packs as pairs (as pack_max: exact,
// and a NaN gives way to the other operand).
template <typename T, int P>
__device__ __forceinline__ void pack_max_into(Pack<T, P>& acc, const Pack<T, P>& pack) {
    if constexpr (sizeof(T) == 2 && P % 2 == 0) {
        typedef typename PairOf<T>::type T2;
        T2* into = reinterpret_cast<T2*>(&acc.raw);
        const T2* pairs = reinterpret_cast<const T2*>(&pack.raw);
#pragma unroll
        for (int i = 0; i < P / 2; ++i) into[i] = __hmax2(into[i], pairs[i]);
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i) acc.elems()[i] = from_float<T>(fmaxf(to_float(acc.elems()[i]), to_float(pack.elems()[i])));
    }
}

template <typename T, int P>
__device__ __forceinline__ void load_pack(const T* src, float* out) {
    unpack<T, P>(read_pack<T, P>(src), out);
}

// A pack written to device memory by one vector store instruction. write_pack's plain assignment
// of a uint4 is an aggregate copy, which NVVM may break into 4-byte stores and then fails to merge
// again in some kernels (the cluster, grid_row and split_row tiers compiled to four STG.E a pack:
// each warp request then touched 16 sectors for 4 bytes apiece, and the load-store queue throttled
// issue). Spelled out, the 8- and 16-byte packs are one st.global.v2 / v4 wherever they occur.
template <typename T, int P>
__device__ __forceinline__ void write_pack_global(T* dst, const Pack<T, P>& pack) {
    if constexpr (sizeof(T) * P == 16) {
        asm volatile("st.global.v4.b32 [%0], {%1, %2, %3, %4};\n" ::"l"(dst), "r"(pack.raw.x), "r"(pack.raw.y),
                     "r"(pack.raw.z), "r"(pack.raw.w)
                     : "memory");
    } else if constexpr (sizeof(T) * P == 8) {
        asm volatile("st.global.v2.b32 [%0], {%1, %2};\n" ::"l"(dst), "r"(pack.raw.x), "r"(pack.raw.y) : "memory");
    } else {
        write_pack<T, P>(dst, pack);
    }
}

template <typename T, int P>
__device__ __forceinline__ void store_pack(T* dst, const float* in) {
    write_pack<T, P>(dst, make_pack<T, P>(in));
}

// store_pack through write_pack_global: for the tiers whose stores NVVM split (cluster, grid_row,
// split_row, strided). The warp and block tiers keep store_pack, which compiles to STG.E.128 there:
// moved to the spelled-out store, their instruction schedule changed and float16 rows of 3000-8192
// columns lost 0.03-0.09 of copy on an H100 (bfloat16 unchanged).
template <typename T, int P>
__device__ __forceinline__ void store_pack_global(T* dst, const float* in) {
    write_pack_global<T, P>(dst, make_pack<T, P>(in));
}

// ---- rows off 16-byte boundaries, read in whole packs ---------------------------------------
// Elements before the first pack boundary of a row, in the pack's terms: 0..P-1.
template <typename T, int P>
__device__ __forceinline__ int misalignment(const T* row) {
    return (int)((reinterpret_cast<unsigned long long>(row) / sizeof(T)) % P);
}

template <typename T, int P>
__device__ __forceinline__ bool pack_aligned(const T* p) {
    return reinterpret_cast<unsigned long long>(p) % (P * sizeof(T)) == 0;
}

// Where a pack that straddles a row's edge may be read whole: the tensor's own elements, when its
// rows lie end to end (pitch == n); otherwise nowhere (hi == lo), since the gaps between rows, like
// the bytes past the tensor's ends, may never have been written (initcheck reports such reads).
template <typename T>
struct DenseSpan {
    const T* lo;
    const T* hi;
    __device__ __forceinline__ DenseSpan(const T* base, i64 rows, i64 n, i64 pitch)
        : lo(base), hi(pitch == n ? base + rows * n : base) {}
    __device__ __forceinline__ bool holds(const T* p, int count) const { return p >= lo && p + count <= hi; }
};

// A row that starts off a pack boundary (16-bit rows of odd length, or of 100 columns) is still
// moved in aligned packs: those of the window around it, whose columns run from -shift
// (misalignment of the row) on. Only its first and last pack straddle its edges. Such a pack, at
// row columns [col, col + P) with col < n and col + P > 0, is read whole where the tensor's span
// holds it, and its neighbouring rows' elements are then replaced by padding (clip_pack: they are
// never written, and a neighbour written in place meanwhile only changes what is discarded); it is
// gathered element by element otherwise.
template <typename T, int P>
__device__ __forceinline__ bool pack_readable(const T* row, int col, int n, const DenseSpan<T>& span) {
    return pack_aligned<T, P>(row + col) && ((col >= 0 && col + P <= n) || span.holds(row + col, P));
}

// A pack of P copies of v.
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> filled_pack(float v) {
    Pack<T, P> out;
    const T e = from_float<T>(v);
#pragma unroll
    for (int i = 0; i < P; ++i) out.elems()[i] = e;
    return out;
}

// The row's elements of the pack at [col, col + P), one at a time, `pad` elsewhere.
template <typename T, int P>
__device__ __forceinline__ Pack<T, P> gather_pack(const T* row, int col, int n, T pad) {
    Pack<T, P> pack;
#pragma unroll
    for (int i = 0; i < P; ++i) pack.elems()[i] = col + i >= 0 && col + i < n ? row[col + i] : pad;
    return pack;
}

// A pack read whole with its elements outside the row [0, n) replaced by `pad`. Done after every
// pack of a thread has been requested, so that no load waits on another's arrival.
template <typename T, int P, typename V>
__device__ __forceinline__ void clip_pack(V* elems, int col, int n, V pad) {
#pragma unroll
    for (int i = 0; i < P; ++i)
        if (col + i < 0 || col + i >= n) elems[i] = pad;
}

// Writes only the row's own elements of a pack at [col, col + P): the others are a neighbour's.
template <typename T, int P>
__device__ __forceinline__ void store_edge_pack(T* row, int col, int n, const float* in) {
#pragma unroll
    for (int i = 0; i < P; ++i)
        if (col + i >= 0 && col + i < n) row[col + i] = from_float<T>(in[i]);
}

// The shift of a row's window: its misalignment, or 0 where the kernel holds aligned rows only.
template <typename T, int P, bool WINDOW>
__device__ __forceinline__ int window_shift(const T* row) {
    if constexpr (WINDOW) {
        return misalignment<T, P>(row);
    } else {
        return 0;
    }
}

// Loops over packs issue this many independent loads before they use any of them: one 16-byte
// load in flight per thread is far too little to cover device memory latency at full bandwidth.
constexpr int kUnroll = 4;

// ---- running (max, sum of exp(x - max)) pairs: the online normaliser ----------------------
// Two partial results merge by rescaling the sum with the smaller maximum to the larger one.
// Equal maxima (including -inf == -inf for empty partials) skip the rescale, which would
// otherwise compute exp(-inf - -inf) = NaN. A NaN element poisons the sum, never the maximum,
// so the whole row comes out NaN, as torch.softmax gives.
struct MaxSum {
    float max;
    float sum;
};

__device__ __forceinline__ MaxSum empty_maxsum() { return MaxSum{neg_inf(), 0.0f}; }

// A sum taken against the maximum `max`, taken against m >= max instead (unchanged where the two
// are equal, -inf included).
__device__ __forceinline__ float rescaled_sum(float max, float sum, float m) {
    return max == m ? sum : sum * sum_exp(max - m);
}

__device__ __forceinline__ MaxSum merge(MaxSum a, MaxSum b) {
    const float m = fmaxf(a.max, b.max);
    return MaxSum{m, rescaled_sum(a.max, a.sum, m) + rescaled_sum(b.max, b.sum, m)};
}

// A running pair about to take elements whose maximum, with its own, is m: its sum against m, and
// the shift the new terms take. While every element so far is -inf the shift is 0 instead of m:
// -inf elements then add exp(-inf) = 0 and a NaN element still adds NaN.
struct Rebased {
    float sum, shift;
    __device__ __forceinline__ Rebased(const MaxSum& state, float m)
        : sum(rescaled_sum(state.max, state.sum, m)), shift(m == neg_inf() ? 0.0f : m) {}
};

// Folds P elements into a running pair: one rescale per pack rather than per element.
template <int P>
__device__ __forceinline__ void accumulate(MaxSum& state, const float* v) {
    float pack_max = v[0];
#pragma unroll
    for (int i = 1; i < P; ++i) pack_max = fmaxf(pack_max, v[i]);
    const float m = fmaxf(state.max, pack_max);
    Rebased r(state, m);
#pragma unroll
    for (int i = 0; i < P; ++i) r.sum += sum_exp(v[i] - r.shift);
    state = MaxSum{m, r.sum};
}

// ---- reductions ----------------------------------------------------------------------------
// Butterfly (xor) shuffles leave the result in every lane. With WIDTH < 32 the lanes of a warp
// form independent groups of WIDTH lanes, each reducing its own row.
template <int WIDTH>
__device__ __forceinline__ float group_max(float v) {
#pragma unroll
    for (int mask = WIDTH / 2; mask > 0; mask /= 2) v = fmaxf(v, __shfl_xor_sync(kFullMask, v, mask));
    return v;
}

template <int WIDTH>
__device__ __forceinline__ float group_sum(float v) {
#pragma unroll
    for (int mask = WIDTH / 2; mask > 0; mask /= 2) v += __shfl_xor_sync(kFullMask, v, mask);
    return v;
}

template <int WIDTH>
__device__ __forceinline__ MaxSum group_maxsum(MaxSum v) {
#pragma unroll
    for (int mask = WIDTH / 2; mask > 0; mask /= 2) {
        MaxSum other;
        other.max = __shfl_xor_sync(kFullMask, v.max, mask);
        other.sum = __shfl_xor_sync(kFullMask, v.sum, mask);
        v = merge(v, other);
    }
    return v;
}

// The merges of per-column (or per-row) values that the column kernels pass to their reductions
// (fmaxf: a NaN gives way to the other operand; a NaN then reaches the output through the sum).
struct MaxOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return fmaxf(a, b); }
};
struct AddOp {
    __device__ __forceinline__ float operator()(float a, float b) const { return a + b; }
};

// Whole-block reductions: registers within each warp, then one value per warp through shared
// memory, reduced again by the first warp and broadcast. blockDim.x must be a multiple of 32.
// Calling one twice in a row is safe: a thread reads `result` before it can reach the next
// call's first barrier, and warp 0 rewrites `result` only after that barrier.
template <typename V, typename WarpReduce>
__device__ __forceinline__ V block_reduce(V v, V identity, WarpReduce warp_reduce) {
    __shared__ V partial[32];
    __shared__ V result;
    const int lane = threadIdx.x & 31;
    const int warp = threadIdx.x >> 5;
    v = warp_reduce(v);
    if (lane == 0) partial[warp] = v;
    __syncthreads();
    if (warp == 0) {
        v = lane < (int)(blockDim.x >> 5) ? partial[lane] : identity;
        v = warp_reduce(v);
        if (lane == 0) result = v;
    }
    __syncthreads();
    return result;
}

// The merge of a warp's pairs with the maximum taken first: one exponential a lane, where
// group_maxsum takes two a level; the same result in every lane, equal maxima (-inf included)
// never rescaled, as merge.
__device__ __forceinline__ MaxSum warp_merge(MaxSum v) {
    const float m = group_max<32>(v.max);
    return MaxSum{m, group_sum<32>(rescaled_sum(v.max, v.sum, m))};
}

struct WarpMaxSum {
    __device__ __forceinline__ MaxSum operator()(MaxSum v) const { return group_maxsum<32>(v); }
};
struct WarpMax {
    __device__ __forceinline__ float operator()(float v) const { return group_max<32>(v); }
};
struct WarpSum {
    __device__ __forceinline__ float operator()(float v) const { return group_sum<32>(v); }
};

__device__ __forceinline__ MaxSum block_maxsum(MaxSum v) { return block_reduce(v, empty_maxsum(), WarpMaxSum()); }
__device__ __forceinline__ float block_sum(float v) { return block_reduce(v, 0.0f, WarpSum()); }

// ---- the final elementwise step, shared by every forward tier --------------------------------
// softmax: exp(x - max) / sum; log-softmax: (x - max) - log(sum). With max = -inf (a row of
// -inf) both give NaN, as torch does.
struct RowScale {
    float max;
    float inv_sum;
    float log_sum;
};

__device__ __forceinline__ RowScale row_scale(MaxSum total) {
    return RowScale{total.max, 1.0f / total.sum, logf(total.sum)};
}

// T: the output's storage type. float32: exp2f, which keeps subnormal results, times 1 / sum.
// 16-bit outputs: one fused multiply-add and the flushing ex2, 2^(d log2(e) + 64 - log2(sum)) *
// 2^-64 with d = x - max; the 2^64 keeps results down to 2^-190 out of the flush (bfloat16 has
// float32's subnormal range), and the exponent rounds at 2^-17 near the row's maximum, a relative
// error of 5e-6, far below half a unit in the last place of a 16-bit float (2.4e-4 for float16).
// A row of -inf (max -inf, or 0 where a tier subtracts 0 instead, sum 0) gives NaN either way.
template <bool LOG, typename T = float>
__device__ __forceinline__ float normalise(float x, const RowScale& r) {
    if constexpr (LOG) {
        return (x - r.max) - r.log_sum;
    } else if constexpr (sizeof(T) == 4) {
        return fast_exp(x - r.max) * r.inv_sum;
    } else {
        return exp2_lifted(fmaf(x - r.max, kLog2e, 64.0f - r.log_sum * kLog2e));
    }
}

// ---- exponentials against an integer shift -------------------------------------------------
// For a maximum m of moderate size (|m| <= 2^20), k = rint(m log2 e) is an integer that float32
// holds exactly, as it does 64 - k. The exponent x log2e - k of exp(x - m) 2^(m log2e - k) then
// comes out of one FFMA, whose product is exact inside it and whose single rounding is relative
// to a result near 0 for the terms that matter: as accurate as (x - m) * log2e, one instruction
// instead of a subtract and a multiply. The factor 2^(k - m log2e) (k - m log2e in [-1/2, 1/2],
// again one FFMA) is applied once per sum or per row. Larger maxima, +-inf and rows of -inf keep
// the subtract: rint(m log2e) would overflow, or 64 - k would round.
constexpr float kFusedShiftLimit = 1048576.0f;

struct ExpShift {
    float max;    // the maximum m the terms are taken against
    float neg_k;  // -rint(m log2e), where fused
    float shift;  // m, or 0 for a maximum of -inf (so that -inf terms add 0, NaN terms NaN)
    bool fused;

    __device__ __forceinline__ explicit ExpShift(float m)
        : max(m),
          neg_k(-rintf(m * kLog2e)),
          shift(m == neg_inf() ? 0.0f : m),
          fused(fabsf(m) <= kFusedShiftLimit) {}

    // exp(v - m) (times 2^(m log2e - k) where FUSED), flushed below 2^-126 as sum_exp
    template <bool FUSED>
    __device__ __forceinline__ float term(float v) const {
        if constexpr (FUSED) {
            return ex2_ftz(fmaf(v, kLog2e, neg_k));
        } else {
            return sum_exp(v - shift);
        }
    }

    // 2^(k - m log2e), in [2^-1/2, 2^1/2]: a sum of FUSED terms times this is one against m
    __device__ __forceinline__ float rebase() const { return ex2_ftz(-fmaf(max, kLog2e, neg_k)); }

    // A sum of term<FUSED> as the (max, sum) pair of MaxSum's convention (sum relative to m).
    template <bool FUSED>
    __device__ __forceinline__ MaxSum pair(float sum) const {
        if constexpr (FUSED) {
            return MaxSum{max, sum * rebase()};
        } else {
            return MaxSum{max, sum};
        }
    }
};

// The softmax output of a row into a 16-bit type, from its total pair where ExpShift(total.max) is
// fused: exp(x - m) / sum = 2^(x log2e + 64 - k) * 2^(k - m log2e - 64) / sum, one FFMA, the
// flushing ex2 and one multiply per element (normalise: a subtract, an FFMA, ex2 and a multiply),
// the exponent lifted by 64 as normalise does (results down to 2^-190; it rounds at 2^-18 near the
// row's maximum).
template <typename T>
struct FusedNormaliser {
    float offset, factor;

    __device__ __forceinline__ explicit FusedNormaliser(const MaxSum& total) {
        const ExpShift e(total.max);
        offset = 64.0f + e.neg_k;
        factor = e.rebase() / total.sum * 0x1p-64f;
    }

    __device__ __forceinline__ float operator()(float x) const { return ex2_ftz(fmaf(x, kLog2e, offset)) * factor; }
};

// Whether a row's output takes FusedNormaliser: softmax into a 16-bit type, the maximum of moderate
// size. Not float32: on an H100 the cluster tier lost 1-5% of its speed with it (exp2f around the
// FFMA keeps subnormal results), and a one-element row would come out 1 - 2^-24 rather than 1.
template <bool LOG, typename T>
__device__ __forceinline__ bool fused_output(const MaxSum& total) {
    return !LOG && sizeof(T) == 2 && ExpShift(total.max).fused;
}

// A row's output from its total pair: FusedNormaliser where fused_output allows, else normalise.
// The form is taken once per pack in the output loop: two loops behind one branch let the compiler
// convert every held slot ahead of it (cluster tier: 95 registers against 64).
template <bool LOG, typename T>
struct RowOutput {
    bool fused;
    FusedNormaliser<T> fast;
    RowScale scale;

    __device__ __forceinline__ explicit RowOutput(const MaxSum& total)
        : fused(fused_output<LOG, T>(total)), fast(total), scale(row_scale(total)) {}

    template <int P>
    __device__ __forceinline__ void apply(float* v) const {
        if (fused) {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = fast(v[i]);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale);
        }
    }
};

// P positions' sums s[i] of exp(x - m[i]), each against its column's maximum m[i], by ExpShift's
// terms: one FFMA a term where FUSED (the sums rebased at the end, as ExpShift::pair), else after the
// subtract (a column of -inf subtracts 0, so its -inf terms add 0 and a NaN adds NaN). The caller
// keeps the sums: zeroed here, added to by add, rebased by finish.
template <bool FUSED, int P>
struct ShiftedSums {
    float offset[P];  // -k where FUSED, else the shift

    __device__ __forceinline__ ShiftedSums(const float (&m)[P], float (&s)[P]) {
#pragma unroll
        for (int i = 0; i < P; ++i) {
            const ExpShift e(m[i]);
            offset[i] = FUSED ? e.neg_k : e.shift;
            s[i] = 0.0f;
        }
    }

    __device__ __forceinline__ void add(float (&s)[P], const float* v) const {
#pragma unroll
        for (int i = 0; i < P; ++i) s[i] += FUSED ? ex2_ftz(fmaf(v[i], kLog2e, offset[i])) : sum_exp(v[i] - offset[i]);
    }

    __device__ __forceinline__ void finish(const float (&m)[P], float (&s)[P]) const {
        if constexpr (FUSED) {
#pragma unroll
            for (int i = 0; i < P; ++i) s[i] *= ExpShift(m[i]).rebase();
        }
    }
};

// Whether every one of P columns' maxima (`stride` floats apart) allows ExpShift's fused terms: a
// thread takes its sums (and an output) in one form for all its columns.
template <int P>
__device__ __forceinline__ bool all_fused(const float* m, int stride = 1) {
    bool fused = true;
#pragma unroll
    for (int i = 0; i < P; ++i) fused = fused && ExpShift(m[i * stride]).fused;
    return fused;
}

// Backward, with `total` = sum(dy * y) for softmax and sum(dy) for log-softmax:
// softmax: dx = y * (dy - total); log-softmax: dx = dy - exp(y) * total.
template <bool LOG>
__device__ __forceinline__ float backward_term(float y, float dy) {
    if constexpr (LOG) {
        return dy;
    } else {
        return dy * y;
    }
}

template <bool LOG>
__device__ __forceinline__ float input_grad(float y, float dy, float total) {
    if constexpr (LOG) {
        return dy - fast_exp(y) * total;
    } else {
        return y * (dy - total);
    }
}

// ---- a launch's first wave staggered ------------------------------------------------------------
__device__ __forceinline__ long long global_ns() {
    long long t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
    return t;
}

// Clusters (or teams) of odd index below `stagger` (the host's count of them resident at once, or 0) wait
// `ns` before their first row. Clusters that start together stay in step, since each does the same
// work a row: all load, then all meet their peers while device memory idles, then all write. With
// half of them half a row's turn behind, one half loads while the other meets and writes; a cluster
// that follows one of the first wave out inherits its place.
__device__ __forceinline__ void stagger_first_wave(i64 cluster, i64 stagger, long long ns) {
    if (cluster < stagger && (cluster & 1)) {
        const long long until = global_ns() + ns;
        while (global_ns() < until) __nanosleep(500);
    }
}

// ---- copies from device to shared memory (cp.async, sm_80+) -----------------------------------
__device__ __forceinline__ unsigned shared_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

// The shared::cluster address of the shared::cta address `local` in cluster CTA `rank` (sm_90 and
// newer; 0 before, where no kernel is launched as a cluster).
__device__ __forceinline__ unsigned map_shared(unsigned local, unsigned rank) {
    unsigned remote = 0;
#if __CUDA_ARCH__ >= 900
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;\n" : "=r"(remote) : "r"(local), "r"(rank));
#endif
    return remote;
}

// A cluster barrier in two halves (sm_90 and newer; nothing before, where no kernel is launched as
// a cluster): writes to shared memory before the arrive are visible to every CTA of the cluster
// after its wait. Every thread of the CTA takes part.
__device__ __forceinline__ void cluster_arrive() {
#if __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.arrive.release.aligned;\n" ::: "memory");
#endif
}

__device__ __forceinline__ void cluster_wait() {
#if __CUDA_ARCH__ >= 900
    asm volatile("barrier.cluster.wait.acquire.aligned;\n" ::: "memory");
#endif
}

// The value at `local` in the shared memory of cluster rank `rank`.
__device__ __forceinline__ MaxSum read_peer(const MaxSum* local, unsigned rank) {
    float2 v = make_float2(0.0f, 0.0f);
#if __CUDA_ARCH__ >= 900
    asm volatile("ld.shared::cluster.v2.f32 {%0, %1}, [%2];\n"
                 : "=f"(v.x), "=f"(v.y)
                 : "r"(map_shared(shared_address(local), rank))
                 : "memory");
#endif
    return MaxSum{v.x, v.y};
}

__device__ __forceinline__ float read_peer(const float* local, unsigned rank) {
    float v = 0.0f;
#if __CUDA_ARCH__ >= 900
    asm volatile("ld.shared::cluster.f32 %0, [%1];\n" : "=f"(v) : "r"(map_shared(shared_address(local), rank)) : "memory");
#endif
    return v;
}

// Starts a BYTES-byte copy (4, 8 or 16) from global to shared memory; the data lands in the
// background. Before sm_80, a plain copy.
template <int BYTES>
__device__ __forceinline__ void copy_async(void* dst, const void* src) {
#if __CUDA_ARCH__ >= 800
    if constexpr (BYTES == 16) {
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(shared_address(dst)), "l"(src));
    } else {
        asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(shared_address(dst)), "l"(src), "n"(BYTES));
    }
#else
    *reinterpret_cast<typename RawBits<BYTES>::type*>(dst) = *reinterpret_cast<const typename RawBits<BYTES>::type*>(src);
#endif
}

// Waits for all of this thread's copies; they are then visible to this thread.
__device__ __forceinline__ void copy_async_wait() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Closes the group of this thread's copies started since the last commit.
__device__ __forceinline__ void copy_async_commit() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.commit_group;\n" ::: "memory");
#endif
}

// Waits until at most N of this thread's newest groups are still in flight.
template <int N>
__device__ __forceinline__ void copy_async_wait_group() {
#if __CUDA_ARCH__ >= 800
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
#endif
}

// ---- teams of CTAs meeting in device memory --------------------------------------------------------
// Launches whose CTAs are all resident at once (cooperative) let a team of them wait for each other
// at a counter in a workspace (strided_staged.cuh's teams on a tile, grid_row_tier.cuh's teams on a
// row). The counters take the workspace's first counter_words(count) words, a counter per barrier.
__device__ __forceinline__ i64 counter_words(i64 count) { return (count + 3) / 4 * 4; }

__device__ __forceinline__ int load_acquire(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// A team's arrival at its barrier (a tile's, a row's): every CTA's partial results are written before
// it counts itself in, and read only after all `splits` have. The counter then counts the CTAs out again, and the
// last to leave sets it back to zero, so a launch ends with its counters as the next one needs them
// (the host keeps one workspace a stream, never cleared between calls: launch.stream_workspace). Each
// CTA leaves only after its own wait is over, so no CTA still waits when the counter is cleared,
// and a counter serves one barrier once a launch.
__device__ __forceinline__ void team_barrier(int* counter, i64 splits) {
    __threadfence();
    __syncthreads();
    if (threadIdx.x == 0) {
        atomicAdd(counter, 1);
        while (load_acquire(counter) < splits) __nanosleep(64);
        __threadfence();
        if (atomicAdd(counter, 1) == 2 * (int)splits - 1) atomicExch(counter, 0);
    }
    __syncthreads();
}

}  // namespace fastsoftmax
