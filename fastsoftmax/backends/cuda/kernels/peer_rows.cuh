// fastsoftmax.distributed, collective "peer": the softmax of rows split across the GPUs of one
// host, in one kernel per call on every rank, with the ranks' per-row statistics exchanged through
// each other's memory (CUDA IPC, NVLink or PCIe peer access) instead of a collective library.
//
// Why: at decode sizes (a few rows of a vocabulary shard) the statistics pass, an NCCL all-gather
// of 8 bytes a row and the normalising pass cost three launches and a collective on the host:
// 200+ us a call eager on two H200s, where the data moves in a few. Here a call is one launch.
//
// Per call, every rank launches rows x G CTAs (G: CTAs per row, each rank its own, as its shard
// width asks); CTA (row, part) owns `chunk` columns of its row:
//   1. it reads them once, keeping the first `held` elements in shared memory, and reduces them to
//      a (max, sum of exp(x - max)) pair;
//   2. the last of the row's G CTAs to finish (a ticket per row) merges their G pairs and writes
//      the row's pair, with the call's epoch as a flag (a system-scope release), into slot
//      (parity, row, rank) of every rank's exchange memory, its own included: 16 bytes a row a
//      rank over the interconnect;
//   3. every CTA of the row waits (system-scope acquire) until all `world` slots of its row carry
//      the epoch, merges them in rank order (so every rank computes the same total), and writes
//      its columns from shared memory (re-reading from device memory what did not fit).
//
// Epochs: each rank's exchange memory holds the number of calls it completed. A CTA reads it at
// its start (epoch = completed + 1) and the grid's last CTA advances it at the end, so the epoch
// lives on the device and calls captured in a CUDA graph replay correctly. Slots alternate
// between two parities by epoch: a rank writes a slot of parity e % 2 for call e + 2 only after
// its call e + 1 has read every rank's pairs of call e + 1, which every rank writes only after its
// call e, the last reader of parity e % 2, completed.
//
// Progress: a CTA that waits needs the CTAs of its row on every other rank to run. Each rank's
// grid is at most what its GPU holds at once (the host sizes it from the occupancy query), so
// once the kernels before it on the GPU have finished, all its CTAs are resident together and none
// waits for a CTA that cannot start, provided every rank reaches the call: the ranks of a group
// make the same calls in the same order, as with any collective. The launch is a plain one: a
// cooperative launch would state the same guarantee, at about 50 us of host time per call on an
// H200 host (measured: 78-90 us a decode call against 30 us for a local softmax).
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

__device__ __forceinline__ i64 peer_slot_index(unsigned long long epoch, i64 row, i64 rank, i64 world,
                                               i64 rows_capacity) {
    return ((i64)(epoch & 1ull) * rows_capacity + row) * world + rank;
}

// The columns [begin, end) of a row through a CTA: packs of P where they lie whole in the range
// (begin is a multiple of P, the row's start 16-byte aligned when P > 1), then single elements.
template <typename T, int P, typename F>
__device__ __forceinline__ void for_each_pack(i64 begin, i64 end, F&& f) {
    const i64 whole = begin + (end > begin ? (end - begin) / P * P : 0);
    for (i64 c = begin + (i64)threadIdx.x * P; c < whole; c += (i64)blockDim.x * P) f.template step<P>(c);
    for (i64 c = whole + threadIdx.x; c < end; c += blockDim.x) f.template step<1>(c);
}

template <typename T>
struct HoldAndReduce {
    const T* row;
    T* held;
    i64 begin, held_end;
    MaxSum acc;
    template <int P>
    __device__ __forceinline__ void step(i64 c) {
        Pack<T, P> raw = read_pack<T, P>(row + c);
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

// x, y: the first row of this call; rows of n columns at pitches x_pitch, y_pitch (elements).
// peers: world pointers, rank r's slot array in this process's address space; slots: this rank's.
// pairs: one per CTA; tickets: one per row, zero between calls; held: elements of shared memory.
template <typename T, bool LOG, int P>
__device__ __forceinline__ void peer_rows_forward(const T* __restrict__ x, T* __restrict__ y, i64 n, i64 x_pitch,
                                                  i64 y_pitch, i64 chunk, i64 ctas_per_row, i64 rank, i64 world,
                                                  i64 rows_capacity, PeerSlot* const* peers, PeerSlot* slots,
                                                  float2* pairs, unsigned int* tickets, PeerState* state, i64 held) {
    extern __shared__ __align__(16) unsigned char peer_smem[];
    T* kept = reinterpret_cast<T*>(peer_smem);
    __shared__ bool last_of_row;

    const unsigned long long epoch = *reinterpret_cast<volatile unsigned long long*>(&state->completed) + 1ull;
    const i64 row = blockIdx.x / ctas_per_row;
    const i64 part = blockIdx.x - row * ctas_per_row;
    const i64 begin = min(n, part * chunk);
    const i64 end = min(n, begin + chunk);
    const i64 held_end = min(end, begin + held);
    const T* src = x + row * x_pitch;

    // 1. this CTA's pair
    HoldAndReduce<T> reduce{src, kept, begin, held_end, empty_maxsum()};
    for_each_pack<T, P>(begin, end, reduce);
    const MaxSum mine = block_maxsum(reduce.acc);

    // 2. the row's last CTA sends the row's pair to every rank
    if (threadIdx.x == 0) {
        pairs[blockIdx.x] = make_float2(mine.max, mine.sum);
        __threadfence();
        last_of_row = atomicAdd(&tickets[row], 1u) == (unsigned int)(ctas_per_row - 1);
    }
    __syncthreads();
    if (last_of_row && threadIdx.x == 0) {
        __threadfence();
        MaxSum total = empty_maxsum();
        const volatile float2* row_pairs = pairs + row * ctas_per_row;
        for (i64 i = 0; i < ctas_per_row; ++i) {
            const float2 p = make_float2(row_pairs[i].x, row_pairs[i].y);
            total = merge(total, MaxSum{p.x, p.y});
        }
        tickets[row] = 0u;  // every CTA of the row has taken its ticket
        const i64 index = peer_slot_index(epoch, row, rank, world, rows_capacity);
        for (i64 r = 0; r < world; ++r) {
            PeerSlot* slot = peers[r] + index;
            reinterpret_cast<volatile float*>(&slot->max)[0] = total.max;
            reinterpret_cast<volatile float*>(&slot->sum)[0] = total.sum;
            store_release_system(&slot->epoch, epoch);
        }
    }

    // 3. every rank's pair of the row, merged in rank order
    MaxSum row_total = empty_maxsum();
    if (threadIdx.x < 32) {
        MaxSum lane = empty_maxsum();
        for (i64 r = threadIdx.x; r < world; r += 32) {
            PeerSlot* slot = slots + peer_slot_index(epoch, row, r, world, rows_capacity);
            while (load_acquire_system(&slot->epoch) != epoch) __nanosleep(64);
            lane = merge(lane, MaxSum{reinterpret_cast<volatile float*>(&slot->max)[0],
                                      reinterpret_cast<volatile float*>(&slot->sum)[0]});
        }
        row_total = warp_merge(lane);
    }
    __shared__ MaxSum shared_total;
    if (threadIdx.x == 0) shared_total = row_total;
    __syncthreads();

    WriteOut<T, LOG> write{src, kept, y + row * y_pitch, begin, held_end, RowOutput<LOG, T>(shared_total)};
    for_each_pack<T, P>(begin, end, write);

    // the grid's last CTA advances the epoch for the next call
    if (threadIdx.x == 0) {
        __threadfence();
        if (atomicAdd(&state->finished, 1u) == gridDim.x - 1) {
            state->finished = 0u;
            *reinterpret_cast<volatile unsigned long long*>(&state->completed) = epoch;
            __threadfence();
        }
    }
}

}  // namespace fastsoftmax
