// Tier "cluster" (sm_90+): one thread-block cluster per row, the row read from device memory once.
//
// Rows longer than one SM holds (past ~32K elements) otherwise take two reads: block_smem and
// block_uncached re-read the row, split_row re-reads its chunks in a second kernel. Here a cluster
// of C CTAs (1 to 16, given at launch: one compiled instance serves every C and thread count)
// shares the row, each CTA a chunk of it (ClusterSlice).
//
// The kernels (cluster_forward_regs, cluster_backward_regs), per row:
//   1. load: each thread holds K 16-byte slots of its CTA's slice in registers (slot
//      threadIdx.x + k * blockDim.x: coalesced), all K loads issued before any is used;
//   2. reduce: the warp's maximum, then the sum of exp(x - that maximum): one exponential per
//      element, no rescaling per pack, no block barrier;
//   3. exchange: each warp sends its pair into every peer CTA's shared memory with st.async, which
//      counts the bytes on the peer's mbarrier; each CTA waits on its own mbarrier for the warps x C
//      pairs of the row (ClusterAllToAll) and every warp merges them. No cluster barrier per row: a
//      CTA waits for the data it needs, not for every thread of every peer. (Reducing the warps'
//      pairs in the CTA first, one block barrier, and sending one pair per CTA measured slower on
//      an H100: bf16 1024 x 128256 0.87 of copy against 0.94);
//   4. write: each thread normalises its slots (a second exponential) and stores them. Holding
//      the first pass's exponentials as float32 for every launch (one exponential an element)
//      measured slower on an H100 everywhere but one row: 97-128 registers a thread against 40-82,
//      so launches lost CTAs per SM or a wave (bf16 32 x 151936 19.0 us against 15.1, 1046 x
//      128256 0.72 of copy against 0.98; benchmarks/results/2026-11-23_h100_s5). Only 16-bit
//      softmax launches that stay one wave with them keep them (KEEP, below).
// The arithmetic is what few-row launches wait on: every CTA of their one wave reaches the same
// phase at once, so nothing hides it behind memory. Per element: the sum's exponential is the
// hardware ex2 alone (sum_exp), the output's one fused multiply-add and ex2 for 16-bit outputs
// (normalise), and whole 16-byte slots are told from the row's partial edge slots by two integer
// compares (WholeSlots). Against exp2f everywhere and 64-bit column compares this executed 26%
// fewer instructions (Nsight Compute, bf16 32 x 151936) and took bf16 32 x 151936 from 16.2 to
// 15.1 us, 1046 x 128256 from 0.91-0.96 to 0.98 of copy.
// A launch of one wave also waits on its own code, every instruction fetched cold by all SMs at once
// (Nsight Compute on bf16 32 x 151936: 12% of the stall samples before the first load, most of them
// instruction-cache misses): the forward walks whole slots in straight-line code and takes the
// slice's partial edge slots apart (load_held, store_held), and reaches its loads without a division.
// Against the walks with an element-by-element path beside every slot, alternated in one process on
// an H100 (benchmarks/results/2026-11-27_h100_s21): bf16 32 x 151936 14.3 -> 13.1 us, float32 21.4
// -> 19.8, 2670 x 50257 0.96 -> 0.98 of copy, nothing slower (register caps keep the earlier counts:
// instances.CLUSTER_MAX_REGISTERS). The backward walks its slots the same way (store_slots; loads by
// load_held, or load_whole and gather_edges for float32): against the element-by-element path beside
// every slot, bf16 1024 x 131072 0.95 -> 1.02, 128 x 128256 0.64 -> 0.76, 32 x 151936 15.9 -> 13.1 us
// (H200, alternated in one process, benchmarks/results/2026-12-02_h200_s43).
// Measured on an H100 (benchmarks/cluster_probe.py, benchmarks/results/2026-11-23_h100): 0.86-0.96
// of copy forward, where an earlier kernel that staged the slice in shared memory with cp.async
// and exchanged through a cluster barrier ran 0.74-0.80 on the same run.
//
// Alignment: a 16-byte load needs a 16-byte aligned address, and a row's start is aligned to
// anything from one element up (a view x[:, 1:], or an odd pitch, which changes it row by row).
// ClusterSlice cuts each row at 16-byte boundaries of its memory, so slot j of a slice holds the
// aligned columns [first + jP, first + jP + P), and only the row's own first and last slot are
// partial (loaded and stored element by element, the outside replaced by padding). Tensors whose
// rows are misaligned differently from each other (x and y forward; y, dy and dx backward) are
// re-cut through shared memory (realign), which the host allocates only when some pointer or
// pitch is not a multiple of 16 bytes. Where every tensor shares each row's misalignment, the
// kernels can instead take the row's whole packs only, its head and tail apart (InteriorSlice, the
// ALIKE forms; the host's rule: plans.cluster_whole_packs).
//
// Loads and stores go through small functors in the style of OneFlow's softmax: LOAD reads raw
// packs and converts them to float32 (a fused scale or mask would go in convert), STORE converts
// and writes (a fused dropout would go there).
#pragma once

#include "common.cuh"

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

// ---- load and store functors ------------------------------------------------------------------
template <typename T>
struct DirectLoad {
    const T* src;
    i64 pitch;
    __device__ __forceinline__ const T* row_ptr(i64 row) const { return src + row * pitch; }
    // The raw pack (16-byte aligned) and the raw element at column col of a row from row_ptr.
    template <int P>
    __device__ __forceinline__ Pack<T, P> read(const T* row, i64 col) const {
        return read_pack<T, P>(row + col);
    }
    __device__ __forceinline__ T read1(const T* row, i64 col) const { return row[col]; }
    template <int P>
    __device__ __forceinline__ void convert(const Pack<T, P>& raw, float* out, i64 /*row*/, i64 /*col*/) const {
        unpack_lean<T, P>(raw, out);
    }
    // The largest converted value of a pack: a LOAD whose convert is not the plain conversion (a
    // scale, a mask) converts first and takes the maximum of that.
    template <int P>
    __device__ __forceinline__ float max_of(const Pack<T, P>& raw, i64 /*row*/, i64 /*col*/) const {
        return pack_max<T, P>(raw);
    }
    // Element-wise maxima into acc (the column kernels), in the storage type: the same rule.
    template <int P>
    __device__ __forceinline__ void max_into(const Pack<T, P>& raw, Pack<T, P>& acc, i64 /*row*/, i64 /*col*/) const {
        pack_max_into<T, P>(acc, raw);
    }
};

template <typename T>
struct DirectStore {
    T* dst;
    i64 pitch;
    __device__ __forceinline__ T* row_ptr(i64 row) const { return dst + row * pitch; }
    template <int P>
    __device__ __forceinline__ void store(const float* v, i64 row, i64 col) const {
        store_pack_global<T, P>(dst + row * pitch + col, v);
    }
    __device__ __forceinline__ void store1(float v, i64 row, i64 col) const {
        dst[row * pitch + col] = from_float<T>(v);
    }
};

// ---- a CTA's slice of a row -------------------------------------------------------------------
// The row is cut at 16-byte boundaries of its memory, not at multiples of P columns: its packs run
// from column -shift (shift: the row's misalignment, 0..P-1 elements), CTA r owns `chunk` columns
// of them from column r * chunk - shift on, clipped to the row's columns [0, n). So whatever the
// misalignment, only the row's own first and last pack are partial; cut at multiples of P columns,
// a misaligned row had a partial pack at both ends of every CTA's slice, read and written element
// by element (H100, bf16 2670 x 50257, dense rows: 0.77 of copy against 0.85 cut this way, and 0.90
// at an aligned pitch). chunk: chunk(n + shift) columns, a multiple of P. A slice spans at most
// chunk(n) / P + 1 packs of the tensor that cut it (chunk(n) / P when shift is 0) and one more of a
// tensor misaligned otherwise: the bound the host sizes registers and shared memory by
// (instances.cluster_slots).
template <int P>
struct ClusterSlice {
    i64 begin, end;  // columns [begin, end) of this CTA

    // unit: a multiple of P the chunk is rounded up to (the column kernels' columns, below)
    static __device__ __forceinline__ i64 chunk(i64 n, unsigned ctas, i64 unit = P) {
        // a cluster's C is a power of two, and so is the column kernels' unit: shifts and masks, not
        // 64-bit divisions, on the way to the loads
        const i64 per_cta = (ctas & (ctas - 1)) == 0 ? (n + ctas - 1) >> (__ffs(ctas) - 1) : (n + ctas - 1) / ctas;
        return (unit & (unit - 1)) == 0 ? (per_cta + unit - 1) & -unit : (per_cta + unit - 1) / unit * unit;
    }

    __device__ __forceinline__ ClusterSlice(i64 n, int shift, unsigned rank, unsigned ctas, i64 unit = P) {
        const i64 c = chunk(n + shift, ctas, unit);
        const i64 from = (i64)rank * c - shift;
        begin = min(n, max((i64)0, from));
        end = min(n, max((i64)0, from + c));
    }

    // The column of the first pack of the slice in a tensor whose rows have misalignment `shift`:
    // begin, or the few columns before it that share its 16-byte pack.
    __device__ __forceinline__ i64 first(int shift) const { return begin - (begin + shift) % P; }
};

// Which slots of a walk over [0, count) from column `first` are whole 16-byte packs inside the
// slice: all but the slice's first slot when the slice starts inside a pack (first < begin) and
// its last when it ends inside one. Two integer compares a slot instead of four 64-bit ones.
template <int P>
struct WholeSlots {
    int lo, hi;
    __device__ __forceinline__ WholeSlots(const ClusterSlice<P>& s, i64 first, int count)
        : lo(first == s.begin ? 0 : 1), hi(first + (i64)count * P <= s.end ? count : count - 1) {}
    __device__ __forceinline__ bool operator()(int j) const { return j >= lo && j < hi; }
};

// The P values of the slot at column col: one 16-byte store when the slot is whole, else element
// by element inside the slice.
template <typename T, int P, typename STORE>
__device__ __forceinline__ void scatter(const STORE& store, const ClusterSlice<P>& s, i64 row, i64 col,
                                        const float* v, bool whole) {
    if (whole) {
        store.template store<P>(v, row, col);
    } else {
#pragma unroll
        for (int i = 0; i < P; ++i)
            if (col + i >= s.begin && col + i < s.end) store.store1(v[i], row, col + i);
    }
}

template <typename T, int P, typename STORE>
__device__ __forceinline__ void scatter(const STORE& store, const ClusterSlice<P>& s, i64 row, i64 col,
                                        const float* v) {
    scatter<T, P>(store, s, row, col, v, col >= s.begin && col + P <= s.end);
}

// ==== the register-held cluster kernels ===========================================================
// Each thread holds its K slots of the row in registers (as the loaded packs), so that the row is
// read from device memory once and from nowhere else: no staging copy, and shared memory only for
// the exchange (and, for views whose tensors are misaligned differently, a realignment buffer).
// The cluster exchange is one all-to-all: every warp sends its (max, sum) pair (backward: its sum)
// into every peer CTA's shared memory with st.async, which counts the bytes on the peer's mbarrier;
// a CTA waits on its own mbarrier for warps x C posts and merges them. No cluster barrier per row,
// and no CTA reads a peer's shared memory: a CTA only exits after every post to it has landed, so
// none can be written after its exit, and nothing it owns is read by a peer.

// warps of a CTA (CLUSTER_MAX_THREADS / 32) and CTAs of a cluster the exchange has room for
constexpr int kClusterMaxWarps = 16;
constexpr int kClusterMaxCtas = 16;

#if __CUDA_ARCH__ >= 900

__device__ __forceinline__ void mbarrier_init(unsigned bar, unsigned arrivals) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(arrivals) : "memory");
}

__device__ __forceinline__ void mbarrier_arrive_expect_tx(unsigned bar, unsigned bytes) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
}

// Acquire at cluster scope: the posts were released by st.async's complete_tx in other CTAs.
__device__ __forceinline__ void mbarrier_wait(unsigned bar, unsigned parity) {
    unsigned done = 0;
    do {
        asm volatile(
            "{\n.reg .pred p;\n"
            "mbarrier.try_wait.parity.acquire.cluster.shared::cta.b64 p, [%1], %2;\n"
            "selp.u32 %0, 1, 0, p;\n}\n"
            : "=r"(done)
            : "r"(bar), "r"(parity)
            : "memory");
    } while (!done);
}

__device__ __forceinline__ void store_async(unsigned remote, unsigned long long v, unsigned remote_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b64 [%0], %1, [%2];\n" ::"r"(remote), "l"(v),
                 "r"(remote_bar)
                 : "memory");
}

__device__ __forceinline__ void store_async(unsigned remote, unsigned v, unsigned remote_bar) {
    asm volatile("st.async.shared::cluster.mbarrier::complete_tx::bytes.b32 [%0], %1, [%2];\n" ::"r"(remote), "r"(v),
                 "r"(remote_bar)
                 : "memory");
}

// The two mbarriers of an exchange (one per round parity, one arrival each), made visible to the
// cluster; returns the shared address of the first. Peers may post only once these barriers exist:
// the matching barrier.cluster.wait comes before the first post, so the first row's loads overlap it.
__device__ __forceinline__ unsigned exchange_barriers(unsigned long long (&bars)[2]) {
    const unsigned first = shared_address(&bars[0]);
    if (threadIdx.x == 0) {
        mbarrier_init(first, 1);
        mbarrier_init(first + 8, 1);
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    asm volatile("barrier.cluster.arrive.relaxed.aligned;\n" ::: "memory");
    return first;
}

// All-to-all of one value per warp across the cluster, one round per row. Rounds alternate
// between two buffers and two mbarriers: a peer can be one round ahead of this CTA (it has all
// posts of round r once this CTA posted, while this CTA still waits for a third CTA's), never two,
// since its round r + 2 needs this CTA's post of r + 1, which each warp sends only after it read
// round r. One mbarrier per round keeps an early post of r + 1 out of the byte count of round r.
template <typename Bits>
class ClusterAllToAll {
  public:
    __device__ __forceinline__ ClusterAllToAll(unsigned ctas, unsigned rank) : ctas_(ctas), rank_(rank) {
        __shared__ __align__(8) Bits posts[2][kClusterMaxWarps * kClusterMaxCtas];
        __shared__ __align__(8) unsigned long long bars[2];
        posts_ = &posts[0][0];
        bars_ = exchange_barriers(bars);
    }

    // Every thread calls it: lanes below C of each warp send the warp's value, lane l to CTA l.
    __device__ __forceinline__ const Bits* exchange(unsigned round, Bits value) {
        if (round == 0) asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
        const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
        const unsigned buffer = round & 1;
        const unsigned bar = bars_ + 8 * buffer;
        Bits* posts = posts_ + buffer * (kClusterMaxWarps * kClusterMaxCtas);
        if (threadIdx.x == 0) mbarrier_arrive_expect_tx(bar, warps * ctas_ * sizeof(Bits));
        if (lane < ctas_) {
            const unsigned slot = shared_address(&posts[warp * ctas_ + rank_]);
            store_async(map_shared(slot, lane), value, map_shared(bar, lane));
        }
        mbarrier_wait(bar, (round >> 1) & 1);
        return posts;
    }

    __device__ __forceinline__ int count() const { return (int)(blockDim.x >> 5) * (int)ctas_; }

  private:
    Bits* posts_;
    unsigned bars_;
    unsigned ctas_, rank_;
};
#endif

// The thread's slot k is slot threadIdx.x + k * blockDim.x of the slice (consecutive threads hold
// consecutive 16-byte packs: coalesced).
__device__ __forceinline__ int slot_of(int k) { return threadIdx.x + k * blockDim.x; }

// The slots [0, count) of one tensor's slice, slot j holding columns first + jP ..: one aligned
// 16-byte load each, so that every load is in flight before any is used. The slots across the
// row's edges (or, in a tensor misaligned otherwise than the one that cut the slices, across the
// slice's) are read element by element, only the elements inside the slice, the rest set to `pad`:
// reading the whole pack would touch bytes outside the tensor (never written: initcheck reports
// them) or in a neighbouring CTA's slice that is being written in place.
template <typename T, int P, int K, typename LOAD>
__device__ __forceinline__ void load_slots(const LOAD& load, const T* row, const ClusterSlice<P>& s, i64 first,
                                           int count, float pad, Pack<T, P> (&out)[K]) {
    const WholeSlots<P> whole(s, first, count);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const i64 col = first + (i64)slot_of(k) * P;
        if (slot_of(k) >= count) continue;
        if (whole(slot_of(k))) {
            out[k] = load.template read<P>(row, col);
        } else {
            const T padding = from_float<T>(pad);
#pragma unroll
            for (int i = 0; i < P; ++i)
                out[k].elems()[i] = col + i >= s.begin && col + i < s.end ? load.read1(row, col + i) : padding;
        }
    }
}

// Slots held with one misalignment, re-cut for another through shared memory (dynamic, one
// slot per pack of the slice plus one: instances.cluster_smem_bytes). Only views whose tensors
// start at different offsets within 16 bytes take this; the global accesses stay 16-byte ones.
template <typename T, int P, int K>
__device__ __forceinline__ void realign(Pack<T, P> (&slots)[K], i64 from_first, int from_count, i64 to_first,
                                        int to_count, const ClusterSlice<P>& s) {
    extern __shared__ __align__(16) unsigned char shared_bytes[];
    Pack<T, P>* buffer = reinterpret_cast<Pack<T, P>*>(shared_bytes);
    __syncthreads();  // an earlier realignment's readers are done with the buffer
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (slot_of(k) < from_count) buffer[slot_of(k)] = slots[k];
    __syncthreads();
    const T* elems = reinterpret_cast<const T*>(buffer);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const int j = slot_of(k);
        if (j < to_count) {
            const i64 col = to_first + (i64)j * P;
            float v[P];
#pragma unroll
            for (int i = 0; i < P; ++i)
                v[i] = col + i >= s.begin && col + i < s.end ? to_float(elems[col + i - from_first]) : 0.0f;
            slots[k] = make_pack<T, P>(v);
        }
    }
}

template <int P>
__device__ __forceinline__ int slot_count(const ClusterSlice<P>& s, i64 first) {
    return s.end > s.begin ? (int)((s.end - first + P - 1) / P) : 0;
}

// The merge of the posted (max, sum) pairs, the same in every warp: each lane folds its share,
// the maximum first so that each pair is rescaled once.
// A lane's posts are read once, all in flight together (at most kClusterMaxWarps x kClusterMaxCtas
// / 32), an absent one as the empty pair (-inf, 0), which adds nothing.
// Launches of 32 posts or fewer (warps x CTAs: bf16 rows of about 50K columns take 7 warps x 4 CTAs)
// take one post a lane and one exponential, not the eight rounds of the walk below: H200,
// alternated in one process behind an L2 flush (benchmarks/results/2026-12-03_h200_s52/c1), bf16
// 2670 x 50264 0.901 -> 0.928 of copy, 2670 x 50257 0.874 -> 0.898, log-softmax alike, the rest
// level. The branch is warp-uniform and indexes no array: merging only the rounds a launch has, with
// the posts' arrays behind such branches, spilled them to a stack frame under the tier's register cap
// and ran far slower (0.60 against 0.90; results 2026-12-03_h200_s51/d6).
__device__ __forceinline__ MaxSum merge_posts(const unsigned long long* posts, int count) {
    constexpr int kMost = kClusterMaxWarps * kClusterMaxCtas / 32;
    const int lane = threadIdx.x & 31;
    if (count <= 32) {
        const unsigned long long post = lane < count ? posts[lane] : (unsigned long long)__float_as_uint(neg_inf());
        const float pm = __uint_as_float((unsigned)post), ps = __uint_as_float((unsigned)(post >> 32));
        const float m = group_max<32>(pm);
        return MaxSum{m, group_sum<32>(rescaled_sum(pm, ps, m))};
    }
    float pm[kMost], ps[kMost];
    float m = neg_inf();
#pragma unroll
    for (int i = 0; i < kMost; ++i) {
        const int at = lane + 32 * i;
        const unsigned long long post = at < count ? posts[at] : (unsigned long long)__float_as_uint(neg_inf());
        pm[i] = __uint_as_float((unsigned)post);
        ps[i] = __uint_as_float((unsigned)(post >> 32));
        m = fmaxf(m, pm[i]);
    }
    m = group_max<32>(m);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < kMost; ++i) sum += rescaled_sum(pm[i], ps[i], m);
    return MaxSum{m, group_sum<32>(sum)};
}

// A post's bits: a (max, sum) pair in one 8-byte word, a sum in four.
__device__ __forceinline__ unsigned long long post_bits(MaxSum v) {
    return (unsigned long long)__float_as_uint(v.max) | ((unsigned long long)__float_as_uint(v.sum) << 32);
}
__device__ __forceinline__ unsigned post_bits(float v) { return __float_as_uint(v); }

#if __CUDA_ARCH__ >= 900
// The row's (max, sum) from the warps' pairs (each against its warp's maximum, the lanes' sums not
// yet added), every warp of every CTA of the cluster alike.
__device__ __forceinline__ MaxSum cluster_total(ClusterAllToAll<unsigned long long>& all, unsigned round, MaxSum pair) {
    pair.sum = group_sum<32>(pair.sum);
    return merge_posts(all.exchange(round, post_bits(pair)), all.count());
}

// The backward's: the row's total from the warps' sums.
__device__ __forceinline__ float cluster_total(ClusterAllToAll<unsigned>& all, unsigned round, float sum) {
    const unsigned* posts = all.exchange(round, post_bits(group_sum<32>(sum)));
    float total = 0.0f;
    for (int i = threadIdx.x & 31; i < all.count(); i += 32) total += __uint_as_float(posts[i]);
    return group_sum<32>(total);
}
#endif

// ---- register-held slots ----------------------------------------------------------------------
// The maximum of a thread's held slots [0, count) (slot_of numbering).
template <typename T, int P, int K, typename LOAD>
__device__ __forceinline__ float held_max(const LOAD& load, const Pack<T, P> (&x)[K], int count, i64 row, i64 first) {
    float m = neg_inf();
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const float slot = load.template max_of<P>(x[k], row, first + (i64)slot_of(k) * P);
        m = slot_of(k) < count ? fmaxf(m, slot) : m;  // a select, not a branch a slot
    }
    return m;
}

// The sum of e.term<FUSED> over the held slots.
template <bool FUSED, typename T, int P, int K, typename LOAD>
__device__ __forceinline__ float held_sum(const LOAD& load, const Pack<T, P> (&x)[K], int count, i64 row, i64 first,
                                          const ExpShift& e) {
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (slot_of(k) < count) {
            float v[P];
            load.template convert<P>(x[k], v, row, first + (i64)slot_of(k) * P);
#pragma unroll
            for (int i = 0; i < P; ++i) sum += e.template term<FUSED>(v[i]);
        }
    }
    return sum;
}

// The (max, sum) pair of the held slots against their maximum m (a warp's: pass m reduced over
// the warp, so that the branch is uniform). FUSE: terms by ExpShift's one FFMA where m allows; not
// for log-softmax, whose output at the maximum, -log(sum), must be 0 for a row of one element,
// which the rounded factor 2^(k - m log2e) would move by an ulp of the sum.
template <bool FUSE, typename T, int P, int K, typename LOAD>
__device__ __forceinline__ MaxSum held_pair(const LOAD& load, const Pack<T, P> (&x)[K], int count, i64 row, i64 first,
                                            float m) {
    const ExpShift e(m);
    if (FUSE && e.fused) return e.template pair<true>(held_sum<true>(load, x, count, row, first, e));
    return e.template pair<false>(held_sum<false>(load, x, count, row, first, e));
}

// ---- the forward's walks: whole slots in straight-line code, the slice's edges apart ----------
// A launch of a few rows runs every instruction of this kernel once or twice per SM, fetched cold
// (every CTA of its one wave reaches each phase at once), so the walks over a thread's K slots are
// straight-line code over whole 16-byte slots: a slot past the slice or across its edges loads as
// padding and is not stored, and the slice's partial first and last slots (at most two in a CTA)
// are read and written element by element afterwards by the threads that hold them
// (each_partial_slot), in one copy of that code rather than one beside every slot.

// The index k at which this thread holds slot j of the slice (slot_of numbering), or -1.
template <int K>
__device__ __forceinline__ int held_index(int j) {
    int at = -1;
#pragma unroll
    for (int k = 0; k < K; ++k) at = slot_of(k) == j ? k : at;
    return at;
}

// f(col, k) for each partial slot of the slice (its first and last slot, where they straddle the
// slice's edges) that this thread holds at index k; col: the slot's first column.
template <int P, int K, typename F>
__device__ __forceinline__ void each_partial_slot(const WholeSlots<P>& whole, i64 first, int count, F f) {
#pragma unroll 1
    for (int e = 0; e < 2; ++e) {
        const int j = e == 0 ? 0 : count - 1;
        if (j < 0 || whole(j) || (e == 1 && j == 0)) continue;
        const int k = held_index<K>(j);
        if (k >= 0) f(first + (i64)j * P, k);
    }
}

// The elements of a partial slot's values v (columns col ..) that lie inside the slice, one by one.
template <int P, typename STORE>
__device__ __forceinline__ void store_inside(const STORE& store, const ClusterSlice<P>& s, i64 row, i64 col,
                                             const float* v) {
#pragma unroll
    for (int i = 0; i < P; ++i)
        if (col + i >= s.begin && col + i < s.end) store.store1(v[i], row, col + i);
}

// Slot k of x from a pack, k known only at run time: K selects rather than an indexed (local
// memory) array.
template <typename T, int P, int K>
__device__ __forceinline__ void set_held(Pack<T, P> (&x)[K], int at, const Pack<T, P>& value) {
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (k == at) x[k] = value;
}

template <typename T, int P, int K>
__device__ __forceinline__ Pack<T, P> get_held(const Pack<T, P> (&x)[K], int at) {
    Pack<T, P> out = x[0];
#pragma unroll
    for (int k = 1; k < K; ++k)
        if (k == at) out = x[k];
    return out;
}

// The thread's K slots of the slice (slot j: columns first + jP ..) that are whole 16-byte packs,
// by one 16-byte load each, all in flight before any is used; every other slot `pad`.
template <typename T, int P, int K, typename LOAD>
__device__ __forceinline__ void load_whole(const LOAD& load, const T* row, const ClusterSlice<P>& s, i64 first,
                                           int count, float pad, Pack<T, P> (&x)[K]) {
    const WholeSlots<P> whole(s, first, count);
    const Pack<T, P> padding = filled_pack<T, P>(pad);
#pragma unroll
    for (int k = 0; k < K; ++k)
        x[k] = whole(slot_of(k)) ? load.template read<P>(row, first + (i64)slot_of(k) * P) : padding;
}

// The slice's partial first and last slots (each_partial_slot's) that this thread holds, read element
// by element, only their elements inside the slice (the rest `pad`: reading the whole pack would touch
// bytes outside the tensor, or in a neighbouring CTA's slice being written in place). Loads only:
// place_edges puts them among the held slots once every load of the row is in flight. Placing each
// as it was read (load_held) makes its thread wait for it before issuing the next tensor's loads, and
// its whole cluster with it: the float32 backward of rows with a partial slot ran 0.76 of copy that
// way (2670 x 50257; 1.02 gathered, 0.99 with the earlier walk's element-by-element path beside every
// slot), 4096 x 16383 0.62 (0.80 gathered), 2048 x 65535 0.60 (0.73). H200, alternated in one process,
// results 2026-12-02_h200_s43.
template <typename T, int P>
struct EdgeSlots {
    Pack<T, P> pack[2];
    int at[2];  // the index k at which the thread holds each, or -1
};

template <typename T, int P, int K, typename LOAD>
__device__ __forceinline__ EdgeSlots<T, P> gather_edges(const LOAD& load, const T* row, const ClusterSlice<P>& s,
                                                        i64 first, int count, float pad) {
    const WholeSlots<P> whole(s, first, count);
    EdgeSlots<T, P> edges;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
        const int j = e == 0 ? 0 : count - 1;
        edges.at[e] = j < 0 || whole(j) || (e == 1 && j == 0) ? -1 : held_index<K>(j);
        const i64 col = first + (i64)j * P;
#pragma unroll
        for (int i = 0; i < P; ++i)
            edges.pack[e].elems()[i] = edges.at[e] >= 0 && col + i >= s.begin && col + i < s.end
                                           ? load.read1(row, col + i)
                                           : from_float<T>(pad);
    }
    return edges;
}

template <typename T, int P, int K>
__device__ __forceinline__ void place_edges(Pack<T, P> (&x)[K], const EdgeSlots<T, P>& edges) {
#pragma unroll
    for (int e = 0; e < 2; ++e)
        if (edges.at[e] >= 0) set_held<T, P, K>(x, edges.at[e], edges.pack[e]);
}

// The thread's K slots of the slice (slot j: columns first + jP ..): whole ones by one 16-byte
// load each, all in flight before any is used; every other slot `pad`, then the partial ones
// element by element, only their elements inside the slice (the rest `pad`: reading the whole pack
// would touch bytes outside the tensor, or in a neighbouring CTA's slice being written in place).
// Each partial slot is placed as it is read: one tensor's thread waits for them before its first use
// of the slots anyway (the backward's two tensors take load_whole and gather_edges instead). Written
// as those two, the forward's and the column kernels' registers rose (8 bytes spilled under a cap).
template <typename T, int P, int K, typename LOAD>
__device__ __forceinline__ void load_held(const LOAD& load, const T* row, const ClusterSlice<P>& s, i64 first,
                                          int count, float pad, Pack<T, P> (&x)[K]) {
    load_whole<T, P, K>(load, row, s, first, count, pad, x);
    each_partial_slot<P, K>(WholeSlots<P>(s, first, count), first, count, [&](i64 col, int k) {
        Pack<T, P> edge = filled_pack<T, P>(pad);
#pragma unroll
        for (int i = 0; i < P; ++i)
            if (col + i >= s.begin && col + i < s.end) edge.elems()[i] = load.read1(row, col + i);
        set_held<T, P, K>(x, k, edge);
    });
}

// Writes a thread's slots through `store`, the P values of slot k (columns col ..) from
// values(k, col, v): whole slots by one 16-byte store each, in straight-line code, then the partial
// ones element by element inside the slice. values is called with k a constant in the walk and a run
// time index for the partial slots: it reads held slots with get_held, whose selects fold away for
// a constant k.
template <int P, int K, typename STORE, typename VALUES>
__device__ __forceinline__ void store_slots(const STORE& store, const ClusterSlice<P>& s, int count, i64 row,
                                            i64 first, const VALUES& values) {
    const WholeSlots<P> whole(s, first, count);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        const i64 col = first + (i64)slot_of(k) * P;
        float v[P];
        values(k, col, v);
        if (whole(slot_of(k))) store.template store<P>(v, row, col);
    }
    each_partial_slot<P, K>(whole, first, count, [&](i64 col, int k) {
        float v[P];
        values(k, col, v);
        store_inside<P>(store, s, row, col, v);
    });
}

// The held slots, each slot's P values converted by `load` and mapped in place by out(values).
template <typename T, int P, int K, typename LOAD, typename STORE, typename OUT>
__device__ __forceinline__ void store_held(const LOAD& load, const STORE& store, const ClusterSlice<P>& s,
                                           const Pack<T, P> (&x)[K], int count, i64 row, i64 first, const OUT& out) {
    store_slots<P, K>(store, s, count, row, first, [&](int k, i64 col, float* v) {
        load.template convert<P>(get_held<T, P, K>(x, k), v, row, col);
        out(v);
    });
}

// RowOutput's two forms as element maps, so that the row's choice between them is made once,
// outside the walk: the fused 16-bit softmax output, or normalise.
template <bool LOG, typename T>
struct Normalised {
    RowScale scale;
    __device__ __forceinline__ float operator()(float x) const { return normalise<LOG, T>(x, scale); }
};

// An element map as the pack map store_held takes.
template <int P, typename F>
struct EachElement {
    F f;
    __device__ __forceinline__ void operator()(float* v) const {
#pragma unroll
        for (int i = 0; i < P; ++i) v[i] = f(v[i]);
    }
};

// ---- kept exponentials ----------------------------------------------------------------------
// Softmax forward of launches of one wave (decode: a few rows of vocabulary length) takes one
// exponential an element instead of two: the sum keeps its terms in registers as float32, and the
// output multiplies each by one factor of its warp. Every CTA of such a launch runs each phase at
// the same moment, so nothing hides the second exponential (the MUFU pipe does 16 an SM a cycle)
// behind memory. The terms cost registers (NVRTC 13, K = 8 float32: 128 against 64; 16-bit 98
// against 52, and spills at 64 elements a thread), which many rows would rather spend on more
// resident CTAs: the host takes this form only where the launch is one wave with it.
//
// A term is exp(v - m) 2^(m log2e - base + 64) for the warp's maximum m, base = k (ExpShift fused)
// or m log2e: lifted by 2^64, so that terms down to 2^-190 stay normal under the flushing ex2.

// The kept terms of the held slots and the sum of those in [0, count). Every slot gets a term,
// unset ones too (never summed, never written): terms set on one branch only kept the compiler
// from placing them in the registers of the packs they replace (fp32, K = 8: 128 registers
// against 64).
template <bool FUSED, typename T, int P, int K, typename LOAD>
__device__ __forceinline__ float kept_terms(const LOAD& load, const Pack<T, P> (&x)[K], int count, i64 row, i64 first,
                                            const ExpShift& e, float (&terms)[K][P]) {
    float sum = 0.0f;
    const float lifted_neg_k = e.neg_k + 64.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        float v[P];
        load.template convert<P>(x[k], v, row, first + (i64)slot_of(k) * P);
        float part = 0.0f;
#pragma unroll
        for (int i = 0; i < P; ++i) {
            terms[k][i] = FUSED ? ex2_ftz(fmaf(v[i], kLog2e, lifted_neg_k)) : ex2_ftz(fmaf(v[i] - e.shift, kLog2e, 64.0f));
            part += terms[k][i];
        }
        if (slot_of(k) < count) sum += part;
    }
    return sum;
}

// The (max, sum) pair of the kept terms against the warp's maximum, as held_pair's.
template <typename T, int P, int K, typename LOAD>
__device__ __forceinline__ MaxSum kept_pair(const LOAD& load, const Pack<T, P> (&x)[K], int count, i64 row, i64 first,
                                            const ExpShift& e, float (&terms)[K][P]) {
    if (e.fused) return e.template pair<true>(kept_terms<true>(load, x, count, row, first, e, terms) * 0x1p-64f);
    return e.template pair<false>(kept_terms<false>(load, x, count, row, first, e, terms) * 0x1p-64f);
}

// The output of a warp's kept terms from the row's total pair: term * factor, or (term * g) * r
// where factor = g * r leaves the normal range (a warp whose maximum lies far below the row's:
// its outputs are then subnormal or zero, and each product rounds once more).
struct KeptScale {
    float g, r, factor;
    bool single;

    __device__ __forceinline__ KeptScale(const ExpShift& e, const MaxSum& total) {
        // 2^(base - M log2e) <= 2^(1/2), by exp2f: kept subnormal
        g = exp2f(e.fused ? -fmaf(total.max, kLog2e, e.neg_k) : (e.shift - total.max) * kLog2e);
        r = 0x1p-64f / total.sum;
        factor = g * r;
        single = factor >= 0x1p-126f;  // false for NaN, which (term * g) * r carries as well
        if (e.max == neg_inf()) {
            // a warp of -inf: terms of 0, outputs of 0, or NaN for a row of -inf (as torch)
            factor = total.max == neg_inf() ? __int_as_float(0x7fc00000) : 0.0f;
            single = true;
        }
    }

    template <int P>
    __device__ __forceinline__ void apply(const float* terms, float* v) const {
        if (single) {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = terms[i] * factor;
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = (terms[i] * g) * r;
        }
    }
};

// Writes the kept terms of a warp through `store`, scaled by the row's total (KeptScale).
template <typename T, int P, int K, typename STORE>
__device__ __forceinline__ void store_kept(const STORE& store, const ClusterSlice<P>& s, const float (&terms)[K][P],
                                           int count, i64 row, i64 first, const KeptScale& scale) {
    store_slots<P, K>(store, s, count, row, first, [&](int at, i64, float* v) {
        float t[P];  // terms[at], by selects (see store_slots)
#pragma unroll
        for (int i = 0; i < P; ++i) t[i] = terms[0][i];
#pragma unroll
        for (int k = 1; k < K; ++k)
            if (k == at) {
#pragma unroll
                for (int i = 0; i < P; ++i) t[i] = terms[k][i];
            }
        scale.template apply<P>(t, v);
    });
}

// ---- rows whose tensors share one misalignment: whole packs, the row's ends apart ---------------
// ClusterSlice cuts a row at its 16-byte boundaries, so the row's partial first and last packs fall
// in the first and last CTA's slices and every walk tells whole slots from partial ones. Where every
// tensor of a call shares each row's misalignment (dense rows of an odd length, views cut alike),
// the slices can take the row's whole packs only and leave its head (the columns before its first
// boundary) and its tail (those after its last whole pack) to one thread each: no slot of any walk
// is partial, no slot is placed at a run time index, and a slice holds at most ceil(whole packs /
// C) packs, an aligned row's count (ClusterSlice's cut gives a misaligned row one more pack a CTA,
// which takes a CTA a warp more: 1024 x 131071 on 288 threads where 131072 runs 256). The head and
// tail are read after every whole pack's load is in flight, so no thread waits on them before
// issuing its loads, and the forward reads its end again after the exchange rather than holding it
// across (its registers: bf16, 64 elements a thread, 80 against 64 with the end held, within the caps
// of instances.CLUSTER_ALIKE_MAX_REGISTERS without a spill). H200, alternated in one process
// against ClusterSlice's cut (benchmarks/results/2026-12-02_h200_s44/cluster_rule_ab.txt): bf16
// backward 2670 x 50257 0.72 -> 0.92 of copy, 1024 x 131071 0.67 -> 0.98, 2048 x 65535 0.68 -> 1.01,
// 64 x 262143 0.44 -> 0.72; float32 1024 x 131071 0.65 -> 1.01; forward bf16 1024 x 131071 0.80 ->
// 0.85, 256 x 524287 0.47 -> 0.52, float32 0.66 -> 0.73. Not everywhere: which launches take it is
// the host's rule (plans.cluster_whole_packs).
template <int P>
struct InteriorSlice {
    i64 head;   // the row's first column on a 16-byte boundary: [0, head) is its head
    i64 tail;   // the column after its last whole pack: [tail, n) is its tail
    i64 first;  // this CTA's first column (on a boundary)
    int count;  // this CTA's packs

    __device__ __forceinline__ InteriorSlice(i64 n, int shift, unsigned rank, unsigned ctas) {
        head = min(n, (i64)((P - shift) & (P - 1)));
        const i64 packs = (n - head) / P;
        // C is a power of two (a shift, not a 64-bit division)
        const i64 per_cta = (packs + ctas - 1) >> (__ffs(ctas) - 1);
        const i64 from = min(packs, (i64)rank * per_cta);
        first = head + from * P;
        count = (int)(min(packs, from + per_cta) - from);
        tail = head + packs * P;
    }
};

// The row's head (thread 0 of the first CTA) or tail (the last thread of the last CTA): its `size`
// columns from `from` (fewer than P), read and written element by element; none in every other thread.
template <int P>
struct RowEnd {
    i64 from;
    int size;

    __device__ __forceinline__ RowEnd(const InteriorSlice<P>& s, i64 n, unsigned rank, unsigned ctas) {
        from = 0;
        size = 0;
        if (rank == 0 && threadIdx.x == 0) {
            size = (int)s.head;
        } else if (rank == ctas - 1 && threadIdx.x == blockDim.x - 1) {
            from = s.tail;
            size = (int)(n - s.tail);
        }
    }

    // Its elements as a pack (element i: column from + i), the rest `pad`.
    template <typename T, typename LOAD>
    __device__ __forceinline__ Pack<T, P> read(const LOAD& load, const T* row, float pad) const {
        Pack<T, P> out;
#pragma unroll
        for (int i = 0; i < P; ++i) out.elems()[i] = i < size ? load.read1(row, from + i) : from_float<T>(pad);
        return out;
    }

    template <typename STORE>
    __device__ __forceinline__ void write(const STORE& store, i64 row, const float* v) const {
#pragma unroll
        for (int i = 0; i < P; ++i)
            if (i < size) store.store1(v[i], row, from + i);
    }
};

// The thread's K slots of a slice (slot j: columns first + jP ..), whole packs all: one 16-byte load
// each, all in flight before any is used; slots past the slice `pad`.
template <typename T, int P, int K, typename LOAD>
__device__ __forceinline__ void load_interior(const LOAD& load, const T* row, const InteriorSlice<P>& s, float pad,
                                              Pack<T, P> (&x)[K]) {
    const Pack<T, P> padding = filled_pack<T, P>(pad);
#pragma unroll
    for (int k = 0; k < K; ++k)
        x[k] = slot_of(k) < s.count ? load.template read<P>(row, s.first + (i64)slot_of(k) * P) : padding;
}

// ---- forward, registers ---------------------------------------------------------------------------
// The sum of e.term<FUSED> over one pack (columns col ..).
template <bool FUSED, typename T, int P, typename LOAD>
__device__ __forceinline__ float pack_sum(const LOAD& load, const Pack<T, P>& x, i64 row, i64 col, const ExpShift& e) {
    float v[P];
    load.template convert<P>(x, v, row, col);
    float sum = 0.0f;
#pragma unroll
    for (int i = 0; i < P; ++i) sum += e.template term<FUSED>(v[i]);
    return sum;
}

// The held packs and the row's end, each pack's values converted by `load` and mapped in place by
// out(values), written through `store`.
template <typename T, int P, int K, typename LOAD, typename STORE, typename OUT>
__device__ __forceinline__ void store_interior(const LOAD& load, const STORE& store, const InteriorSlice<P>& slice,
                                               const RowEnd<P>& end, const Pack<T, P> (&x)[K],
                                               const Pack<T, P>& x_end, i64 row, const OUT& out) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (slot_of(k) < slice.count) {
            const i64 col = slice.first + (i64)slot_of(k) * P;
            float v[P];
            load.template convert<P>(x[k], v, row, col);
            out(v);
            store.template store<P>(v, row, col);
        }
    }
    if (end.size > 0) {
        float v[P];
        load.template convert<P>(x_end, v, row, end.from);
        out(v);
        end.write(store, row, v);
    }
}

#if __CUDA_ARCH__ >= 900
// The forward of rows whose x and y share every row's misalignment (the host's guarantee, as
// cluster_backward_regs' ALIKE): the row's whole packs across the cluster, its ends apart.
template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_forward_alike(const LOAD& load, const STORE& store, i64 row, i64 n,
                                                      ClusterAllToAll<unsigned long long>& all, unsigned round,
                                                      unsigned rank, unsigned ctas) {
    const T* src = load.row_ptr(row);
    const int shift = misalignment<T, P>(src);
    if (misalignment<T, P>(store.row_ptr(row)) != shift) __trap();
    const InteriorSlice<P> slice(n, shift, rank, ctas);
    const RowEnd<P> end(slice, n, rank, ctas);
    Pack<T, P> x[K];
    load_interior<T, P, K>(load, src, slice, neg_inf(), x);
    const Pack<T, P> x_end = end.template read<T>(load, src, neg_inf());

    // as cluster_forward_regs: the warp's pair against the warp's maximum (the end's padding, -inf,
    // adds nothing to either)
    const float m = group_max<32>(
        fmaxf(held_max<T, P, K>(load, x, slice.count, row, slice.first), load.template max_of<P>(x_end, row, end.from)));
    const ExpShift e(m);
    MaxSum pair;
    if (!LOG && e.fused) {
        pair = e.template pair<true>(held_sum<true>(load, x, slice.count, row, slice.first, e) +
                                     pack_sum<true>(load, x_end, row, end.from, e));
    } else {
        pair = e.template pair<false>(held_sum<false>(load, x, slice.count, row, slice.first, e) +
                                      pack_sum<false>(load, x_end, row, end.from, e));
    }
    const MaxSum total = cluster_total(all, round, pair);
    if (fused_output<LOG, T>(total)) {
        store_interior<T, P, K>(load, store, slice, end, x, end.template read<T>(load, src, neg_inf()), row,
                                EachElement<P, FusedNormaliser<T>>{FusedNormaliser<T>(total)});
    } else {
        store_interior<T, P, K>(load, store, slice, end, x, end.template read<T>(load, src, neg_inf()), row,
                                EachElement<P, Normalised<LOG, T>>{Normalised<LOG, T>{row_scale(total)}});
    }
}
#endif

// KEEP: kept exponentials (softmax only), for rows whose tensors share one misalignment. ALIKE: x and
// y share every row's misalignment, cut as cluster_forward_alike.
template <typename T, int P, int K, bool LOG, bool KEEP, bool ALIKE, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_forward_regs(const LOAD& load, const STORE& store, i64 rows, i64 n) {
    static_assert(!(KEEP && LOG), "kept exponentials are a softmax form");
    static_assert(!(KEEP && ALIKE), "kept exponentials are held by ClusterSlice's cut");
#if __CUDA_ARCH__ >= 900
    const unsigned ctas = cluster_nctarank();
    ClusterAllToAll<unsigned long long> all(ctas, cluster_ctarank());
    const int log2_ctas = __ffs(ctas) - 1;  // C is a power of two
    const i64 clusters = gridDim.x >> log2_ctas;
    unsigned round = 0;
    for (i64 row = blockIdx.x >> log2_ctas; row < rows; row += clusters, ++round) {
        if constexpr (ALIKE) {
            cluster_forward_alike<T, P, K, LOG>(load, store, row, n, all, round, cluster_ctarank(), ctas);
            continue;
        }
        const T* src = load.row_ptr(row);
        const int shift = misalignment<T, P>(src);
        const ClusterSlice<P> slice(n, shift, cluster_ctarank(), ctas);
        i64 first = slice.first(shift);
        int count = slot_count(slice, first);
        Pack<T, P> x[K];
        load_held<T, P, K>(load, src, slice, first, count, neg_inf(), x);

        // the warp's pair, against the warp's maximum: one exponential per element, none to merge
        // the lanes; a warp whose elements are all -inf subtracts 0 (exp(-inf) = 0 rather than
        // NaN), and a NaN or +inf element makes its sum NaN, which the merge carries to the row
        const float m = group_max<32>(held_max<T, P, K>(load, x, count, row, first));
        const ExpShift e(m);
        float terms[KEEP ? K : 1][P];  // KEEP only
        MaxSum pair;
        if constexpr (KEEP) {
            // the host takes this form only where x and y share their misalignment
            if (misalignment<T, P>(store.row_ptr(row)) != shift) __trap();
            pair = kept_pair<T, P, K>(load, x, count, row, first, e, terms);
        } else {
            pair = held_pair<!LOG, T, P, K>(load, x, count, row, first, m);
        }
        const MaxSum total = cluster_total(all, round, pair);
        if constexpr (KEEP) {
            store_kept<T, P, K>(store, slice, terms, count, row, first, KeptScale(e, total));
            continue;
        }

        // As block_regs: a row of -inf gives 0 * inf or -inf - -inf, NaN, as torch does.
        const int out_shift = misalignment<T, P>(store.row_ptr(row));
        if (out_shift != shift) {
            const i64 out_first = slice.first(out_shift);
            const int out_count = slot_count(slice, out_first);
            realign<T, P, K>(x, first, count, out_first, out_count, slice);
            first = out_first;
            count = out_count;
        }
        if (fused_output<LOG, T>(total)) {
            store_held<T, P, K>(load, store, slice, x, count, row, first,
                                EachElement<P, FusedNormaliser<T>>{FusedNormaliser<T>(total)});
        } else {
            store_held<T, P, K>(load, store, slice, x, count, row, first,
                                EachElement<P, Normalised<LOG, T>>{Normalised<LOG, T>{row_scale(total)}});
        }
    }
#else
    __trap();
#endif
}

// ---- backward, registers --------------------------------------------------------------------------
// The backward's stagger_first_wave wait (the host passes the resident clusters' count on launches
// of more than one wave: instances.cluster_stagger). H200, alternated in one process (results
// 2026-12-03_h200_s49/r2): 1.5 us ahead of 3 on six of eight shapes by up to 0.01 of copy, 6 us
// behind both (bf16 128 x 128256 30.9, 31.2, 32.9 us). The forward measured no gain and has none.
constexpr long long kClusterStaggerNs = 1500;

// sum(dy * y) (log-softmax: sum(dy)) over a thread's slots [0, count) from column first
template <bool LOG, typename T, int P, int K, typename LOAD>
__device__ __forceinline__ float backward_slots_sum(const LOAD& load_y, const LOAD& load_dy, const Pack<T, P> (&y)[K],
                                                    const Pack<T, P> (&dy)[K], int count, i64 row, i64 first) {
    float sum = 0.0f;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (slot_of(k) < count) {
            const i64 col = first + (i64)slot_of(k) * P;
            float yv[P], dyv[P];
            load_y.template convert<P>(y[k], yv, row, col);
            load_dy.template convert<P>(dy[k], dyv, row, col);
#pragma unroll
            for (int i = 0; i < P; ++i) sum += backward_term<LOG>(yv[i], dyv[i]);
        }
    }
    return sum;
}

// dx of one slot's P values (y and dy as held, columns col ..) into v.
template <bool LOG, typename T, int P, typename LOAD>
__device__ __forceinline__ void backward_slot(const LOAD& load_y, const LOAD& load_dy, const Pack<T, P>& y,
                                              const Pack<T, P>& dy, i64 row, i64 col, float total, float* v) {
    float dyv[P];
    load_y.template convert<P>(y, v, row, col);
    load_dy.template convert<P>(dy, dyv, row, col);
#pragma unroll
    for (int i = 0; i < P; ++i) v[i] = input_grad<LOG>(v[i], dyv[i], total);
}

// ALIKE: the host guarantees that y, dy and dx share every row's misalignment (InteriorSlice's
// cut, the row's ends apart); otherwise the slices are cut at the row's 16-byte boundaries and
// tensors misaligned otherwise than y are re-cut through shared memory (realign).
template <typename T, int P, int K, bool LOG, bool ALIKE, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_backward_regs(const LOAD& load_y, const LOAD& load_dy, const STORE& store,
                                                      i64 rows, i64 n, i64 stagger) {
#if __CUDA_ARCH__ >= 900
    const unsigned ctas = cluster_nctarank(), rank = cluster_ctarank();
    ClusterAllToAll<unsigned> all(ctas, rank);
    const i64 clusters = gridDim.x / ctas;
    unsigned round = 0;
    stagger_first_wave(blockIdx.x / ctas, stagger, kClusterStaggerNs);
    for (i64 row = blockIdx.x / ctas; row < rows; row += clusters, ++round) {
        const T* y_row = load_y.row_ptr(row);
        const T* dy_row = load_dy.row_ptr(row);
        const int shift = misalignment<T, P>(y_row);
        const int dy_shift = misalignment<T, P>(dy_row);
        const int out_shift = misalignment<T, P>(store.row_ptr(row));
        Pack<T, P> y[K], dy[K];
        if constexpr (ALIKE) {
            if (dy_shift != shift || out_shift != shift) __trap();
            const InteriorSlice<P> slice(n, shift, rank, ctas);
            const RowEnd<P> end(slice, n, rank, ctas);
            load_interior<T, P, K>(load_y, y_row, slice, 0.0f, y);
            load_interior<T, P, K>(load_dy, dy_row, slice, 0.0f, dy);
            const Pack<T, P> y_end = end.template read<T>(load_y, y_row, 0.0f);
            const Pack<T, P> dy_end = end.template read<T>(load_dy, dy_row, 0.0f);
            // the padding adds nothing: y = dy = 0 gives a term of 0 either way
            float sum = backward_slots_sum<LOG, T, P, K>(load_y, load_dy, y, dy, slice.count, row, slice.first);
            {
                float yv[P], dyv[P];
                load_y.template convert<P>(y_end, yv, row, end.from);
                load_dy.template convert<P>(dy_end, dyv, row, end.from);
#pragma unroll
                for (int i = 0; i < P; ++i) sum += backward_term<LOG>(yv[i], dyv[i]);
            }
            const float total = cluster_total(all, round, sum);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (slot_of(k) < slice.count) {
                    const i64 col = slice.first + (i64)slot_of(k) * P;
                    float v[P];
                    backward_slot<LOG, T, P>(load_y, load_dy, y[k], dy[k], row, col, total, v);
                    store.template store<P>(v, row, col);
                }
            }
            if (end.size > 0) {
                float v[P];
                backward_slot<LOG, T, P>(load_y, load_dy, y_end, dy_end, row, end.from, total, v);
                end.write(store, row, v);
            }
        } else {
            const ClusterSlice<P> slice(n, shift, rank, ctas);
            i64 first = slice.first(shift);
            int count = slot_count(slice, first);
            const i64 dy_first = slice.first(dy_shift);
            const int dy_count = slot_count(slice, dy_first);
            if constexpr (sizeof(T) == 4) {
                // float32: both tensors' loads in flight before either's edges are placed (gather_edges)
                load_whole<T, P, K>(load_y, y_row, slice, first, count, 0.0f, y);
                load_whole<T, P, K>(load_dy, dy_row, slice, dy_first, dy_count, 0.0f, dy);
                const EdgeSlots<T, P> y_edges = gather_edges<T, P, K>(load_y, y_row, slice, first, count, 0.0f);
                const EdgeSlots<T, P> dy_edges =
                    gather_edges<T, P, K>(load_dy, dy_row, slice, dy_first, dy_count, 0.0f);
                place_edges<T, P, K>(y, y_edges);
                place_edges<T, P, K>(dy, dy_edges);
            } else {
                // 16-bit: each tensor's edges placed as read; gathered as float32's, the 16-bit kernels
                // took 107-128 registers against 92-121 and ran slower on rows without partial slots
                // (bf16 2670 x 50264 0.79 of copy against 0.95, 32 x 151936 0.48 against 0.61)
                load_held<T, P, K>(load_y, y_row, slice, first, count, 0.0f, y);
                load_held<T, P, K>(load_dy, dy_row, slice, dy_first, dy_count, 0.0f, dy);
            }
            if (dy_shift != shift) realign<T, P, K>(dy, dy_first, dy_count, first, count, slice);
            const float total =
                cluster_total(all, round, backward_slots_sum<LOG, T, P, K>(load_y, load_dy, y, dy, count, row, first));
            if (out_shift != shift) {
                const i64 out_first = slice.first(out_shift);
                const int out_count = slot_count(slice, out_first);
                realign<T, P, K>(y, first, count, out_first, out_count, slice);
                realign<T, P, K>(dy, first, count, out_first, out_count, slice);
                first = out_first;
                count = out_count;
            }
            store_slots<P, K>(store, slice, count, row, first, [&](int k, i64 col, float* v) {
                backward_slot<LOG, T, P>(load_y, load_dy, get_held<T, P, K>(y, k), get_held<T, P, K>(dy, k), row, col,
                                         total, v);
            });
        }
    }
#else
    __trap();
#endif
}

// ==== interleaved columns: a strided axis over a few contiguous columns ===========================
// A softmax over axis 1 of (outer, n, inner) whose n x inner block is one contiguous run for each
// outer index ((B, T, 8) over T: an expert-choice router over tokens) is a row of n * inner
// elements whose element f belongs to column f % inner. The kernels below hold that run across a
// cluster exactly as the row kernels above hold a row (16-byte slots, coalesced over rows and
// columns together, read once, written once); only the reduction changes. A thread keeps one value
// per position of its packs, and the positions that hold one column merge within the thread, then
// across the warp's lanes (column_reduce), then over the CTA's warps and the cluster's CTAs
// (ColumnExchange): inner values a row where a row has one. They walk their slots as the row
// forward does (load_held, store_held: straight-line code over whole slots, the partial ones
// apart): against an element-by-element path beside every slot, bf16 forward (512, 8192, 16) over
// dim 1 0.74 -> 0.86 of copy, backward (1024, 16384, 4) 0.76 -> 0.99 (H100, one process,
// benchmarks/results/2026-11-27_h100_s21/columns_*_ab.txt). A row of a launch does little work a
// thread (64 elements), so its fixed steps count: Nsight Compute on bf16 (128, 65536, 8) forward
// (33 instructions an element against the row kernel's 22) found every warp polling the exchange's
// mbarrier (a tenth of the instructions), divisions by the cluster size and the column unit before
// the loads, and a compare and branch a position in column_reduce. One warp waiting, shifts and
// masks, and branch-free shuffles took the forward of (128, 65536, 8) from 0.69 to 0.79 of copy,
// (128, 16384, 32) 0.69 -> 0.76, (512, 8192, 16) 0.86 -> 0.92, float32 (128, 65536, 8) 0.79 ->
// 0.83, log-softmax alike, the backward level to 0.05 ahead (results 2026-11-28_h100_s27).
//
// Which column an element holds: the host takes these kernels only for a power-of-two inner of
// at most kClusterMaxColumns, with every run 16-byte aligned (no shift), and cuts the runs into
// chunks of a multiple of inner elements (ClusterSlice's unit). Element i of every slot of thread
// t then lies in column (t P + i) % inner: i % inner when inner <= P; past that, (t % L) P + i,
// the L = inner / P neighbouring lanes holding the inner columns between them (blockDim.x P is a
// multiple of inner, so no slot moves a thread to other columns).

constexpr int kClusterMaxColumns = 32;

// Merges a thread's per-position values over the positions and the lanes that hold the same column:
// afterwards position i of every lane holds its column's value over the warp. After the merge within
// the thread, the positions of one column hold equal values, so every position crosses lanes alike
// (those past inner repeat their column's merge): no branch per position, whose compare and jump
// cost more than the shuffles they skip. inner is uniform, so every branch left is.
template <int P, typename OP>
__device__ __forceinline__ void column_reduce(float (&v)[P], int inner, OP op) {
#pragma unroll
    for (int s = 1; s < P; s *= 2) {
        if (s >= inner) {  // positions i and i ^ s hold one column
            float w[P];
#pragma unroll
            for (int i = 0; i < P; ++i) w[i] = op(v[i], v[i ^ s]);
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = w[i];
        }
    }
    const int lanes = inner > P ? inner / P : 1;  // neighbouring lanes holding different columns
#pragma unroll
    for (int o = 1; o < 32; o *= 2) {
        if (o >= lanes) {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = op(v[i], __shfl_xor_sync(kFullMask, v[i], o));
        }
    }
}

// The column of position i of this thread's packs (see above).
template <int P>
__device__ __forceinline__ int column_of(int i, int inner) {
    return inner > P ? (int)(threadIdx.x % (unsigned)(inner / P)) * P + i : i & (inner - 1);
}

// How the values of one column merge: (max, sum) pairs rescaled (forward), sums added (backward);
// as raw bits for st.async.
// The merge of count values at stride apart: pairs take their maximum first, so that each sum is
// rescaled once and the exponentials are independent of each other.
__device__ __forceinline__ float merged(const float* values, int count, int stride) {
    float sum = 0.0f;
    for (int i = 0; i < count; ++i) sum += values[i * stride];
    return sum;
}
__device__ __forceinline__ MaxSum merged(const MaxSum* values, int count, int stride) {
    float m = neg_inf();
    for (int i = 0; i < count; ++i) m = fmaxf(m, values[i * stride].max);
    float sum = 0.0f;
    for (int i = 0; i < count; ++i) sum += rescaled_sum(values[i * stride].max, values[i * stride].sum, m);
    return MaxSum{m, sum};
}

#if __CUDA_ARCH__ >= 900

// One round per run: the warps' values of each column merge in the CTA's shared memory (one block
// barrier), each CTA posts its value of every column into every peer with st.async, counted on the
// peer's mbarrier as in ClusterAllToAll (two buffers and two mbarriers, one round ahead at most),
// and the cluster's value of each column is merged once and read back by every thread (a second
// barrier). The row kernels post one value a warp with no block barrier; here that would be
// warps x inner values a CTA, too many to merge in every warp.
//
// Shared state between rounds: `warp_values` of round r + 1 are written after the second barrier of
// round r, which every thread posting from those of round r has passed; `totals` of round r + 1
// after the first barrier of round r + 1, which every thread reading those of round r has passed.
template <typename V>
struct PostOf;
template <>
struct PostOf<MaxSum> {
    using Bits = unsigned long long;
};
template <>
struct PostOf<float> {
    using Bits = unsigned;
};

template <typename V>
class ColumnExchange {
    using Bits = typename PostOf<V>::Bits;

  public:
    __device__ __forceinline__ ColumnExchange(unsigned ctas, unsigned rank, int inner)
        : ctas_(ctas), rank_(rank), inner_(inner), log2_inner_(__ffs(inner) - 1) {
        __shared__ __align__(8) V warp_values[kClusterMaxWarps * kClusterMaxColumns];
        __shared__ __align__(8) Bits posts[2][kClusterMaxCtas * kClusterMaxColumns];
        __shared__ __align__(8) V totals[kClusterMaxColumns];
        __shared__ __align__(8) unsigned long long bars[2];
        warp_values_ = warp_values;
        posts_ = &posts[0][0];
        totals_ = totals;
        bars_ = exchange_barriers(bars);
    }

    // Every thread calls it with its per-position values after column_reduce; out[i] is the
    // cluster's value of position i's column. ONE_WARP: see the wait below.
    template <bool ONE_WARP, int P>
    __device__ __forceinline__ void exchange(unsigned round, const V (&v)[P], V (&out)[P]) {
        if (round == 0) asm volatile("barrier.cluster.wait.aligned;\n" ::: "memory");
        const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
        const int lanes = inner_ > P ? inner_ / P : 1;
        if (lane < lanes) {
#pragma unroll
            for (int i = 0; i < P; ++i)
                if (i < inner_) warp_values_[warp * kClusterMaxColumns + lane * P + i] = v[i];
        }
        __syncthreads();
        const unsigned buffer = round & 1;
        const unsigned bar = bars_ + 8 * buffer;
        Bits* posts = posts_ + buffer * (kClusterMaxCtas * kClusterMaxColumns);
        if (threadIdx.x == 0) mbarrier_arrive_expect_tx(bar, ctas_ * inner_ * sizeof(Bits));
        for (int j = threadIdx.x; j < (int)ctas_ * inner_; j += blockDim.x) {
            const int column = j & (inner_ - 1), peer = j >> log2_inner_;
            const V value = merged(warp_values_ + column, warps, kClusterMaxColumns);
            const unsigned slot = shared_address(&posts[rank_ * inner_ + column]);
            store_async(map_shared(slot, peer), post_bits(value), map_shared(bar, peer));
        }
        // ONE_WARP: one warp waits for the posts and merges them (inner <= 32 columns), the others
        // wait at the block barrier, which takes no issue slots: every warp polling the mbarrier
        // took a tenth of the instructions of bf16 (128, 65536, 8) over dim 1 (Nsight Compute).
        // Else every warp polls (the kernels whose register cap leaves no room for the branch).
        if constexpr (ONE_WARP) {
            if (warp == 0) {
                mbarrier_wait(bar, (round >> 1) & 1);
                if (lane < inner_) totals_[lane] = merged(reinterpret_cast<const V*>(posts) + lane, ctas_, inner_);
            }
        } else {
            mbarrier_wait(bar, (round >> 1) & 1);
            for (int column = threadIdx.x; column < inner_; column += blockDim.x)
                totals_[column] = merged(reinterpret_cast<const V*>(posts) + column, ctas_, inner_);
        }
        __syncthreads();
#pragma unroll
        for (int i = 0; i < P; ++i) out[i] = totals_[column_of<P>(i, inner_)];
    }

  private:
    V* warp_values_;
    Bits* posts_;
    V* totals_;
    unsigned bars_;
    unsigned ctas_, rank_;
    int inner_, log2_inner_;
};
#endif

// The output of a thread's positions from their columns' totals: as RowOutput, two floats a position
// (FusedNormaliser's offset and factor where every position's maximum allows, else the maximum and
// 1 / sum or log(sum) that normalise reads), so that P positions cost 2P registers.
template <bool LOG, typename T, int P>
struct ColumnOutput {
    float a[P], b[P];
    bool fused;

    __device__ __forceinline__ explicit ColumnOutput(const MaxSum (&total)[P]) {
        fused = true;
#pragma unroll
        for (int i = 0; i < P; ++i) fused = fused && fused_output<LOG, T>(total[i]);
#pragma unroll
        for (int i = 0; i < P; ++i) {
            if (fused) {
                const FusedNormaliser<T> f(total[i]);
                a[i] = f.offset;
                b[i] = f.factor;
            } else {
                const RowScale r = row_scale(total[i]);
                a[i] = r.max;
                b[i] = !LOG && sizeof(T) == 4 ? r.inv_sum : r.log_sum;
            }
        }
    }

    __device__ __forceinline__ void apply(float* v) const {
        if (fused) {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = ex2_ftz(fmaf(v[i], kLog2e, a[i])) * b[i];
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], RowScale{a[i], b[i], b[i]});
        }
    }
};

// Each position's sum over the held slots of exp(x - m[i]), its column's maximum (ShiftedSums).
template <bool FUSED, typename T, int P, int K, typename LOAD>
__device__ __forceinline__ void column_sums(const LOAD& load, const Pack<T, P> (&x)[K], int count, i64 row, i64 first,
                                            const float (&m)[P], float (&s)[P]) {
    const ShiftedSums<FUSED, P> sums(m, s);
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (slot_of(k) < count) {
            float v[P];
            load.template convert<P>(x[k], v, row, first + (i64)slot_of(k) * P);
            sums.add(s, v);
        }
    }
    sums.finish(m, s);
}

// Forward: each position's maximum over the held slots (in the storage type: 16-bit packs compare
// as pairs), merged per column; then each position's sum of exp(x - its column's maximum), merged
// likewise, by ExpShift's one FFMA where every position's maximum allows (softmax: see held_pair);
// the output against the cluster's pair of the column. A column of -inf subtracts 0 (its terms are
// 0, its output NaN, as torch), a NaN or +inf makes its sum, and so its column, NaN.
template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_forward_columns(const LOAD& load, const STORE& store, i64 rows, i64 n,
                                                        i64 inner) {
#if __CUDA_ARCH__ >= 900
    const unsigned ctas = cluster_nctarank();
    const int columns = (int)inner;
    ColumnExchange<MaxSum> all(ctas, cluster_ctarank(), columns);
    const int log2_ctas = __ffs(ctas) - 1;  // C is a power of two
    const i64 clusters = gridDim.x >> log2_ctas;
    const i64 unit = inner > P ? inner : P;
    unsigned round = 0;
    for (i64 row = blockIdx.x >> log2_ctas; row < rows; row += clusters, ++round) {
        const T* src = load.row_ptr(row);
        if (misalignment<T, P>(src) != 0 || misalignment<T, P>(store.row_ptr(row)) != 0) __trap();
        const ClusterSlice<P> slice(n, 0, cluster_ctarank(), ctas, unit);
        const i64 first = slice.begin;
        const int count = slot_count(slice, first);
        Pack<T, P> x[K];
        load_held<T, P, K>(load, src, slice, first, count, neg_inf(), x);

        Pack<T, P> maxima;
#pragma unroll
        for (int i = 0; i < P; ++i) maxima.elems()[i] = from_float<T>(neg_inf());
#pragma unroll
        for (int k = 0; k < K; ++k)  // slots past the slice hold -inf
            load.template max_into<P>(x[k], maxima, row, first + (i64)slot_of(k) * P);
        float m[P];
        unpack<T, P>(maxima, m);
        column_reduce<P>(m, columns, MaxOp());

        const bool fused = !LOG && all_fused<P>(m);
        float s[P];
        if (fused) {
            column_sums<true, T, P, K>(load, x, count, row, first, m, s);
        } else {
            column_sums<false, T, P, K>(load, x, count, row, first, m, s);
        }
        column_reduce<P>(s, columns, AddOp());
        MaxSum pairs[P], totals[P];
#pragma unroll
        for (int i = 0; i < P; ++i) pairs[i] = MaxSum{m[i], s[i]};
        // float32 at 32 held elements keeps every warp polling: with the one-warp wait it spilled 24
        // bytes at its 64-register cap (instances.CLUSTER_COLUMNS_MAX_REGISTERS) and ran 0.96 of
        // copy against 0.98 ((1024, 16384, 4), (512, 8192, 16) and (2048, 4096, 8) over dim 1)
        all.template exchange<!(sizeof(T) == 4 && P * K == 32)>(round, pairs, totals);
        const ColumnOutput<LOG, T, P> out(totals);
        store_held<T, P, K>(load, store, slice, x, count, row, first, [&](float* v) { out.apply(v); });
    }
#else
    __trap();
#endif
}

// Backward: each column's sum(dy * y) (softmax) or sum(dy) (log-softmax) as the forward's pairs.
template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_backward_columns(const LOAD& load_y, const LOAD& load_dy, const STORE& store,
                                                         i64 rows, i64 n, i64 inner) {
#if __CUDA_ARCH__ >= 900
    const unsigned ctas = cluster_nctarank();
    const int columns = (int)inner;
    ColumnExchange<float> all(ctas, cluster_ctarank(), columns);
    const int log2_ctas = __ffs(ctas) - 1;  // C is a power of two
    const i64 clusters = gridDim.x >> log2_ctas;
    const i64 unit = inner > P ? inner : P;
    unsigned round = 0;
    for (i64 row = blockIdx.x >> log2_ctas; row < rows; row += clusters, ++round) {
        const T* y_row = load_y.row_ptr(row);
        const T* dy_row = load_dy.row_ptr(row);
        if ((misalignment<T, P>(y_row) | misalignment<T, P>(dy_row) | misalignment<T, P>(store.row_ptr(row))) != 0)
            __trap();
        const ClusterSlice<P> slice(n, 0, cluster_ctarank(), ctas, unit);
        const i64 first = slice.begin;
        const int count = slot_count(slice, first);
        Pack<T, P> y[K], dy[K];
        load_held<T, P, K>(load_y, y_row, slice, first, count, 0.0f, y);
        load_held<T, P, K>(load_dy, dy_row, slice, first, count, 0.0f, dy);

        float s[P];
#pragma unroll
        for (int i = 0; i < P; ++i) s[i] = 0.0f;
#pragma unroll
        for (int k = 0; k < K; ++k) {
            if (slot_of(k) < count) {
                const i64 col = first + (i64)slot_of(k) * P;
                float yv[P], dyv[P];
                load_y.template convert<P>(y[k], yv, row, col);
                load_dy.template convert<P>(dy[k], dyv, row, col);
#pragma unroll
                for (int i = 0; i < P; ++i) s[i] += backward_term<LOG>(yv[i], dyv[i]);
            }
        }
        column_reduce<P>(s, columns, AddOp());
        float totals[P];
        all.template exchange<true>(round, s, totals);
        store_slots<P, K>(store, slice, count, row, first, [&](int k, i64 col, float* v) {
            float dyv[P];
            load_y.template convert<P>(get_held<T, P, K>(y, k), v, row, col);
            load_dy.template convert<P>(get_held<T, P, K>(dy, k), dyv, row, col);
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = input_grad<LOG>(v[i], dyv[i], totals[i]);
        });
    }
#else
    __trap();
#endif
}

}  // namespace fastsoftmax
