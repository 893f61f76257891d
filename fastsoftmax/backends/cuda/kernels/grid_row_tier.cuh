// Tier "grid_row": one huge row (2^20 .. 2^27 elements), or a few, spread over every CTA the GPU
// can hold at once, in one cooperative launch that reads the row from device memory once where
// it fits on chip.
//
// split_row takes such rows in two kernels (per-chunk statistics, then normalise), reading the
// row twice: 0.46 of copy bandwidth on an H100 for 1 x 2^24 bf16. Here the grid is exactly the
// CTAs that can be resident together (the host sizes it from the occupancy query; a cooperative
// launch refuses a grid that cannot be co-resident instead of letting it deadlock), so a CTA can
// wait for all others in the middle of the kernel. Rows go one after another, each over the whole
// grid; CTA b owns `chunk` columns of it (ClusterSlice: chunks of the row's 16-byte packs), and
// per row:
//   1. hold: the first K x threads slots of the slice (slot j: columns first + jP ..) are loaded
//      into registers, the next `smem_slots` copied into dynamic shared memory with cp.async (in
//      groups, each reduced once it has landed), and
//      the rest, if the chip cannot hold the whole slice, is streamed for its statistics and left
//      in device memory; the streamed part is read last, so that phase 2, which starts with it,
//      finds as much of it as possible still in L2;
//   2. the CTA's (max, sum of exp(x - max)) (backward: sum(dy * y), or sum(dy) for log-softmax)
//      goes to a global workspace of one pair per CTA, then a grid-wide barrier
//      (cooperative_groups' grid sync: the driver's barrier word of the cooperative launch, which
//      resets itself, so repeated launches and CUDA graph replays need no clearing of ours);
//   3. one warp of every CTA merges all pairs (a few hundred, from L2), then the CTA normalises
//      what it holds and re-reads only the streamed rest, writing y once.
// The same kernels serve tier "cluster_stream" (sm_90+), where the team sharing a row is one
// thread-block cluster instead of the whole grid (RowGridTeam and RowClusterTeam, below): rows
// longer than the cluster tier holds in registers, many of them, each cluster on rows of its own.
//
// Alignment: slices meet at 16-byte boundaries of the row's memory (ClusterSlice), so only the
// row's own first and last slot are partial: those are read and written element by element,
// never touching bytes outside the row (outside the tensor: initcheck). Rows whose tensors are
// misaligned differently
// (a view x[:, 1:] written to a fresh y) are not held: phase 1 streams its statistics, and phase 2
// re-reads x element by element at the output's packs. Two reads for those, still one launch;
// a per-pack realignment as cluster_tier.cuh's `realign` would keep one read, at the cost of a
// shared-memory buffer as large as the held slice.
//
// -inf / +inf / NaN follow common.cuh and cluster_tier.cuh: a row of -inf gives NaN (as torch),
// +inf or NaN anywhere makes the whole row NaN.
//
// Measured on an H100 against split_row (benchmarks/grid_row_probe.py, alternated in one process):
// faster for rows that mostly fit on chip (bf16 forward 1 x 2^24: 0.64 of copy against 0.51;
// float32 0.69 against 0.56; backward 0.67 against 0.48), level or slower for rows many times the
// chip (1 x 2^26) and for rows of 4 MiB or less. tiers.choose_tier takes it where it won
// (GRID_ROW_ROW_BYTES). What bounds it (benchmarks/grid_row_phases.py, which times each phase of
// the forward): a kernel that only moves a 1 x 2^24 bf16 row through registers and shared memory
// with one grid barrier takes 28.4 us (0.80 of copy: the reads pay for the write-back of the
// previous output, about 15 us; the barrier 2 us; the writes, into L2, 8 us); this kernel takes
// 35-37 us, the rest being the last CTAs' loads and exponentials, the CTA's pair and the merge.
// About 7 us of a launch are fixed (1 x 2^20 takes 11 us for 4 MiB moved).
//
// Launch (grid_row): cooperative only (grid.sync() reads the barrier the driver provides with a
// cooperative launch; the teams' counter barriers need every CTA resident as well); cluster_stream: a cluster launch of C CTAs a cluster, any grid of whole
// clusters (cluster k takes rows k, k + clusters, ...), compiled for one CTA an SM or for two of half
// the threads (instances.CLUSTER_STREAM_PER_SM: one CTA loads while the other waits or writes). The
// thread count is any multiple of 32 up to the launch bound (the host takes 512, one
// CTA per SM, and K packs a thread that compile without spilling: instances.GRID_ROW_HELD_PACKS).
// cooperative_groups.h costs NVRTC about 2.5 s per translation unit, once per instance.
#pragma once

#include <cooperative_groups.h>

#include "common.cuh"
#include "block_regs_tier.cuh"  // block_allreduce
#include "cluster_tier.cuh"     // DirectLoad, DirectStore, ClusterSlice, load_slots, scatter, slot_of, ...

namespace fastsoftmax {

// streamed slots a thread has in flight at once: forward, and backward per tensor (two tensors,
// the same bytes in flight)
constexpr int kGridRowUnroll = 4;
constexpr int kGridRowUnrollBackward = 2;

// The raw pack of slot `col` of a tensor: one 16-byte load when the tensor's packs start at col
// (`aligned`: its misalignment is that of the slots being walked) and the pack lies inside the
// slice, else element by element, the columns outside the slice set to `pad`.
template <typename T, int P, typename LOAD>
__device__ __forceinline__ Pack<T, P> read_slot(const LOAD& load, const T* row, const ClusterSlice<P>& s, i64 col,
                                                bool aligned, float pad) {
    if (aligned && col >= s.begin && col + P <= s.end) return load.template read<P>(row, col);
    Pack<T, P> out;
    const T padding = from_float<T>(pad);
#pragma unroll
    for (int i = 0; i < P; ++i)
        out.elems()[i] = col + i >= s.begin && col + i < s.end ? load.read1(row, col + i) : padding;
    return out;
}

// The backward's two tensors: slots [from, to) of y and dy walked together,
// kGridRowUnrollBackward pairs of loads in flight; f(y values, dy values, col) each, as floats.
template <typename T, int P, typename LOAD_Y, typename LOAD_DY, typename F>
__device__ __forceinline__ void stream_pairs(const LOAD_Y& load_y, const T* y_row, const LOAD_DY& load_dy,
                                             const T* dy_row, const ClusterSlice<P>& s, i64 row, i64 first, int from,
                                             int to, bool y_aligned, bool dy_aligned, F f) {
    const int step = blockDim.x;
    const auto use = [&](const Pack<T, P>& yr, const Pack<T, P>& dyr, i64 col) {
        float yv[P], dyv[P];
        load_y.template convert<P>(yr, yv, row, col);
        load_dy.template convert<P>(dyr, dyv, row, col);
        f(yv, dyv, col);
    };
    int j = from + threadIdx.x;
    for (; j + (kGridRowUnrollBackward - 1) * step < to; j += kGridRowUnrollBackward * step) {
        Pack<T, P> yr[kGridRowUnrollBackward], dyr[kGridRowUnrollBackward];
#pragma unroll
        for (int u = 0; u < kGridRowUnrollBackward; ++u) {
            const i64 col = first + (i64)(j + u * step) * P;
            yr[u] = read_slot<T, P>(load_y, y_row, s, col, y_aligned, 0.0f);
            dyr[u] = read_slot<T, P>(load_dy, dy_row, s, col, dy_aligned, 0.0f);
        }
#pragma unroll
        for (int u = 0; u < kGridRowUnrollBackward; ++u) use(yr[u], dyr[u], first + (i64)(j + u * step) * P);
    }
    for (; j < to; j += step) {
        const i64 col = first + (i64)j * P;
        use(read_slot<T, P>(load_y, y_row, s, col, y_aligned, 0.0f),
            read_slot<T, P>(load_dy, dy_row, s, col, dy_aligned, 0.0f), col);
    }
}

// Shared-memory slots [0, count) hold slice slots from + 0, from + 1, ...: full packs by cp.async,
// the partial ones element by element with padding. Thread t copies (and later reads) only slots
// t, t + blockDim.x, ...: its own copy_async_wait makes them visible to it, no block barrier.
// Whole slots are told by WholeSlots' two integer compares and the column advances by one add
// (64-bit compares and a multiply a slot cost this loop 31 instructions a slot).
template <typename T, int P>
__device__ __forceinline__ void stage_slots(Pack<T, P>* staged, const T* row, const ClusterSlice<P>& s, i64 first,
                                            int from, int count, float pad) {
    const WholeSlots<P> whole(s, first, slot_count(s, first));
    const i64 step = (i64)blockDim.x * P;
    i64 col = first + (i64)(from + (int)threadIdx.x) * P;
    for (int j = threadIdx.x; j < count; j += blockDim.x, col += step) {
        if (whole(from + j)) {
            copy_async<sizeof(Pack<T, P>)>(&staged[j], row + col);
        } else {
            const T padding = from_float<T>(pad);
#pragma unroll
            for (int i = 0; i < P; ++i)
                staged[j].elems()[i] = col + i >= s.begin && col + i < s.end ? row[col + i] : padding;
        }
    }
}

// Where a row's slots live: [0, regs) in registers, [regs, regs + smem) in shared memory, the
// rest in device memory. Nothing is held when the tensors' misalignments differ.
struct GridRowHeld {
    int regs, smem;
    __device__ __forceinline__ GridRowHeld(bool hold, int count, int reg_slots, i64 smem_slots) {
        regs = hold ? min(count, reg_slots) : 0;
        smem = hold ? (int)min((i64)(count - regs), smem_slots) : 0;
    }
    __device__ __forceinline__ int total() const { return regs + smem; }
};

// ---- teams: the CTAs that share a row ---------------------------------------------------------------
// The kernels below are written once over the team that shares each row: what a CTA holds, streams
// and writes is the same whichever team it belongs to; only where its slice lies, which rows it takes
// and how the CTAs' pairs meet differ.
//   * RowGridTeam (tier grid_row): every CTA of a cooperative launch, on each row in turn; the pairs
//     meet in a global workspace across a grid barrier.
//   * RowGridTeams (tier grid_row, its "teams" kernels): the cooperative grid cut into teams, team k
//     on rows k, k + teams, ...; the pairs meet in the workspace across a counter barrier a row.
//   * RowClusterTeam (tier cluster_stream, sm_90+): the CTAs of one thread-block cluster, on rows
//     blockIdx.x / C, + clusters, ...; the pairs meet in the CTAs' shared memory across a cluster
//     barrier (distributed shared memory). Rows longer than the cluster tier holds in registers
//     (cluster_tier.cuh) are then held in registers and shared memory across the cluster, and only
//     what still does not fit is read twice, where the cluster tier could not run them at all and
//     split_row or block_uncached read every row twice.
// total(cta, slot) takes the CTA's pair (or sum) from thread 0 and returns the row's, to every thread.

// The row's total from every CTA's pair, merged by warp 0 (a lane's pairs loaded together, their
// maximum first, then one exponential a pair) and passed to the other warps through `slot`.
// L2 reads (__ldcg): this SM's L1 may still hold the pairs of two rows ago. One warp a CTA: every
// SM reads the same lines of L2 at the same moment, and with each warp reading them (or a block
// reduction over them) the merge took 1.5-2 us after the barrier on an H100.
__device__ __forceinline__ MaxSum merge_grid_pairs(const float2* pairs, int ctas, MaxSum* slot) {
    constexpr int kPerLane = 8;
    if (threadIdx.x < 32) {
        const int lane = threadIdx.x;
        MaxSum all = empty_maxsum();
        for (int base = 0; base < ctas; base += 32 * kPerLane) {
            float2 p[kPerLane];
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) {
                const int b = base + lane + 32 * i;
                p[i] = b < ctas ? __ldcg(pairs + b) : make_float2(neg_inf(), 0.0f);
            }
            float m = all.max;
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) m = fmaxf(m, p[i].x);
            float s = rescaled_sum(all.max, all.sum, m);
#pragma unroll
            for (int i = 0; i < kPerLane; ++i) s += rescaled_sum(p[i].x, p[i].y, m);
            all = MaxSum{m, s};
        }
        all = warp_merge(all);
        if (lane == 0) *slot = all;
    }
    __syncthreads();
    return *slot;
}

// A team's total across `barrier` (every CTA of the team resident): the CTA's pair (sum) posted at
// its rank among `ctas` slots, then the team's merged by merge_grid_pairs (summed by every thread).
template <typename BARRIER>
__device__ __forceinline__ MaxSum posted_total(float2* pairs, unsigned rank, unsigned ctas, const MaxSum& cta,
                                               MaxSum* slot, BARRIER barrier) {
    if (threadIdx.x == 0) pairs[rank] = make_float2(cta.max, cta.sum);
    barrier();
    return merge_grid_pairs(pairs, (int)ctas, slot);
}

template <int WARPS, typename BARRIER>
__device__ __forceinline__ float posted_total(float* sums, unsigned rank, unsigned ctas, float cta,
                                              float (&slots)[WARPS], BARRIER barrier) {
    if (threadIdx.x == 0) sums[rank] = cta;
    barrier();
    float all = 0.0f;
    for (unsigned b = threadIdx.x; b < ctas; b += blockDim.x) all += __ldcg(sums + b);
    return block_allreduce(all, 0.0f, slots, WarpSum());
}

struct RowGridTeam {
    // grid_row_forward issues its cp.async groups one by one, each while the one before it is
    // reduced (below)
    static constexpr int kGroupsAhead = 1;
    // the backward copies no row's shared-memory slots ahead (RowClusterTeam's kCopyAhead): over a
    // few rows of the whole grid it ran behind (H200, alternated in one process: bf16 4 x 2^22 0.523
    // -> 0.498 of copy, float32 0.688 -> 0.679; 3 x 2^24 level; results 2026-12-03_h200_s50/c2)
    static constexpr bool kCopyAhead = false;
    // Pairs (sums) of consecutive rows alternate between two halves of the workspace: a CTA can be
    // at most one row ahead of another (it passes row r + 1's barrier only once every CTA arrived
    // there, after it read row r's pairs), so it never overwrites pairs still being read.
    float* ws;
    unsigned round = 0;
    __device__ __forceinline__ unsigned rank() const { return blockIdx.x; }
    __device__ __forceinline__ unsigned size() const { return gridDim.x; }
    __device__ __forceinline__ i64 first_row() const { return 0; }
    __device__ __forceinline__ i64 row_step() const { return 1; }

    __device__ __forceinline__ MaxSum total(const MaxSum& cta, MaxSum* slot) {
        float2* pairs = reinterpret_cast<float2*>(ws) + (round++ & 1) * size();
        return posted_total(pairs, rank(), size(), cta, slot, [&] {
            cooperative_groups::this_grid().sync();
        });
    }
    template <int WARPS>
    __device__ __forceinline__ float total(float cta, float (&slots)[WARPS]) {
        float* sums = ws + (round++ & 1) * size();
        return posted_total(sums, rank(), size(), cta, slots, [&] { cooperative_groups::this_grid().sync(); });
    }
    __device__ __forceinline__ void finish() const {}
    __device__ __forceinline__ void wait_turn() const {}
};

// The cooperative grid cut into teams of `team_ctas` CTAs (tier grid_row, the "teams" form), team k
// on rows k, k + teams, ...: rows whose slices a team holds on chip run as many at once as there are
// teams, where RowGridTeam takes them one after another over the whole grid (H100: 4 x 2^22 bf16
// forward at 0.44 of copy there against 0.64 in four teams, results 2026-12-06_h100_s72/c4/). A team meets at a counter a row
// (team_barrier: the cooperative launch keeps every CTA resident), its CTAs' pairs (sums) a row apart in
// the workspace after the counters: each row's counter and slots serve it once a launch, so nothing
// is reused between rows and the counters end the launch at zero.
struct RowGridTeams {
    static constexpr int kGroupsAhead = RowGridTeam::kGroupsAhead;
    static constexpr bool kCopyAhead = RowGridTeam::kCopyAhead;
    float* ws;  // counter_words(rows) counters, then rows x team_ctas pairs (backward: sums)
    i64 rows;
    unsigned team_ctas;
    i64 row = blockIdx.x / team_ctas;  // the row whose total comes next
    __device__ __forceinline__ unsigned rank() const { return blockIdx.x % team_ctas; }
    __device__ __forceinline__ unsigned size() const { return team_ctas; }
    __device__ __forceinline__ i64 first_row() const { return blockIdx.x / team_ctas; }
    __device__ __forceinline__ i64 row_step() const { return gridDim.x / team_ctas; }

    // this row's counter, and its slots of `width` floats a CTA into `slots`; then the next row's
    __device__ __forceinline__ int* arrive(float*& slots, int width) {
        slots = ws + counter_words(rows) + row * team_ctas * width;
        int* counter = reinterpret_cast<int*>(ws) + row;
        row += row_step();
        return counter;
    }
    __device__ __forceinline__ MaxSum total(const MaxSum& cta, MaxSum* slot) {
        float* slots;
        int* counter = arrive(slots, 2);
        return posted_total(reinterpret_cast<float2*>(slots), rank(), size(), cta, slot,
                            [&] { team_barrier(counter, team_ctas); });
    }
    template <int WARPS>
    __device__ __forceinline__ float total(float cta, float (&slots)[WARPS]) {
        float* sums;
        int* counter = arrive(sums, 1);
        return posted_total(sums, rank(), size(), cta, slots, [&] { team_barrier(counter, team_ctas); });
    }
    __device__ __forceinline__ void finish() const {}
    __device__ __forceinline__ void wait_turn() const {}
};

// cluster_stream's stagger_first_wave wait (the host passes the resident clusters' count on launches
// of several rows a resident cluster, 0 otherwise). H200, alternated in one process (results
// 2026-12-03_h200_s48/r3): float32 forward 128 x 2^20 0.673 -> 0.751 of copy, 256 x 2^19 0.738 ->
// 0.794; bf16 256 x 2^19 0.724 -> 0.755, 128 x 2^20 0.683 -> 0.705; backward bf16 191 x 699051 0.657 ->
// 0.701; 4 and 12 us were each behind 8 on most shapes.
constexpr long long kStreamStaggerNs = 8000;

struct RowClusterTeam {
    // all four cp.async groups issued first: one by one, cluster_stream's forward ran 16-bit rows
    // slower (H200, alternated in one process: bf16 191 x 699051 0.600 against 0.572, 128 x 2^20 0.680
    // against 0.666; float32 level; results 2026-12-02_h200_s44/cluster_stream_groups_ab.txt)
    static constexpr int kGroupsAhead = 4;
    // The backward copies the next row's shared-memory slots once this row's are written, so that
    // they land while it writes its registers (a cluster walks several rows on persistent launches:
    // instances.cluster_stream_persistent). H200, persistent launches alternated in one process
    // against the same without it (results 2026-12-03_h200_s50/c2/persist_probe.txt): bf16 256 x
    // 524288 0.676 -> 0.707 of copy, 128 x 2^20 0.622 -> 0.632; float32 128 x 2^20 0.623 -> 0.644, 256
    // x 524288 0.658 -> 0.671; 191 x 699051 level. The same in the forward ran behind (float32 128 x
    // 2^20 0.801 -> 0.694, bf16 0.741 -> 0.702), which copies nothing ahead.
    static constexpr bool kCopyAhead = true;
    // Each CTA posts its pair in its own shared memory (two posts, by round parity) and reads its
    // peers' after a cluster barrier. A CTA passes round r + 1's barrier only once every peer has
    // arrived there, after reading round r's posts, so round r + 2's post never overwrites one still
    // being read; the last round's posts stay readable until every peer has passed finish().
    MaxSum* posts;  // two, in this CTA's shared memory
    unsigned ctas, my_rank;
    i64 stagger;  // clusters of odd index below this wait kStreamStaggerNs first
    unsigned round = 0;
    __device__ __forceinline__ unsigned rank() const { return my_rank; }
    __device__ __forceinline__ unsigned size() const { return ctas; }
    __device__ __forceinline__ i64 first_row() const { return blockIdx.x / ctas; }
    __device__ __forceinline__ i64 row_step() const { return gridDim.x / ctas; }

    __device__ __forceinline__ MaxSum total(const MaxSum& cta, MaxSum* slot) {
        MaxSum* post = posts + (round++ & 1);
        if (threadIdx.x == 0) *post = cta;
        cluster_arrive();
        cluster_wait();
        if (threadIdx.x < 32) {
            MaxSum all = threadIdx.x < ctas ? read_peer(post, threadIdx.x) : empty_maxsum();
            all = warp_merge(all);
            if (threadIdx.x == 0) *slot = all;
        }
        __syncthreads();
        return *slot;
    }
    template <int WARPS>
    __device__ __forceinline__ float total(float cta, float (&slots)[WARPS]) {
        float* post = reinterpret_cast<float*>(posts + (round++ & 1));
        if (threadIdx.x == 0) *post = cta;
        cluster_arrive();
        cluster_wait();
        const float all = threadIdx.x < ctas ? read_peer(post, threadIdx.x) : 0.0f;
        return block_allreduce(all, 0.0f, slots, WarpSum());
    }
    __device__ __forceinline__ void finish() const {
        cluster_arrive();
        cluster_wait();
    }
    __device__ __forceinline__ void wait_turn() const { stagger_first_wave(blockIdx.x / ctas, stagger, kStreamStaggerNs); }
};

// ---- forward -------------------------------------------------------------------------------------
// Written for the instruction cache as much as for memory: every SM runs each phase once per row,
// so each phase's code is fetched from L2 while the SM waits for it. The first version had an
// element-by-element path inlined beside every 16-byte access (12 held slots, 4 streamed ones in
// flight: 8400 instructions, 1700 of them compares), and its phases ended 0.5-1.5 us after their
// work (benchmarks/grid_row_phases.py, H100: 1 x 2^20 bf16 took 11.6 us against 5.7 for a kernel
// that only moves the same bytes through the chip). Here every walk over the slice takes whole
// 16-byte slots only, a partial slot reading as padding and never written by the walks, and the
// partial slots themselves (at most the slice's first and last) are thread 0's, in one element
// loop (each_edge).

// cp.async groups the shared-memory slots are copied in: each is reduced as soon as it has landed,
// while the later ones are still in flight (one group left that reduction behind all the copies).
constexpr int kGridRowStages = 4;
static_assert(kGridRowStages <= 4, "wait_async_groups waits with at most 3 groups pending");

// Rounds of blockDim.x slots in each of the kGridRowStages copy groups that stage `smem` slots.
__device__ __forceinline__ int rounds_per_group(int smem) {
    const int rounds = (smem + (int)blockDim.x - 1) / (int)blockDim.x;
    return (rounds + kGridRowStages - 1) / kGridRowStages;
}

// Slot j of the slice: one 16-byte load when whole, else `pad` (each_edge takes its elements).
template <typename T, int P, typename LOAD>
__device__ __forceinline__ Pack<T, P> whole_slot(const LOAD& load, const T* row, i64 first, const WholeSlots<P>& whole,
                                                 int j, const Pack<T, P>& pad) {
    return whole(j) ? load.template read<P>(row, first + (i64)j * P) : pad;
}

// f(pack, col) for the slice's partial slots (its first and last, where they straddle the slice's
// edges), read element by element with the columns outside the slice set to `pad`: thread 0 only.
template <typename T, int P, typename LOAD, typename F>
__device__ __forceinline__ void each_edge(const LOAD& load, const T* row, const ClusterSlice<P>& s, i64 first,
                                          int count, const WholeSlots<P>& whole, float pad, F f) {
    if (threadIdx.x != 0 || count == 0) return;
#pragma unroll 1
    for (int e = 0; e < 2; ++e) {
        const int j = e == 0 ? 0 : count - 1;
        if (whole(j) || (e == 1 && j == 0)) continue;
        const i64 col = first + (i64)j * P;
        f(read_slot<T, P>(load, row, s, col, false, pad), col);
    }
}

// The U streamed slots j, j + blockDim.x, ... of [.., to) (whole_slot; `pad` past `to`), all loads
// issued before any is used.
template <typename T, int P, int U, typename LOAD>
__device__ __forceinline__ void load_group(const LOAD& load, const T* src, i64 first, const WholeSlots<P>& whole,
                                           int j, int to, const Pack<T, P>& pad, Pack<T, P> (&raw)[U]) {
    const int step = blockDim.x;
#pragma unroll
    for (int u = 0; u < U; ++u)
        raw[u] = j + u * step < to ? whole_slot<T, P>(load, src, first, whole, j + u * step, pad) : pad;
}

// f(raw, j) for each group of U streamed slots j, j + blockDim.x, ... of [from, to) (thread t's
// groups from from + t on; load_group, padded with -inf past `to`).
template <typename T, int P, int U, typename LOAD, typename F>
__device__ __forceinline__ void each_load_group(const LOAD& load, const T* src, i64 first, const WholeSlots<P>& whole,
                                                int from, int to, F f) {
    const Pack<T, P> pad = filled_pack<T, P>(neg_inf());
    for (int j = from + threadIdx.x; j < to; j += U * (int)blockDim.x) {
        Pack<T, P> raw[U];
        load_group<T, P, U>(load, src, first, whole, j, to, pad, raw);
        f(raw, j);
    }
}

// The running pair of slots [from, to) (thread t: from + t, + blockDim.x, ...), kGridRowUnroll
// loads in flight, their maximum taken first so that the pair is rescaled once per group of loads.
template <typename T, int P, typename LOAD>
__device__ __forceinline__ void stream_stats(const LOAD& load, const T* src, i64 row, i64 first,
                                             const WholeSlots<P>& whole, int from, int to, MaxSum& state) {
    constexpr int U = kGridRowUnroll;
    const int step = blockDim.x;
    each_load_group<T, P, U>(load, src, first, whole, from, to, [&](const Pack<T, P>(&raw)[U], int j) {
        float m = state.max;
#pragma unroll
        for (int u = 0; u < U; ++u) m = fmaxf(m, load.template max_of<P>(raw[u], row, first + (i64)(j + u * step) * P));
        Rebased r(state, m);
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float v[P];
            load.template convert<P>(raw[u], v, row, first + (i64)(j + u * step) * P);
#pragma unroll
            for (int i = 0; i < P; ++i) r.sum += sum_exp(v[i] - r.shift);
        }
        state = MaxSum{m, r.sum};
    });
}

// f(raw pack, col) for the whole slots of [from, to) (thread t: from + t, + blockDim.x, ...), x
// re-read, kGridRowUnroll loads in flight.
template <typename T, int P, typename LOAD, typename F>
__device__ __forceinline__ void stream_whole(const LOAD& load, const T* src, i64 first, const WholeSlots<P>& whole,
                                             int from, int to, F f) {
    constexpr int U = kGridRowUnroll;
    const int step = blockDim.x;
    for (int j = from + threadIdx.x; j < to; j += U * step) {
        Pack<T, P> raw[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (j + u * step < to && whole(j + u * step)) raw[u] = load.template read<P>(src, first + (i64)(j + u * step) * P);
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (j + u * step < to && whole(j + u * step)) f(raw[u], first + (i64)(j + u * step) * P);
    }
}

// Slots [0, count) at the output's packs (first `out_first`) from x read element by element: rows
// whose input and output are misaligned differently, nothing held.
template <typename T, int P, typename LOAD, typename STORE, typename OUT>
__device__ __forceinline__ void stream_write_realigned(const LOAD& load, const STORE& store, const T* src, i64 row,
                                                       const ClusterSlice<P>& s, i64 out_first, int count,
                                                       const OUT& out) {
    for (int j = threadIdx.x; j < count; j += blockDim.x) {
        const i64 col = out_first + (i64)j * P;
        float v[P];
        load.template convert<P>(read_slot<T, P>(load, src, s, col, false, 0.0f), v, row, col);
        out.template apply<P>(v);
        scatter<T, P>(store, s, row, col, v);
    }
}

// Shared-memory slots [0, count) take slice slots from + 0, + 1, ...: whole ones by cp.async in
// kGridRowStages groups of `per` rounds of blockDim.x slots (thread t's i-th slot, t + i blockDim.x,
// in group i / per), so that each group is reduced as soon as it has landed; partial ones as -inf.
// Thread t reads back only its own slots, so its own waits make them visible. (Copied instead by
// thread 0 with one bulk copy a group (the TMA unit, sm_90), the slots of a 1 x 2^24 bf16 row
// landed 6 us later on an H100: 0.59 of copy against 0.63.)
// Group g alone (its slots and its commit), for a caller that issues the groups one by one.
template <typename T, int P>
__device__ __forceinline__ void stage_group(Pack<T, P>* staged, const T* src, i64 first, const WholeSlots<P>& whole,
                                            int from, int count, int per, int g) {
    const Pack<T, P> pad = filled_pack<T, P>(neg_inf());
    const int end = min(count, (g + 1) * per * (int)blockDim.x);
    for (int j = threadIdx.x + g * per * (int)blockDim.x; j < end; j += blockDim.x) {
        if (whole(from + j)) {
            copy_async<sizeof(Pack<T, P>)>(&staged[j], src + first + (i64)(from + j) * P);
        } else {
            staged[j] = pad;
        }
    }
    copy_async_commit();
}

template <typename T, int P>
__device__ __forceinline__ void stage_grouped(Pack<T, P>* staged, const T* src, i64 first, const WholeSlots<P>& whole,
                                              int from, int count, int per) {
#pragma unroll 1
    for (int g = 0; g < kGridRowStages; ++g) stage_group<T, P>(staged, src, first, whole, from, count, per, g);
}

// The sum of e.term<FUSED> over a thread's shared-memory slots [begin, end) (step blockDim.x).
template <bool FUSED, typename T, int P, typename LOAD>
__device__ __forceinline__ float staged_sum(const LOAD& load, const Pack<T, P>* staged, int begin, int end, i64 row,
                                            i64 first_col, const ExpShift& e) {
    float sum = 0.0f;
    for (int j = begin; j < end; j += blockDim.x) {
        float v[P];
        load.template convert<P>(staged[j], v, row, first_col + (i64)j * P);
#pragma unroll
        for (int i = 0; i < P; ++i) sum += e.template term<FUSED>(v[i]);
    }
    return sum;
}

// The (max, sum) pair of group g of a thread's shared-memory slots (stage_grouped's numbering),
// once it has landed: the maximum first, then one exponential per element (FUSE: as held_pair).
template <bool FUSE, typename T, int P, typename LOAD>
__device__ __forceinline__ MaxSum staged_group_pair(const LOAD& load, const Pack<T, P>* staged, int count, int per,
                                                    int g, i64 row, i64 first_col, int pending) {
    wait_async_groups(pending);
    const int begin = threadIdx.x + g * per * (int)blockDim.x;
    const int end = min(count, begin + per * (int)blockDim.x);
    float m = neg_inf();
    for (int j = begin; j < end; j += blockDim.x)
        m = fmaxf(m, load.template max_of<P>(staged[j], row, first_col + (i64)j * P));
    const ExpShift e(m);
    if (FUSE && e.fused) return e.template pair<true>(staged_sum<true, T, P>(load, staged, begin, end, row, first_col, e));
    return e.template pair<false>(staged_sum<false, T, P>(load, staged, begin, end, row, first_col, e));
}

// A row's output where x and y share their misalignment, each slot's values converted by `load` and
// mapped in place by map(values): the streamed rest first (the most recently read, the likeliest
// still in L2), the slice's partial edge slots, then shared memory and the registers, whole 16-byte
// slots each (one 16-byte store, a partial slot only its columns inside the slice).
template <typename T, int P, int K, typename LOAD, typename STORE, typename MAP>
__device__ __forceinline__ void write_held_row(const LOAD& load, const STORE& store, const T* src, i64 row, i64 first,
                                               int count, const ClusterSlice<P>& slice, const WholeSlots<P>& whole,
                                               const GridRowHeld& held, const Pack<T, P> (&x)[K],
                                               const Pack<T, P>* staged, i64 staged_first, const MAP& map) {
    const auto write = [&](const Pack<T, P>& raw, i64 col, bool whole_slot) {
        float v[P];
        load.template convert<P>(raw, v, row, col);
        map(v);
        scatter<T, P>(store, slice, row, col, v, whole_slot);
    };
    stream_whole<T, P>(load, src, first, whole, held.total(), count,
                       [&](const Pack<T, P>& raw, i64 col) { write(raw, col, true); });
    each_edge<T, P>(load, src, slice, first, count, whole, 0.0f,
                    [&](const Pack<T, P>& raw, i64 col) { write(raw, col, false); });
    for (int j = threadIdx.x; j < held.smem; j += blockDim.x)
        if (whole(held.regs + j)) write(staged[j], staged_first + (i64)j * P, true);
#pragma unroll
    for (int k = 0; k < K; ++k)
        if (slot_of(k) < held.regs && whole(slot_of(k))) write(x[k], first + (i64)slot_of(k) * P, true);
}

template <typename T, int P, int K, bool LOG, typename TEAM, typename LOAD, typename STORE>
__device__ __forceinline__ void grid_row_forward(const LOAD& load, const STORE& store, TEAM team, i64 rows, i64 n,
                                                 i64 smem_slots) {
    constexpr int kAhead = TEAM::kGroupsAhead;
    static_assert(kAhead >= 1 && kAhead <= kGridRowStages, "groups ahead: 1 to kGridRowStages");
    extern __shared__ __align__(16) unsigned char grid_row_smem[];
    __shared__ MaxSum cta_slots[32];
    __shared__ MaxSum total_slot;
    Pack<T, P>* staged = reinterpret_cast<Pack<T, P>*>(grid_row_smem);

    team.wait_turn();
    for (i64 row = team.first_row(); row < rows; row += team.row_step()) {
        const T* src = load.row_ptr(row);
        const int shift = misalignment<T, P>(src);
        const int out_shift = misalignment<T, P>(store.row_ptr(row));
        const ClusterSlice<P> slice(n, shift, team.rank(), team.size());
        const i64 first = slice.first(shift);
        const int count = slot_count(slice, first);
        const WholeSlots<P> whole(slice, first, count);
        const GridRowHeld held(shift == out_shift, count, K * (int)blockDim.x, smem_slots);
        const int per = rounds_per_group(held.smem);
        const i64 staged_first = first + (i64)held.regs * P;

        const Pack<T, P> pad = filled_pack<T, P>(neg_inf());
        Pack<T, P> x[K];
#pragma unroll
        for (int k = 0; k < K; ++k)
            if (slot_of(k) < held.regs) x[k] = whole_slot<T, P>(load, src, first, whole, slot_of(k), pad);
        // the first kAhead groups; one by one (kAhead 1), each later group issued while the one
        // before it is reduced, so that the reduction runs under the copies rather than after the last
        // is issued (H200, alternated in one process against all four first: bf16 1 x 2^24 0.53 ->
        // 0.57 of copy, 1 x 2^26 0.525 -> 0.541, float32 level; results
        // 2026-12-02_h200_s44/grid_row_interleaved_ab.txt; two and three ahead level or behind, results
        // 2026-12-04_h200_s60/c1)
        if constexpr (kAhead == 1) {
            stage_group<T, P>(staged, src, first, whole, held.regs, held.smem, per, 0);
        } else {
#pragma unroll 1
            for (int g = 0; g < kAhead; ++g) stage_group<T, P>(staged, src, first, whole, held.regs, held.smem, per, g);
        }

        // the streamed rest first (read last, so that phase 2, which starts with it, finds the most
        // of it in L2), then the registers (their loads came first), then shared memory group by group
        MaxSum state = empty_maxsum();
        stream_stats<T, P>(load, src, row, first, whole, held.total(), count, state);
        each_edge<T, P>(load, src, slice, first, count, whole, neg_inf(), [&](const Pack<T, P>& raw, i64 col) {
            float v[P];
            load.template convert<P>(raw, v, row, col);
            accumulate<P>(state, v);
        });
        state = merge(state, held_pair<!LOG, T, P, K>(load, x, held.regs, row, first,
                                                      held_max<T, P, K>(load, x, held.regs, row, first)));
#pragma unroll 1
        for (int g = 0; g < kGridRowStages; ++g) {
            const bool issue = g + kAhead < kGridRowStages;
            if (issue) stage_group<T, P>(staged, src, first, whole, held.regs, held.smem, per, g + kAhead);
            // the groups issued after g: kAhead while there are more to issue, then the rest (for
            // kAhead 1 the rest is 0, spelled so to keep that kernel's instructions as they were)
            const int pending = issue ? kAhead : (kAhead == 1 ? 0 : kGridRowStages - 1 - g);
            state = merge(state, staged_group_pair<!LOG, T, P>(load, staged, held.smem, per, g, row, staged_first, pending));
        }

        const MaxSum warp = warp_merge(state);
        if ((threadIdx.x & 31) == 0) cta_slots[threadIdx.x >> 5] = warp;
        __syncthreads();
        MaxSum cta = empty_maxsum();
        if (threadIdx.x < 32)
            cta = warp_merge(threadIdx.x < (blockDim.x >> 5) ? cta_slots[threadIdx.x] : empty_maxsum());
        const MaxSum total = team.total(cta, &total_slot);

        // As the cluster tier: a row of -inf gives 0 * inf or -inf - -inf, NaN, as torch does.
        // The fused 16-bit softmax output takes its own walk, the choice made once a row: RowOutput
        // tests it at every slot, which held bf16 1 x 2^24 at 0.610 of copy against 0.637 (H100, in one
        // process, results 2026-11-27_h100_s21/grid_row_ab_final.txt); the other outputs keep RowOutput's
        // walk, unchanged.
        const RowOutput<LOG, T> out(total);
        if (shift != out_shift) {
            stream_write_realigned<T, P>(load, store, src, row, slice, slice.first(out_shift),
                                         slot_count(slice, slice.first(out_shift)), out);
        } else if (fused_output<LOG, T>(total)) {
            const auto fast = [&](float* v) {
#pragma unroll
                for (int i = 0; i < P; ++i) v[i] = out.fast(v[i]);
            };
            write_held_row<T, P, K>(load, store, src, row, first, count, slice, whole, held, x, staged, staged_first,
                                    fast);
        } else {
            write_held_row<T, P, K>(load, store, src, row, first, count, slice, whole, held, x, staged, staged_first,
                                    [&](float* v) { out.template apply<P>(v); });
        }
        // the next row's copies land in shared memory this thread may still be reading
        if (row + team.row_step() < rows) __syncthreads();
    }
    team.finish();
}

// ---- backward ------------------------------------------------------------------------------------
// f(y values, dy values, col) over the slots the backward holds in registers.
// A function template, not a generic lambda: NVRTC before 13.5 takes a generic lambda in device
// code for a host function.
template <typename T, int P, int K, typename LOAD, typename F>
__device__ __forceinline__ void each_register_pair(const LOAD& load_y, const LOAD& load_dy, Pack<T, P> (&y)[K],
                                                   Pack<T, P> (&dy)[K], const GridRowHeld& held, i64 row, i64 first,
                                                   const F& f) {
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (slot_of(k) < held.regs) {
            const i64 col = first + (i64)slot_of(k) * P;
            float yv[P], dyv[P];
            load_y.template convert<P>(y[k], yv, row, col);
            load_dy.template convert<P>(dy[k], dyv, row, col);
            f(yv, dyv, col);
        }
    }
}

// The same over the slots it holds in shared memory, once this thread's copies have landed.
template <typename T, int P, typename LOAD, typename F>
__device__ __forceinline__ void each_staged_pair(const LOAD& load_y, const LOAD& load_dy, const Pack<T, P>* staged_y,
                                                 const Pack<T, P>* staged_dy, const GridRowHeld& held, i64 row,
                                                 i64 first, const F& f) {
    copy_async_wait();
    for (int j = threadIdx.x; j < held.smem; j += blockDim.x) {
        const i64 col = first + (i64)(held.regs + j) * P;
        float yv[P], dyv[P];
        load_y.template convert<P>(staged_y[j], yv, row, col);
        load_dy.template convert<P>(staged_dy[j], dyv, row, col);
        f(yv, dyv, col);
    }
}

// Both: registers, then shared memory.
template <typename T, int P, int K, typename LOAD, typename F>
__device__ __forceinline__ void each_held_pair(const LOAD& load_y, const LOAD& load_dy, Pack<T, P> (&y)[K],
                                               Pack<T, P> (&dy)[K], const Pack<T, P>* staged_y,
                                               const Pack<T, P>* staged_dy, const GridRowHeld& held, i64 row,
                                               i64 first, const F& f) {
    each_register_pair<T, P, K>(load_y, load_dy, y, dy, held, row, first, f);
    each_staged_pair<T, P>(load_y, load_dy, staged_y, staged_dy, held, row, first, f);
}

// Where a backward row lies in the CTA's slice and what of it the CTA holds (grid_row_backward), for
// the row being reduced and for the next, whose shared-memory slots are copied ahead.
template <typename T, int P>
struct BackwardRow {
    const T* y_row;
    const T* dy_row;
    int shift, dy_shift, out_shift;
    ClusterSlice<P> slice;
    i64 first;
    int count;
    GridRowHeld held;

    template <typename LOAD, typename STORE>
    __device__ __forceinline__ BackwardRow(const LOAD& load_y, const LOAD& load_dy, const STORE& store, i64 row, i64 n,
                                           unsigned rank, unsigned ctas, int reg_slots, i64 smem_slots)
        : y_row(load_y.row_ptr(row)),
          dy_row(load_dy.row_ptr(row)),
          shift(misalignment<T, P>(y_row)),
          dy_shift(misalignment<T, P>(dy_row)),
          out_shift(misalignment<T, P>(store.row_ptr(row))),
          slice(n, shift, rank, ctas),
          first(slice.first(shift)),
          count(slot_count(slice, first)),
          held(shift == dy_shift && shift == out_shift, count, reg_slots, smem_slots) {}

    __device__ __forceinline__ void stage(Pack<T, P>* staged_y, Pack<T, P>* staged_dy) const {
        stage_slots<T, P>(staged_y, y_row, slice, first, held.regs, held.smem, 0.0f);
        stage_slots<T, P>(staged_dy, dy_row, slice, first, held.regs, held.smem, 0.0f);
    }
};

// y and dy held side by side (K register slots and smem_slots shared-memory slots each), when y,
// dy and dx share their misalignment.
template <typename T, int P, int K, bool LOG, typename TEAM, typename LOAD, typename STORE>
__device__ __forceinline__ void grid_row_backward(const LOAD& load_y, const LOAD& load_dy, const STORE& store,
                                                  TEAM team, i64 rows, i64 n, i64 smem_slots) {
    extern __shared__ __align__(16) unsigned char grid_row_smem[];
    __shared__ float cta_slots[32];
    __shared__ float merge_slots[32];
    Pack<T, P>* staged_y = reinterpret_cast<Pack<T, P>*>(grid_row_smem);
    Pack<T, P>* staged_dy = staged_y + smem_slots;

    // TEAM::kCopyAhead: rows after the first find their shared-memory slots already in flight
    bool staged_ahead = false;
    team.wait_turn();
    for (i64 row = team.first_row(); row < rows; row += team.row_step()) {
        const BackwardRow<T, P> r(load_y, load_dy, store, row, n, team.rank(), team.size(), K * (int)blockDim.x,
                                  smem_slots);
        const T* y_row = r.y_row;
        const T* dy_row = r.dy_row;
        const ClusterSlice<P>& slice = r.slice;
        const i64 first = r.first;
        const GridRowHeld& held = r.held;

        Pack<T, P> y[K], dy[K];
        load_slots<T, P, K>(load_y, y_row, slice, first, held.regs, 0.0f, y);
        load_slots<T, P, K>(load_dy, dy_row, slice, first, held.regs, 0.0f, dy);
        if (!staged_ahead) r.stage(staged_y, staged_dy);

        float sum = 0.0f;
        const auto accumulate = [&](const float* yv, const float* dyv, i64) {
#pragma unroll
            for (int i = 0; i < P; ++i) sum += backward_term<LOG>(yv[i], dyv[i]);
        };
        // the rest, walked at y's packs: dy in packs too where it shares y's misalignment
        stream_pairs<T, P>(load_y, y_row, load_dy, dy_row, slice, row, first, held.total(), r.count, true,
                           r.dy_shift == r.shift, accumulate);
        each_held_pair<T, P, K>(load_y, load_dy, y, dy, staged_y, staged_dy, held, row, first, accumulate);

        const float cta = block_allreduce(sum, 0.0f, cta_slots, WarpSum());
        const float total = team.total(cta, merge_slots);

        const auto write = [&](float* yv, const float* dyv, i64 col) {
#pragma unroll
            for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], total);
            scatter<T, P>(store, slice, row, col, yv);
        };
        const i64 out_first = slice.first(r.out_shift);
        stream_pairs<T, P>(load_y, y_row, load_dy, dy_row, slice, row, out_first, held.total(),
                           slot_count(slice, out_first), r.shift == r.out_shift, r.dy_shift == r.out_shift, write);
        const i64 next_row = row + team.row_step();
        if constexpr (TEAM::kCopyAhead) {
            // shared memory first, so that the next row's copies (once every thread has read this
            // row's slots: the block barrier) land while this row's registers are written
            each_staged_pair<T, P>(load_y, load_dy, staged_y, staged_dy, held, row, first, write);
            staged_ahead = next_row < rows;
            if (staged_ahead) {
                __syncthreads();
                BackwardRow<T, P>(load_y, load_dy, store, next_row, n, team.rank(), team.size(),
                                  K * (int)blockDim.x, smem_slots)
                    .stage(staged_y, staged_dy);
            }
            each_register_pair<T, P, K>(load_y, load_dy, y, dy, held, row, first, write);
        } else {
            each_held_pair<T, P, K>(load_y, load_dy, y, dy, staged_y, staged_dy, held, row, first, write);
            if (next_row < rows) __syncthreads();
        }
    }
    team.finish();
}

// ---- tier cluster_stream: the team is one thread-block cluster ----------------------------------
__device__ __forceinline__ RowClusterTeam row_cluster_team(i64 stagger) {
    __shared__ MaxSum posts[2];
    return RowClusterTeam{posts, cluster_nctarank(), cluster_ctarank(), stagger};
}

template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_stream_forward(const LOAD& load, const STORE& store, i64 rows, i64 n,
                                                       i64 smem_slots, i64 stagger) {
#if __CUDA_ARCH__ >= 900
    grid_row_forward<T, P, K, LOG>(load, store, row_cluster_team(stagger), rows, n, smem_slots);
#else
    __trap();
#endif
}

template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_stream_backward(const LOAD& load_y, const LOAD& load_dy, const STORE& store,
                                                        i64 rows, i64 n, i64 smem_slots, i64 stagger) {
#if __CUDA_ARCH__ >= 900
    grid_row_backward<T, P, K, LOG>(load_y, load_dy, store, row_cluster_team(stagger), rows, n, smem_slots);
#else
    __trap();
#endif
}

// ---- tier cluster_stream over interleaved columns -----------------------------------------------
// A softmax over axis 1 of (outer, n, inner) whose n x inner block is one contiguous run (a few
// columns over a long axis: (64, 65536, 16) over dim 1) is a row of n x inner elements whose element
// f belongs to column f % inner: the cluster tier's column kernels hold such runs in registers
// (cluster_tier.cuh), up to about 2^19 16-bit elements forward. Past that, these kernels hold them
// as cluster_stream holds rows (registers, then shared memory in groups reduced as they land, the
// rest re-read) with the column kernels' reduction: a value a position of the thread's packs, merged
// by column over the warp (column_reduce), the CTA and the cluster (ColumnExchange). Every slot of
// a thread holds the same columns at the same positions (column_of): the slices are cut at whole
// runs of max(inner, P) elements, and a thread's registers, shared-memory slots and streamed slots
// all step by blockDim.x slots (the shared-memory slots are taken in whole rounds of blockDim.x).
// The host launches them only on runs whose tensors all start on 16-byte boundaries, for a
// power-of-two inner of at most kClusterMaxColumns (strided.column_runs), one CTA an SM; where
// auto takes them and what they measured: strided.takes_column_stream.

// Per-position pairs: each position's maximum over a thread's slots [begin, end) of shared memory
// (step blockDim.x), then its sum against that maximum, merged into state.
template <typename T, int P, typename LOAD>
__device__ __forceinline__ void staged_column_pairs(const LOAD& load, const Pack<T, P>* staged, int begin, int end,
                                                   i64 row, i64 first_col, MaxSum (&state)[P]) {
    Pack<T, P> maxima = filled_pack<T, P>(neg_inf());
    for (int j = begin; j < end; j += blockDim.x)
        load.template max_into<P>(staged[j], maxima, row, first_col + (i64)j * P);
    float m[P], shift[P], s[P];
    unpack<T, P>(maxima, m);
#pragma unroll
    for (int i = 0; i < P; ++i) {
        shift[i] = ExpShift(m[i]).shift;
        s[i] = 0.0f;
    }
    for (int j = begin; j < end; j += blockDim.x) {
        float v[P];
        load.template convert<P>(staged[j], v, row, first_col + (i64)j * P);
#pragma unroll
        for (int i = 0; i < P; ++i) s[i] += sum_exp(v[i] - shift[i]);
    }
#pragma unroll
    for (int i = 0; i < P; ++i) state[i] = merge(state[i], MaxSum{m[i], s[i]});
}

// Per-position running pairs over the streamed slots [from, to) (thread t: from + t, + blockDim.x,
// ...), kGridRowUnroll loads in flight, each position rescaled once per group of loads.
template <typename T, int P, typename LOAD>
__device__ __forceinline__ void stream_column_stats(const LOAD& load, const T* src, i64 row, i64 first,
                                                    const WholeSlots<P>& whole, int from, int to, MaxSum (&state)[P]) {
    constexpr int U = kGridRowUnroll;
    const int step = blockDim.x;
    each_load_group<T, P, U>(load, src, first, whole, from, to, [&](const Pack<T, P>(&raw)[U], int j) {
        Pack<T, P> maxima = filled_pack<T, P>(neg_inf());
#pragma unroll
        for (int u = 0; u < U; ++u) load.template max_into<P>(raw[u], maxima, row, first + (i64)(j + u * step) * P);
        float m[P];
        unpack<T, P>(maxima, m);
#pragma unroll
        for (int i = 0; i < P; ++i) {
            m[i] = fmaxf(m[i], state[i].max);
            state[i].sum = rescaled_sum(state[i].max, state[i].sum, m[i]);
            state[i].max = m[i];
            m[i] = ExpShift(m[i]).shift;
        }
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float v[P];
            load.template convert<P>(raw[u], v, row, first + (i64)(j + u * step) * P);
#pragma unroll
            for (int i = 0; i < P; ++i) state[i].sum += sum_exp(v[i] - m[i]);
        }
    });
}

// The warp's pair of each position's column from the thread's per-position pairs: the column's
// maximum first, then each sum rescaled to it once.
template <int P>
__device__ __forceinline__ void column_pairs_over_warp(const MaxSum (&state)[P], int inner, MaxSum (&out)[P]) {
    float m[P], s[P];
#pragma unroll
    for (int i = 0; i < P; ++i) m[i] = state[i].max;
    column_reduce<P>(m, inner, MaxOp());
#pragma unroll
    for (int i = 0; i < P; ++i) s[i] = rescaled_sum(state[i].max, state[i].sum, m[i]);
    column_reduce<P>(s, inner, AddOp());
#pragma unroll
    for (int i = 0; i < P; ++i) out[i] = MaxSum{m[i], s[i]};
}

template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_stream_forward_columns(const LOAD& load, const STORE& store, i64 rows, i64 n,
                                                               i64 smem_slots, i64 inner) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char grid_row_smem[];
    Pack<T, P>* staged = reinterpret_cast<Pack<T, P>*>(grid_row_smem);
    const unsigned ctas = cluster_nctarank(), rank = cluster_ctarank();
    const int columns = (int)inner;
    ColumnExchange<MaxSum> all(ctas, rank, columns);
    const i64 unit = inner > P ? inner : P;
    smem_slots -= smem_slots % blockDim.x;  // whole rounds (the host sizes them so: a no-op)
    unsigned round = 0;
    for (i64 row = blockIdx.x / ctas; row < rows; row += gridDim.x / ctas, ++round) {
        const T* src = load.row_ptr(row);
        if ((misalignment<T, P>(src) | misalignment<T, P>(store.row_ptr(row))) != 0) __trap();
        const ClusterSlice<P> slice(n, 0, rank, ctas, unit);
        const i64 first = slice.begin;
        const int count = slot_count(slice, first);
        const WholeSlots<P> whole(slice, first, count);
        const GridRowHeld held(true, count, K * (int)blockDim.x, smem_slots);
        const int per = rounds_per_group(held.smem);
        const i64 staged_first = first + (i64)held.regs * P;

        const Pack<T, P> pad = filled_pack<T, P>(neg_inf());
        Pack<T, P> x[K];
#pragma unroll
        for (int k = 0; k < K; ++k) x[k] = slot_of(k) < held.regs ? whole_slot<T, P>(load, src, first, whole, slot_of(k), pad) : pad;
        stage_grouped<T, P>(staged, src, first, whole, held.regs, held.smem, per);

        // as grid_row_forward: the streamed rest first, the registers, then shared memory by group
        MaxSum state[P];
#pragma unroll
        for (int i = 0; i < P; ++i) state[i] = empty_maxsum();
        stream_column_stats<T, P>(load, src, row, first, whole, held.total(), count, state);
        // the partial edge slots (a run of a few columns ends inside a pack): element i of any slot
        // lies in column i % inner there, as in thread 0's own slots
        each_edge<T, P>(load, src, slice, first, count, whole, neg_inf(), [&](const Pack<T, P>& raw, i64 col) {
            float v[P];
            load.template convert<P>(raw, v, row, col);
#pragma unroll
            for (int i = 0; i < P; ++i) state[i] = merge(state[i], MaxSum{v[i], sum_exp(v[i] - ExpShift(v[i]).shift)});
        });
        {
            Pack<T, P> maxima = pad;
#pragma unroll
            for (int k = 0; k < K; ++k) load.template max_into<P>(x[k], maxima, row, first + (i64)slot_of(k) * P);
            float m[P], s[P];
            unpack<T, P>(maxima, m);
            column_sums<false, T, P, K>(load, x, held.regs, row, first, m, s);
#pragma unroll
            for (int i = 0; i < P; ++i) state[i] = merge(state[i], MaxSum{m[i], s[i]});
        }
#pragma unroll 1
        for (int g = 0; g < kGridRowStages; ++g) {
            wait_async_groups(kGridRowStages - 1 - g);
            const int begin = threadIdx.x + g * per * (int)blockDim.x;
            staged_column_pairs<T, P>(load, staged, begin, min(held.smem, begin + per * (int)blockDim.x), row,
                                      staged_first, state);
        }

        MaxSum pairs[P], totals[P];
        column_pairs_over_warp<P>(state, columns, pairs);
        all.template exchange<true>(round, pairs, totals);
        const ColumnOutput<LOG, T, P> out(totals);
        write_held_row<T, P, K>(load, store, src, row, first, count, slice, whole, held, x, staged, staged_first,
                                [&](float* v) { out.apply(v); });
        // the next row's copies land in shared memory this thread may still be reading
        if (row + gridDim.x / ctas < rows) __syncthreads();
    }
#else
    __trap();
#endif
}

template <typename T, int P, int K, bool LOG, typename LOAD, typename STORE>
__device__ __forceinline__ void cluster_stream_backward_columns(const LOAD& load_y, const LOAD& load_dy,
                                                                const STORE& store, i64 rows, i64 n, i64 smem_slots,
                                                                i64 inner) {
#if __CUDA_ARCH__ >= 900
    extern __shared__ __align__(16) unsigned char grid_row_smem[];
    smem_slots -= smem_slots % blockDim.x;
    Pack<T, P>* staged_y = reinterpret_cast<Pack<T, P>*>(grid_row_smem);
    Pack<T, P>* staged_dy = staged_y + smem_slots;
    const unsigned ctas = cluster_nctarank(), rank = cluster_ctarank();
    const int columns = (int)inner;
    ColumnExchange<float> all(ctas, rank, columns);
    const i64 unit = inner > P ? inner : P;
    unsigned round = 0;
    for (i64 row = blockIdx.x / ctas; row < rows; row += gridDim.x / ctas, ++round) {
        const T* y_row = load_y.row_ptr(row);
        const T* dy_row = load_dy.row_ptr(row);
        if ((misalignment<T, P>(y_row) | misalignment<T, P>(dy_row) | misalignment<T, P>(store.row_ptr(row))) != 0)
            __trap();
        const ClusterSlice<P> slice(n, 0, rank, ctas, unit);
        const i64 first = slice.begin;
        const int count = slot_count(slice, first);
        const GridRowHeld held(true, count, K * (int)blockDim.x, smem_slots);

        Pack<T, P> y[K], dy[K];
        load_slots<T, P, K>(load_y, y_row, slice, first, held.regs, 0.0f, y);
        load_slots<T, P, K>(load_dy, dy_row, slice, first, held.regs, 0.0f, dy);
        stage_slots<T, P>(staged_y, y_row, slice, first, held.regs, held.smem, 0.0f);
        stage_slots<T, P>(staged_dy, dy_row, slice, first, held.regs, held.smem, 0.0f);

        float s[P];
#pragma unroll
        for (int i = 0; i < P; ++i) s[i] = 0.0f;
        const auto accumulate = [&](const float* yv, const float* dyv, i64) {
#pragma unroll
            for (int i = 0; i < P; ++i) s[i] += backward_term<LOG>(yv[i], dyv[i]);
        };
        stream_pairs<T, P>(load_y, y_row, load_dy, dy_row, slice, row, first, held.total(), count, true, true,
                           accumulate);
        each_held_pair<T, P, K>(load_y, load_dy, y, dy, staged_y, staged_dy, held, row, first, accumulate);
        column_reduce<P>(s, columns, AddOp());
        float totals[P];
        all.template exchange<true>(round, s, totals);

        const auto write = [&](float* yv, const float* dyv, i64 col) {
#pragma unroll
            for (int i = 0; i < P; ++i) yv[i] = input_grad<LOG>(yv[i], dyv[i], totals[i]);
            scatter<T, P>(store, slice, row, col, yv);
        };
        stream_pairs<T, P>(load_y, y_row, load_dy, dy_row, slice, row, first, held.total(), count, true, true, write);
        each_held_pair<T, P, K>(load_y, load_dy, y, dy, staged_y, staged_dy, held, row, first, write);
        if (row + gridDim.x / ctas < rows) __syncthreads();
    }
#else
    __trap();
#endif
}

}  // namespace fastsoftmax
