// fastsoftmax.distributed, collective "peer": the softmax of rows split across the GPUs of one
// host, in one kernel per call on every rank, with the ranks' per-row statistics exchanged through
// each other's memory (CUDA IPC, NVLink or PCIe peer access) instead of a collective library.
//
// Why: at decode sizes (a few rows of a vocabulary shard) the statistics pass, an NCCL all-gather
// of 8 bytes a row and the normalising pass cost three launches and a collective on the host:
// 115-165 us a call eager on two H200s, where the data moves in a few. Here a call is one launch.
// On many rows the shard is read once (the all-gather path reads it twice), the exchange of one
// row hidden behind the reading of the next.
//
// Per call, every rank launches `groups` x G CTAs (G: CTAs per row, each rank its own, as its
// shard width asks); group g takes rows g, g + groups, ... in turn, and its CTA `part` owns
// `chunk` columns of each. For each of its rows a CTA
//   1. reads its columns once, keeping the first HELD in shared memory (DEPTH buffers, two by
//      default: the next row's while the current one waits), and reduces them to a (max, sum of
//      exp(x - max)) pair;
//   2. the last of the row's G CTAs to finish (a ticket per row) merges their G pairs and writes
//      the row's pair, with the call's epoch as a flag (a system-scope release), into slot
//      (parity, row, rank) of every rank's exchange memory, its own included: 16 bytes a row a
//      rank over the interconnect;
//   3. after step 1 of its next row, every CTA of the row waits (system-scope acquire) until all
//      `world` slots of its row carry the epoch, merges them in rank order (every rank computes
//      the same total), and writes its columns from shared memory (re-reading from device memory
//      what did not fit).
// A thread reads back from shared memory only the elements it wrote there itself, so the two
// buffers need no barrier between the rows.
//
// Epochs: each rank's exchange memory holds the number of launches it completed. A CTA reads it
// at its start (epoch = completed + 1) and the grid's last CTA advances it at the end, so the
// epoch lives on the device and calls captured in a CUDA graph replay correctly. Slots alternate
// between two parities by epoch: a rank writes a slot of parity e % 2 for launch e + 2 only after
// its launch e + 1 has read every rank's pairs of launch e + 1, which every rank writes only after
// its launch e, the last reader of parity e % 2, completed. The CTA pairs of a group alternate
// between two halves by the row's turn: a CTA writes its pair for turn k + 2 only after its wait
// for turn k returned, i.e. after the merge that read the pairs of turn k.
//
// Progress: a CTA that waits needs the CTAs of its row on every other rank to run. Each rank's
// grid is at most what its GPU holds at once (the host sizes it from the occupancy query), so
// once the kernels before it on the GPU have finished, all its CTAs are resident together; a CTA
// sends a row's pair before it waits for any row at or after it, so the lowest row anyone waits
// for is always sent by every rank. This holds provided every rank reaches the call: the ranks of
// a group make the same calls in the same order, as with any collective. The launch is a plain
// one: a cooperative launch would state the residency guarantee, at about 50 us of host time per
// call on an H200 host (measured: 78-90 us a decode call against 26-31 us with a plain launch).
//
// -inf / +inf / NaN follow common.cuh: a row of -inf gives NaN, +inf or NaN anywhere in the row
// (on any rank) makes the whole row NaN, an empty or all -inf shard contributes nothing.
#pragma once

#include "common.cuh"

namespace fastsoftmax {

// One rank's (max, sum) of one row of one call, written by that rank into every rank's memory.
struct __align__(16) PeerSlot {
    float max;
    float sum;
    unsigned long long epoch;
};

// This rank's own bookkeeping, at the start of its exchange memory.
struct PeerState {
    unsigned long long completed;  // calls completed on this rank
    unsigned int finished;         // CTAs of the current call that have finished
};

__device__ __forceinline__ unsigned long long load_acquire_system(const unsigned long long* p) {
    unsigned long long v;
    asm volatile("ld.acquire.sys.global.u64 %0, [%1];\n" : "=l"(v) : "l"(p) : "memory");
    return v;
}

__device__ __forceinline__ void store_release_system(unsigned long long* p, unsigned long long v) {
    asm volatile("st.release.sys.global.u64 [%0], %1;\n" ::"l"(p), "l"(v) : "memory");
}

// The columns [begin, end) of a row through a CTA: packs of P where they lie whole in the range
// (begin is a multiple of P, the row's start 16-byte aligned when P > 1), then single elements.
template <typename T, int P, typename F>
__device__ __forceinline__ void for_each_pack(i64 begin, i64 end, F&& f) {
    const i64 whole = begin + (end > begin ? (end - begin) / P * P : 0);
    for (i64 c = begin + (i64)threadIdx.x * P; c < whole; c += (i64)blockDim.x * P) f.template step<P>(c);
    for (i64 c = whole + threadIdx.x; c < end; c += blockDim.x) f.template step<1>(c);
}

// The same walk with U packs of a thread loaded before any is used: U times the bytes in flight.
// One pack at a time, a CTA kept 4 KB in flight, and three CTAs an SM read 0.55 of copy bandwidth
// (Little's law at about a microsecond of latency: H100, benchmarks/peer_probe.py).
template <typename T, int P, int U, typename F>
__device__ __forceinline__ void for_each_pack_batched(i64 begin, i64 end, F&& f) {
    const i64 whole = begin + (end > begin ? (end - begin) / P * P : 0);
    const i64 stride = (i64)blockDim.x * P;
    for (i64 c = begin + (i64)threadIdx.x * P; c < whole; c += U * stride) {
        Pack<T, P> raw[U];
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (c + u * stride < whole) raw[u] = f.template load<P>(c + u * stride);
#pragma unroll
        for (int u = 0; u < U; ++u)
            if (c + u * stride < whole) f.template use<P>(c + u * stride, raw[u]);
    }
    for (i64 c = whole + threadIdx.x; c < end; c += blockDim.x) f.template use<1>(c, f.template load<1>(c));
}

template <typename T>
struct HoldAndReduce {
    const T* row;
    T* held;
    i64 begin, held_end;
    MaxSum acc;
    template <int P>
    __device__ __forceinline__ Pack<T, P> load(i64 c) const {
        return read_pack<T, P>(row + c);
    }
    template <int P>
    __device__ __forceinline__ void use(i64 c, const Pack<T, P>& raw) {
        if (c + P <= held_end) *reinterpret_cast<Pack<T, P>*>(held + (c - begin)) = raw;
        float v[P];
        unpack<T, P>(raw, v);
        accumulate<P>(acc, v);
    }
};

template <typename T, bool LOG>
struct WriteOut {
    const T* row;
    const T* held;
    T* out;
    i64 begin, held_end;
    RowOutput<LOG, T> output;
    template <int P>
    __device__ __forceinline__ void step(i64 c) {
        Pack<T, P> raw =
            c + P <= held_end ? *reinterpret_cast<const Pack<T, P>*>(held + (c - begin)) : read_pack<T, P>(row + c);
        float v[P];
        unpack<T, P>(raw, v);
        output.template apply<P>(v);
        store_pack_global<T, P>(out + c, v);
    }
};

// One CTA's part of the rows of a call (see the header). x, y: the call's first row; rows of n
// columns at pitches x_pitch and n (y is contiguous). peers: world pointers, rank r's slots in this
// process's address space. pairs: two per CTA; tickets: one per row, zero between launches.
template <typename T, bool LOG, int P, int HELD, int ROWS_CAPACITY, int BATCH, int DEPTH>
struct PeerRows {
    const T* x;
    T* y;
    i64 rows, n, x_pitch, chunk, ctas_per_row, groups, rank, world;
    PeerSlot* const* peers;
    float2* pairs;
    unsigned int* tickets;
    unsigned long long epoch;
    i64 group, part, begin, end, held_end;

    __device__ __forceinline__ PeerRows(const T* x, T* y, i64 rows, i64 n, i64 x_pitch, i64 chunk, i64 ctas_per_row,
                                        i64 groups, i64 rank, i64 world, PeerSlot* const* peers, float2* pairs,
                                        unsigned int* tickets, unsigned long long epoch)
        : x(x), y(y), rows(rows), n(n), x_pitch(x_pitch), chunk(chunk), ctas_per_row(ctas_per_row), groups(groups),
          rank(rank), world(world), peers(peers), pairs(pairs), tickets(tickets), epoch(epoch),
          group(blockIdx.x / ctas_per_row), part(blockIdx.x - group * ctas_per_row), begin(min(n, part * chunk)),
          end(min(n, begin + chunk)), held_end(min(end, begin + (i64)HELD)) {}

    __device__ __forceinline__ i64 slot_index(i64 row, i64 from) const {
        return ((i64)(epoch & 1ull) * ROWS_CAPACITY + row) * world + from;
    }

    // steps 1 and 2 for the row of turn `turn`
    __device__ __forceinline__ void reduce_and_send(i64 row, i64 turn, T* held) const {
        HoldAndReduce<T> reduce{x + row * x_pitch, held, begin, held_end, empty_maxsum()};
        for_each_pack_batched<T, P, BATCH>(begin, end, reduce);
        const MaxSum mine = block_maxsum(reduce.acc);
        // the first warp takes the row's ticket and, where it is the last CTA of the row, merges the
        // row's pairs and sends the total, one pair and one rank a lane (by one thread, the merge
        // and the sends queued one after another behind the CTA's next barrier)
        if (threadIdx.x >= 32) return;
        float2* turn_pairs = pairs + ((group * DEPTH + turn % DEPTH) * ctas_per_row);
        unsigned int last = 0;
        if (threadIdx.x == 0) {
            turn_pairs[part] = make_float2(mine.max, mine.sum);
            __threadfence();
            last = atomicAdd(&tickets[row], 1u) == (unsigned int)(ctas_per_row - 1);
        }
        if (!__shfl_sync(kFullMask, last, 0)) return;
        __threadfence();
        MaxSum lane = empty_maxsum();
        const volatile float2* read = turn_pairs;
        for (i64 i = threadIdx.x; i < ctas_per_row; i += 32) lane = merge(lane, MaxSum{read[i].x, read[i].y});
        const MaxSum total = warp_merge(lane);
        if (threadIdx.x == 0) tickets[row] = 0u;  // every CTA of the row has taken its ticket
        const i64 index = slot_index(row, rank);
        for (i64 r = threadIdx.x; r < world; r += 32) {
            PeerSlot* slot = peers[r] + index;
            reinterpret_cast<volatile float*>(&slot->max)[0] = total.max;
            reinterpret_cast<volatile float*>(&slot->sum)[0] = total.sum;
            store_release_system(&slot->epoch, epoch);
        }
    }

    // step 3: every rank's pair of the row, merged in rank order, in every thread
    __device__ __forceinline__ MaxSum wait_for(i64 row) const {
        __shared__ MaxSum shared_total;
        __syncthreads();  // every thread has read the previous row's total
        if (threadIdx.x < 32) {
            MaxSum lane = empty_maxsum();
            PeerSlot* mine = peers[rank];
            for (i64 r = threadIdx.x; r < world; r += 32) {
                PeerSlot* slot = mine + slot_index(row, r);
                while (load_acquire_system(&slot->epoch) != epoch) __nanosleep(64);
                lane = merge(lane, MaxSum{reinterpret_cast<volatile float*>(&slot->max)[0],
                                          reinterpret_cast<volatile float*>(&slot->sum)[0]});
            }
            const MaxSum total = warp_merge(lane);
            if (threadIdx.x == 0) shared_total = total;
        }
        __syncthreads();
        return shared_total;
    }

    __device__ __forceinline__ void write(i64 row, const T* held, const MaxSum& total) const {
        WriteOut<T, LOG> out{x + row * x_pitch, held, y + row * n, begin, held_end, RowOutput<LOG, T>(total)};
        for_each_pack<T, P>(begin, end, out);
    }
};

template <typename T, bool LOG, int P, int HELD, int ROWS_CAPACITY, int BATCH, int DEPTH>
__device__ __forceinline__ void peer_rows_forward(const T* __restrict__ x, T* __restrict__ y, i64 rows, i64 n,
                                                  i64 x_pitch, i64 chunk, i64 ctas_per_row, i64 groups, i64 rank,
                                                  i64 world, PeerSlot* const* peers, float2* pairs,
                                                  unsigned int* tickets, PeerState* state) {
    extern __shared__ __align__(16) unsigned char peer_smem[];
    T* buffers = reinterpret_cast<T*>(peer_smem);

    const unsigned long long epoch = *reinterpret_cast<volatile unsigned long long*>(&state->completed) + 1ull;
    const PeerRows<T, LOG, P, HELD, ROWS_CAPACITY, BATCH, DEPTH> call(x, y, rows, n, x_pitch, chunk, ctas_per_row, groups,
                                                                      rank, world, peers, pairs, tickets, epoch);

    // DEPTH - 1 rows read ahead of the one being written
    for (i64 turn = 0; turn < DEPTH - 1; ++turn) {
        const i64 row = call.group + turn * groups;
        if (row < rows) call.reduce_and_send(row, turn, buffers + (turn % DEPTH) * HELD);
    }
    i64 turn = 0;
    for (i64 row = call.group; row < rows; row += groups, ++turn) {
        const i64 ahead = row + (DEPTH - 1) * groups;
        const i64 ahead_turn = turn + DEPTH - 1;
        if (ahead < rows) call.reduce_and_send(ahead, ahead_turn, buffers + (ahead_turn % DEPTH) * HELD);
        call.write(row, buffers + (turn % DEPTH) * HELD, call.wait_for(row));
    }

    // the grid's last CTA advances the epoch for the next launch
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&state->finished, 1u) == gridDim.x - 1) {
            state->finished = 0u;
            *reinterpret_cast<volatile unsigned long long*>(&state->completed) = call.epoch;
            __threadfence();
        }
    }
}

}  // namespace fastsoftmax
