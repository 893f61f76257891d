"""Names and source text of every compiled kernel instance.

The production tiers are C++ templates in ``kernels/*.cuh``. Each instance the backend can launch
gets an ``extern "C"`` wrapper with a readable, stable name (no C++ name mangling), so a compiled
CUBIN can be cached on disk and its kernels found by name. This module is pure Python: it decides
which instances exist and writes their wrappers; ``compiler.py`` compiles them and ``backend.py``
launches them. ``all_instances()`` lists the whole space, which CI compiles for sm_80 and sm_90.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from fractions import Fraction

import torch

#: storage type name in the kernels, short tag used in kernel names, bytes per element
CXX_TYPES = {
    torch.float32: ("float", "f32", 4),
    torch.float16: ("__half", "f16", 2),
    torch.bfloat16: ("__nv_bfloat16", "bf16", 2),
}
DTYPES = tuple(CXX_TYPES)

#: the widest pack is 16 bytes; narrower packs serve pointers or row pitches aligned to less
PACK_SIZES = {torch.float32: (4, 2, 1), torch.float16: (8, 4, 2, 1), torch.bfloat16: (8, 4, 2, 1)}
#: the warp tier is instantiated per row length as well, so it skips the middle sizes to keep the
#: number of instances (and CI's compile time) down: 16-bit rows aligned to 8 bytes use pairs
WARP_PACK_SIZES = {torch.float32: (4, 1), torch.float16: (8, 2, 1), torch.bfloat16: (8, 2, 1)}
#: window instances of the warp and block_regs tiers (Instance.window) move 16-byte packs, whatever
#: the rows' alignment: rows off pack boundaries are held in the packs of the aligned window around
#: them (warp_tier.cuh)
WINDOW_PACK = {torch.float32: 4, torch.float16: 8, torch.bfloat16: 8}

# ---- tier "warp" --------------------------------------------------------------------------------
WARP_TIER_MAX_COLS = 1024
WARP_TIER_BLOCK = 128
#: columns a lane of the 16-bit forward's long rows (tiers.warp_takes_long_rows): rows of WARP_TIER_MAX_COLS
#: + 1 up to WARP_LONG_MAX_COLS on 16-byte boundaries over a whole warp, one row a group, as Quack's row
#: kernel holds rows of up to 3072 over a warp (128 registers, 22% occupancy, 0.99 of copy on an H100
#: at 44739 x 3000 bf16, where block_regs reaches 0.97). Under NVRTC 13.0 for sm_90 the bf16 forward
#: of 96 columns a lane takes 111 registers and no frame (64: 78; in a window, Instance.window, 128 and
#: 90); the backward (215 at 96) is not built
WARP_LONG_COLS_16BIT = (40, 48, 64, 80, 96)
WARP_LONG_MAX_COLS = 32 * WARP_LONG_COLS_16BIT[-1]


def warp_has_long_rows(itemsize: int, backward: bool) -> bool:
    """Whether the warp tier has long-row instances (WARP_LONG_COLS_16BIT) for these rows: the 16-bit
    forward's."""
    return itemsize == 2 and not backward


def warp_long_row(n: int, itemsize: int, backward: bool) -> bool:
    """Whether a row of n, where the warp tier holds it, is one of its long rows (WARP_LONG_COLS_16BIT:
    past WARP_TIER_MAX_COLS, the 16-bit forward's only)."""
    return n > WARP_TIER_MAX_COLS and warp_has_long_rows(itemsize, backward)


#: flat_rows (flat_rows_tier.cuh): threads a CTA, and the shared memory a CTA's runs take (four CTAs
#: an SM on an H100, whose copies and arithmetic then overlap)
FLAT_ROWS_THREADS = 256
#: elements of a row a lane holds (the kernel's K), one instance each (tiers.Tuning.flat_rows_per_lane
#: chooses one); a row takes at most a warp's 32 lanes, so the longest row the tier holds is 32 x 32
FLAT_ROWS_LANE_ELEMS = (4, 32)
FLAT_ROWS_MAX_COLS = 32 * max(FLAT_ROWS_LANE_ELEMS)
#: lanes a row, one kernel each (the kernel's G): a power of two up to a warp
FLAT_ROWS_GROUPS = (1, 2, 4, 8, 16, 32)
#: "auto" takes flat_rows for rows of FLAT_ROWS_MIN_COLS (16-bit forward: FLAT_ROWS_MIN_COLS_16BIT_FORWARD)
#: to FLAT_ROWS_AUTO_MAX_COLS (16-bit: FLAT_ROWS_AUTO_MAX_COLS_16BIT; float32 forward:
#: FLAT_ROWS_AUTO_MAX_COLS_FP32_FORWARD) that tiers.takes_flat_rows gives it (by alignment and
#: shared-memory banks; its docstring holds the twelfth set's measurements of the tight form), and
#: the warp tier for the rest. The ninth set's general form:
#: H100, the kernels of a group size fixed at compile time against the warp tier, alternated in one
#: process (benchmarks/grid_row_probe.py, results 2026-11-24_h100_s9): bf16 forward rows of 3-63
#: 0.81-0.97 of copy against 0.30-0.88 (rows of 21: 0.96 against 0.37; 37: 0.96 against 0.63), rows
#: of 65-160 0.91-0.99 against 0.63-0.88 (150: 0.94 against 0.75) but for rows of 127 (0.78 against
#: 0.87); bf16 backward rows of 2-127 0.95-1.00 against 0.45-0.97; float32 rows of 2-63 level or
#: ahead in both directions (rows of 9: 0.96 against 0.54 forward), level past 64. Rows of one
#: element, and the 16-bit forward of rows of two, measured faster on the warp tier (bf16 0.55 and
#: 0.79 against 0.45 and 0.77, log-softmax 0.79 against 0.70 at two; the backward of two 0.99
#: against 0.91 on flat_rows); past 160 the warp tier wins (bf16 rows of 200 and 255 forward 0.95
#: and 0.92 against 0.91 and 0.86; backward of 136-255 0.92-1.01 against 0.74-0.97). Before the
#: group size was a template parameter, flat_rows lost to the warp tier's sector groups on 16-bit
#: rows of 33-112 and under 16 columns.
FLAT_ROWS_MIN_COLS = 2
FLAT_ROWS_MIN_COLS_16BIT_FORWARD = 3
FLAT_ROWS_AUTO_MAX_COLS = 64
FLAT_ROWS_AUTO_MAX_COLS_16BIT = {False: 256, True: 184}
#: 16-bit forward rows on 16-byte boundaries past this keep the warp tier (tiers.takes_flat_rows)
FLAT_ROWS_AUTO_MAX_COLS_16BIT_ALIGNED_FORWARD = 208
#: float32 forward rows of 65-96 (any alignment) take flat_rows too: tiers.takes_flat_rows
FLAT_ROWS_AUTO_MAX_COLS_FP32_FORWARD = 96
FLAT_ROWS_SMEM_BUDGET = 48 * 1024


def flat_rows_per_lane(backward: bool, n: int, dtype: torch.dtype) -> int:
    """The elements a lane holds that "auto" takes: lanes of 32 (a row a lane up to 32 columns) for
    forward rows past 8, for rows past the 128 columns 32 lanes of 4 hold, and for the 16-bit
    backward where its lanes fall on at most two words a bank; lanes of 4 for the rest.
    H100, forward, the general form alternated in one process (benchmarks/grid_row_probe.py,
    results 2026-11-24_h100_s9): bf16 rows of 9-63 0.84-0.96 of copy on lanes of 32 against
    0.63-0.90 on lanes of 4, rows of 5 and 8 0.81 and 0.75 against 0.85 and 0.96. Backward, the
    tight form in CUDA graphs (benchmarks/row_tier_ab.py, results 2026-11-24_h100_s12): bf16 rows of
    37 and 74 1.01 on lanes of 32 against 0.97, rows of 3-100 1.00-1.01 against 0.97-1.00, but rows
    of 63 (three words a bank) 0.99 against 1.00 and of 127 (five) 0.78 against 1.00; float32 level."""
    if n > 32 * 4 or (not backward and n > 8):
        return 32
    if backward and CXX_TYPES[dtype][2] == 2 and least_bank_ways(n, dtype, 32) <= 2:
        return 32
    return 4


def flat_rows_group(n: int, per_lane: int) -> int:
    """Lanes a row of n takes in flat_rows with lanes of ``per_lane`` slots (the kernels' G)."""
    return next_pow2(-(-n // per_lane))


@functools.cache
def lanes_bank_ways(n: int, dtype: torch.dtype, per_lane: int, spread: bool = False) -> int:
    """The most words of one shared-memory bank a warp of flat_rows reads at once with lanes of
    ``per_lane`` slots: the first elements of its 32 / G groups' rows, consecutive rows or (spread)
    rows FLAT_ROWS_THREADS / 32 apart (flat_rows_tier.cuh's FlatLanes)."""
    itemsize = CXX_TYPES[dtype][2]
    group = flat_rows_group(n, per_lane)
    stride = FLAT_ROWS_THREADS // 32 if spread else 1
    words: dict = {}
    for row in range(32 // group):
        for lane in range(min(group, n)):
            word = (row * stride * n + lane) * itemsize // 4
            words.setdefault(word % 32, set()).add(word)
    return max(len(bank) for bank in words.values())


def flat_rows_spread(n: int, dtype: torch.dtype, per_lane: int) -> bool:
    """Whether a warp's groups take rows apart (FlatLanes' spread): where that meets fewer words a bank."""
    return lanes_bank_ways(n, dtype, per_lane, True) < lanes_bank_ways(n, dtype, per_lane)


def flat_rows_shape(n: int, dtype: torch.dtype, backward: bool, per_lane: int | None = None) -> tuple[int, int, int]:
    """(rows a CTA's run holds, lanes a row, shared memory bytes) of a flat_rows launch: a lane
    holds at most ``per_lane`` elements of a row (default: flat_rows_per_lane); a run fills the budget
    in whole steps of the CTA's groups."""
    if n > FLAT_ROWS_MAX_COLS:
        raise ValueError(f"tier 'flat_rows' holds rows of at most {FLAT_ROWS_MAX_COLS} columns, not {n}")
    per_lane = per_lane or flat_rows_per_lane(backward, n, dtype)
    if per_lane not in FLAT_ROWS_LANE_ELEMS:
        raise ValueError(f"tier 'flat_rows': a lane holds one of {FLAT_ROWS_LANE_ELEMS} elements, not {per_lane}")
    if n > 32 * per_lane:
        raise ValueError(f"tier 'flat_rows': 32 lanes of {per_lane} elements hold rows of at most {32 * per_lane}")
    itemsize = CXX_TYPES[dtype][2]
    group = flat_rows_group(n, per_lane)
    per_step = FLAT_ROWS_THREADS // group
    tensors = 3 if backward else 2
    rows = FLAT_ROWS_SMEM_BUDGET // (tensors * n * itemsize) // per_step * per_step
    rows = max(per_step, rows)
    piece = 16 // itemsize
    region = -(-(rows * n + piece) // piece) * piece  # room for the run's shift (flat_region)
    return rows, group, tensors * region * itemsize


#: flat_rows' forward holds rows of up to this many columns in its tight form (flat_rows_tier.cuh's
#: FlatSlots: K = ceil(n / G) slots a lane, one kernel per (K, G), only the last slot tested), every
#: row "auto" gives the tier; longer rows (a forced tier) take the general form. H100, bf16 forward,
#: Nsight Compute on the general form (results 2026-11-24_h100_s12): 41 instructions an element on
#: rows of 9 (16 slots a lane, each tested, for 9 elements), 32-33 on rows of 72 and 100, the issue
#: slots 75-80% busy: bound by its instructions.
FLAT_ROWS_TIGHT_MAX_COLS = 256


def flat_rows_tight_slots(n: int, group: int) -> int:
    """The tight form's slots a lane (its K) for rows of n over groups of ``group`` lanes."""
    return -(-n // group)


@functools.cache
def flat_rows_tight_shapes() -> tuple[tuple[int, int], ...]:
    """(K, G) of every tight kernel: the shapes of rows up to FLAT_ROWS_TIGHT_MAX_COLS at either
    lane size."""
    shapes = set()
    for per_lane in FLAT_ROWS_LANE_ELEMS:
        for n in range(1, min(FLAT_ROWS_TIGHT_MAX_COLS, 32 * per_lane) + 1):
            group = flat_rows_group(n, per_lane)
            shapes.add((flat_rows_tight_slots(n, group), group))
    return tuple(sorted(shapes, key=lambda s: (s[1], s[0])))


#: "auto" takes flat_rows only where a warp's first access to its rows in shared memory reads at most
#: this many words of one bank: rows whose pitch lies near a multiple of 128 bytes put their lanes on
#: few banks (H100, bf16 forward rows of 127, 5 words a bank: 0.78 of copy against the warp tier's
#: 0.87; rows of 32 and 64, 16: 0.32 against 0.94-0.97; results 2026-11-24_h100_s9)
FLAT_ROWS_MAX_BANK_WAYS = 4
#: the same for the 16-bit forward's tight form on rows on 16-byte boundaries (tiers.takes_flat_rows)
FLAT_ROWS_TIGHT_MAX_BANK_WAYS = 3


def least_bank_ways(n: int, dtype: torch.dtype, per_lane: int) -> int:
    """lanes_bank_ways with a warp's rows consecutive or spread, whichever is fewer."""
    return min(lanes_bank_ways(n, dtype, per_lane, spread) for spread in (False, True))


@functools.cache
def flat_rows_bank_ways(n: int, dtype: torch.dtype, backward: bool) -> int:
    """least_bank_ways at the lane size "auto" takes (flat_rows_per_lane)."""
    return least_bank_ways(n, dtype, flat_rows_per_lane(backward, n, dtype))


#: columns per thread for full-warp rows: every count up to 8, then coarser steps, so that a row is
#: padded by at most ~25% (padding costs registers and exp() calls, never memory traffic)
WARP_COLS_PER_THREAD = (1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 28, 32)
NARROW_GROUPS = (1, 2, 4, 8, 16)
#: rows a group holds at once (the kernel's ROWS) that a tuning may ask for (Tuning.warp_rows), on
#: rows on 16-byte boundaries in 16-byte packs of at most WARP_MULTI_ROW_MAX_COLS columns a lane: more
#: independent loads a thread in flight where a row gives it one or two packs
WARP_ROWS = (1, 2, 4)
WARP_MULTI_ROW_MAX_COLS = 16
#: By default a group holds one row, but for float32 forward rows of one 16-byte pack a lane over a
#: whole warp (65-128 columns), which hold two. H200, every count forced and alternated in one
#: process (benchmarks/grid_row_probe.py, results 2026-12-02_h200_s46/warp_rows_*.txt), rows of 2^27
#: elements, behind an L2 flush: one row a group against two (the earlier default of groups narrower
#: than a warp) bf16 forward rows of 8 0.993 of copy against 0.742, 32 0.984 against 0.893, 64 0.977
#: against 0.936, 96 0.821 against 0.794, but 128 0.971 against 0.980; backward 8-64 and 128
#: 1.022-1.027 against 0.857-0.952, 96 0.941 against 0.737; float32 1.016-1.020 against 0.999-1.018
#: forward, 1.040-1.045 against 1.012-1.042 backward; four rows behind everywhere (by 0.01-0.35).
#: float32 forward rows of 96 0.926 with one, 1.014 with two (at 128 level, 1.010); 16-bit rows of
#: 160-512 over a whole warp keep one (two: bf16 forward 0.953 against 0.964 at 256, backward 0.918
#: against 1.023).
WARP_TWO_ROWS_FLOAT32_FORWARD = True
#: lanes a row of 16-bit rows in 16-byte packs (a lane holding up to WARP_LANES_MAX_COLS columns), as
#: a tuning asks (Tuning.warp_lanes) or by default (warp_default_lanes): a row of 256 in two packs a
#: lane over half a warp, say, rather than one pack a lane over a whole warp
WARP_LANES_16BIT = (4, 8, 16, 32)
#: By default 16-bit rows in 16-byte packs of more than WARP_LANES_AFTER_PACKS[backward] packs take
#: the fewest lanes of WARP_DEFAULT_LANES_16BIT[backward] that hold them in at most
#: WARP_LANES_PACKS_A_LANE packs a lane. Forward: rows of 33-96 columns 4 lanes, 97-192 8, 193-384 16,
#: 385-768 a whole warp (as before); backward, which has two tensors' loads in flight: rows of 65-192
#: columns 8 lanes, then as forward. Each lane then has two or three independent 16-byte loads in
#: flight, and fewer lanes idle on rows that do not fill a warp.
#: H200, each count forced and alternated in one process behind an L2 flush (benchmarks/
#: grid_row_probe.py, results 2026-12-03_h200_s47/warp_lanes.txt), rows of 2^27 elements, bf16 (fp16
#: alike), forward then backward, against a whole warp: 160 0.990 over 8 lanes against 0.697 (1.018
#: against 0.878), 200 0.934 over 16 against 0.824 (0.974 against 0.937), 256 0.996 over 16 against
#: 0.960 (1.037 against 1.027), 384 0.989 over 16 against 0.955 (1.037 against 0.978); at 512 a whole
#: warp of two packs a lane 0.992 against 16 lanes of four 0.975 (backward level). Rows of 256 over 8
#: lanes (four packs a lane) 0.974. Narrower rows (call2/rows_probe.txt, call6/lanes4_probe.txt),
#: forward against one pack a lane over a narrow group: 48 0.951 over 4 lanes against 0.831, 56 0.942
#: against 0.899, 64 0.990 against 0.977, 96 0.976 against 0.821 (0.923 over 8), 128 0.984 over 8
#: against 0.972 (0.959 over 4); backward over 4 lanes 1.003-1.007 against 1.022-1.023 at 64 and 128,
#: over 8 lanes 0.968 and 1.023 against 0.939 and 1.022 at 96 and 128.
WARP_LANES_AFTER_PACKS = {False: 4, True: 8}
WARP_DEFAULT_LANES_16BIT = {False: WARP_LANES_16BIT, True: tuple(lanes for lanes in WARP_LANES_16BIT if lanes >= 8)}
WARP_LANES_PACKS_A_LANE = 3
WARP_LANES_MAX_COLS = 32
#: 16-bit rows in packs of 1 or 2 elements (rows off 16-byte boundaries) past a group's first
#: access: groups of as few lanes as still read a whole 32-byte sector of a row an access (16 lanes
#: of one element, 8 of pairs), each lane holding one of these counts, instead of a whole warp of
#: few elements a lane: the tier is bound by its instructions there, and a group's shuffles and
#: per-row work are paid once per 32 / group rows
SECTOR_GROUPS_16BIT = {1: 16, 2: 8}
SECTOR_GROUP_COLS = (2, 4, 8, 12, 16)
#: the longest rows sector groups take, by pack: H100, bf16, forced and timed in turn
#: (benchmarks/flat_rows_probe.py): rows of 37 (single elements) 0.32 -> 0.62 of copy forward, 0.48 ->
#: 0.88 backward; of 60 and 100 (pairs) 0.51 -> 0.91 and 0.69 -> 0.84 forward; but rows of 127, 255
#: and 501 in single elements lost 0.06-0.22 (0.88 -> 0.75 forward at 127); pairs past 128 gained
#: little (150: 0.76 -> 0.79 forward, backward 0.94 -> 0.92) and lost at 254 (0.98 -> 0.71)
SECTOR_GROUP_MAX_COLS = {1: 64, 2: 128}

# ---- tier "block_regs" --------------------------------------------------------------------------
BLOCK_REGS_MAX_THREADS = 1024
#: the packs of the warp tier: one instance per (pack, elements per thread)
BLOCK_REGS_PACK_SIZES = {torch.float32: (4, 1), torch.float16: (8, 2, 1), torch.bfloat16: (8, 2, 1)}


#: where the longest forward 16-bit rows (64 elements a thread) may live: "staged" in shared memory
#: (the default, tiers.Tuning.long_row_storage_16bit), or "raw" in registers (see block_regs_tier.cuh)
LONG_ROW_STORAGES_16BIT = ("staged", "raw")
#: where forward 16-bit rows of fewer elements a thread may live: as float32, or as for the long
#: rows (tiers.Tuning.short_row_storage_16bit; "staged" for 16-byte packs only)
SHORT_ROW_STORAGES_16BIT = ("float", "raw", "staged")


#: where forward 16-bit block_regs rows of 8-32 elements a thread live unless tuned
#: (tiers.Tuning.short_row_storage_16bit): raw, on every GPU. Both forms hold 64 registers a thread at 32 elements, so
#: residency does not tell them apart; the code does: the float32 form converts a pack where it loads it, and in its
#: SASS the first pack's conversion (PRMT for bfloat16) waits on that load before the next packs' loads issue, where the
#: raw form issues every load before using any (as warp_tier.cuh's loads do). Requesting every pack before converting
#: any in the float32 form spills at 32 elements (112 bytes of stack, sm_90). Both alternated in one process behind an
#: L2 flush (benchmarks/grid_row_probe.py), fraction of copy, raw against float32. H200, bf16, 2^27 elements (results
#: 2026-12-02_h200_s41/short_storage.txt): rows of 2048 1.003 against 0.938, 3000 0.958 against 0.871, 4096 0.994
#: against 0.919, 8192 0.968 against 0.886, 2500 in their window 0.792 against 0.752 (log-softmax 0.97-0.98 against
#: 0.68-0.76; staged in shared memory 0.74-0.90). H100 (results 2026-12-06_h100_s78/w1/raw.txt, c3/raw2.txt): softmax
#: level to ahead on rows on their boundaries (bf16 2048 0.993 against 0.998 the one loss, 4096 0.992 against 0.992,
#: 8192 0.991 against 0.982; float16 0.990-0.992 against 0.979-0.992), log-softmax level to 0.13 ahead (bf16 2048 0.990
#: against 0.932, 3072 0.990 against 0.887, 8192 0.992 against 0.859; float16 2048 0.992 against 0.993), rows of
#: 1535-8191 in their window ahead by up to 0.15 (3001 0.985 against 0.930, 2559 0.974 against 0.870, 5001 0.992 against
#: 0.939, 8191 0.939 against 0.798; 8192 x 1535 level), 130047 x 1031 behind in bf16 softmax (0.815 against 0.828),
#: views one element into rows of 2048 behind (0.509 against 0.523, log-softmax 0.435 against 0.538) where those of 4096
#: lead (0.487 against 0.360); 256-1024 rows within 0.015 either way in softmax, ahead in log-softmax (1024 x 2048 0.384
#: against 0.343).
SHORT_ROW_STORAGE_16BIT = "raw"


#: kernel template values of the block_regs storages
BLOCK_REGS_STORAGES = {"float": "kFloat", "raw": "kRaw", "staged": "kStaged"}
#: staged instances: blocks per SM the compiler must leave registers for (three 64 KiB rows share
#: an SM's shared memory), fewer where the SM's threads do not hold three
BLOCK_REGS_STAGED_BLOCKS_PER_SM = 3
#: resident threads an SM holds (sm_80 and sm_90)
MAX_THREADS_PER_SM = 2048


def block_regs_elems(dtype: torch.dtype, pack: int, backward: bool) -> tuple[int, ...]:
    """Elements per thread the block_regs tier is compiled for. float32 rows are held as float32;
    16-bit rows as float32 up to 32 a thread forward and at 64 (16-byte packs only) raw or staged,
    and raw at every size backward (see block_regs_tier.cuh)."""
    if CXX_TYPES[dtype][2] == 2 and not backward and pack == 8:
        return (8, 16, 32, 64)
    return (8, 16, 32)


def block_regs_storage(
    dtype: torch.dtype,
    backward: bool,
    elems: int,
    long_row_16bit: str = "staged",
    short_row_16bit: str = SHORT_ROW_STORAGE_16BIT,
) -> str:
    """Where block_regs keeps a thread's share of the row: "float" (registers, as float32), "raw"
    (registers, as the loaded 16-bit packs) or "staged" (shared memory, as the loaded packs).
    ``long_row_16bit`` is the choice for forward 16-bit rows of 64 elements a thread (one of
    LONG_ROW_STORAGES_16BIT), ``short_row_16bit`` for fewer (one of SHORT_ROW_STORAGES_16BIT);
    every other case has one storage."""
    if long_row_16bit not in LONG_ROW_STORAGES_16BIT:
        raise ValueError(f"long-row storage {long_row_16bit!r} is not one of {LONG_ROW_STORAGES_16BIT}")
    if short_row_16bit not in SHORT_ROW_STORAGES_16BIT:
        raise ValueError(f"short-row storage {short_row_16bit!r} is not one of {SHORT_ROW_STORAGES_16BIT}")
    if CXX_TYPES[dtype][2] != 2:
        return "float"
    if backward:
        return "raw"
    return long_row_16bit if elems == 64 else short_row_16bit


def block_regs_max_threads(backward: bool, elems: int) -> int:
    """Threads an instance launches with at most: 512 where a thread's share of the row (64 raw
    elements forward; 32 of y and of dy backward) needs more than the 64 registers a thread of a
    1024-thread block may have, or (staged) where three 512-thread blocks share an SM."""
    return BLOCK_REGS_MAX_THREADS // 2 if elems == (32 if backward else 64) else BLOCK_REGS_MAX_THREADS


def block_regs_max_registers(
    backward: bool, elems: int, window: bool, dtype: torch.dtype, storage: str, pack: int
) -> int:
    """A register cap for the block_regs instances whose launches sit just past an occupancy step, 0
    for none. 16-bit backward in 16-byte packs at 16 elements a thread: rows of 8185-8192 columns
    held in their window take 544 threads, and two such blocks share an SM only at 56 registers or
    fewer (at 57-64, one: bf16 8193 x 8191 0.71 -> 0.53 of copy on an H200; aligned rows measured
    level or faster under the cap). 16-bit forward rows held raw in their window at 16 elements a
    thread: 160-thread blocks over rows of 2048-2560 columns, ten to an SM at 40. Not the narrow-pack
    instances (rows off 16-byte boundaries held out of a window), which spill under such a cap."""
    if elems != 16 or CXX_TYPES[dtype][2] != 2 or pack * CXX_TYPES[dtype][2] != 16:
        return 0
    if backward:
        return 56
    return 40 if window and storage == "raw" else 0


def kernel_bound(registers: int, bounds) -> str:
    """A kernel's register cap (``__maxnreg__``) where it has one, else its launch bound (``bounds``:
    the maximum threads, or "threads, blocks"): the two cannot be combined."""
    return f"__maxnreg__({registers})" if registers else f"__launch_bounds__({bounds})"


def block_regs_staged_bytes(dtype: torch.dtype, elems: int, threads: int) -> int:
    """Dynamic shared memory of a staged block_regs launch: every thread's packs."""
    return elems * threads * CXX_TYPES[dtype][2]


# ---- tiers "block_smem" / "block_uncached" ------------------------------------------------------
BLOCK_TIER_MAX_THREADS = 1024
BLOCK_SIZES = (128, 256, 512, 1024)

# ---- tier "split_row" ---------------------------------------------------------------------------
SPLIT_ROW_BLOCK = 512
#: chunks start at multiples of this many elements, so each keeps the row's alignment
SPLIT_ROW_ALIGN = 16

# ---- tier "cluster" (sm_90+) --------------------------------------------------------------------
#: the first architecture with thread-block clusters and distributed shared memory
CLUSTER_MIN_SM = 90
#: CTAs per cluster: up to 8 on every sm_90 part, 16 with the non-portable opt-in
CLUSTER_SIZES = (1, 2, 4, 8, 16)
CLUSTER_PORTABLE_MAX = 8
#: the most threads a cluster CTA launches with (the exchange has room for 16 warps:
#: kClusterMaxWarps in cluster_tier.cuh), and the launch bound of most instances
CLUSTER_MAX_THREADS = 512
#: 16-byte packs a thread holds in registers (K), one compiled instance each; the thread count is
#: chosen at launch (any multiple of 32), so that K x threads covers the CTA's slots
CLUSTER_HELD_PACKS = (2, 4, 8, 16)
#: backward holds y and dy: at K = 16 its 128 registers of slots spill
CLUSTER_HELD_PACKS_BACKWARD = (2, 4, 8)
#: threads the smaller K aim for at most before K doubles (Quack's 256, with room for the slots a
#: misaligned row adds)
CLUSTER_TARGET_THREADS = 288
#: bytes of each tensor per CTA before the cluster doubles, in every type and direction:
#: Quack's 16K 16-bit elements (bf16 1024 x 128256 0.94 of copy with C = 8 against 0.78 with 4), and
#: the same bytes, 8K elements, for float32 forward, with 32 elements a thread (see
#: CLUSTER_HELD_ELEMS_BEFORE_THREADS): H100, 2670 x 50257 1.00 of copy (C = 8) against 0.97 with
#: C = 16 and 0.99 with the earlier 64 KiB (C = 4, K = 16); 100 x 40000 15.9 us against 18.8 and 21.2
CLUSTER_BYTES_PER_CTA = 32 * 1024
#: shared memory kept out of the dynamic part a cluster launch opts into: the kernel's static
#: exchange buffers and the driver's reserve
CLUSTER_STATIC_SMEM = 8 * 1024
#: dynamic shared memory one CTA may opt into on sm_90 (227 KiB), less the kernel's static part
CLUSTER_MAX_DYNAMIC_SMEM = 227 * 1024 - CLUSTER_STATIC_SMEM


def cluster_max_threads(backward: bool, packs: int) -> int:
    """The launch bound of a cluster instance."""
    return CLUSTER_MAX_THREADS


#: kept exponentials (cluster_tier.cuh, KEEP): 16-bit softmax forward holding at most this many
#: elements a thread (at 64 the float32 terms spill within 96 registers). Not float32 outputs: the
#: terms' exponent, lifted by 64 against the flush, rounds at 2^-17 (5e-6 relative), above float32's
#: error bar and far below half a unit of a 16-bit float.
CLUSTER_KEPT_MAX_HELD = 32
#: registers a cluster thread may use, by (bytes per element, backward, held elements), where the
#: compiler's own choice lets fewer CTAs share an SM than the launches need (the kept form has none:
#: NVRTC 13 gives it 47-64). The forward's straight-line walks over whole slots (cluster_tier.cuh)
#: let the compiler hoist more of a row's work ahead, and took more registers than the branchy walks
#: before them (16-bit, 16 elements: 61 against 32; 32: 62 against 52, log-softmax 85 against 64 at
#: 64; float32, 16 elements: 53 against 39): the caps keep the earlier counts, or the nearest above
#: them that NVRTC 13 compiles without spilling (16-bit 16 elements spills at 40 and 32, float32 16
#: elements at 40). Float32 at 64 elements took 124-127 registers (in the branchy walks: three CTAs
#: of 160 threads an SM, so 32 x 151936 ran in two waves, at 96 four fit; that launch has since
#: taken 32 elements a thread); 104 now, the least without a spill.
CLUSTER_MAX_REGISTERS = {
    (2, False, 16): 36,
    (2, False, 32): 52,
    (2, False, 64): 64,
    (4, False, 8): 32,
    (4, False, 16): 44,
    (4, False, 32): 64,
    (4, False, 64): 104,
}

#: the same for the rows held by their whole packs, the ends apart (cluster_tier.cuh, InteriorSlice),
#: whose forward at the caps above spilled 8-112 bytes (NVRTC 13): the least caps, in steps of 4-8,
#: that compile without a spill
CLUSTER_ALIKE_MAX_REGISTERS = {
    (2, False, 16): 48,
    (2, False, 32): 56,
    (2, False, 64): 72,
    (4, False, 8): 40,
    (4, False, 16): 48,
    (4, False, 32): 72,
    (4, False, 64): 112,
}


#: the "capped" form of a cluster instance: the same kernel under a lower register cap, which the
#: host takes where the occupancy query puts more of its clusters on the GPU at once than the
#: instance's own count does (plans._cluster). The float32 backward of 32 elements a thread takes
#: 116 registers under its launch bound (pip's NVRTC), so a CTA of 288-320 threads is alone on its
#: SM: 32 x 151936 ran four waves of clusters of 16. At 96 (a 16-byte frame; 88 and 80 spill 48 and
#: 88 bytes) two share an SM. H200, alternated in one process behind an L2 flush (results
#: 2026-12-03_h200_s49/r8/cap96_probe.txt): 32 x 151936 26.9 -> 23.5 us, 16 x 151936 16.7 -> 15.4;
#: where the count did not change it lost (128 x 128256, 256 threads, 53.3 -> 56.3 us; 64 x 262144,
#: 512 threads, 65.3 -> 66.2), so it is taken only where it wins residency.
CLUSTER_CAPPED_MAX_REGISTERS = {(4, True, 32): 96}


def cluster_capped(dtype: torch.dtype, backward: bool, held: int) -> bool:
    """Whether a cluster instance of this kind has a "capped" form."""
    return (CXX_TYPES[dtype][2], backward, held) in CLUSTER_CAPPED_MAX_REGISTERS


def cluster_keeps(dtype: torch.dtype, backward: bool, log: bool, held: int) -> bool:
    """Whether a cluster instance of this kind has a kept-exponentials form."""
    return CXX_TYPES[dtype][2] == 2 and not backward and not log and held <= CLUSTER_KEPT_MAX_HELD


#: the column kernels' register cap by (bytes per element, backward, held elements), for four CTAs of
#: 256 threads an SM. H100, caps of 64 and none (the launch bound's 128) alternated in one process
#: (benchmarks/strided_probe.py, 2026-11-24): float32 forward (1024, 16384, 4) over dim 1 0.94 of copy
#: against 0.86 (K = 8: 64 registers, 16 bytes spilled, against 76), (512, 8192, 16) 0.91 against
#: 0.82; bf16 backward (2048, 4096, 8) 0.98 against 0.74, (512, 8192, 16) 0.98 against 0.65; bf16
#: forward 0.74-0.81 against 0.52-0.59. Not float32 backward at K = 8 (1.00 against 0.51: 248 bytes
#: spilled) nor float32 forward at K = 16 (0.74 against 0.55).
CLUSTER_COLUMNS_MAX_REGISTERS = {
    **{(4, False, held): 64 for held in (8, 16, 32)},
    **{(2, backward, held): 64 for backward in (False, True) for held in (8, 16, 32, 64)},
    # the straight-line walks (cluster_tier.cuh) took float32 backward at K = 4 from 77 registers to
    # 86 (two CTAs of 256 threads an SM rather than three); 80 keeps three and compiles without a spill
    (4, True, 16): 80,
}


def cluster_max_registers(dtype: torch.dtype, backward: bool, held: int, columns: bool = False, form: str = "") -> int:
    """The register cap of a cluster instance of a form ("", "kept", "alike", "capped"; 0: none
    beyond the launch bound's)."""
    if form == "kept":
        return 0
    if form == "capped":
        return CLUSTER_CAPPED_MAX_REGISTERS[CXX_TYPES[dtype][2], backward, held]
    if columns:
        caps = CLUSTER_COLUMNS_MAX_REGISTERS
    else:
        caps = CLUSTER_ALIKE_MAX_REGISTERS if form == "alike" else CLUSTER_MAX_REGISTERS
    return caps.get((CXX_TYPES[dtype][2], backward, held), 0)


def cluster_held_packs(backward: bool) -> tuple[int, ...]:
    return CLUSTER_HELD_PACKS_BACKWARD if backward else CLUSTER_HELD_PACKS


def cluster_pack(dtype: torch.dtype) -> int:
    """Elements per 16-byte pack: the only pack the cluster tier is compiled for. Any alignment of
    the pointers and pitches is served: each slice peels its partial packs element by element."""
    return 16 // CXX_TYPES[dtype][2]


#: the column kernels' pack: 8 bytes in 16-bit types, so that a thread's 16-bit slots hold 4 columns
#: rather than 8 (its per-column work halves; 16-byte packs of 8 columns measured far slower on an
#: H100, bf16 (2048, 4096, 8) over dim 1 0.55 of copy against the staged tiles' 0.88)
CLUSTER_COLUMNS_PACK = 4


def cluster_columns_pack(dtype: torch.dtype, columns: int) -> int:
    """The pack of a cluster instance: 16 bytes for rows, CLUSTER_COLUMNS_PACK elements for the
    column kernels."""
    return CLUSTER_COLUMNS_PACK if columns > 1 else cluster_pack(dtype)


def cluster_chunk(n: int, dtype: torch.dtype, ctas: int, columns: int = 1) -> int:
    """Columns per CTA (the last CTA may have fewer): ceil(n / ctas) rounded up to a pack, or to
    ``columns`` where the column kernels hold runs of that many interleaved columns and it is
    wider. Must match ClusterSlice::chunk in cluster_tier.cuh, which cuts a row misaligned by s
    elements into chunks of cluster_chunk(n + s) columns."""
    unit = max(cluster_columns_pack(dtype, columns), columns)
    per_cta = -(-n // ctas)
    return -(-per_cta // unit) * unit


def cluster_slots(n: int, dtype: torch.dtype, ctas: int, aligned: bool, columns: int = 1) -> int:
    """16-byte slots of one tensor per CTA. A misaligned row is cut into chunks of its own packs,
    up to one more per CTA than an aligned row's (cluster_chunk(n + s) / P <= cluster_chunk(n) / P
    + 1), and a tensor misaligned otherwise than the one that cut it straddles one more."""
    return cluster_chunk(n, dtype, ctas, columns) // cluster_columns_pack(dtype, columns) + (0 if aligned else 2)


def cluster_smem_bytes(n: int, dtype: torch.dtype, ctas: int, aligned: bool) -> int:
    """Dynamic shared memory of a cluster launch: none when every row of every tensor starts
    16-byte aligned; otherwise one slot per pack of the CTA's columns plus one, where tensors
    misaligned differently are re-cut (realign in cluster_tier.cuh)."""
    return 0 if aligned else cluster_slots(n, dtype, ctas, False) * 16


def cluster_max_cols(
    dtype: torch.dtype, backward: bool, aligned: bool = False, columns: int = 1, most: int = CLUSTER_SIZES[-1]
) -> int:
    """The longest row a cluster of 16 CTAs holds in registers at any alignment: 1048320 16-bit or
    524160 float32 elements forward (K = 16, 512 threads), 524032 / 262016 backward (K = 8);
    ``aligned``: rows on 16-byte boundaries, 2^20 / 2^19 forward and 2^19 / 2^18 backward;
    ``columns``: the column kernels' runs (on 16-byte boundaries, in their pack); ``most``: the
    largest cluster the GPU holds, where that is fewer than 16 CTAs (launch.DeviceFacts.cluster_ctas)."""
    packs = cluster_held_packs(backward)[-1]
    slots = packs * cluster_max_threads(backward, packs)
    return most * (slots - (0 if aligned else 2)) * cluster_columns_pack(dtype, columns)


#: bytes of a tensor per CTA up to which the tier is chosen for any number of rows (H100, measured
#: with the earlier staged kernel): 64 KiB a CTA, bf16 2^19 forward
CLUSTER_PREFERRED_BYTES_PER_CTA = 64 * 1024
#: rows from which the backward takes the tier up to the longest row it holds, at any alignment: the
#: register-held kernels beat split_row there (H100, benchmarks/grid_row_probe.py --tiers
#: split_row,cluster, alternated in one process, benchmarks/results/2026-11-23_h100_s3/long_rows_probe.txt:
#: 32-64 rows of 262152-524160 columns, backward bf16 0.57-0.68 of copy against 0.48-0.51)
CLUSTER_LONGEST_MIN_ROWS = 32
#: fewer rows on 16-byte boundaries (the ones measured) that take the tier up to the longest row it
#: holds too: (first, last) by (backward, element size). H100, forced and alternated in one process
#: behind an L2 flush (results 2026-12-06_h100_s73/c2-c6), against the tier chosen before (split_row,
#: grid_row or its teams): the backward of 1-24 rows ahead by 0.008-0.127 of copy (bf16 1 x 393216 0.096
#: against 0.077, 4 x 524032 0.365 against 0.284, 20 x 524032 0.657 against 0.535; float32 1 x 262016
#: 0.116 against 0.100, 24 x 262144 0.708 against 0.635) but for float32 16 x 262144 (0.632 against
#: 0.637); the float32 forward of 2-7 rows ahead by 0.023-0.095 (2 x 300000 0.168 against 0.132, 7 x
#: 300000 0.448 against 0.353), the 16-bit forward of 4-7 by 0.002-0.055 (bf16 4 x 786432 0.278 against
#: 0.276, 5 x 786432 0.345 against 0.290). Behind: the forward from 8 rows (float32 8 x 524160 0.446
#: against 0.524, bf16 8 x 699051 0.301 against 0.394; likely more clusters of 16 than the GPU holds at
#: once) and the 16-bit forward of 2-3 rows (bf16 2 x 786432 0.140 against 0.168).
CLUSTER_FEW_LONG_ROWS = {(True, 2): (1, 31), (True, 4): (1, 31), (False, 2): (4, 7), (False, 4): (2, 7)}


def cluster_preferred_max_cols(
    dtype: torch.dtype, backward: bool, rows: int = 0, aligned: bool = False, most: int = CLUSTER_SIZES[-1]
) -> int:
    """The longest row for which the cluster tier is the one to choose (cluster_max_cols is the
    longest it can run): forward 524288 16-bit or 262144 float32 elements, backward half that;
    backward with CLUSTER_LONGEST_MIN_ROWS rows or more, and CLUSTER_FEW_LONG_ROWS' rows on 16-byte
    boundaries, cluster_max_cols (``aligned``: at rows on
    16-byte boundaries, e.g. float32 backward rows of 2^18, which take cluster_stream at any other),
    not the 16-bit forward, whose rows past 2^19 ran faster on cluster_stream (H100, alternated in one
    process, results 2026-11-27_h100_s24/cluster_stream_against_cluster.txt: bf16 630000 0.87 of
    copy against 0.70, 699051 0.78 against 0.73, 786432 0.82 against 0.77, 1048320 0.84 against
    0.80; float32 forward level there, 0.87 against 0.86 at 393216 and 0.89 against 0.91 at 524160,
    and the backward on the cluster tier well ahead, 0.84-0.97 against 0.69-0.79). The float32 forward
    of many rows past 2^18 too, since cluster_stream staggers its first wave (H200, alternated in one
    process, results 2026-12-03_h200_s48/r5: 64-512 x 524288 0.706-0.809 against 0.667-0.791, 256 x
    393216 0.723 against 0.694; rows of 262145-393215 not measured). ``most``: as cluster_max_cols."""
    itemsize = CXX_TYPES[dtype][2]
    first, last = CLUSTER_FEW_LONG_ROWS[(backward, itemsize)]
    if (backward and rows >= CLUSTER_LONGEST_MIN_ROWS) or (aligned and first <= rows <= last):
        return cluster_max_cols(dtype, backward, aligned, most=most)
    return most * CLUSTER_PREFERRED_BYTES_PER_CTA // (itemsize * (2 if backward else 1))


#: elements a thread holds at most while the threads can still grow instead (H100, 64 x 524288 bf16
#: forward: K = 8 with 512 threads 0.71 of copy, K = 16 with 256 0.61), and for float32 forward 32
#: (K = 8): more CTAs an SM. H100, alternated in one process with the earlier choice (C = 8 and
#: K = 16 from 128K columns) and Quack (benchmarks/cluster_size_probe.py, results
#: 2026-11-23_h100_s9): 128 x 128256 49.1 us against 55.6 (Quack 52.6), 32 x 151936 21.4 against
#: 24.2 (Quack 18.3), 1046 x 128256 1.01 of copy against 0.99, 512 x 262144 (512 threads) 1.00
#: against 0.98, 2048 x 65536 1.00 against 0.99
CLUSTER_HELD_ELEMS_BEFORE_THREADS = {False: {2: 64, 4: 32}, True: {2: 64, 4: 64}}
#: on GPUs of much DRAM bandwidth an SM (high_dram_bandwidth_per_sm), launches of more CTAs than SMs
#: hold the most elements a thread first (CLUSTER_HELD_ELEMS_BEFORE_THREADS, fewer threads) rather
#: than the fewest. H200, bf16, K forced and alternated in one process (benchmarks/grid_row_probe.py,
#: results 2026-12-02_h200_s40/cluster_k_*.txt): forward 5461 x 12288 0.938 of copy with K = 8 (64
#: elements, 128 threads) against 0.864 with K = 4 (256 threads, the rule before), 4096 x 16384 0.942
#: against 0.822, 6553 x 10240 0.878 against 0.858; backward 4096 x 16384 0.967 against 0.864;
#: longer rows and float32 already took that K (level). Not measured on an H100, whose 16-bit rows of
#: 9217-32768 run at 0.98-1.00 of copy with the fewest (2026-11-28_h100_s25).
CLUSTER_HELD_FIRST = True


#: the 16-bit backward of rows off 16-byte boundaries cut at those boundaries (tensors whose rows lie
#: at different offsets within 16 bytes; rows alike take their whole packs since the forty-fourth set,
#: plans.cluster_whole_packs, with the aligned row's shape) takes twice the cluster its row's size
#: gives, from this size on: such a row's two edge slots can add a warp to every CTA (288 threads of 121-128
#: registers: one CTA an SM where the aligned row's 256 hold two). H200, alternated in one process
#: (results 2026-12-02_h200_s43/cluster_ctas*.txt, the 16-bit kernels gathering their edges then): bf16
#: 2048 x 65535 0.75 of copy with 8 CTAs against 0.49 with 4, 1024 x 131071 0.70 with 16 against 0.49
#: with 8, 2670 x 50257 (224 threads either way) 0.80 with 8 against 0.75; not from 2 (4096 x 16383:
#: 0.58 with 4 against 0.79 with 2), nor float32 (1024 x 131071 level) nor the forward (level to
#: +0.03). The landed kernels with it against the set's start (final_vs_start.txt): 2048 x 65535 0.69
#: against 0.51, 2670 x 50257 0.72 against 0.68; 1024 x 131071 0.67 (the start, 8 CTAs, 0.49-0.51 in the
#: calls before).
CLUSTER_MISALIGNED_BACKWARD_DOUBLES_FROM = 4

#: the 16-bit backward of rows (not the column kernels' runs) past this many bytes, whose size gives
#: them 4 CTAs (at most 128 KiB), takes 8: more than three quarters of CLUSTER_BYTES_PER_CTA a CTA.
#: H200, 8 CTAs alternated in one process with the 4 the rule gave (benchmarks/grid_row_probe.py,
#: results 2026-12-02_h200_s45/ctas8_50k.txt; softmax and log-softmax, bf16 and fp16): rows of 50257
#: (whole packs) 0.921 -> 0.938 of copy at 2670 rows and 0.932 -> 0.954 at 4096, 50264 0.957 -> 0.984
#: and 1024 x 50264 0.903 -> 0.934, log-softmax 0.02-0.03 alike; 2048 x 65536 0.926 -> 0.970 and 65535
#: level (1.014 -> 1.015, 2026-12-02_h200_s43 and _s44). Not shorter rows: 2670 x 40000 1.018 -> 0.882,
#: 2670 x 32769 0.880 -> 0.774. Only on GPUs of much DRAM bandwidth an SM (cluster_shape's
#: ``high_bandwidth``): on an H100 the 4 CTAs ran ahead, alternated in one process (results
#: 2026-12-06_h100_s69/c1b/ctas_backward_sweep.txt), 2048 x 65536 1.028 of copy against 0.961-0.964 in
#: both 16-bit types, 1024 x 65536 1.020 against 0.938-0.944 (c1/ctas_backward.txt), fp16 2670 x 50257
#: 1.025 against 0.869 and 4096 x 50257 1.031 against 0.873, bf16 2670 x 50257 and 4096 x 50257 level
#: (1.023 / 1.024, 1.030 / 1.031).
CLUSTER_16BIT_BACKWARD_EIGHT_AFTER_BYTES = 3 * CLUSTER_BYTES_PER_CTA


def cluster_threads_packs(
    slots: int,
    backward: bool,
    threads: int = 0,
    packs: int = 0,
    pack: int = 1,
    itemsize: int = 0,
    held_first: bool = False,
) -> tuple[int, int]:
    """(threads, K) covering ``slots``: the smallest compiled K whose threads stay within
    CLUSTER_TARGET_THREADS, else the smallest whose threads stay within the launch bound (H100,
    bf16 2^19 forward: K = 8 with 512 threads 0.71 of copy, K = 16 with 256 0.56); at least 128
    threads (4 warps: the CTA's loads in flight). ``held_first``: the largest K of at most
    CLUSTER_HELD_ELEMS_BEFORE_THREADS elements first instead (CLUSTER_HELD_FIRST).
    ``threads``/``packs`` force either (``packs`` one of cluster_held_packs: cluster_shape checks)."""
    options = [packs] if packs else list(cluster_held_packs(backward))
    passes = [(options, lambda k: cluster_max_threads(backward, k))]
    if not (threads or packs):  # K up while threads stay near the target, then threads up, then K
        most = CLUSTER_HELD_ELEMS_BEFORE_THREADS[backward][itemsize or 16 // pack]
        few = [k for k in options if k * pack <= most]
        passes = [(few, lambda k: CLUSTER_TARGET_THREADS), (few, passes[0][1])] + passes
        if held_first:
            passes.insert(0, (few[::-1], lambda k: CLUSTER_TARGET_THREADS))
    for ks, limit in passes:
        for k in ks:
            t = threads or max(128, -(-slots // (32 * k)) * 32)
            if t * k >= slots and t <= min(limit(k), cluster_max_threads(backward, k)):
                return t, k
    raise ValueError(f"{slots} slots per CTA do not fit the cluster tier (threads {threads}, K {packs})")


@dataclass(frozen=True)
class ClusterShape:
    ctas: int  # cluster size C: CTAs per row
    threads: int  # threads per CTA
    smem_bytes: int  # dynamic shared memory per CTA
    pack: int  # the instance's pack (elements per 16 bytes)
    non_portable: bool  # C > 8: needs CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 1
    held: int = 0  # elements a thread holds (K x pack): the instance's Instance.cols


def cluster_shape(
    n: int,
    dtype: torch.dtype,
    backward: bool,
    rows: int = 0,
    sm_count: int = 0,
    ctas: int = 0,
    aligned: bool = False,
    threads: int = 0,
    packs: int = 0,
    columns: int = 1,
    high_bandwidth: bool = False,
    most: int = CLUSTER_SIZES[-1],
) -> ClusterShape:
    """How to launch the cluster tier on rows of n columns.

    The cluster size grows with the row: the smallest power of two (from 2) that keeps each CTA's
    share of each tensor within CLUSTER_BYTES_PER_CTA (16K 16-bit elements: 2 CTAs up to 32K, 4 at
    64K, 8 at 128K, 16 from 256K; float32 8K elements), and past 16 CTAs the
    share grows instead; the 16-bit backward of rows off 16-byte boundaries takes twice that from 4 CTAs
    on (CLUSTER_MISALIGNED_BACKWARD_DOUBLES_FROM), and every 16-bit backward row of 4 CTAs past
    CLUSTER_16BIT_BACKWARD_EIGHT_AFTER_BYTES takes 8 on a GPU of much DRAM bandwidth an SM
    (``high_bandwidth``). With few rows (``rows * 16 <= sm_count``: decode) the
    cluster is 16 whatever the row,
    so that the row is spread over as many SMs as can share it. ``ctas``, ``threads`` and
    ``packs`` force a choice; ``high_bandwidth`` (a GPU of much DRAM bandwidth an SM,
    high_dram_bandwidth_per_sm) takes CLUSTER_HELD_FIRST's rule where the launch has more CTAs than
    ``sm_count``, and the 8 CTAs of CLUSTER_16BIT_BACKWARD_EIGHT_AFTER_BYTES. ``aligned``: every
    row of every tensor starts 16-byte aligned (no shared memory needed). ``columns``: the rows are
    runs of that many interleaved columns (the column kernels, ``Instance(..., columns=True)``, whose
    last argument is ``columns``; aligned rows only), held in packs of CLUSTER_COLUMNS_PACK elements.
    ``most``: the largest cluster the GPU holds (launch.DeviceFacts.cluster_ctas), 16 unless it holds
    only the portable 8: every size above is capped there.

    Launch contract (the kernels read C and their rank from the cluster registers, so one compiled
    instance serves every C and thread count):

    - instance: ``Instance("cluster", dtype, backward, log, pack=shape.pack, cols=shape.held)``;
      sm_90+ only (on sm_80 the instances compile to a trap);
    - arguments, all 8 bytes: forward ``(x, y, rows, n, x_pitch, y_pitch)``, backward
      ``(y, dy, dx, rows, n, y_pitch, dy_pitch, dx_pitch, stagger)``; pitches in elements, any
      alignment; ``stagger`` from cluster_stagger (any value is correct); the column kernels take
      ``inner`` in its place (and the forward's, after y_pitch);
    - grid ``(clusters * C, 1, 1)`` CTAs, a multiple of C: cluster k takes rows k, k + clusters,
      ...; ``clusters = cluster_grid(rows, resident, backward)``;
    - block ``(threads, 1, 1)``; dynamic shared memory ``smem_bytes``;
    - ``cuLaunchKernelEx`` with ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION = (C, 1, 1)`` (also for
      C = 1, or the plain ``cuLaunchKernel``: a grid without clusters is a cluster of one CTA);
    - ``CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES >= smem_bytes`` on the function when
      smem_bytes > 48 KiB, and ``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED = 1`` when
      C > 8 (``non_portable``);
    - ``cuOccupancyMaxActiveClusters(function, config)`` with that launch config (grid C, the
      cluster attribute, block, smem) gives the clusters resident at once; 0 means the shape
      cannot be launched (take a smaller C or another tier).
    """
    size = CXX_TYPES[dtype][2]
    forced = [f"{name} {value}" for name, value in (("CTAs", ctas), ("threads", threads), ("packs", packs)) if value]
    if not ctas:
        # at least 2: a launch without a cluster dimension (the launch layer's path for C = 1) has no
        # cluster to run barrier.cluster or st.async in (an illegal instruction on an H100)
        ctas = min(most, next_pow2(-(-n * size // CLUSTER_BYTES_PER_CTA)))
        ctas = max(2, ctas)
        if backward and not aligned and size == 2 and CLUSTER_MISALIGNED_BACKWARD_DOUBLES_FROM <= ctas:
            ctas = min(most, 2 * ctas)
        eight = n * size > CLUSTER_16BIT_BACKWARD_EIGHT_AFTER_BYTES
        if backward and size == 2 and columns == 1 and ctas == 4 and eight and high_bandwidth:
            ctas = min(most, 8)
        if rows and sm_count and rows * most <= sm_count:
            ctas = most
    if ctas not in CLUSTER_SIZES:
        raise ValueError(f"cluster size {ctas} is not one of {CLUSTER_SIZES}")
    if ctas > most:
        raise ValueError(f"a cluster of {ctas} CTAs is more than this GPU holds ({most} at most)")
    if columns > 1 and not aligned:
        raise ValueError("the cluster column kernels take runs on 16-byte boundaries only")
    if packs and packs not in cluster_held_packs(backward):
        raise ValueError(f"K = {packs} is not compiled (one of {cluster_held_packs(backward)})")
    slots = cluster_slots(n, dtype, ctas, aligned, columns)
    try:
        pack = cluster_columns_pack(dtype, columns)
        deep = high_bandwidth and CLUSTER_HELD_FIRST and rows * ctas > sm_count
        threads, packs = cluster_threads_packs(slots, backward, threads, packs, pack, size, deep)
    except ValueError:
        longest = cluster_max_cols(dtype, backward, aligned, columns, most)
        direction = "backward" if backward else "forward"
        if forced:  # a tuning's choice, where the tier's own would hold the row
            raise ValueError(
                f"rows of {n} columns do not fit the cluster tier's {direction} with {', '.join(forced)} "
                f"forced (its own choice holds up to {longest})"
            ) from None
        message = f"rows of {n} columns are too long for the cluster tier (at most {longest} {direction})"
        raise ValueError(message) from None
    smem = cluster_smem_bytes(n, dtype, ctas, aligned)
    return ClusterShape(ctas, threads, smem, pack, ctas > CLUSTER_PORTABLE_MAX, packs * pack)


# ---- tier "grid_row" ----------------------------------------------------------------------------
#: threads of a grid_row CTA (one CTA per SM: 128 registers a thread)
GRID_ROW_THREADS = 512
#: 16-byte packs a thread holds in registers, per tensor (forward x, backward y and dy): the most
#: that every sm_90 instance compiles with and no spill within 128 registers (NVRTC 13; forward 13
#: to 16 spilled 40-200 bytes a thread, backward 8; on sm_80 forward 12 spills 68-92 bytes); one
#: compiled instance per (dtype, direction, function)
GRID_ROW_HELD_PACKS = {False: 12, True: 4}
#: a CTA's static shared memory (the reduction slots) and the driver's reserve, kept out of the
#: dynamic shared memory a grid_row launch opts into
GRID_ROW_STATIC_SMEM = 1024


def grid_row_dynamic_smem(device, per_sm: int = 1, static: int = GRID_ROW_STATIC_SMEM) -> int:
    """Dynamic shared memory each of ``per_sm`` CTAs an SM of grid_row's kernels (grid_row, and
    cluster_stream's at one or two, rows or columns) may take on ``device`` (its ``smem_per_block``
    and ``smem_per_sm``: tier choice's Limits, the plans' device facts): its share of the SM's, less
    ``static`` for every CTA of the SM (a CTA's static slots and the driver's reserve together pass
    1 KiB, so a half SM less one such share would not fit two). Tier choice and the plans size their
    teams and clusters by it."""
    return min(device.smem_per_block, device.smem_per_sm // per_sm) - static * per_sm


#: the same for cluster_stream's column kernels, whose column exchange (cluster_tier.cuh's
#: ColumnExchange: kClusterMaxWarps x kClusterMaxColumns pairs, two rounds of kClusterMaxCtas x
#: kClusterMaxColumns posts) takes about 12.3 KiB
COLUMN_STREAM_STATIC_SMEM = 13 * 1024


@dataclass(frozen=True)
class GridRowShape:
    """A grid_row launch: ``ctas`` CTAs of ``threads`` threads (the grid, all resident at once),
    each owning ``chunk`` columns of the row, holding ``packs`` 16-byte slots a thread in registers
    and ``smem_slots`` in shared memory per tensor (``smem_bytes`` in all); the slots past those
    are re-read from device memory."""

    ctas: int
    threads: int
    packs: int
    pack: int
    chunk: int
    smem_slots: int
    smem_bytes: int
    #: teams the grid is cut into, each on rows of its own (grid_row_team_shape; 1: the whole grid on
    #: every row in turn)
    teams: int = 1

    @property
    def team_ctas(self) -> int:
        """CTAs of a team: each takes ``chunk`` columns of the team's row."""
        return self.ctas // self.teams

    @property
    def held(self) -> int:
        """Elements a thread holds in registers per tensor: the instance's Instance.cols."""
        return self.packs * self.pack


def grid_row_slots(n: int, dtype: torch.dtype, ctas: int) -> int:
    """16-byte slots of one tensor in the largest CTA slice, at any alignment: ClusterSlice in
    cluster_tier.cuh cuts the row the same way (grid_row_tier.cuh reuses it)."""
    return cluster_slots(n, dtype, ctas, aligned=False)


def grid_row_shape(n: int, dtype: torch.dtype, backward: bool, sm_count: int, per_sm, smem_budget: int) -> GridRowShape:
    """How to launch grid_row on rows of n columns on a GPU of ``sm_count`` SMs, where
    ``per_sm(smem_bytes)`` is the number of CTAs of the instance resident per SM with that much
    dynamic shared memory (the occupancy query) and ``smem_budget`` the most dynamic shared memory
    a CTA may take.

    The grid is always every CTA that can be resident (a cooperative launch of more is refused):
    without shared memory when the registers of those CTAs hold the row, else with as much shared
    memory as the CTAs' slices need, up to the budget (one CTA per SM); what still does not fit is
    re-read. Raises ValueError when not even one CTA per SM fits.

    Launch contract: ``Instance("grid_row", dtype, backward, log, pack=shape.pack,
    cols=shape.held)``, block ``(threads, 1, 1)``, grid ``(ctas, 1, 1)``, dynamic shared memory
    ``smem_bytes``, ``cuLaunchKernelEx`` with ``CU_LAUNCH_ATTRIBUTE_COOPERATIVE``; arguments, all
    8 bytes: forward ``(x, y, ws, rows, n, x_pitch, y_pitch, smem_slots)``, backward ``(y, dy, dx,
    ws, rows, n, y_pitch, dy_pitch, dx_pitch, smem_slots)``, ``ws`` a float32 workspace of
    ``grid_row_workspace(ctas, backward)`` elements that needs no clearing."""
    pack = cluster_pack(dtype)
    packs = GRID_ROW_HELD_PACKS[backward]
    tensors = 2 if backward else 1
    threads = GRID_ROW_THREADS
    ctas = per_sm(0) * sm_count
    if ctas >= 1 and grid_row_slots(n, dtype, ctas) <= packs * threads:
        return GridRowShape(ctas, threads, packs, pack, cluster_chunk(n, dtype, ctas), 0, 0)
    most = max(0, smem_budget // (16 * tensors))
    ctas = per_sm(most * 16 * tensors) * sm_count
    if ctas < 1:
        raise ValueError(f"tier 'grid_row': not one CTA of {threads} threads fits an SM")
    slots = max(0, min(most, grid_row_slots(n, dtype, ctas) - packs * threads))
    return GridRowShape(ctas, threads, packs, pack, cluster_chunk(n, dtype, ctas), slots, slots * 16 * tensors)


#: the largest share of a grid_row launch's team turns (teams x rounds) left idle by rows that no count of
#: teams divides (see grid_row_team_shape)
GRID_ROW_TEAMS_IDLE_SHARE = 1 / 16
#: the fewest bytes (read and written) a CTA of such an uneven count moves a round, where a round's fixed
#: cost (its team barrier, the first load's latency) is paid back. H100, forced and alternated in one
#: process against cluster_stream, which those rows took before (results 2026-12-07_h100_s83/g2/teams.txt):
#: ahead at 279-372 KiB a CTA a round (17 x 2^20 in 6 teams of 22 CTAs, bf16 backward 0.635 of copy
#: against 0.576, float32 forward 0.668 against 0.648; 3 teams of 44, float32 backward 0.701 against
#: 0.638; 191 x 699051 backward, bf16 in 12 teams of 11 0.823 against 0.815, float32 in 6 of 22 0.807
#: against 0.709), behind or level at 83-248 KiB (31 x 699051 in 4 teams of 33, 8 rounds: bf16 forward
#: 0.352 against 0.531, backward 0.510 against 0.652, float32 forward 0.535 against 0.683, backward
#: 0.685 against 0.697)
GRID_ROW_TEAMS_UNEVEN_MIN_ROUND_BYTES = 256 * 1024


def grid_row_team_shape(
    rows: int, n: int, dtype: torch.dtype, backward: bool, sm_count: int, per_sm, smem_budget: int
) -> GridRowShape:
    """grid_row_shape for ``rows`` rows at once: the grid cut into teams, each on rows of its own
    (grid_row_tier.cuh's RowGridTeams), where teams whose CTAs all hold their slices on chip (registers
    and shared memory, one CTA an SM) take the rows in fewer rounds than the whole grid does one row
    after another, every team on a row in every round (a count of teams that divides the rows: a
    round with idle teams moves the same bytes through fewer SMs, float32 3 x 2^22 forward 0.615 of
    copy in two teams against 0.625 in one); of those, the fewest rounds. Where no count divides the
    rows (191 of them), a count that leaves at most GRID_ROW_TEAMS_IDLE_SHARE of the teams' turns (teams
    x rounds) idle, of those the fewest rounds a team's CTA, where its CTAs move
    GRID_ROW_TEAMS_UNEVEN_MIN_ROUND_BYTES a round or more. Otherwise grid_row_shape's one team. H100,
    alternated in one process against one team and split_row (results 2026-12-06_h100_s72/c4/): bf16
    forward 4 x 2^22 0.640 against 0.441 and 0.491, 8 x 2^21 0.640 against 0.312 and 0.486, float32 8 x
    2^21 0.697 against 0.495 and 0.554; backward bf16 8 x 2^21 0.647 against 0.503 and 0.492.

    Launch contract of a shape of several teams: ``Instance("grid_row", ..., storage="teams")``
    (grid_row_instance(..., teams=True)), grid ``(ctas, 1, 1)``, the arguments of grid_row_shape's and
    last ``team_ctas``; ``ws`` a workspace of grid_row_team_workspace's ``(counters, scratch)`` words,
    the counters zero (each launch leaves them so)."""
    whole = grid_row_shape(n, dtype, backward, sm_count, per_sm, smem_budget)
    tensors = 2 if backward else 1
    most = max(0, smem_budget // (16 * tensors))
    ctas = per_sm(most * 16 * tensors) * sm_count
    # (teams, rounds, shared-memory slots) of the counts whose CTAs hold their slices on chip
    fits = []
    for teams in range(2, min(rows, ctas) + 1):
        slots = grid_row_slots(n, dtype, ctas // teams) - whole.packs * whole.threads
        if slots <= most:
            fits.append((teams, -(-rows // teams), max(0, slots)))
    dividing = [fit for fit in fits if rows % fit[0] == 0]
    if dividing:
        teams, _, smem = min(dividing, key=lambda fit: fit[1])  # the fewest rounds, then the fewest teams
    else:
        few_idle = [fit for fit in fits if fit[0] * fit[1] - rows <= GRID_ROW_TEAMS_IDLE_SHARE * fit[0] * fit[1]]
        if not few_idle:
            return whole
        # the fewest rounds a team's CTA (time goes as rounds x a CTA's share of a row), then the fewest
        # rounds: 191 rows in 16 rounds of 12 teams of 11 CTAs, not 15 of 13 of 10 or 96 of 2 of 66
        teams, _, smem = min(few_idle, key=lambda fit: (Fraction(fit[1], ctas // fit[0]), fit[1]))
    team_ctas = ctas // teams
    chunk = cluster_chunk(n, dtype, team_ctas)
    moved = chunk * CXX_TYPES[dtype][2] * (tensors + 1)  # bytes a CTA reads and writes a round
    if not dividing and moved < GRID_ROW_TEAMS_UNEVEN_MIN_ROUND_BYTES:
        return whole
    return GridRowShape(
        teams * team_ctas, whole.threads, whole.packs, whole.pack, chunk, smem, smem * 16 * tensors, teams
    )


def counter_words(count: int) -> int:
    """Words of a workspace's ``count`` team counters, rounded up to 4 (common.cuh's counter_words,
    where the kernels of strided_staged's and grid_row's teams find their partial results)."""
    return -(-count // 4) * 4


def grid_row_team_workspace(rows: int, team_ctas: int, backward: bool) -> tuple[int, int]:
    """``(counters, scratch)`` float32 words of a grid_row launch in teams: a counter a row
    (counter_words), then each row's CTAs' pairs (backward: sums)."""
    return counter_words(rows), rows * team_ctas * (1 if backward else 2)


#: cluster sizes of a cluster_stream launch, smallest first (see cluster_stream_shape)
CLUSTER_STREAM_SIZES = (2, 4, 8, 16)
#: CTAs an SM a cluster_stream launch may be compiled for (GRID_ROW_THREADS / per_sm threads each)
CLUSTER_STREAM_PER_SM = (1, 2)


def stream_chunk(n: int, dtype: torch.dtype, ctas: int, columns: int = 1) -> int:
    """Columns of a cluster_stream CTA's slice: cluster_chunk's, or for runs of ``columns``
    interleaved columns a multiple of max(columns, pack), so that every slot of a thread holds the
    same columns (ClusterSlice's unit in grid_row_tier.cuh's column kernels)."""
    if columns == 1:
        return cluster_chunk(n, dtype, ctas)
    unit = max(columns, column_stream_pack(dtype))
    per_cta = -(-n // ctas)
    return -(-per_cta // unit) * unit


#: two CTAs an SM take the smallest cluster whose CTAs hold at least this share of their slices
#: (forward, backward), re-reading the rest, rather than the smallest that holds them whole: half
#: as many CTAs a row meet at a cheaper barrier, and twice as many clusters are resident. H200, bf16,
#: alternated in one process behind an L2 flush (results 2026-12-03_h200_s48/r1, r2), clusters of 8
#: against 16: forward 200 x 655360 (99% held) 0.730 against 0.626 of copy, 191 x 699051 (93%) 0.639
#: against 0.598, 180 x 720896 (90%) 0.664 against 0.647, but 160 x 786432 (83%) 0.631 against 0.654
#: and 128 x 2^20 (62%) 0.598 against 0.685; backward 320 x 393216 (75%) 0.661 against 0.578,
#: 256 x 458752 (64%) 0.648 against 0.601, 256 x 524288 (56%) 0.628 against 0.605, but 200 x 655360
#: (45%) 0.585 against 0.614 (float32 alike by share: 256 x 524288, 62% and 28%, behind). With the
#: first wave staggered (cluster_stream_stagger) 256 x 524288 ran 0.653 over 8 against 0.677 over
#: 16 (r4), hence 0.6 backward; the forward's shares were confirmed there
CLUSTER_STREAM_PAIR_HELD_SHARE = {False: 0.9, True: 0.6}


def cluster_stream_shape(
    n: int,
    dtype: torch.dtype,
    backward: bool,
    smem_budget: int,
    ctas: int = 0,
    per_sm: int = 1,
    columns: int = 1,
) -> GridRowShape:
    """How to launch cluster_stream (grid_row's kernels with a thread-block cluster for the team) on
    rows of n columns, each CTA taking at most ``smem_budget`` bytes of dynamic shared memory: the
    smallest cluster of CLUSTER_STREAM_SIZES whose CTAs hold their slices of the row in registers and
    shared memory (a smaller cluster meets at a cheaper barrier, and more of them fit the GPU's
    groups of SMs at once), else 16 CTAs, which re-read what they do not hold; at two CTAs an SM,
    the smallest that holds CLUSTER_STREAM_PAIR_HELD_SHARE of the slices; ``ctas`` forces the size.
    ``per_sm`` CTAs an SM of GRID_ROW_THREADS / per_sm threads of up to 128 registers (the host
    gives each its share of the SM's shared memory).

    Launch contract: ``grid_row_instance(dtype, backward, log, "cluster_stream")``, block
    ``(threads, 1, 1)``, grid ``(clusters * ctas, 1, 1)`` for any number of clusters (cluster k takes
    rows k, k + clusters, ...), ``cuLaunchKernelEx`` with ``CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION =
    (ctas, 1, 1)`` (and ``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED`` past 8), dynamic
    shared memory ``smem_bytes``; arguments, all 8 bytes: forward ``(x, y, rows, n, x_pitch, y_pitch,
    smem_slots, stagger)``, backward ``(y, dy, dx, rows, n, y_pitch, dy_pitch, dx_pitch, smem_slots,
    stagger)``, ``stagger`` from cluster_stream_stagger (any value is correct).

    ``columns`` > 1: rows that are runs of that many interleaved columns (a power of two up to
    kClusterMaxColumns, every run on 16-byte boundaries): ``grid_row_instance(..., columns=True)``,
    whose arguments end in ``inner``, in packs of column_stream_pack elements, one CTA an SM; its
    shared-memory slots come in whole rounds of ``threads`` and its static shared memory (the column
    exchange) is COLUMN_STREAM_STATIC_SMEM."""
    if ctas and ctas not in CLUSTER_STREAM_SIZES:
        raise ValueError(f"tier 'cluster_stream': cluster size {ctas} is not one of {CLUSTER_STREAM_SIZES}")
    if per_sm not in CLUSTER_STREAM_PER_SM:
        raise ValueError(f"tier 'cluster_stream': {per_sm} CTAs an SM is not one of {CLUSTER_STREAM_PER_SM}")
    if columns > 1 and per_sm != 1:
        raise ValueError("tier 'cluster_stream': its column kernels run one CTA an SM")
    pack = column_stream_pack(dtype) if columns > 1 else cluster_pack(dtype)
    packs = grid_row_held_packs(dtype, backward, pack)
    tensors = 2 if backward else 1
    threads = GRID_ROW_THREADS // per_sm
    slot_bytes = pack * CXX_TYPES[dtype][2]
    most = max(0, smem_budget // (slot_bytes * tensors))
    if columns > 1:
        most -= most % threads

        def slots_of(c: int) -> int:
            return stream_chunk(n, dtype, c, columns) // pack
    else:

        def slots_of(c: int) -> int:
            return grid_row_slots(n, dtype, c)

    sizes = (ctas,) if ctas else CLUSTER_STREAM_SIZES
    share = CLUSTER_STREAM_PAIR_HELD_SHARE[backward] if per_sm == 2 and columns == 1 else 1.0
    size = next((c for c in sizes if slots_of(c) * share <= packs * threads + most), sizes[-1])
    slots = max(0, min(most, slots_of(size) - packs * threads))
    if columns > 1:
        slots = -(-slots // threads) * threads  # whole rounds; `most` is a multiple of threads
    chunk = stream_chunk(n, dtype, size, columns)
    return GridRowShape(size, threads, packs, pack, chunk, slots, slots * slot_bytes * tensors)


#: cluster_stream at two CTAs an SM (half the threads and shared memory each, so that one CTA loads
#: while the other meets its cluster or writes) where its CTAs still hold at least this share of
#: their slices (forward, backward) and, backward, from CLUSTER_STREAM_PAIR_MIN_ROWS_BACKWARD rows, on
#: GPUs of much DRAM bandwidth an SM (high_dram_bandwidth_per_sm): the rule as it stood, not measured
#: again on such a GPU with today's kernels (an H200 ran the 16-bit forward two ahead or level at
#: every length, results 2026-12-03_h200_s51/d5/stream_per_sm.txt). First measured on an H100 (results
#: 2026-11-27_h100_s24/cluster_stream_ab_two_per_sm.txt, before the persistent grid and the staggered
#: first wave): where two CTAs hold the row, 0.03-0.07 ahead (bf16 forward 128 x 2^20 0.85 against
#: 0.82, bf16 backward 192 x 699051 0.76 against 0.69); backward re-reading 44% of each slice still
#: ahead (bf16 128 x 2^20 0.69 against 0.67), 58-72% behind (float32 192 x 699051 0.62 against 0.70),
#: and 16 rows behind (bf16 2^20 0.55 against 0.57)
CLUSTER_STREAM_PAIR_MIN_HELD = {False: 0.75, True: 0.5}
#: ... and on other GPUs (the H100): two CTAs an SM forward only where they hold their whole slices,
#: backward where they hold 0.7 of them. H100, today's kernels, the two forced and alternated in one
#: process behind an L2 flush (results 2026-12-06_h100_s70/c4/, c6/): forward bf16 191 x 699051
#: (two hold 94%) one 0.823-0.824 of copy against two's 0.796-0.806, 160 x 786432 and 128 x 2^20
#: (two hold all) two 0.880-0.900 against 0.864-0.884; backward bf16 128 x 2^20 (two hold 56%) one
#: 0.795 against 0.717, float32 256 x 524288 (56%) 0.821 against 0.747, bf16 160 x 786432 (75%) two
#: 0.795-0.800 against 0.752, 191 x 699051 (84%) 0.815 against 0.783
CLUSTER_STREAM_PAIR_MIN_HELD_LOW_BANDWIDTH = {False: 1.0, True: 0.7}
CLUSTER_STREAM_PAIR_MIN_ROWS_BACKWARD = 32
#: the float32 forward of rows of at least this many columns runs one CTA an SM. H200, persistent
#: launches, the two forced and alternated in one process (results 2026-12-03_h200_s51/d5/stream_per_sm.txt):
#: one ahead by 0.04-0.08 of copy at 256 x 393216 (0.820 against 0.775), 128-512 x 524288 (512 rows
#: 0.885 against 0.810), 128 x 786432 (0.758 against 0.700) and 128 x 2^20 (0.811 against 0.645), 0.01
#: behind at 192 x 699051 (0.697 against 0.706), 0.03 behind at 512 x 300007 (0.755 against 0.788),
#: which keeps the pair rule; 16-bit rows ran two ahead or level at every length. H100 likewise (results
#: 2026-12-06_h100_s70/c4/, c6/): 256 x 524288 0.933-0.938 against 0.893-0.902 (Quack 0.925 in the same
#: process), 160 x 786432 0.897 against 0.827-0.830, 191 x 699051 0.819 against 0.808-0.812, 128 x 2^20
#: (one by the pair rule too) 0.879-0.884 against 0.728-0.729
CLUSTER_STREAM_FLOAT32_SINGLE_MIN_COLS = 393216


def cluster_stream_per_sm(
    n: int, dtype: torch.dtype, backward: bool, rows: int, pair_budget: int, high_bandwidth: bool = False
) -> int:
    """CTAs an SM for a cluster_stream launch on ``rows`` rows of n (``pair_budget``: the dynamic
    shared memory each of two CTAs an SM may take): 1 for the float32 forward of rows of at least
    CLUSTER_STREAM_FLOAT32_SINGLE_MIN_COLS; else 2 where two hold CLUSTER_STREAM_PAIR_MIN_HELD of
    their slices on a GPU of much DRAM bandwidth an SM (``high_bandwidth``),
    CLUSTER_STREAM_PAIR_MIN_HELD_LOW_BANDWIDTH on others, else 1."""
    if backward and rows < CLUSTER_STREAM_PAIR_MIN_ROWS_BACKWARD:
        return 1
    if not backward and CXX_TYPES[dtype][2] == 4 and n >= CLUSTER_STREAM_FLOAT32_SINGLE_MIN_COLS:
        return 1
    shape = cluster_stream_shape(n, dtype, backward, pair_budget, per_sm=2)
    slots = grid_row_slots(n, dtype, shape.ctas)
    held = shape.packs * shape.threads + shape.smem_slots
    least = (CLUSTER_STREAM_PAIR_MIN_HELD if high_bandwidth else CLUSTER_STREAM_PAIR_MIN_HELD_LOW_BANDWIDTH)[backward]
    return 2 if held >= least * slots else 1


#: rows a resident cluster from which cluster_stream staggers its first wave (grid_row_tier.cuh's
#: RowClusterTeam::wait_turn: half the resident clusters start kStreamStaggerNs late); every shape
#: measured ahead with it had 6-18 rows a resident cluster, and with fewer rows than resident clusters
#: the wait is only added to the launch
CLUSTER_STREAM_STAGGER_MIN_ROUNDS = 4


def cluster_stream_stagger(rows: int, resident_clusters: int, forced: bool | None = None) -> int:
    """cluster_stream's ``stagger`` argument: the clusters of odd index below it wait before their
    first row; the resident clusters where the launch has CLUSTER_STREAM_STAGGER_MIN_ROUNDS rows
    for each, else 0 (none wait). ``forced`` (Tuning.cluster_stream_stagger) overrides the rule."""
    return first_wave_stagger(resident_clusters, rows >= CLUSTER_STREAM_STAGGER_MIN_ROUNDS * resident_clusters, forced)


def cluster_stream_persistent(rows: int, resident_clusters: int, forced: bool | None = None) -> bool:
    """Whether a cluster_stream launch over rows takes a grid of the clusters resident at once, each
    walking rows k, k + clusters, ... (the backward copying the next row's shared-memory slots while it
    writes the last: grid_row_tier.cuh, RowClusterTeam::kCopyAhead), rather than one cluster a row,
    each starting only once a cluster before it has left its SMs: wherever there are more rows than
    resident clusters. H200, alternated in one process behind an L2 flush (results
    2026-12-03_h200_s50/c2/persist_probe.txt), persistent against one cluster a row: forward bf16
    128 x 2^20 0.704 -> 0.741 of copy, 191 x 699051 0.657 -> 0.692, 256 x 524288 0.748 -> 0.754, 512 x
    262144 0.771 -> 0.792; float32 0.738 -> 0.801, 0.666 -> 0.712, 0.792 -> 0.796, 0.844 -> 0.837;
    backward bf16 0.614 -> 0.632, 0.702 -> 0.704, 0.675 -> 0.707, 0.749 -> 0.778; float32 0.599 ->
    0.644, 0.640 -> 0.639, 0.637 -> 0.671, 0.706 -> 0.759. ``forced`` (Tuning.cluster_stream_persistent)
    overrides the rule; a grid never has more clusters than rows."""
    return forced is not False and rows > resident_clusters


#: the cluster tier staggers the first wave of backward launches of more rows than clusters resident
#: at once (cluster_tier.cuh's kClusterStaggerNs). H200, against none, alternated in one process
#: behind an L2 flush (results 2026-12-03_h200_s49/r2/stagger_probe.txt): backward bf16 128 x 128256
#: 33.0 -> 30.9 us, 32 x 151936 15.7 -> 14.8, 64 x 262144 0.702 -> 0.746 of copy, 256 x 128256 0.853
#: -> 0.881, 2670 x 50257 0.923 -> 0.938; float32 32 x 151936 28.5 -> 27.1 us, 64 x 262144 0.704 ->
#: 0.742, 128 x 128256 54.5 -> 53.7 us; 1046 x 128256 level. The forward (the same wait, probed) gained
#: nowhere in 16 bits (bf16 32 x 151936 12.4 -> 12.6 us, 64 x 262144 0.673 -> 0.651) and was mixed in
#: float32 (64 x 262144 0.736 -> 0.747, 32 x 151936 17.4 -> 17.8 us): its kernels have no wait.
#: Backward launches of one wave, all resident at once, were not measured and wait none.
CLUSTER_STAGGER_BACKWARD = True


def cluster_stagger(rows: int, resident_clusters: int, forced: bool | None = None) -> int:
    """The cluster tier's backward ``stagger`` argument (the clusters of odd index below it wait
    before their first row): the resident clusters' count on launches of more rows than that where
    CLUSTER_STAGGER_BACKWARD, else 0; ``forced`` (Tuning.cluster_stagger) overrides the rule."""
    return first_wave_stagger(resident_clusters, CLUSTER_STAGGER_BACKWARD and rows > resident_clusters, forced)


def first_wave_stagger(resident_clusters: int, rule: bool, forced: bool | None) -> int:
    """A ``stagger`` argument (cluster_tier.cuh's stagger_first_wave): the resident clusters' count
    where the tier's ``rule`` takes the wait, else 0; ``forced`` (a Tuning field) overrides the rule."""
    return resident_clusters if (rule if forced is None else forced) else 0


def grid_row_workspace(ctas: int, backward: bool) -> int:
    """float32 elements of a grid_row launch's workspace: each CTA's (max, sum) pair (backward: its
    sum), for two rows in turn."""
    return 2 * ctas * (1 if backward else 2)


def cluster_grid(rows: int, resident: int, backward: bool) -> int:
    """Clusters to launch: one per row in both directions, which measured faster than the
    resident clusters looping over rows (H100, register-held kernels: 1024 x 128256 bf16 forward
    0.94 against 0.87 of copy bandwidth, backward 0.99 against 0.92). Any count from 1 to rows is
    correct."""
    return rows


@dataclass(frozen=True)
class Instance:
    """One kernel: a tier's template with every parameter fixed."""

    tier: str  # "warp", "flat_rows", "block_regs", "block_smem", "block_uncached", "split_row", "cluster", "grid_row",
    # "cluster_stream"
    # (inner > 1: strided.py)
    dtype: torch.dtype
    backward: bool
    log: bool
    pack: int = 1
    cols: int = 0  # warp, block_regs: elements per thread; flat_rows: elements of a row a lane holds
    group: int = 0  # warp, flat_rows: lanes per row
    rows: int = 0  # warp: rows per group
    stage: str = ""  # split_row: "partials" (kernel 1) or "finish" (kernel 2)
    storage: str = ""  # block_regs: block_regs_storage(...); "" takes its default; cluster: "kept", "alike", "capped"
    window: bool = False  # warp, block_regs: rows held in their aligned window's packs (WINDOW_PACK)
    # cluster, cluster_stream: runs of interleaved columns (cluster_tier.cuh's column kernels,
    # grid_row_tier.cuh's cluster_stream_*_columns)
    columns: bool = False
    tight: bool = False  # flat_rows: rows of (cols - 1) x group + 1 .. cols x group (FlatSlots)
    per_sm: int = 0  # cluster_stream: CTAs an SM its launch bounds allow (0: one, as grid_row)

    def __post_init__(self):
        # one spelling per kernel, so that equal kernels compare equal
        if self.tier == "block_regs" and not self.storage:
            object.__setattr__(self, "storage", block_regs_storage(self.dtype, self.backward, self.cols))
        if self.per_sm == 1:  # one CTA an SM is every tier's launch bound unless told otherwise
            object.__setattr__(self, "per_sm", 0)
        if self.window and (self.tier not in ("warp", "block_regs") or self.pack != WINDOW_PACK[self.dtype]):
            raise ValueError(f"no window form of tier {self.tier!r} at pack {self.pack} of {self.dtype}")
        if self.columns and (self.tier not in ("cluster", "cluster_stream") or self.storage):
            raise ValueError(f"no column form of tier {self.tier!r} with storage {self.storage!r}")
        if self.tier == "grid_row" and self.storage not in ("", "teams"):
            raise ValueError(f"no form {self.storage!r} of tier 'grid_row'")
        if self.tight and self.tier != "flat_rows":
            raise ValueError(f"no tight form of tier {self.tier!r}")
        if self.per_sm and (self.tier != "cluster_stream" or self.per_sm not in CLUSTER_STREAM_PER_SM):
            raise ValueError(f"no form of tier {self.tier!r} at {self.per_sm} CTAs an SM")

    @property
    def block_storage(self) -> str:
        """block_regs: where a thread's share of the row lives."""
        return self.storage

    @property
    def name(self) -> str:
        tag = CXX_TYPES[self.dtype][1]
        direction = "bwd" if self.backward else "fwd"
        fn = "logsoftmax" if self.log else "softmax"
        if self.tier == "warp":
            shape = f"p{self.pack}_c{self.cols}_g{self.group}_r{self.rows}" + ("_window" if self.window else "")
        elif self.tier == "block_regs":
            storage = self.block_storage
            shape = f"p{self.pack}_c{self.cols}" + ("" if storage == "float" else f"_{storage}")
            shape += "_window" if self.window else ""
        elif self.tier in ("cluster", "grid_row", "cluster_stream") and self.cols:
            shape = f"p{self.pack}_c{self.cols}" + (f"_{self.storage}" if self.storage else "")
            shape += "_columns" if self.columns else ""
            shape += f"_x{self.per_sm}" if self.per_sm > 1 else ""
        elif self.tier in ("block_smem", "block_uncached", "cluster"):
            shape = f"p{self.pack}"
        elif self.tier == "flat_rows":
            tight = "_tight" if self.tight else ""
            return f"fs_flat_rows_{fn}_{direction}_{tag}_k{self.cols}_g{self.group}{tight}"
        elif self.tier == "split_row":
            shape = f"p{self.pack}_{self.stage}"
            if self.stage == "partials" and not self.backward:
                fn = "maxsum"  # the same for softmax and log-softmax
        else:
            shape = f"p{self.pack}"
        return f"fs_{self.tier}_{fn}_{direction}_{tag}_{shape}"

    @property
    def header(self) -> str:
        return {
            "warp": "warp_tier.cuh",
            "flat_rows": "flat_rows_tier.cuh",
            "block_regs": "block_regs_tier.cuh",
            "block_smem": "block_tier.cuh",
            "block_uncached": "block_tier.cuh",
            "split_row": "split_row_tier.cuh",
            "cluster": "cluster_tier.cuh",
            "grid_row": "grid_row_tier.cuh",
            "cluster_stream": "grid_row_tier.cuh",
        }[self.tier]

    def wrapper(self) -> str:
        t = CXX_TYPES[self.dtype][0]
        log = "true" if self.log else "false"
        registers = 0
        if self.tier == "warp":
            bounds = WARP_TIER_BLOCK
            window = "true" if self.window else "false"
            targs = f"{t}, {self.pack}, {self.cols}, {self.group}, {self.rows}, {log}, {window}"
            fn = "warp_backward" if self.backward else "warp_forward"
        elif self.tier == "block_regs":
            storage = self.block_storage
            bounds = block_regs_max_threads(self.backward, self.cols)
            if storage == "staged":  # as many blocks as the SM's threads allow, up to three
                bounds = f"{bounds}, {min(BLOCK_REGS_STAGED_BLOCKS_PER_SM, MAX_THREADS_PER_SM // bounds)}"
            registers = block_regs_max_registers(self.backward, self.cols, self.window, self.dtype, storage, self.pack)
            window = "true" if self.window else "false"
            targs = f"{t}, {self.pack}, {self.cols // self.pack}, {log}, {BLOCK_REGS_STORAGES[storage]}, {window}"
            fn = "block_regs_backward" if self.backward else "block_regs_forward"
        elif self.tier in ("block_smem", "block_uncached"):
            bounds = BLOCK_TIER_MAX_THREADS
            cached = "true" if self.tier == "block_smem" else "false"
            targs = f"{t}, {self.pack}, {log}, {cached}"
            fn = "block_backward" if self.backward else "block_forward"
        elif self.tier == "flat_rows":
            return self._flat_rows_wrapper(t, log)
        elif self.tier == "split_row":
            return self._split_row_wrapper(t, log)
        elif self.tier == "cluster":
            return self._cluster_wrapper(t, log)
        elif self.tier in ("grid_row", "cluster_stream"):
            return self._grid_row_wrapper(t, log)
        else:
            raise ValueError(f"no row-tier wrapper for tier {self.tier!r}")
        if self.backward:
            params = f"const {t}* y, const {t}* dy, {t}* dx, i64 rows, i64 n, i64 y_pitch, i64 dy_pitch, i64 dx_pitch"
            args = "y, dy, dx, rows, n, y_pitch, dy_pitch, dx_pitch"
        else:
            params = f"const {t}* x, {t}* y, i64 rows, i64 n, i64 x_pitch, i64 y_pitch"
            args = "x, y, rows, n, x_pitch, y_pitch"
        bound = kernel_bound(registers, bounds)
        return f'extern "C" __global__ void {bound} {self.name}({params}) {{\n    {fn}<{targs}>({args});\n}}\n'

    def _flat_rows_wrapper(self, t: str, log: str) -> str:
        tight = "true" if self.tight else "false"
        if self.backward:
            params = (
                f"const {t}* y, const {t}* dy, {t}* dx, i64 rows, i64 n, i64 y_pitch, i64 dy_pitch, i64 dx_pitch, "
                "i64 rows_per_cta, i64 spread"
            )
            call = (
                f"flat_rows_backward<{t}, {log}, {self.cols}, {self.group}, {tight}>(y, dy, dx, rows, n, y_pitch, "
                "dy_pitch, dx_pitch, rows_per_cta, spread != 0)"
            )
        else:
            params = f"const {t}* x, {t}* y, i64 rows, i64 n, i64 x_pitch, i64 y_pitch, i64 rows_per_cta, i64 spread"
            call = (
                f"flat_rows_forward<{t}, {log}, {self.cols}, {self.group}, {tight}>(x, y, rows, n, x_pitch, "
                "y_pitch, rows_per_cta, spread != 0)"
            )
        return (
            f'extern "C" __global__ void __launch_bounds__({FLAT_ROWS_THREADS}) {self.name}({params}) {{\n'
            f"    {call};\n}}\n"
        )

    def _cluster_wrapper(self, t: str, log: str) -> str:
        packs = self.cols // self.pack
        if not packs:
            raise ValueError(f"{self.name}: a cluster instance holds K >= 1 packs a thread (cols = K x pack)")
        kept = cluster_keeps(self.dtype, self.backward, self.log, self.cols)
        capped = cluster_capped(self.dtype, self.backward, self.cols) and not self.columns
        if self.storage not in ("", *("kept",) * kept, *("alike",) * (not self.columns), *("capped",) * capped):
            raise ValueError(f"{self.name}: no cluster form {self.storage!r} for this instance")
        keep = "true" if self.storage == "kept" else "false"
        alike = "true" if self.storage == "alike" else "false"
        targs = f"{t}, {self.pack}, {packs}, {log}"
        if self.columns:
            if self.backward:
                params = (
                    f"const {t}* y, const {t}* dy, {t}* dx, i64 rows, i64 n, i64 y_pitch, i64 dy_pitch, "
                    f"i64 dx_pitch, i64 inner"
                )
                call = (
                    f"cluster_backward_columns<{targs}>(DirectLoad<{t}>{{y, y_pitch}}, "
                    f"DirectLoad<{t}>{{dy, dy_pitch}}, DirectStore<{t}>{{dx, dx_pitch}}, rows, n, inner)"
                )
            else:
                params = f"const {t}* x, {t}* y, i64 rows, i64 n, i64 x_pitch, i64 y_pitch, i64 inner"
                call = (
                    f"cluster_forward_columns<{targs}>(DirectLoad<{t}>{{x, x_pitch}}, "
                    f"DirectStore<{t}>{{y, y_pitch}}, rows, n, inner)"
                )
        elif self.backward:
            params = (
                f"const {t}* y, const {t}* dy, {t}* dx, i64 rows, i64 n, i64 y_pitch, i64 dy_pitch, i64 dx_pitch, "
                "i64 stagger"
            )
            call = (
                f"cluster_backward_regs<{targs}, {alike}>("
                f"DirectLoad<{t}>{{y, y_pitch}}, "
                f"DirectLoad<{t}>{{dy, dy_pitch}}, DirectStore<{t}>{{dx, dx_pitch}}, rows, n, stagger)"
            )
        else:
            params = f"const {t}* x, {t}* y, i64 rows, i64 n, i64 x_pitch, i64 y_pitch"
            call = (
                f"cluster_forward_regs<{targs}, {keep}, {alike}>(DirectLoad<{t}>{{x, x_pitch}}, "
                f"DirectStore<{t}>{{y, y_pitch}}, "
                "rows, n)"
            )
        registers = cluster_max_registers(self.dtype, self.backward, self.cols, self.columns, self.storage)
        # the cap sets how many CTAs of the thread counts this instance is launched with share an SM
        bound = kernel_bound(registers, cluster_max_threads(self.backward, packs))
        return f'extern "C" __global__ void {bound} {self.name}({params}) {{\n    {call};\n}}\n'

    def _grid_row_wrapper(self, t: str, log: str) -> str:
        # one kernel body, two teams: the cooperative grid (a workspace for its pairs) or a cluster
        targs = f"{t}, {self.pack}, {self.cols // self.pack}, {log}"
        grid = self.tier == "grid_row"
        ws, team = ("float* ws, ", "RowGridTeam{ws}, ") if grid else ("", "")
        if self.storage == "teams":
            team = "RowGridTeams{ws, rows, (unsigned)team_ctas}, "
        fn = "grid_row" if grid else "cluster_stream"
        # the last argument: cluster_stream's column form's interleaved columns, its row form's
        # clusters that wait their turn (RowClusterTeam::wait_turn), grid_row's CTAs a team in teams
        if self.columns:
            suffix, tail, tail_param = "_columns", ", inner", ", i64 inner"
        elif self.storage == "teams":
            suffix, tail, tail_param = "", "", ", i64 team_ctas"
        elif grid:
            suffix, tail, tail_param = "", "", ""
        else:
            suffix, tail, tail_param = "", ", stagger", ", i64 stagger"
        if self.backward:
            params = (
                f"const {t}* y, const {t}* dy, {t}* dx, {ws}i64 rows, i64 n, i64 y_pitch, i64 dy_pitch, "
                f"i64 dx_pitch, i64 smem_slots{tail_param}"
            )
            call = (
                f"{fn}_backward{suffix}<{targs}>(DirectLoad<{t}>{{y, y_pitch}}, DirectLoad<{t}>{{dy, dy_pitch}}, "
                f"DirectStore<{t}>{{dx, dx_pitch}}, {team}rows, n, smem_slots{tail})"
            )
        else:
            params = f"const {t}* x, {t}* y, {ws}i64 rows, i64 n, i64 x_pitch, i64 y_pitch, i64 smem_slots{tail_param}"
            call = (
                f"{fn}_forward{suffix}<{targs}>(DirectLoad<{t}>{{x, x_pitch}}, DirectStore<{t}>{{y, y_pitch}}, "
                f"{team}rows, n, smem_slots{tail})"
            )
        # one CTA per SM (or per_sm of GRID_ROW_THREADS / per_sm threads): the compiler may give each
        # thread 128 registers for the held slots
        per_sm = self.per_sm or 1
        bounds = f"{GRID_ROW_THREADS // per_sm}, {per_sm}"
        return f'extern "C" __global__ void __launch_bounds__({bounds}) {self.name}({params}) {{\n    {call};\n}}\n'

    def _split_row_wrapper(self, t: str, log: str) -> str:
        if not self.backward and self.stage == "partials":
            params = f"const {t}* x, float* partials, i64 n, i64 x_pitch, i64 chunk, i64 splits"
            call = f"split_forward_partials<{t}, {self.pack}>(x, partials, n, x_pitch, chunk, splits)"
        elif not self.backward:
            params = (
                f"const {t}* x, {t}* y, const float* partials, i64 n, i64 x_pitch, i64 y_pitch, i64 chunk, i64 splits"
            )
            call = f"split_forward_finish<{t}, {self.pack}, {log}>(x, y, partials, n, x_pitch, y_pitch, chunk, splits)"
        elif self.stage == "partials":
            params = (
                f"const {t}* y, const {t}* dy, float* partials, i64 n, i64 y_pitch, i64 dy_pitch, i64 chunk, i64 splits"
            )
            call = (
                f"split_backward_partials<{t}, {self.pack}, {log}>(y, dy, partials, n, y_pitch, dy_pitch, chunk, "
                f"splits)"
            )
        else:
            params = (
                f"const {t}* y, const {t}* dy, {t}* dx, const float* partials, i64 n, i64 y_pitch, "
                f"i64 dy_pitch, i64 dx_pitch, i64 chunk, i64 splits"
            )
            call = (
                f"split_backward_finish<{t}, {self.pack}, {log}>(y, dy, dx, partials, n, y_pitch, dy_pitch, "
                f"dx_pitch, chunk, splits)"
            )
        return (
            f'extern "C" __global__ void __launch_bounds__({SPLIT_ROW_BLOCK}) {self.name}({params}) {{\n'
            f"    {call};\n}}\n"
        )


#: elements a pack of cluster_stream's column kernels: 8-byte packs of 4 columns in 16-bit types, as
#: the cluster tier's column kernels (CLUSTER_COLUMNS_PACK), 16 bytes in float32. 16-byte packs of 8
#: 16-bit columns (every per-column value a thread keeps doubles), H200, alternated in one process
#: (results 2026-11-28_h200_s32/column_stream_pack_ab.txt): bf16 backward over dim 1 (32, 65536, 16)
#: 0.548 of copy against 0.613, (64, 65536, 16) 0.607 against 0.632, (16, 1048576, 2), which its
#: CTAs hold half on chip, 0.513 against 0.443; the forward 0.01-0.05 ahead, behind the staged tiles
COLUMN_STREAM_PACK = 4


def column_stream_pack(dtype: torch.dtype) -> int:
    """Elements a pack of cluster_stream's column kernels (COLUMN_STREAM_PACK, at most 16 bytes)."""
    return min(cluster_pack(dtype), COLUMN_STREAM_PACK)


def grid_row_held_packs(dtype: torch.dtype, backward: bool, pack: int) -> int:
    """Packs a grid_row or cluster_stream thread holds in registers per tensor: GRID_ROW_HELD_PACKS'
    16 bytes each, in as many packs of ``pack`` elements."""
    return GRID_ROW_HELD_PACKS[backward] * cluster_pack(dtype) // pack


def grid_row_instance(
    dtype: torch.dtype,
    backward: bool,
    log: bool,
    tier: str = "grid_row",
    per_sm: int = 1,
    columns: bool = False,
    teams: bool = False,
) -> Instance:
    """The grid_row (or cluster_stream: the same kernel body) instance of a dtype, direction and
    function; cluster_stream's at ``per_sm`` CTAs an SM, or over runs of interleaved columns where
    ``columns`` (one CTA an SM, in packs of column_stream_pack); grid_row's with its grid in teams
    where ``teams`` (grid_row_team_shape)."""
    if columns and per_sm != 1:
        raise ValueError("cluster_stream's column kernels run one CTA an SM")
    pack = column_stream_pack(dtype) if columns else cluster_pack(dtype)
    cols = grid_row_held_packs(dtype, backward, pack) * pack
    storage = "teams" if teams else ""
    return Instance(tier, dtype, backward, log, pack, cols=cols, per_sm=per_sm, columns=columns, storage=storage)


def source_for(instances) -> str:
    """A translation unit defining every instance in ``instances``."""
    headers = sorted({inst.header for inst in instances})
    lines = [f'#include "{h}"' for h in headers]
    lines += ["using namespace fastsoftmax;", ""]
    lines += [inst.wrapper() for inst in instances]
    return "\n".join(lines)


# ---- which instance serves a problem ------------------------------------------------------------


def widest_pack(packs, align: int, itemsize: int, fits=lambda pack: True) -> int | None:
    """The widest pack (elements) in ``packs`` that every pointer and byte stride of a problem is
    aligned to (``align``: their common power-of-two alignment, see ``plans.alignment``) and that
    ``fits`` accepts; None where none is (``packs`` without 1)."""
    return next((p for p in packs if align % (p * itemsize) == 0 and fits(p)), None)


def next_pow2(v: int) -> int:
    return 1 if v <= 1 else 1 << (v - 1).bit_length()


def warp_shape(
    n: int,
    pack: int,
    itemsize: int = 4,
    sector_groups: bool = False,
    rows: int | None = None,
    backward: bool = False,
    window: bool = False,
    lanes: int | None = None,
) -> tuple[int, int, int]:
    """(cols per thread, lanes per row, rows per group) of the warp tier for rows of n <= 1024 (longer
    16-bit forward rows: warp_long_shape's; ``window``: n columns of rows held in their 16-byte window,
    one row a group);
    ``sector_groups``: 16-bit rows in narrow packs take SECTOR_GROUPS_16BIT where a row fills them;
    ``rows``: rows per group instead of the default (WARP_ROWS, where warp_holds_rows allows it);
    ``lanes``: lanes a row instead of the default (WARP_LANES_16BIT, one row a group; by default
    warp_default_lanes where ``rows`` asks for none other than one)."""
    if n > WARP_TIER_MAX_COLS:
        return warp_long_shape(n, pack, itemsize, backward, rows, lanes)
    if lanes is None and rows in (None, 1) and not window:
        lanes = warp_default_lanes(n, pack, itemsize, backward)
    if lanes is not None:
        return _warp_shape_of_lanes(n, pack, itemsize, lanes, rows, window)
    cols, group, default_rows = _default_warp_shape(n, pack, itemsize, sector_groups)
    one_pack_warp = group == 32 and cols == pack and pack * itemsize == 16
    if WARP_TWO_ROWS_FLOAT32_FORWARD and itemsize == 4 and not (backward or window) and one_pack_warp:
        default_rows = 2
    if rows is None or rows == default_rows:
        return cols, group, default_rows
    if window:
        raise ValueError(f"the warp tier holds rows in their 16-byte window one a group, not {rows}")
    if not warp_holds_rows(cols, pack, itemsize, rows):
        raise ValueError(
            f"the warp tier holds {rows} rows a group only in 16-byte packs of at most "
            f"{WARP_MULTI_ROW_MAX_COLS} columns a lane ({WARP_ROWS}); rows of {n} take {cols} columns "
            f"a lane in packs of {pack * itemsize} bytes"
        )
    return cols, group, rows


def warp_long_shape(
    n: int, pack: int, itemsize: int, backward: bool, rows: int | None, lanes: int | None
) -> tuple[int, int, int]:
    """warp_shape's shape for the 16-bit forward's long rows (WARP_LONG_COLS_16BIT columns a lane over
    a whole warp, one row a group; n: a row's columns, or its 16-byte window's span, which the window
    instances hold alike), or ValueError naming what they are not."""
    cols = next((c for c in WARP_LONG_COLS_16BIT if c * 32 >= n), None)
    refusals = (
        (backward, "the backward"),
        (itemsize != 2, f"{itemsize}-byte elements"),
        (pack * itemsize != 16, f"packs of {pack * itemsize} bytes (rows off their 16-byte boundaries)"),
        (rows not in (None, 1), f"{rows} rows a group"),
        (lanes not in (None, 32), f"{lanes} lanes a row"),
    )
    why = next((reason for refused, reason in refusals if refused), None)
    if why:
        raise ValueError(
            f"the warp tier holds rows past {WARP_TIER_MAX_COLS} columns only in the 16-bit forward, in 16-byte "
            f"packs (on their boundaries, or of their window), a whole warp a row: rows of {n} in {why}"
        )
    if cols is None:
        raise ValueError(f"rows of {n} columns are too long for the warp tier (at most {WARP_LONG_MAX_COLS})")
    return cols, 32, 1


def warp_default_lanes(n: int, pack: int, itemsize: int, backward: bool = False) -> int | None:
    """The lanes a 16-bit row of n in 16-byte packs takes by default (WARP_LANES_AFTER_PACKS), or
    None where warp_shape's own rule holds it (narrower rows, other packs, rows of more than
    WARP_LANES_PACKS_A_LANE packs a lane over a whole warp)."""
    packs = -(-n // pack)
    if itemsize != 2 or pack * itemsize != 16 or packs <= WARP_LANES_AFTER_PACKS[backward]:
        return None
    lanes_by_default = WARP_DEFAULT_LANES_16BIT[backward]
    return next((lanes for lanes in lanes_by_default if -(-packs // lanes) <= WARP_LANES_PACKS_A_LANE), None)


def _warp_shape_of_lanes(
    n: int, pack: int, itemsize: int, lanes: int, rows: int | None, window: bool
) -> tuple[int, int, int]:
    """warp_shape's shape for rows of n held by ``lanes`` lanes each (Tuning.warp_lanes)."""
    cols = next((c for c in WARP_COLS_PER_THREAD if c % pack == 0 and c * lanes >= n), None)
    fits = cols is not None and (cols == pack or cols <= WARP_LANES_MAX_COLS)
    if itemsize != 2 or pack * itemsize != 16 or window or lanes not in WARP_LANES_16BIT or not fits:
        raise ValueError(
            f"the warp tier holds a row over {lanes} lanes only for 16-bit rows in 16-byte packs (not in "
            f"a window), {WARP_LANES_16BIT} lanes of up to {WARP_LANES_MAX_COLS} columns; rows of {n} "
            f"in packs of {pack * itemsize} bytes"
        )
    if rows not in (None, 1):
        raise ValueError(f"the warp tier holds rows over {lanes} lanes one a group, not {rows}")
    return cols, lanes, 1


def warp_holds_rows(cols: int, pack: int, itemsize: int, rows: int) -> bool:
    """Whether a warp instance of ``cols`` columns a lane in packs of ``pack`` exists with ``rows``
    rows a group (warp_shapes lists it)."""
    return rows in WARP_ROWS and pack * itemsize == 16 and cols <= WARP_MULTI_ROW_MAX_COLS


def _default_warp_shape(n: int, pack: int, itemsize: int, sector_groups: bool) -> tuple[int, int, int]:
    group = SECTOR_GROUPS_16BIT.get(pack) if sector_groups and itemsize == 2 else None
    if group and group * pack < n <= SECTOR_GROUP_MAX_COLS[pack]:
        return next(c for c in SECTOR_GROUP_COLS if c % pack == 0 and c * group >= n), group, 1
    if n <= 32 * pack:
        # a narrow group leaves the warp's other lanes to further rows (one a group: WARP_ROWS)
        return pack, next_pow2(-(-n // pack)), 1
    need = -(-n // 32)
    for cols in WARP_COLS_PER_THREAD:
        if cols % pack == 0 and cols >= need:
            return cols, 32, 1
    raise ValueError(f"rows of {n} columns are too long for the warp tier (at most {WARP_TIER_MAX_COLS})")


def block_regs_shape(n: int, dtype: torch.dtype, pack: int, backward: bool, target: int) -> tuple[int, int]:
    """(elements per thread, threads) of the block_regs tier for a row of n: the first compiled
    element count from ``target`` up whose threads can hold the row (the largest there is when
    none reaches ``target``), and the threads that needs, in whole warps."""
    options = block_regs_elems(dtype, pack, backward)
    packs = -(-n // pack)
    for elems in [e for e in options if e >= target] or [options[-1]]:
        threads = -(-packs // (elems // pack))
        if threads <= block_regs_max_threads(backward, elems):
            return elems, max(32, -(-threads // 32) * 32)
    raise ValueError(
        f"rows of {n} columns are too long for the block_regs tier "
        f"(at most {block_regs_max_cols(dtype, backward)} {'backward' if backward else 'forward'})"
    )


def block_regs_max_cols(dtype: torch.dtype, backward: bool) -> int:
    """The longest row block_regs holds at every pack size: 32768 forward, 16384 backward."""
    return min(
        max(e * block_regs_max_threads(backward, e) for e in block_regs_elems(dtype, pack, backward))
        for pack in BLOCK_REGS_PACK_SIZES[dtype]
    )


def warp_shapes(pack: int, itemsize: int = 4, multi_rows: bool = False):
    """(cols, group, rows) of every warp instance of a pack; ``multi_rows``: with the WARP_ROWS a
    tuning may ask for (rows on 16-byte boundaries, warp_holds_rows)."""
    for group in NARROW_GROUPS:
        for rows in (1, 2):
            yield pack, group, rows
        if multi_rows and warp_holds_rows(pack, pack, itemsize, 4):
            yield pack, group, 4
    for cols in WARP_COLS_PER_THREAD:
        if cols % pack == 0:
            yield cols, 32, 1
            for rows in WARP_ROWS[1:]:
                if multi_rows and warp_holds_rows(cols, pack, itemsize, rows):
                    yield cols, 32, rows
    if multi_rows and itemsize == 2 and pack * itemsize == 16:
        # Tuning.warp_lanes: several packs a lane over part of a warp (one pack a lane is a narrow
        # group's own shape, above)
        for lanes in (lanes for lanes in WARP_LANES_16BIT if lanes < 32):  # a whole warp's shapes are above
            for cols in WARP_COLS_PER_THREAD:
                if cols % pack == 0 and pack < cols <= WARP_LANES_MAX_COLS:
                    yield cols, lanes, 1
    if itemsize == 2 and pack in SECTOR_GROUPS_16BIT:
        group = SECTOR_GROUPS_16BIT[pack]
        for cols in SECTOR_GROUP_COLS:
            # cols == pack is a narrow group's own shape (NARROW_GROUPS, one row)
            if cols % pack == 0 and cols > pack and (cols - pack) * group < SECTOR_GROUP_MAX_COLS[pack]:
                yield cols, group, 1


def all_instances():
    """Every instance the backend may launch: what CI compiles."""
    out = []
    for dtype in DTYPES:
        for backward in (False, True):
            for log in (False, True):
                for pack in WARP_PACK_SIZES[dtype]:
                    for cols, group, rows in warp_shapes(pack, CXX_TYPES[dtype][2], multi_rows=True):
                        out.append(Instance("warp", dtype, backward, log, pack, cols, group, rows))
                wide = WINDOW_PACK[dtype]
                for cols, group, rows in warp_shapes(wide):
                    out.append(Instance("warp", dtype, backward, log, wide, cols, group, rows, window=True))
                if warp_has_long_rows(CXX_TYPES[dtype][2], backward):
                    for cols in WARP_LONG_COLS_16BIT:
                        for window in (False, True):
                            out.append(Instance("warp", dtype, backward, log, wide, cols, 32, 1, window=window))
                for pack, window in [(p, False) for p in BLOCK_REGS_PACK_SIZES[dtype]] + [(wide, True)]:
                    for elems in block_regs_elems(dtype, pack, backward):
                        storages = {
                            block_regs_storage(dtype, backward, elems, long, short)
                            for long in LONG_ROW_STORAGES_16BIT
                            for short in ("float", "raw")  # short_row_storage_16bit's choices
                        }
                        for storage in sorted(storages):
                            shape = dict(cols=elems, storage=storage, window=window)
                            out.append(Instance("block_regs", dtype, backward, log, pack, **shape))
                for pack in PACK_SIZES[dtype]:
                    for tier in ("block_smem", "block_uncached"):
                        out.append(Instance(tier, dtype, backward, log, pack))
                    out.append(Instance("split_row", dtype, backward, log, pack, stage="finish"))
                    if backward or not log:
                        out.append(Instance("split_row", dtype, backward, log, pack, stage="partials"))
                for packs in cluster_held_packs(backward):
                    held = packs * cluster_pack(dtype)
                    out.append(Instance("cluster", dtype, backward, log, cluster_pack(dtype), cols=held))
                    forms = ("kept",) * cluster_keeps(dtype, backward, log, held) + ("alike",)
                    for form in forms + ("capped",) * cluster_capped(dtype, backward, held):
                        out.append(
                            Instance("cluster", dtype, backward, log, cluster_pack(dtype), cols=held, storage=form)
                        )
                    pack = CLUSTER_COLUMNS_PACK
                    out.append(Instance("cluster", dtype, backward, log, pack, cols=packs * pack, columns=True))
                out.append(grid_row_instance(dtype, backward, log))
                out.append(grid_row_instance(dtype, backward, log, teams=True))
                for per_sm in CLUSTER_STREAM_PER_SM:
                    out.append(grid_row_instance(dtype, backward, log, "cluster_stream", per_sm))
                out.append(grid_row_instance(dtype, backward, log, "cluster_stream", columns=True))
                out += [
                    Instance("flat_rows", dtype, backward, log, cols=k, group=g)
                    for k in FLAT_ROWS_LANE_ELEMS
                    for g in FLAT_ROWS_GROUPS
                ]
                out += [
                    Instance("flat_rows", dtype, backward, log, cols=k, group=g, tight=True)
                    for k, g in flat_rows_tight_shapes()
                ]
    from .strided import all_instances as strided_instances  # its module imports this one

    return out + strided_instances()
