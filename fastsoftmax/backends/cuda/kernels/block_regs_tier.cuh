// Tier "block_regs": one thread block per row, the whole row held in registers. For rows longer
// than a warp holds well and short enough for one block's registers (32768 columns forward; 32768
// backward for 16-bit types, 16384 for float32).
//
// Why a tier of its own, beside block_smem: with the row in registers each element is read once
// and nothing waits on shared memory between the passes. And one block per row, launched one block
// per row rather than grid-stride over resident blocks: the hardware starts a new block the moment
// one ends, so one row's reduction overlaps other rows' loads without the kernel arranging it.
//
// Thread t holds packs t, t + blockDim.x, ..., PACKS of them, so at each step the block reads one
// contiguous stretch of blockDim.x * P elements. Columns past the row end read as padding (-inf
// forward, whose exponential is 0; 0 backward, whose terms are 0) and are never written; a pack that
// straddles the end goes element by element.
// WINDOW: a row off a 16-byte boundary is held in the 16-byte packs of the aligned window around it,
// as in the warp tier (warp_tier.cuh): pack columns start `shift` elements before the row's first.
//
// Two block reductions per row, the maximum and then the sum, each with a single barrier
// (block_allreduce). Merging per-thread (max, sum) pairs instead would save the second barrier, but
// every level of that merge costs exponentials: measured on an H100, it cut 16-bit rows of 512 to
// 4096 columns from 0.99 to 0.73-0.90 of copy bandwidth.
//
// Storage, RAW: the row's bytes in flight per SM are what hides memory latency, and registers bound
// them. Held as float32, a 16-bit row takes twice its size in registers; held RAW, as the loaded
// 16-bit packs, twice as many rows fit, at the price of a second exponential per element when
// writing. The host takes RAW for all 16-bit backward, which needs no exponential for softmax.
//
// Storage, STAGED: the longest 16-bit rows outgrow the registers even raw (64 elements a thread
// leave room for one row per SM, and every barrier then idles the SM). STAGED keeps the raw packs
// in shared memory instead, filled by asynchronous copies (cp.async, sm_80+) that go from global
// to shared memory without passing through registers: a thread needs registers for one pack at a
// time, a 32768-column row takes 64 KiB, and three rows share an SM, so two rows' loads stay in
// flight while the third reduces. Each thread reads back only the slots it filled itself, so its
// own cp.async.wait_all is the only synchronisation the copies need. 16-byte packs only (the copy
// size), which the host guarantees by taking STAGED for 16-byte packs only (rows aligned to 16
// bytes, or held in their window). Measured on an
// H100 against RAW at 64 elements a thread (benchmarks/cuda_probe.py, alternated in one process):
// 32768 columns 0.96 of copy against 0.85-0.90, 12288 columns 0.95 against 0.82.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

// Reduce v over the block and return the result in every thread, with a single barrier. `slots`
// holds one partial per warp. A fast warp can reach the next call while a slow one has not yet read
// the slots, so consecutive calls must use two different slot arrays: a warp can only write array A
// again after passing the barrier on array B, which every warp reaches after it has read A.
template <typename V, typename WarpReduce>
__device__ __forceinline__ V block_allreduce(V v, V identity, V* slots, WarpReduce warp_reduce) {
    const int lane = threadIdx.x & 31;
    v = warp_reduce(v);
    if (lane == 0) slots[threadIdx.x >> 5] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? slots[lane] : identity;
    return warp_reduce(v);
}

// Where a thread's share of the row lives (see the header).
enum Storage { kFloat = 0, kRaw = 1, kStaged = 2 };

// Waits until at most `pending` (0..3) of this thread's newest groups are still in flight.
__device__ __forceinline__ void wait_async_groups(int pending) {
    switch (pending) {
        case 0: copy_async_wait_group<0>(); break;
        case 1: copy_async_wait_group<1>(); break;
        case 2: copy_async_wait_group<2>(); break;
        default: copy_async_wait_group<3>(); break;
    }
}

// A thread's share of a row: PACKS packs of P elements, as float32, as the raw loaded packs, or
// as raw packs staged in (dynamic) shared memory. Columns are 32-bit: rows of this tier hold at
// most 32768 elements.
template <typename T, int P, int PACKS, int STORAGE, bool WINDOW>
struct RowShare {
    float f[STORAGE == kFloat ? PACKS : 1][P];
    Pack<T, P> raw[STORAGE == kRaw ? PACKS : 1];
    Pack<T, P>* staged;  // kStaged: this thread's pack u is staged[u * blockDim.x]
    // Register storage indexes its arrays with constants only: loops over packs unroll fully. The
    // staged loops unroll in steps, so that the compiler does not hoist every pack's shared
    // memory read (registers for all of them) and three blocks still fit per SM.
    static constexpr int kPackUnroll = STORAGE == kStaged ? 2 : PACKS;

    static __device__ __forceinline__ int column(int u) { return (threadIdx.x + u * blockDim.x) * P; }

    // Pack u into the thread's storage.
    __device__ __forceinline__ void put(int u, const Pack<T, P>& pack) {
        if constexpr (STORAGE == kStaged) {
            staged[u * blockDim.x] = pack;
        } else if constexpr (STORAGE == kRaw) {
            raw[u] = pack;
        } else {
            unpack<T, P>(pack, f[u]);
        }
    }

    // shift: the row's columns start `shift` into the first pack (WINDOW, see warp_tier.cuh), else 0;
    // src_aligned (WINDOW): src's misalignment is `shift` (the backward's dy may be misaligned
    // otherwise than y, whose shift both take: then every pack goes element by element); pad: what
    // columns outside the row read as (-inf forward, whose exponential is 0; 0 backward, whose terms
    // are then 0).
    __device__ __forceinline__ void load(const T* src, int n, int shift, bool src_aligned, float pad) {
        if constexpr (STORAGE == kStaged) {
            static_assert(sizeof(Pack<T, P>) == 16, "staged rows move as 16-byte packs");
            extern __shared__ __align__(16) unsigned char shared_bytes[];
            staged = reinterpret_cast<Pack<T, P>*>(shared_bytes) + threadIdx.x;
        }
        static_assert(PACKS <= 32, "one bit a pack in `edges`");
        unsigned edges = 0;  // WINDOW: bit u set where pack u is not read whole
#pragma unroll (kPackUnroll)
        for (int u = 0; u < PACKS; ++u) {
            const int col = column(u) - shift;
            // WINDOW: a pack inside the row is on a 16-byte boundary by the window's construction, so
            // it takes one test and one load; the others (the at most two across the row's edges,
            // those past its end, and every pack of a tensor misaligned otherwise) come after the
            // loop, behind one branch. (Tested pack by pack for alignment and span, with the edges'
            // element paths inline, the window kernels ran 24% more instructions than the aligned
            // ones: bf16 rows of 3001 columns 0.73-0.85 of copy where rows of 3000 ran 0.95.)
            if ((!WINDOW || (src_aligned && col >= 0)) && col + P <= n) {
                if constexpr (STORAGE == kStaged) {
                    copy_async<16>(&staged[u * blockDim.x], src + col);
                } else if constexpr (STORAGE == kRaw) {
                    raw[u] = read_pack<T, P>(src + col);
                } else {
                    load_pack<T, P>(src + col, f[u]);
                }
            } else if constexpr (WINDOW) {
                edges |= 1u << u;
            } else {
                float v[P];
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = col + i < n ? to_float(src[col + i]) : pad;
                put(u, make_pack<T, P>(v));
            }
        }
        if (WINDOW && edges != 0) {
#pragma unroll (kPackUnroll)
            for (int u = 0; u < PACKS; ++u) {
                if (!(edges & (1u << u))) continue;
                // element by element (the pack read whole where the tensor holds it, as the warp
                // tier does, kept the tensor's span in registers through the row, and the kernels
                // of 32 and 64 elements a thread then spilled)
                const int col = column(u) - shift;
                // (n where the pack touches the row, else 0: gather_pack tests every element either
                // way, but this form is the one measured; with n alone the registers moved by 1-7)
                put(u, gather_pack<T, P>(src, col, col < n && col + P > 0 ? n : 0, from_float<T>(pad)));
            }
        }
        if constexpr (STORAGE == kStaged) copy_async_wait();
    }

    // Pack u as float32 once more, for the write: the raw pack passed through an empty asm, so that
    // the compiler converts it again rather than keep the first pass's floats alive across the
    // reductions (it did in the window kernels of 32 and 64 elements a thread, and spilled them).
    __device__ __forceinline__ void get_again(int u, float (&v)[P]) const {
        if constexpr (STORAGE == kRaw && WINDOW) {
            Pack<T, P> pack = raw[u];
            unsigned* words = reinterpret_cast<unsigned*>(&pack.raw);
#pragma unroll
            for (int i = 0; i < (int)(sizeof(pack.raw) / 4); ++i) asm volatile("" : "+r"(words[i]));
            unpack<T, P>(pack, v);
        } else {
            get(u, v);
        }
    }

    // Pack u as float32.
    __device__ __forceinline__ void get(int u, float (&v)[P]) const {
        if constexpr (STORAGE == kStaged) {
            unpack<T, P>(staged[u * blockDim.x], v);
        } else if constexpr (STORAGE == kRaw) {
            unpack<T, P>(raw[u], v);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i) v[i] = f[u][i];
        }
    }

    // dst_aligned (WINDOW): dst's misalignment is the window's shift (on_window), so that the packs
    // inside the row are on 16-byte boundaries there too.
    static __device__ __forceinline__ void store(T* dst, int n, int shift, bool dst_aligned, int u,
                                                 const float (&v)[P]) {
        const int col = column(u) - shift;
        if constexpr (WINDOW) {
            if (dst_aligned && col >= 0 && col + P <= n) {
                store_pack<T, P>(dst + col, v);
            } else if (col < n && col + P > 0) {
                store_edge_pack<T, P>(dst, col, n, v);
            }
        } else if (col + P <= n) {  // the form aligned rows had before windows
            store_pack<T, P>(dst + col, v);
        } else {
#pragma unroll
            for (int i = 0; i < P; ++i)
                if (col + i < n) dst[col + i] = from_float<T>(v[i]);
        }
    }

    // Whether a row of another tensor starting at p has its packs on 16-byte boundaries where the
    // window's are (always, for kernels of aligned rows).
    static __device__ __forceinline__ bool on_window(const T* p, int shift) {
        if constexpr (WINDOW) {
            return misalignment<T, P>(p) == shift;
        } else {
            return true;
        }
    }
};

template <typename T, int P, int PACKS, bool LOG, int STORAGE, bool WINDOW>
__device__ __forceinline__ void block_regs_forward(const T* x, T* y, i64 rows, i64 n64, i64 x_pitch, i64 y_pitch) {
    typedef RowShare<T, P, PACKS, STORAGE, WINDOW> Share;
    __shared__ float max_slots[32];
    __shared__ float sum_slots[32];
    const int n = (int)n64;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x) {
        Share share;
        const int window = window_shift<T, P, WINDOW>(x + row * x_pitch);
        share.load(x + row * x_pitch, n, window, true, neg_inf());

        float m = neg_inf();
#pragma unroll (Share::kPackUnroll)
        for (int u = 0; u < PACKS; ++u) {
            float v[P];
            share.get(u, v);
#pragma unroll
            for (int i = 0; i < P; ++i) m = fmaxf(m, v[i]);
        }
        m = block_allreduce(m, neg_inf(), max_slots, WarpMax());
        // A row of -inf subtracts 0: its elements give exp(-inf) = 0, the sum 0 and every output
        // NaN (0 * inf, or -inf - log(0)), as torch gives. A NaN or +inf element makes the sum NaN.
        const float shift = m == neg_inf() ? 0.0f : m;

        float s = 0.0f;
#pragma unroll (Share::kPackUnroll)
        for (int u = 0; u < PACKS; ++u) {
            float v[P];
            share.get(u, v);
#pragma unroll
            for (int i = 0; i < P; ++i) {
                // a held exponential becomes an output (subnormal results kept); one only summed
                // takes the hardware exp2 alone
                const float e = STORAGE == kFloat ? fast_exp(v[i] - shift) : sum_exp(v[i] - shift);
                s += e;
                if constexpr (STORAGE == kFloat) share.f[u][i] = LOG ? v[i] - shift : e;
            }
        }
        s = block_allreduce(s, 0.0f, sum_slots, WarpSum());
        const RowScale scale{shift, 1.0f / s, logf(s)};

        T* dst = y + row * y_pitch;
        const bool dst_aligned = Share::on_window(dst, window);
#pragma unroll (Share::kPackUnroll)
        for (int u = 0; u < PACKS; ++u) {
            float v[P];
            if constexpr (STORAGE != kFloat) {  // the exponential again, from the input
                share.get_again(u, v);
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = normalise<LOG, T>(v[i], scale);
            } else {
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = LOG ? share.f[u][i] - scale.log_sum : share.f[u][i] * scale.inv_sum;
            }
            share.store(dst, n, window, dst_aligned, u, v);
        }
    }
}

// Backward needs one sum (of dy * y, or of dy for log-softmax) and no maximum.
template <typename T, int P, int PACKS, bool LOG, int STORAGE, bool WINDOW>
__device__ __forceinline__ void block_regs_backward(const T* y, const T* dy, T* dx, i64 rows, i64 n64, i64 y_pitch,
                                                    i64 dy_pitch, i64 dx_pitch) {
    static_assert(STORAGE != kStaged, "y and dy cannot both be staged at the start of shared memory");
    __shared__ float slots[2][32];
    const int n = (int)n64;
    int parity = 0;
    for (i64 row = blockIdx.x; row < rows; row += gridDim.x, parity ^= 1) {
        typedef RowShare<T, P, PACKS, STORAGE, WINDOW> Share;
        Share ys, dys;
        const int shift = window_shift<T, P, WINDOW>(y + row * y_pitch);
        // padded with 0, whose terms are 0: the sum needs no test of where the row ends
        ys.load(y + row * y_pitch, n, shift, true, 0.0f);
        dys.load(dy + row * dy_pitch, n, shift, Share::on_window(dy + row * dy_pitch, shift), 0.0f);
        float s = 0.0f;
#pragma unroll
        for (int u = 0; u < PACKS; ++u) {
            float yv[P], dyv[P];
            ys.get(u, yv);
            dys.get(u, dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) s += backward_term<LOG>(yv[i], dyv[i]);
        }
        const float total = block_allreduce(s, 0.0f, slots[parity], WarpSum());
        T* dst = dx + row * dx_pitch;
        const bool dst_aligned = Share::on_window(dst, shift);
#pragma unroll
        for (int u = 0; u < PACKS; ++u) {
            float yv[P], dyv[P];
            ys.get(u, yv);
            dys.get(u, dyv);
#pragma unroll
            for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total);
            ys.store(dst, n, shift, dst_aligned, u, yv);
        }
    }
}

}  // namespace fastsoftmax
