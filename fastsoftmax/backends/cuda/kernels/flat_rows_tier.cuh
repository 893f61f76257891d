// Tier "flat_rows": short rows one after another in memory, most of them off 16-byte boundaries (a
// channels-last image softmaxed over its 21 channels: rows of 42 or 84 bytes; which rows "auto"
// gives it, aligned ones among them: tiers.choose_tier). The warp tier reads
// such rows an element a lane, a few dozen bytes an instruction. Here a CTA copies its rows -- one
// contiguous run of rows * n elements when the row pitch is n -- into shared memory in 16-byte
// pieces, single elements only at the run's two ends, computes there, and writes the run back the
// same way. A run keeps its offset from a 16-byte boundary in shared memory (`shift` elements), so
// that the device and shared addresses of every piece are aligned together. Rows with a longer
// pitch (slices) move element by element: correct, and no slower than the warp tier's single
// elements.
//
// In shared memory a group of G lanes (a power of two up to 32, chosen by the host from n) owns a
// row: lane l takes elements l, l + G, ... (at most K of them, held in registers between the
// passes), so a warp's lanes read consecutive addresses, and the group reduces by xor shuffles.
// Backward copies y and dy in and dx out. K = 4 spreads a row of 21 over 8 lanes; K = 32 gives a
// row to one lane (G = 1 up to 32 columns): no shuffles (see flat_stop for the slots past a row).
//
// G is a template parameter, one kernel per group size: slot k of a lane then lies a constant
// k * G elements past the lane's first, one shared-memory load with an immediate offset, where a
// group size known only at run time cost an address and a bounds computation per slot (H100, bf16
// rows of 21, Nsight Compute: 50 instructions an element, the issue slots 79% busy).
//
// Two forms of the slots (FlatSlots). The general one (K = 4 or 32) takes any row of up to K x G
// elements and tests every slot; the tight one (K = ceil(n / G), one kernel per (K, G): the host
// launches it for rows of up to instances.FLAT_ROWS_TIGHT_MAX_COLS) knows that slots 0 .. K - 2 lie
// in the row and tests only the last. Nsight Compute on the general form (H100, bf16 forward):
// rows of 9 over lanes of 32 ran 16 slots a lane, each with a test, a predicated load and a
// predicated store, 41 instructions an element with the issue slots 80% busy; rows of 72 and 100,
// 32-33. The tight form, in CUDA graphs alternated in one process: rows of 5-160 0.97-0.99 of copy
// against 0.88-0.98 (rows of 9: 0.99 against 0.88; 100: 0.99 against 0.93).
//
// A warp's groups take consecutive rows, or rows kWarps apart (FlatLanes' spread) where that puts
// their loads on fewer shared-memory banks (bf16 rows of 127 over groups of 4 lanes: 5 words a bank
// consecutive, 0.80 of copy; spread, 0.99).
#pragma once

#include "strided_staged.cuh"

namespace fastsoftmax {

constexpr int kFlatRowsThreads = 256;

// Lanes that hold many slots (K = 32) leave each loop at the first group of kFlatStopEvery slots
// wholly past their last element of the row: one compare a group, the rest of a group run as
// padding (H100, bf16 forward rows of 100 over 4 lanes 0.64 -> 0.91 of copy, of 37 over 2 lanes
// 0.83 -> 0.96; a compare at every slot lost rows of 21 and 63, 0.94 and 0.92 -> 0.89 and 0.87).
// Lanes of few slots (K = 4) run them all: leaving early split a group's lanes from each other
// (bf16 backward rows of 21 over 8 lanes of 4: 0.98 -> 0.83).
constexpr int kFlatStopEvery = 8;

template <int K>
__device__ __forceinline__ bool flat_stop(int k, int slots) {
    return K > kFlatStopEvery && k % kFlatStopEvery == 0 && k >= slots;
}

// Which of a lane's K slots hold elements of its row. The general form (TIGHT false) takes any
// row of at most K x G elements: a lane holds `slots` of them (0 for a row past the run), each
// slot tested, and lanes of many slots leave their loops at flat_stop. The tight form takes rows
// of (K - 1) x G + 1 to K x G elements (K = ceil(n / G), one kernel per K): slots 0 .. K - 2 of
// every lane lie in the row and only slot K - 1 is tested, so a row of 9 runs 9 slots with no
// test where the general form runs 16 with one each. A row past the run reads the run's last row
// (valid data) and writes nothing.
template <int K, int G, bool TIGHT>
struct FlatSlots {
    int slots;   // general: the lane's elements of its row
    bool last;   // tight: whether slot K - 1 lies in the row
    bool valid;  // tight: whether the row is one of the run's

    __device__ __forceinline__ FlatSlots(int lane, int n, int r, int count)
        : slots(r < count && lane < n ? (n - lane + G - 1) / G : 0),
          last(lane + (K - 1) * G < n),
          valid(r < count) {}
    // the run's row to read: a tight lane past the run reads the last one
    __device__ __forceinline__ static int read_row(int r, int count) { return TIGHT ? min(r, count - 1) : r; }
    __device__ __forceinline__ bool stop(int k) const { return !TIGHT && flat_stop<K>(k, slots); }
    __device__ __forceinline__ bool holds(int k) const { return TIGHT ? k < K - 1 || last : k < slots; }
    __device__ __forceinline__ bool writes(int k) const { return TIGHT ? valid && holds(k) : k < slots; }
    // whether an exponential's term must be tested: a tight lane's untaken slot holds -inf (term 0)
    __device__ __forceinline__ bool skips(int k) const { return !TIGHT && k >= slots; }
};

// A lane's elements of a row as floats, `pad` in the slots past the row that it runs.
template <int K, int G, bool TIGHT, typename T>
__device__ __forceinline__ void flat_lane_load(const T* row, int lane, const FlatSlots<K, G, TIGHT>& s, float* v,
                                               float pad) {
    const T* first = row + lane;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (s.stop(k)) break;
        v[k] = s.holds(k) ? to_float(first[k * G]) : pad;
    }
}

template <int K, int G, bool TIGHT, typename T>
__device__ __forceinline__ void flat_lane_store(T* row, int lane, const FlatSlots<K, G, TIGHT>& s, const float* v) {
    T* first = row + lane;
#pragma unroll
    for (int k = 0; k < K; ++k) {
        if (s.stop(k)) break;
        if (s.writes(k)) first[k * G] = from_float<T>(v[k]);
    }
}

// One tensor's rows [r0, r0 + rows) in shared memory: element c of row r at buf[shift + r * n + c].
template <typename T>
struct FlatRun {
    T* buf;
    int shift;
};

// Elements a tensor's region of shared memory takes: the run plus room for its shift, in whole
// 16-byte pieces (the host's flat_rows_smem_bytes matches it).
template <typename T>
__device__ __forceinline__ int flat_region(int rows, int n) {
    constexpr int E = 16 / (int)sizeof(T);
    return (rows * n + E + E - 1) / E * E;
}

template <typename T>
__device__ __forceinline__ FlatRun<T> flat_run(T* buf, const T* global, i64 pitch, i64 n) {
    const int shift = pitch == n ? (int)(((unsigned long long)global & 15) / sizeof(T)) : 0;
    return FlatRun<T>{buf, shift};
}

// Rows between device memory (`global`: the first row, `pitch` elements apart) and their run.
template <typename T, bool TO_SHARED>
__device__ __forceinline__ void flat_copy(T* global, i64 pitch, int rows, int n, const FlatRun<T>& run) {
    constexpr int E = 16 / (int)sizeof(T);
    const int count = rows * n;
    T* local = run.buf + run.shift;
    if (pitch != n) {
        for (int e = threadIdx.x; e < count; e += blockDim.x) {
            const int r = e / n;
            T* g = global + r * pitch + (e - r * n);
            if constexpr (TO_SHARED) {
                local[e] = *g;
            } else {
                *g = local[e];
            }
        }
        return;
    }
    const int head = min((E - run.shift) % E, count);
    const int pieces = (count - head) / E;
    const int tail = head + pieces * E;
    for (int e = threadIdx.x; e < head; e += blockDim.x) {
        if constexpr (TO_SHARED) {
            local[e] = global[e];
        } else {
            global[e] = local[e];
        }
    }
    for (int v = threadIdx.x; v < pieces; v += blockDim.x) {
        const int e = head + v * E;
        if constexpr (TO_SHARED) {
            copy_async<16>(local + e, global + e);
        } else {
            *reinterpret_cast<uint4*>(global + e) = *reinterpret_cast<const uint4*>(local + e);
        }
    }
    for (int e = tail + threadIdx.x; e < count; e += blockDim.x) {
        if constexpr (TO_SHARED) {
            local[e] = global[e];
        } else {
            global[e] = local[e];
        }
    }
}

// A thread's place in the row groups: groups of G lanes take one row each, kPerStep rows a step;
// rows have `cols` elements. A warp's 32 / G groups take consecutive rows, or with `spread` rows
// kWarps apart (group i of warp w: row i * kWarps + w of the step): a lane's first element then
// lies i * kWarps * cols elements from its warp's first instead of i * cols, which for pitches near
// a multiple of 128 bytes spreads the warp's loads over the banks (bf16 rows of 127 over groups of
// 4 lanes: 5 words a bank consecutive, 1 spread; instances.lanes_bank_ways). The host takes
// whichever meets fewer words a bank.
template <int G>
struct FlatLanes {
    static constexpr int kPerStep = kFlatRowsThreads / G;
    static constexpr int kWarps = kFlatRowsThreads / 32;
    int lane, cols, offset;
    __device__ __forceinline__ FlatLanes(i64 n, bool spread)
        : lane((int)(threadIdx.x % G)),
          cols((int)n),
          offset(spread ? (int)(threadIdx.x % 32) / G * kWarps + (int)threadIdx.x / 32 : (int)threadIdx.x / G) {}
    // the run's row this thread takes at the step starting with row `first`
    __device__ __forceinline__ int row(int first) const { return first + offset; }
};

// Softmax keeps a lane's terms exp(x - max) in its registers: the output is then term / sum, one
// multiply, instead of a second exponential (a lane holds K slots of a row of 16-64,
// padding included, so both exponentials ran on every slot). float32: exp2f, subnormal terms kept,
// the output as normalise gives it; 16-bit: the flushing ex2 lifted by 2^64 (terms down to 2^-190
// stay normal; the sum is lifted alike, so term / sum needs no correction), rounding at 2^-17 near
// the maximum as normalise's 16-bit form does. A row of -inf: terms 0, sum 0, outputs NaN; a +inf or
// NaN makes a NaN term and so a NaN sum.
template <typename T>
__device__ __forceinline__ float flat_kept_term(float v, float shift) {
    if constexpr (sizeof(T) == 4) {
        return fast_exp(v - shift);
    } else {
        return ex2_ftz(fmaf(v - shift, kLog2e, 64.0f));
    }
}

// 1 / sum for a softmax output: the hardware's approximate reciprocal (one MUFU.RCP, error within
// 2^-22) in the tight 16-bit form, whose rows are short enough that the full-precision division
// (a reciprocal, two FFMAs and a range test) is a visible share of a row's instructions; the
// rounding to a 16-bit output is 2^-9. float32 keeps the division.
template <typename T, bool TIGHT>
__device__ __forceinline__ float flat_inverse(float sum) {
    if constexpr (TIGHT && sizeof(T) == 2) {
        return __fdividef(1.0f, sum);
    } else {
        return 1.0f / sum;
    }
}

// The CTA's runs: rows_per_cta rows each, grid-stride over all rows.
#define FLAT_ROWS_FOR_EACH_RUN(rows, rows_per_cta)                                           \
    for (i64 r0 = (i64)blockIdx.x * rows_per_cta; r0 < rows; r0 += (i64)gridDim.x * rows_per_cta)

template <typename T, bool LOG, int K, int G, bool TIGHT>
__device__ __forceinline__ void flat_rows_forward(const T* x, T* y, i64 rows, i64 n, i64 x_pitch, i64 y_pitch,
                                                  i64 rows_per_cta, bool spread) {
    extern __shared__ __align__(16) unsigned char flat_smem[];
    const int region = flat_region<T>((int)rows_per_cta, (int)n);
    T* xs = reinterpret_cast<T*>(flat_smem);
    T* ys = xs + region;
    const FlatLanes<G> L(n, spread);
    FLAT_ROWS_FOR_EACH_RUN(rows, rows_per_cta) {
        const int count = (int)min(rows_per_cta, rows - r0);
        const T* xg = x + r0 * x_pitch;
        T* yg = y + r0 * y_pitch;
        const FlatRun<T> xr = flat_run(xs, xg, x_pitch, n);
        const FlatRun<T> yr = flat_run(ys, yg, y_pitch, n);
        __syncthreads();  // the previous run is written out
        flat_copy<T, true>(const_cast<T*>(xg), x_pitch, count, L.cols, xr);
        copy_async_wait();
        __syncthreads();
        // every lane runs every step (the shuffles need whole warps); lanes past the run idle
        for (int first = 0; first < count; first += L.kPerStep) {
            const int r = L.row(first);
            const FlatSlots<K, G, TIGHT> slots(L.lane, L.cols, r, count);
            const int rr = slots.read_row(r, count);
            float v[K];
            flat_lane_load(xr.buf + xr.shift + rr * L.cols, L.lane, slots, v, neg_inf());
            float m = neg_inf();
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (slots.stop(k)) break;
                m = fmaxf(m, v[k]);
            }
            m = group_max<G>(m);
            // a row of -inf: subtract 0, so that the sum is 0 and the outputs NaN, as torch gives
            const float shift = m == neg_inf() ? 0.0f : m;
            float s = 0.0f;
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (slots.stop(k)) break;
                if (slots.skips(k)) continue;
                if constexpr (LOG) {
                    s += sum_exp(v[k] - shift);
                } else {
                    v[k] = flat_kept_term<T>(v[k], shift);
                    s += v[k];
                }
            }
            s = group_sum<G>(s);
            if constexpr (LOG) {
                const RowScale scale = row_scale(MaxSum{m, s});
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    if (slots.stop(k)) break;
                    v[k] = normalise<LOG, T>(v[k], scale);
                }
            } else {
                const float inv = flat_inverse<T, TIGHT>(s);
#pragma unroll
                for (int k = 0; k < K; ++k) {
                    if (slots.stop(k)) break;
                    v[k] *= inv;
                }
            }
            flat_lane_store(yr.buf + yr.shift + r * L.cols, L.lane, slots, v);
        }
        __syncthreads();
        flat_copy<T, false>(yg, y_pitch, count, L.cols, yr);
    }
}

template <typename T, bool LOG, int K, int G, bool TIGHT>
__device__ __forceinline__ void flat_rows_backward(const T* y, const T* dy, T* dx, i64 rows, i64 n, i64 y_pitch,
                                                   i64 dy_pitch, i64 dx_pitch, i64 rows_per_cta,
                                                   bool spread) {
    extern __shared__ __align__(16) unsigned char flat_smem[];
    const int region = flat_region<T>((int)rows_per_cta, (int)n);
    T* ys = reinterpret_cast<T*>(flat_smem);
    T* dys = ys + region;
    T* dxs = dys + region;
    const FlatLanes<G> L(n, spread);
    FLAT_ROWS_FOR_EACH_RUN(rows, rows_per_cta) {
        const int count = (int)min(rows_per_cta, rows - r0);
        const T* yg = y + r0 * y_pitch;
        const T* dyg = dy + r0 * dy_pitch;
        T* dxg = dx + r0 * dx_pitch;
        const FlatRun<T> yr = flat_run(ys, yg, y_pitch, n);
        const FlatRun<T> dyr = flat_run(dys, dyg, dy_pitch, n);
        const FlatRun<T> dxr = flat_run(dxs, dxg, dx_pitch, n);
        __syncthreads();
        flat_copy<T, true>(const_cast<T*>(yg), y_pitch, count, L.cols, yr);
        flat_copy<T, true>(const_cast<T*>(dyg), dy_pitch, count, L.cols, dyr);
        copy_async_wait();
        __syncthreads();
        for (int first = 0; first < count; first += L.kPerStep) {
            const int r = L.row(first);
            const FlatSlots<K, G, TIGHT> slots(L.lane, L.cols, r, count);
            const int rr = slots.read_row(r, count);
            float yv[K], dyv[K];
            flat_lane_load(yr.buf + yr.shift + rr * L.cols, L.lane, slots, yv, 0.0f);
            flat_lane_load(dyr.buf + dyr.shift + rr * L.cols, L.lane, slots, dyv, 0.0f);
            float total = 0.0f;
#pragma unroll
            for (int k = 0; k < K; ++k) {  // padding slots add 0 * 0
                if (slots.stop(k)) break;
                total += backward_term<LOG>(yv[k], dyv[k]);
            }
            total = group_sum<G>(total);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                if (slots.stop(k)) break;
                yv[k] = input_grad<LOG>(yv[k], dyv[k], total);
            }
            flat_lane_store(dxr.buf + dxr.shift + r * L.cols, L.lane, slots, yv);
        }
        __syncthreads();
        flat_copy<T, false>(dxg, dx_pitch, count, L.cols, dxr);
    }
}

#undef FLAT_ROWS_FOR_EACH_RUN

}  // namespace fastsoftmax
