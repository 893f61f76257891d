"""Which tier of the CUDA backend computes a problem, from its shape and its device's limits.

Tiers, from short rows to long ones:

* ``warp``            rows of n <= 1024: a warp (or a narrower lane group) per row, row in registers;
                      16-bit forward rows of up to 3072 on 16-byte boundaries, many of them, over a
                      whole warp (warp_takes_long_rows);
* ``flat_rows``       rows of 2 (16-bit forward: 3) to 64 (16-bit: 256 forward, 184 backward;
                      float32 forward: 96; the tier holds up to 1024), mostly off 16-byte
                      boundaries, one after another
                      (channels-last images over their channels): a CTA's rows copied through
                      shared memory as one run of 16-byte pieces (flat_rows_tier.cuh;
                      takes_flat_rows says which);
* ``block_regs``      rows of up to 32768 (16384 backward): a block per row holding the whole row
                      (in registers; long 16-bit rows staged in shared memory), one block launched
                      per row (16-bit backward rows from 512 columns, where it beats ``warp``;
                      16-bit forward rows of 1025-3072 where warp_takes_long_rows does not take them);
* ``block_smem``      longer rows whose copy fits in shared memory with two blocks per SM: a block
                      per row, the row cached in shared memory between the two passes;
* ``block_uncached``  longer rows still: a block per row, the second pass re-reads the row (L2);
* ``cluster``         (sm_90+) rows longer than block_regs holds, up to about a million 16-bit
                      elements, and forward rows past CLUSTER_OVER_BLOCK_REGS_AFTER_COLS on
                      16-byte boundaries: a thread-block cluster of up to 16 CTAs per row holds the
                      row in the CTAs' registers, exchanges (max, sum) through distributed shared
                      memory and writes the row once: one read, one write (cluster_tier.cuh);
* ``split_row``       few long rows (fewer than the SMs) where there are no clusters, and rows too
                      long for a cluster: each row split over many blocks, two kernels (partial
                      (max, sum) per chunk, then merge and write);
* ``grid_row``        one huge row (or a few) over every CTA resident at once, one cooperative
                      launch with a grid-wide barrier, the row held in registers and shared
                      memory and read once where it fits on chip (grid_row_tier.cuh); chosen where
                      it measured faster than split_row (GRID_ROW_ROW_BYTES), and for rows its
                      grid holds in teams, each team on rows of its own (grid_row_in_teams);
* ``cluster_stream``  (sm_90+) many rows longer than the cluster tier holds: grid_row's kernels with
                      one thread-block cluster per row for the team, each CTA holding its slice in
                      registers and shared memory and re-reading only what does not fit
                      (grid_row_tier.cuh); chosen from CLUSTER_STREAM_MIN_ROWS rows (but the
                      backward's that grid_row holds in teams), and for 16-bit
                      forward rows past 2^19 that the cluster tier holds
                      (cluster_preferred_max_cols);
* ``strided_staged``  inner > 1: tiles of columns copied into shared memory once, reduced and
                      written from there (strided.py lists its forms);
* ``strided_warp``    inner > 1, short reduced axes: a group of warps holds all n rows of its
                      columns in registers (strided_warp.cuh);
* ``strided``         inner > 1: tiles of columns along the contiguous axis, 16-byte packs per
                      thread, reduced over n; n is split over blocks (two kernels) when the
                      tiles alone cannot fill the GPU.

Tuning values that benchmarks sweep are not module globals: ``tuned(...)`` sets them for the
enclosed calls of the current thread (or asyncio task) only, and they are part of every plan's key.
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import KW_ONLY, dataclass, replace

import torch

from ..base import high_dram_bandwidth_per_sm
from . import strided
from .instances import (
    CLUSTER_HELD_PACKS,
    CLUSTER_SIZES,
    CLUSTER_STREAM_PER_SM,
    CXX_TYPES,
    FLAT_ROWS_AUTO_MAX_COLS,
    FLAT_ROWS_AUTO_MAX_COLS_16BIT,
    FLAT_ROWS_AUTO_MAX_COLS_16BIT_ALIGNED_FORWARD,
    FLAT_ROWS_AUTO_MAX_COLS_FP32_FORWARD,
    FLAT_ROWS_MAX_BANK_WAYS,
    FLAT_ROWS_MAX_COLS,
    FLAT_ROWS_MIN_COLS,
    FLAT_ROWS_MIN_COLS_16BIT_FORWARD,
    FLAT_ROWS_TIGHT_MAX_BANK_WAYS,
    LONG_ROW_STORAGES_16BIT,
    SHORT_ROW_STORAGE_16BIT,
    SHORT_ROW_STORAGES_16BIT,
    WARP_LANES_16BIT,
    WARP_LONG_MAX_COLS,
    WARP_ROWS,
    WARP_TIER_MAX_COLS,
    WINDOW_PACK,
    block_regs_max_cols,
    block_regs_shape,
    block_regs_staged_bytes,
    block_regs_storage,
    cluster_max_cols,
    cluster_preferred_max_cols,
    flat_rows_bank_ways,
    grid_row_dynamic_smem,
    grid_row_team_shape,
    warp_default_lanes,
    warp_has_long_rows,
)

ROW_TIERS = (
    "warp",
    "flat_rows",
    "block_regs",
    "cluster",
    "block_smem",
    "block_uncached",
    "split_row",
    "grid_row",
    "cluster_stream",
)
TIERS = ROW_TIERS + strided.TIERS
#: split_row serves rows at least this long when there are fewer rows than SMs
SPLIT_ROW_MIN_COLS = 16384
#: each split_row block takes at least this many elements (8 per thread at 512 threads)
SPLIT_ROW_MIN_CHUNK = 4096
#: split_row aims for this many blocks per SM in all: one wave of longer-lived blocks. H100, 2
#: against 4 alternated in one process (benchmarks/grid_row_probe.py, results 2026-11-23_h100_s8/
#: split_row_blocks_per_sm.txt): faster or level on all 16 cases, e.g. bf16 1 x 2^24 forward 0.54
#: of copy against 0.52, 1 x 2^21 0.24 against 0.21, float32 1 x 2^24 backward 0.55 against 0.53
#: (3 won float32 and the backward by up to 0.01 more but lost bf16 forward; 1 lost most cases)
SPLIT_ROW_BLOCKS_PER_SM = 2
#: block_regs: elements per thread to aim for (more when 1024 threads need them for the row), by
#: (bytes per element, backward), as (rows up to n columns, target) steps. Measured on an H100 with
#: benchmarks/cuda_probe.py: 16-bit rows want few elements a thread while short and many once long
#: (64 a thread: staged in shared memory, see block_regs_tier.cuh); float32 is at copy bandwidth
#: from 8 to 32.
BLOCK_REGS_TARGETS = {
    (4, False): ((32768, 16),),
    (2, False): ((1024, 8), (8192, 32), (32768, 64)),  # 64: staged
    (4, True): ((16384, 16),),
    (2, True): ((1024, 8), (8192, 16), (16384, 32)),
}
#: the 16-bit forward's targets for rows held in their windows (Instance.window): H100, bf16, the
#: targets forced and timed in turn (benchmarks/flat_rows_probe.py): 16 elements a thread against 32,
#: rows of 2047 0.82 of copy against 0.68, 3001 0.92 against 0.77, 5001 0.83 against 0.70 (8: 0.72-0.81)
BLOCK_REGS_WINDOW_TARGETS_16BIT_FORWARD = ((1024, 8), (8192, 16), (32768, 64))
#: rows held in their window and raw (instances.SHORT_ROW_STORAGE_16BIT): 16-bit forward rows take 32
#: elements a thread rather than the targets' 16 unless 32 leave more of their last warp idle, their
#: threads' fill below this share of 16's. H200, bf16, raw rows, both forced and alternated in one
#: process (results 2026-12-02_h200_s41/window_elems.txt): rows of 3001 0.863 of copy at 32 against
#: 0.804 at 16, 5001 0.830 against 0.717, 8191 0.728 against 0.606 (fill 0.89 against 0.94); 2500
#: 0.750 against 0.793 (fill 0.82 against 0.98), 1025 0.430 against 0.559 (0.52 against 0.68);
#: log-softmax alike
BLOCK_REGS_RAW_WINDOW_FILL_RATIO = 0.9
#: 16-bit backward rows of at least this many columns go to block_regs rather than the warp tier
#: (measured faster from 512 up; bf16 512-1024, results 2026-11-24_h100_s12: 1.03 of copy against
#: 1.02). The 16-bit forward keeps the warp tier to its 1024 columns: in CUDA graphs alternated in
#: one process (benchmarks/row_tier_ab.py, same set) bf16 rows of 520-1016 on 16-byte boundaries
#: 0.98-0.99 against block_regs' 0.80-0.97 (1000: 0.99 against 0.96; 800: 0.99 against 0.88), level
#: at 512, 768 and 1024.
BLOCK_REGS_MIN_COLS_16BIT = 512
#: block tiers size blocks so that a row gives each thread about this many packs: the kernels
#: load kUnroll (4) packs per thread before using any, and smaller blocks leave more of them per SM
BLOCK_PACKS_PER_THREAD = 4
#: shared memory the block tiers' static reduction scratch takes, on top of the row copy
STATIC_SMEM_RESERVE = 1024


@dataclass(frozen=True)
class Tuning:
    """Values a benchmark may sweep; None keeps the measured default."""

    #: block_regs: elements per thread to aim for, instead of BLOCK_REGS_TARGETS
    block_regs_elems: int | None = None
    #: block_regs: a grid of this many waves of resident blocks, each block taking rows in turn
    #: (the kernel strides over rows), instead of one block per row (H200, bf16 rows of 2048-4096:
    #: slower at every count, results 2026-12-02_h200_s41/waves.txt; kept to exercise the row loop)
    block_regs_waves: int | None = None
    #: block_regs: where forward 16-bit rows of 64 elements a thread live, one of
    #: instances.LONG_ROW_STORAGES_16BIT ("staged" in shared memory, "raw" in registers); None:
    #: "staged", measured faster on an H100 (benchmarks/results/2026-11-22_h100_s3)
    long_row_storage_16bit: str | None = None
    #: block_regs: where forward 16-bit rows of fewer elements a thread live, one of
    #: instances.SHORT_ROW_STORAGES_16BIT; None: instances.SHORT_ROW_STORAGE_16BIT
    short_row_storage_16bit: str | None = None
    #: strided_staged: CTAs per SM that shared memory is divided among, instead of
    #: strided.STAGED_CTAS_PER_SM (part of every plan key, like the other fields)
    staged_ctas_per_sm: int | None = None
    #: flat_rows: elements of a row a lane holds (one of instances.FLAT_ROWS_LANE_ELEMS), instead of
    #: instances.flat_rows_per_lane's choice
    flat_rows_per_lane: int | None = None
    #: flat_rows: the tight form (False: the general form) where rows are short enough for it
    #: (instances.FLAT_ROWS_TIGHT_MAX_COLS), instead of always there
    flat_rows_tight: bool | None = None
    #: flat_rows: a warp's row groups on rows apart (True) or consecutive (False), instead of
    #: whichever meets fewer words a shared-memory bank (instances.flat_rows_spread)
    flat_rows_spread: bool | None = None
    #: strided_staged: a team of CTAs launched as one thread-block cluster (True) or as part of
    #: the persistent cooperative grid (False), instead of a cluster wherever the device has them
    #: and a tile fits in strided.staged_max_cluster CTAs
    staged_cluster: bool | None = None
    #: strided_staged: the most CTAs of a clustered team where a tile needs more than
    #: strided.STAGED_FILL_CLUSTER (a power of two up to 16), instead of strided.staged_max_cluster,
    #: taken wherever a tile fits in that many (whether or not the clusters fill the GPU)
    staged_max_cluster: int | None = None
    #: strided_staged: microseconds the teams of odd index among the first wave wait before their
    #: first tile (0: none, at most strided.STAGED_STAGGER_MAX_US), instead of strided.STAGED_STAGGER_US
    staged_stagger_us: int | None = None
    #: strided_staged: columns of a tile (a multiple of 128 bytes, at most what strided.staged_shape
    #: allows), instead of one 128-byte line of each row, widened while one CTA holds the whole tile,
    #: and strided.staged_wide_tile's two lines for the float32 forward's persistent teams
    staged_tile_cols: int | None = None
    #: strided: bytes of a row a warp covers along the contiguous axis, instead of
    #: strided.STRIDED_ROW_BYTES
    strided_row_bytes: int | None = None
    #: strided: the most threads across a tile (a power of two from 32 up to strided.STRIDED_MAX_THREADS),
    #: instead of strided.STRIDED_MAX_WIDTH; the row bytes still bound it
    strided_max_width: int | None = None
    #: strided: chunk-major block order for split problems, instead of strided.STRIDED_CHUNK_MAJOR
    strided_chunk_major: bool | None = None
    #: strided: waves of resident blocks a split problem fills, instead of strided.STRIDED_WAVES
    strided_waves: int | None = None
    #: strided: chunks n is split into (1: one kernel, no split), instead of as many as fill
    #: strided_waves waves
    strided_splits: int | None = None
    #: strided: chunks rounded down to the waves' blocks (True) or up (False), instead of
    #: strided.STRIDED_WHOLE_WAVES's choice
    strided_whole_waves: bool | None = None
    #: strided: merge the split pairs in a kernel of their own (True) or in the finishing blocks
    #: (False), instead of from strided.STRIDED_MERGE_MIN_SPLITS splits
    strided_merge: bool | None = None
    #: strided: columns and slices of a strided_merge block (powers of two, at most
    #: strided.STRIDED_MERGE_MAX_THREADS threads), instead of strided.strided_merge_shape's choice
    strided_merge_columns: int | None = None
    strided_merge_slices: int | None = None
    #: cluster, cluster_stream: CTAs per cluster (one of instances.CLUSTER_SIZES from 2), instead of
    #: the size instances.cluster_shape (cluster_stream_shape) chooses
    cluster_ctas: int | None = None
    #: cluster: threads per CTA (a multiple of 32), instead of instances.cluster_threads_packs' choice
    cluster_threads: int | None = None
    #: cluster (and cluster_stream's column kernels): 16-byte packs a thread holds (K, one of
    #: instances.cluster_held_packs), instead of instances.cluster_threads_packs' choice
    cluster_packs: int | None = None
    #: cluster_stream: CTAs an SM (one of instances.CLUSTER_STREAM_PER_SM), instead of one (rows; the
    #: column kernels run one)
    cluster_stream_per_sm: int | None = None
    #: cluster_stream: half the first wave waits before its first row (True: on any launch, the
    #: resident clusters' count passed) or none (False), instead of instances.cluster_stream_stagger's
    #: rule (launches of four rows or more a resident cluster)
    cluster_stream_stagger: bool | None = None
    #: cluster_stream (rows): a grid of the clusters resident at once, each walking its rows in turn
    #: (the backward copying the next row's shared-memory slots while it writes the last) (True), or
    #: one cluster a row (False), instead of instances.cluster_stream_persistent's rule
    cluster_stream_persistent: bool | None = None
    #: cluster, backward: half the first wave waits before its first row (True: on any launch) or none
    #: (False), instead of instances.cluster_stagger's rule (the forward has no wait: True raises)
    cluster_stagger: bool | None = None
    #: grid_row: the grid cut into teams on rows of their own (True: an error where no team count
    #: holds its rows on chip) or always the whole grid on each row in turn (False), instead of
    #: instances.grid_row_team_shape's choice
    grid_row_teams: bool | None = None
    #: split_row: blocks per SM over all chunks, instead of SPLIT_ROW_BLOCKS_PER_SM
    split_row_blocks_per_sm: int | None = None
    #: cluster: kept exponentials (True), or never (False), instead of where the launch is one wave
    cluster_kept: bool | None = None
    #: cluster: rows whose tensors share their offset within 16 bytes held by the rows' whole packs,
    #: their ends apart (True: an error elsewhere), or cut at the rows' 16-byte boundaries as any
    #: other (False), instead of wherever the rows allow it and are not on 16-byte boundaries all through
    cluster_alike: bool | None = None
    #: warp, block_regs: rows off 16-byte boundaries held in the 16-byte packs of their aligned
    #: window (True), or in packs as wide as their alignment (False), instead of takes_window's rule
    row_window: bool | None = None
    #: warp: rows a group of lanes holds at once (one of instances.WARP_ROWS, rows in 16-byte packs
    #: of at most instances.WARP_MULTI_ROW_MAX_COLS columns a lane, not in a window), instead of
    #: instances.warp_shape's choice
    warp_rows: int | None = None
    #: warp: lanes a row (one of instances.WARP_LANES_16BIT; 16-bit rows in 16-byte packs, not in a
    #: window), instead of instances.warp_shape's choice
    warp_lanes: int | None = None
    #: warp: 16-bit rows in packs of 1 or 2 elements held by groups of instances.SECTOR_GROUPS_16BIT
    #: lanes (True) or by whole warps (False), instead of WARP_SECTOR_GROUPS
    warp_sector_groups: bool | None = None
    #: strided_staged: flat runs of a few interleaved columns held across a thread-block cluster
    #: (True: wherever the layout allows, else an error), or always staged (False), instead of
    #: strided.takes_columns' rule
    staged_columns: bool | None = None
    #: strided_staged: runs of interleaved columns longer than the cluster tier's column kernels
    #: hold, held across a cluster's registers and shared memory by cluster_stream's column kernels
    #: (True: an error where strided.column_runs refuses the layout), or staged in tiles (False),
    #: instead of strided.takes_column_stream's rule
    column_stream: bool | None = None
    #: strided: split problems' chunks interleaved (groups of rows dealt round the chunks) or
    #: contiguous, instead of interleaved from strided.STRIDED_INTERLEAVE_MIN_SPLITS splits
    strided_interleaved: bool | None = None
    #: strided: the partials stage walks its one tensor with twice the rows in flight (True: wherever
    #: the kernel has such a walk, the 16-bit forward and the log-softmax backward) or not (False),
    #: instead of strided.STRIDED_DEEP_PARTIALS
    strided_deep_partials: bool | None = None
    #: strided: the partials stage of split problems on a kernel of its own, compiled for more blocks
    #: an SM (True) or on the two-stage kernel (False), instead of strided.STRIDED_PARTIALS_KERNEL
    strided_partials_kernel: bool | None = None
    #: strided: the 16-bit log-softmax backward's partials-only kernel reads a dy that steps by 2 along
    #: inner in the spans of packs of this many elements (one of strided.STRIDED_STEPPED_PARTIALS_PACKS,
    #: where strided.stepped_partials_pack allows; 1: element by element), instead of
    #: strided.STRIDED_STEPPED_PARTIALS_PACK
    strided_stepped_partials: int | None = None
    #: strided: blocks an SM the spans' partials-only kernel is compiled for (launch bounds), wherever
    #: it is launched, instead of strided.STRIDED_SPANS_PARTIALS_MIN_BLOCKS
    strided_spans_blocks: int | None = None
    #: strided: merged split problems over dense tensors finished by one elementwise sweep (True:
    #: an error where that cannot be), or by the tiles (False), instead of strided.STRIDED_FLAT_FINISH
    strided_flat_finish: bool | None = None
    #: strided: blocks of the flat finish (a persistent sweep), instead of one run of packs a block
    strided_flat_blocks: int | None = None
    #: strided: inputs with a step along inner read in 16-byte packs of their span (True: an error
    #: where the steps or alignment do not allow it), or element by element (False), instead of the
    #: packs wherever they can
    strided_stepped_packs: bool | None = None
    #: strided_staged: tiles in the inputs' 16-byte window (True: wherever strided.window_fits, on
    #: 16-byte boundaries too), or never (False: copies as wide as the pointers allow), instead of
    #: where a pointer is off its boundary or inner is no whole number of 16-byte pieces
    staged_window: bool | None = None
    #: strided_staged, window tiles: every row staged at the inputs' one phase, reads unshifted and
    #: stores shifted (True: an error where the inputs' rows lie at several phases), or each row at
    #: its own (False: shifted reads), instead of the form strided._build_unfolded_tiles picks
    staged_input_phase: bool | None = None
    #: strided_staged: flat runs of an inner shorter than a 16-byte pack read as rows of
    #: lcm(inner, pack) columns and merged by true column (True: wherever strided.fold_width allows,
    #: else an error), or in packs of the inner's own (False), instead of strided.folds_by_default
    staged_fold: bool | None = None
    #: strided_warp: lanes of a warp along inner (a power of two up to 32), instead of
    #: strided.warp_columns_shape's choice
    strided_warp_lanes: int | None = None
    #: strided_warp: warps of a CTA sharing a group of columns (1, 2, 4 or 8), instead of
    #: strided.warp_columns_shape's choice
    strided_warp_row_warps: int | None = None
    #: strided_warp: rows of the reduced axis a lane holds (the kernel's ROWS, one of
    #: strided.WARP_COLUMNS_ROWS, enough for the axis), instead of the fewest that hold it
    strided_warp_rows: int | None = None
    #: strided_warp: a lane's columns spread ``lanes`` apart and moved element by element (True), or
    #: neighbouring in packs the layout aligns (False: an error where it aligns none), instead of
    #: spread exactly where no pack aligns
    strided_warp_spread: bool | None = None

    def __post_init__(self):
        if self.long_row_storage_16bit not in (None, *LONG_ROW_STORAGES_16BIT):
            raise ValueError(
                f"long_row_storage_16bit={self.long_row_storage_16bit!r} is not one of {LONG_ROW_STORAGES_16BIT}"
            )
        if self.short_row_storage_16bit not in (None, *SHORT_ROW_STORAGES_16BIT):
            raise ValueError(
                f"short_row_storage_16bit={self.short_row_storage_16bit!r} is not one of {SHORT_ROW_STORAGES_16BIT}"
            )
        wait = self.staged_stagger_us
        if wait is not None and (type(wait) is not int or not 0 <= wait <= strided.STAGED_STAGGER_MAX_US):
            raise ValueError(
                f"staged_stagger_us={self.staged_stagger_us!r} is not from 0 to {strided.STAGED_STAGGER_MAX_US}"
            )
        cols = self.staged_tile_cols
        if cols is not None and (type(cols) is not int or not 0 < cols < 1 << 16):
            raise ValueError(f"staged_tile_cols={cols!r} is not a positive count under 65536")
        if self.strided_row_bytes is not None and (self.strided_row_bytes < 16 or self.strided_row_bytes & 15):
            raise ValueError(f"strided_row_bytes={self.strided_row_bytes!r} is not a positive multiple of 16")
        widths = tuple(1 << k for k in range(5, strided.STRIDED_MAX_THREADS.bit_length()))
        if self.strided_max_width is not None and self.strided_max_width not in widths:
            raise ValueError(f"strided_max_width={self.strided_max_width!r} is not one of {widths}")
        if self.cluster_ctas is not None and self.cluster_ctas not in CLUSTER_SIZES[1:]:
            raise ValueError(f"cluster_ctas={self.cluster_ctas!r} is not one of {CLUSTER_SIZES[1:]}")
        if self.cluster_threads is not None and (self.cluster_threads <= 0 or self.cluster_threads % 32):
            raise ValueError(f"cluster_threads={self.cluster_threads!r} is not a positive multiple of 32")
        if self.cluster_packs is not None and self.cluster_packs not in CLUSTER_HELD_PACKS:
            raise ValueError(f"cluster_packs={self.cluster_packs!r} is not one of {CLUSTER_HELD_PACKS}")
        if self.cluster_stream_per_sm is not None and self.cluster_stream_per_sm not in CLUSTER_STREAM_PER_SM:
            raise ValueError(
                f"cluster_stream_per_sm={self.cluster_stream_per_sm!r} is not one of {CLUSTER_STREAM_PER_SM}"
            )
        if self.warp_rows is not None and self.warp_rows not in WARP_ROWS:
            raise ValueError(f"warp_rows={self.warp_rows!r} is not one of {WARP_ROWS}")
        if self.warp_lanes is not None and self.warp_lanes not in WARP_LANES_16BIT:
            raise ValueError(f"warp_lanes={self.warp_lanes!r} is not one of {WARP_LANES_16BIT}")
        if self.strided_warp_lanes is not None and self.strided_warp_lanes not in (1, 2, 4, 8, 16, 32):
            raise ValueError(f"strided_warp_lanes={self.strided_warp_lanes!r} is not a power of two up to 32")
        if self.strided_warp_row_warps is not None and self.strided_warp_row_warps not in (1, 2, 4, 8):
            raise ValueError(f"strided_warp_row_warps={self.strided_warp_row_warps!r} is not one of (1, 2, 4, 8)")
        if self.strided_warp_rows is not None and self.strided_warp_rows <= 0:
            raise ValueError(f"strided_warp_rows={self.strided_warp_rows!r} is not positive")
        if self.strided_flat_blocks is not None and self.strided_flat_blocks <= 0:
            raise ValueError(f"strided_flat_blocks={self.strided_flat_blocks!r} is not positive")
        if self.block_regs_waves is not None and self.block_regs_waves <= 0:
            raise ValueError(f"block_regs_waves={self.block_regs_waves!r} is not positive")
        if self.strided_waves is not None and self.strided_waves <= 0:
            raise ValueError(f"strided_waves={self.strided_waves!r} is not positive")
        if self.strided_splits is not None and self.strided_splits <= 0:
            raise ValueError(f"strided_splits={self.strided_splits!r} is not positive")
        packs = (1, *strided.STRIDED_STEPPED_PARTIALS_PACKS)
        if self.strided_stepped_partials is not None and self.strided_stepped_partials not in packs:
            raise ValueError(f"strided_stepped_partials={self.strided_stepped_partials!r} is not one of {packs}")
        if self.strided_spans_blocks is not None and not 1 <= self.strided_spans_blocks <= 8:
            raise ValueError(f"strided_spans_blocks={self.strided_spans_blocks!r} is not from 1 to 8")
        if self.split_row_blocks_per_sm is not None and self.split_row_blocks_per_sm <= 0:
            raise ValueError(f"split_row_blocks_per_sm={self.split_row_blocks_per_sm!r} is not positive")

    @property
    def long_row_storage(self) -> str:
        return self.long_row_storage_16bit or LONG_ROW_STORAGES_16BIT[0]


DEFAULT_TUNING = Tuning()


#: Rows off 16-byte boundaries in the 16-byte packs of their window (warp_tier.cuh), against packs
#: as wide as their alignment (1 or 2 elements of a 16-bit row of odd length or of 100). H100, both
#: forced and timed in turn in one process (benchmarks/flat_rows_probe.py): block_regs gains
#: everywhere (bf16 forward rows of 2047 0.45 -> 0.68 of copy, 5001 0.42 -> 0.73, 16383 0.41 ->
#: 0.91; backward 2047 0.59 -> 0.90; float32 backward 5001 0.81 -> 0.99). The warp tier is bound by
#: its instructions on such rows, not by its loads: the window's edge packs cost instructions, and
#: padding too where the window needs more slots than the row (rows of 127: 256 against 128;
#: Nsight Compute: 2.3x the instructions), so it loses on short rows (bf16 rows of 9 0.27 -> 0.14,
#: 127 0.88 -> 0.41, 300 0.95 -> 0.73, every backward) and gains only in the 16-bit forward of rows
#: past 512 (999: 0.89 -> 0.96; 700 level).
WARP_WINDOW_MIN_COLS_16BIT_FORWARD = 513


WARP_SECTOR_GROUPS = True


def takes_sector_groups(tuning: Tuning = DEFAULT_TUNING) -> bool:
    """Whether the warp tier gives 16-bit rows in narrow packs to groups of a few lanes
    (instances.SECTOR_GROUPS_16BIT)."""
    return WARP_SECTOR_GROUPS if tuning.warp_sector_groups is None else tuning.warp_sector_groups


def takes_window(
    tier: str, dtype: torch.dtype, backward: bool, n: int, pack: int, tuning: Tuning = DEFAULT_TUNING
) -> bool:
    """Whether a warp or block_regs launch over rows of n whose widest common pack is ``pack``
    elements holds them in their window's 16-byte packs."""
    itemsize = CXX_TYPES[dtype][2]
    if pack * itemsize == 16:
        return False
    if tuning.row_window is not None:
        return tuning.row_window
    if tier == "warp":
        return itemsize == 2 and not backward and n >= WARP_WINDOW_MIN_COLS_16BIT_FORWARD
    return True


_TUNING: contextvars.ContextVar[Tuning] = contextvars.ContextVar("fastsoftmax_cuda_tuning", default=DEFAULT_TUNING)
current_tuning = _TUNING.get


@contextlib.contextmanager
def tuned(**values):
    """``with tuned(block_regs_elems=16):`` the enclosed calls of this thread use these values, and
    those of an enclosing ``tuned`` where these do not set them."""
    token = _TUNING.set(replace(current_tuning(), **values))
    try:
        yield
    finally:
        _TUNING.reset(token)


@dataclass(frozen=True)
class Limits:
    """The device facts tier choice depends on."""

    smem_per_block: int
    smem_per_sm: int
    sm_count: int
    _: KW_ONLY
    #: the largest thread-block cluster the GPU holds (launch.DeviceFacts.cluster_ctas): 16, 8 or 0
    #: (no clusters, as before sm_90). Below 16 the cluster tier alone takes clusters, of at most this
    #: many CTAs
    cluster_ctas: int = 0
    #: cooperative launches (grid-wide barriers with every CTA resident)
    cooperative: bool = False
    #: peak DRAM bandwidth, GB/s (None: not reported)
    dram_gbps: float | None = None

    @property
    def clusters(self) -> bool:
        """Clusters of 16 CTAs, which every cluster tier may launch (DeviceFacts.cluster_launch)."""
        return self.cluster_ctas == CLUSTER_SIZES[-1]

    @classmethod
    def of(cls, facts) -> Limits:
        """The limits of a device's facts (launch.DeviceFacts, or any object with its fields)."""
        return cls(
            facts.smem_per_block,
            facts.smem_per_sm,
            facts.sm_count,
            cluster_ctas=facts.cluster_ctas,
            cooperative=facts.cooperative_launch,
            dram_gbps=facts.dram_gbps,
        )

    @property
    def high_bandwidth_per_sm(self) -> bool:
        """Whether rules measured on GPUs of much DRAM bandwidth an SM apply
        (backends.base.high_dram_bandwidth_per_sm)."""
        return high_dram_bandwidth_per_sm(self.dram_gbps, self.sm_count)


#: for tier choice with no GPU to ask (CPU tests of the choice): an H100's (SXM) figures
H100_LIMITS = Limits(227 * 1024, 228 * 1024, 132, cluster_ctas=16, cooperative=True, dram_gbps=3352.3)

#: where grid_row beats split_row (H100, benchmarks/grid_row_probe.py, the two alternated in one
#: process): bytes of one tensor's row, by (itemsize, backward), from which it is chosen, and up to
#: which. Forward (benchmarks/results/2026-11-24_h100): bf16 1 x 2^22 0.41 of copy against 0.36,
#: 1 x 2^24 0.64 against 0.51, 1 x 2^25 0.66 against 0.55, 1 x 2^26 (a third held on chip) 0.59
#: against 0.60; float32 1 x 2^22 0.68 against 0.51, 1 x 2^24 0.69 against 0.56, 1 x 2^25 0.60
#: against 0.60, 1 x 2^26 0.60 against 0.63; 1 x 2^20 0.12 against 0.14 (bf16).
#: Backward (benchmarks/results/2026-11-23_h100_s3): 1 x 2^24 0.67-0.68 against 0.48, 4 x 2^22
#: 0.60 against 0.49, float32 1 x 2^24 0.61 against 0.49; at 1 x 2^26 16-bit (128 MiB) 0.54
#: against 0.57, at 1 x 2^20 a tie. Since grid_row's rewrites, the 16-bit forward up to 128 MiB
#: (results 2026-12-06_h100_s70/c8/, c10/): 1 x 2^26 bf16 0.609 against 0.595, bf16 and fp16 1 x 2^26
#: and 1 x (2^26 + 7) 0.618-0.622 against 0.600-0.602 in another process; there the backward still
#: lost (bf16 0.556 against 0.571) and float32's 256 MiB row too (0.600 against 0.629; at 2 x 2^25,
#: 128 MiB rows, level: 0.624 against 0.629). The bound is the power of two measured; 14 bytes past it
#: (2^26 + 7) ran alike, longer rows and 2-4 rows of 2^26 were not timed, nor a GPU but the H100
GRID_ROW_ROW_BYTES = {
    (2, False): (8 << 20, 128 << 20),
    (2, True): (4 << 20, 64 << 20),
    (4, False): (16 << 20, 128 << 20),
    (4, True): (4 << 20, 64 << 20),
}
#: rows a grid_row launch takes one after another: measured up to 4
GRID_ROW_MAX_ROWS = 4


#: bytes a tensor from which tier choice gives grid_row rows it runs in teams: at 8 MiB in all the teams
#: led split_row in every dtype and direction (H100, forced tiers alternated in one process, results
#: 2026-12-06_h100_s72/c6/small.txt: bf16 forward 2 x 2^21 0.334 of copy against 0.302, float32 2 x
#: 2^20 0.355 against 0.314, backward bf16 2 x 2^21 0.405 against 0.364, float32 2 x 2^20 0.477 against
#: 0.365), at 4-6 MiB they trailed it by 0.002-0.009 (bf16 2 and 3 x 2^20 both ways)
GRID_ROW_TEAMS_MIN_BYTES = 8 << 20
#: rows up to which tier choice gives grid_row rows it runs in teams, ahead of cluster_stream: at 16-32
#: rows of 2^18-786432 the teams led cluster_stream in every dtype and direction (results
#: 2026-12-06_h100_s72/c5/, c6/many.txt: bf16 forward 16 x 786432 0.605 against 0.488, 24 x 699051 0.617
#: against 0.548, float32 backward 24 x 699051 0.743 against 0.627); the cluster tier, chosen before
#: them where it holds the rows, led both there (bf16 32 x 524288 forward 0.740 against 0.647). Of
#: 64-256 rows cluster_stream leads the forward (bf16 128 x 2^20 0.901 against 0.736, float32 256 x
#: 524288 0.943 against 0.846): see GRID_ROW_TEAMS_MAX_ROWS_BACKWARD for the backward
GRID_ROW_TEAMS_MAX_ROWS = 32
#: the same for the backward, also past the SMs' count: at 64-256 rows of 2^19-2^20 the teams led
#: cluster_stream or ran level (H100, forced tiers alternated in one process behind an L2 flush,
#: results 2026-12-07_h100_s82/a3/teams.txt): float32 64 x 2^20 0.786 of copy against 0.702, 128 x 2^20
#: 0.793 against 0.708, 256 x 2^19 0.838 against 0.743, 192 x 699051 0.805 against 0.708; bf16 128 x
#: 2^20 0.782 against 0.721, 64 x 2^20 0.756 against 0.746, 192 x 699051 0.814 against 0.802, 256 x
#: 2^19 0.820 against 0.824. More rows were not timed
GRID_ROW_TEAMS_MAX_ROWS_BACKWARD = 256
#: past GRID_ROW_TEAMS_MAX_ROWS rows, the fewest teams tier choice gives them to (those runs had 4-16
#: teams; two teams of 66 CTAs on 62 rows, 31 rounds, were not timed)
GRID_ROW_TEAMS_MANY_ROWS_MIN_TEAMS = 4


def grid_row_in_teams(outer: int, n: int, dtype: torch.dtype, backward: bool, limits: Limits) -> bool:
    """Whether grid_row would cut its grid into teams for these rows (instances.grid_row_team_shape at
    one CTA an SM, as grid_row's CTAs of GRID_ROW_THREADS threads run), as many and as large as
    measured (GRID_ROW_TEAMS_MAX_ROWS, its backward's GRID_ROW_TEAMS_MAX_ROWS_BACKWARD with at least
    GRID_ROW_TEAMS_MANY_ROWS_MIN_TEAMS teams, GRID_ROW_TEAMS_MIN_BYTES): rows whose slices a team
    holds on chip, taken as many at once as there are teams, which it then runs faster than split_row,
    cluster_stream and the whole grid on each row in turn (H100, 2-32 rows of 2^18-2^23; the backward
    of 64-256 rows of 2^19-2^20)."""
    most = GRID_ROW_TEAMS_MAX_ROWS_BACKWARD if backward else GRID_ROW_TEAMS_MAX_ROWS
    if outer > most or outer * n * CXX_TYPES[dtype][2] < GRID_ROW_TEAMS_MIN_BYTES:
        return False
    budget = grid_row_dynamic_smem(limits)
    teams = grid_row_team_shape(outer, n, dtype, backward, limits.sm_count, lambda smem: 1, budget).teams
    return teams >= (GRID_ROW_TEAMS_MANY_ROWS_MIN_TEAMS if outer > GRID_ROW_TEAMS_MAX_ROWS else 2)


#: rows from which cluster_stream takes the rows the cluster tier does not (or not at its best: past
#: cluster_preferred_max_cols). H100, forced tiers alternated in one process (benchmarks/grid_row_probe.py,
#: results 2026-11-27_h100_s24/cluster_stream_ab_*.txt), fraction of copy, against what those rows took
#: before (split_row below sm_count rows, block_uncached from there): bf16 forward 128 x 2^20 0.82
#: against 0.57, 192 x 699051 0.75 (the cluster tier, which holds it: 0.73), float32 128 x 2^20 0.76
#: against 0.62, 192 x 699051 0.71 against 0.34, 256 x 2^19 0.85 against 0.65; backward 0.67-0.70 against
#: 0.35-0.60; 16 x 2^20 0.51-0.67 against split_row's 0.46-0.55. With 8 rows of 2^22 (each re-read in
#: part, one wave of clusters) split_row leads: 0.55-0.60 against 0.47-0.51.
CLUSTER_STREAM_MIN_ROWS = 16
#: Forward rows past this many columns, every one on a 16-byte boundary (the ones measured), take the
#: cluster tier where block_regs holds them too: from here a cluster's threads hold 32 elements each
#: (at 9216 and below, 16 at 288 threads: bf16 14563 x 9216 0.87 of copy against block_regs' 0.98).
#: H100, forced tiers alternated in one process (benchmarks/grid_row_probe.py, results
#: 2026-11-28_h100_s25/block_regs_vs_cluster_*.txt), 2^27 elements: bf16 and fp16 rows of 10240-32768
#: 1.00 against 0.96-0.98 (log-softmax 1.00 against 0.94-0.97), float32 1.00-1.01 against 0.91-1.01
#: (rows of 16384 the one loss, 1.001 against 1.014); few rows further ahead (float32 264 x 16384
#: 0.87 against 0.72, bf16 0.67 against 0.57)
CLUSTER_OVER_BLOCK_REGS_AFTER_COLS = 9216


def block_regs_target(
    n: int, itemsize: int, backward: bool, tuning: Tuning = DEFAULT_TUNING, window: bool = False, raw: bool = False
) -> int:
    """Elements a thread block_regs aims for over rows of n; ``raw``: 16-bit forward rows of fewer
    than 64 elements a thread are held raw (instances.SHORT_ROW_STORAGE_16BIT)."""
    if tuning.block_regs_elems:
        return tuning.block_regs_elems
    steps = BLOCK_REGS_TARGETS[(itemsize, backward)]
    if window and itemsize == 2 and not backward:
        steps = BLOCK_REGS_WINDOW_TARGETS_16BIT_FORWARD
    target = next((target for up_to, target in steps if n <= up_to), steps[-1][1])
    if window and raw and target == 16 and itemsize == 2 and not backward:
        span = n + 16 // itemsize - 1  # the window's 16-byte packs (plans._window)
        fill = {elems: _warp_fill(-(-span // elems)) for elems in (16, 32)}
        if fill[32] >= BLOCK_REGS_RAW_WINDOW_FILL_RATIO * fill[16]:
            return 32
    return target


def block_regs_layout(
    n: int, span: int, dtype: torch.dtype, pack: int, backward: bool, window: bool, tuning: Tuning = DEFAULT_TUNING
) -> tuple[int, int, str, int]:
    """``(elements a thread, threads, storage, dynamic shared memory)`` of block_regs' launch over rows
    of n held as ``span`` columns in packs of ``pack`` (``window``: in their 16-byte window): what
    plans.build launches, and what tier choice weighs against a GPU's block (block_regs_smem_bytes)."""
    itemsize = CXX_TYPES[dtype][2]
    short = tuning.short_row_storage_16bit or SHORT_ROW_STORAGE_16BIT
    target = block_regs_target(n, itemsize, backward, tuning, window, raw=short == "raw")
    elems, threads = block_regs_shape(span, dtype, pack, backward, target)
    storage = block_regs_storage(dtype, backward, elems, tuning.long_row_storage, short)
    smem = block_regs_staged_bytes(dtype, elems, threads) if storage == "staged" else 0
    return elems, threads, storage, smem


def block_regs_smem_bytes(n: int, dtype: torch.dtype, backward: bool, rows_aligned: bool = False) -> int:
    """The most shared memory block_regs' own launch over rows of n takes, its static part
    (STATIC_SMEM_RESERVE) included: the staged 16-bit forward rows (64 elements a thread) keep every
    thread's packs there, up to 64 KiB, which a T4's block (64 KiB in all) cannot hold; rows held in
    registers take the reserve alone. Over the row's own span and, unless every row starts and ends on
    a 16-byte boundary (``rows_aligned``), its window's (plans._window), the larger: a bound, since the
    plan of a row off them may take narrower packs, held in registers."""
    pack = 16 // CXX_TYPES[dtype][2]
    most = 0
    spans = ((False, n),) if rows_aligned else ((False, n), (True, n + WINDOW_PACK[dtype] - 1))
    for window, span in spans:
        try:
            most = max(most, block_regs_layout(n, span, dtype, pack, backward, window)[3])
        except ValueError:  # the window's span past the longest row (the plan holds the row outside one)
            continue
    return most + STATIC_SMEM_RESERVE


def _warp_fill(threads: int) -> float:
    """The share of a block of whole warps that ``threads`` busy threads fill."""
    return threads / (-(-threads // 32) * 32)


def row_cache_bytes(n: int, itemsize: int, backward: bool) -> int:
    """Shared memory block_smem needs for a row: n elements (y and dy, each padded to 16 of
    them, for backward)."""
    return 2 * (-(-n // 16) * 16) * itemsize if backward else -(-n * itemsize // 16) * 16


def flat_rows_auto_max_cols(dtype: torch.dtype, backward: bool) -> int:
    """The longest rows "auto" gives flat_rows."""
    if CXX_TYPES[dtype][2] == 2:
        return FLAT_ROWS_AUTO_MAX_COLS_16BIT[backward]
    return FLAT_ROWS_AUTO_MAX_COLS if backward else FLAT_ROWS_AUTO_MAX_COLS_FP32_FORWARD


#: on GPUs of much DRAM bandwidth an SM (backends.base.high_dram_bandwidth_per_sm), flat_rows takes
#: rows past flat_rows_auto_max_cols up to these (by bytes per element, backward) where a warp's
#: first access meets at most FLAT_ROWS_WIDER_MAX_BANK_WAYS words a bank. H200, the two tiers forced
#: and alternated in one process (benchmarks/grid_row_probe.py, results 2026-12-02_h200_s40/
#: narrow.txt), 2^26 elements: float32 forward rows of 100 0.983 of copy against the warp tier's
#: 0.899 (1 word a bank), 127 0.979 against 0.969 (2), but 112 0.883 against 0.945 (4) and 160-256
#: 0.90-0.98 against 0.99-1.01; bf16 backward rows of 200 0.987 against 0.928 and 255 0.949 against
#: 0.888 (1), but 192 and 256 0.66-0.67 against 0.93-1.02 (4). On an H100 the warp tier was level or
#: ahead there (see takes_flat_rows).
FLAT_ROWS_WIDER_AUTO_MAX_COLS = {(4, False): 127, (2, True): 255}
FLAT_ROWS_WIDER_MAX_BANK_WAYS = 2
#: on GPUs of much DRAM bandwidth an SM, 16-bit rows on 16-byte boundaries of up to this many columns
#: whose 16-byte packs fill a group of lanes exactly (8, 16, 32, 64, 128 columns) keep the warp tier,
#: one row a group (instances.WARP_ROWS). H200, both forced and alternated in one process behind an
#: L2 flush (results 2026-12-02_h200_s46/warp_rows_narrow.txt), bf16 rows of 2^27 elements: backward
#: 1.022-1.027 of copy against flat_rows' 0.987-0.991, forward rows of 8 0.993 against 0.894; rows
#: that leave lanes idle keep flat_rows (backward rows of 96: 0.994 against the warp tier's 0.941).
FLAT_ROWS_WARP_FILLED_16BIT_MAX_COLS = 128
#: 16-bit rows on 16-byte boundaries past FLAT_ROWS_WARP_FILLED_16BIT_MAX_COLS that the warp tier
#: holds over part of a warp by default (instances.warp_default_lanes: 129-768 columns, several
#: 16-byte packs a lane) take flat_rows only where a warp's first access meets at most this many
#: words a bank. H200, both forced and alternated in one process behind an L2 flush (results
#: 2026-12-03_h200_s47/call2/rows_probe.txt), bf16 rows of 2^27 elements, forward then backward: at
#: 2 words a bank flat_rows 0.944/0.903 against the warp tier's 0.983/1.011 (160) and 0.932/0.908
#: against 0.979/1.005 (224); at 1 word it keeps them, 0.978/0.997 against 0.957/0.998 (144) and
#: 0.976/0.996 against 0.949/0.987 (208).
FLAT_ROWS_BESIDE_WARP_LANES_MAX_BANK_WAYS = 1


#: float32 forward rows on 16-byte boundaries of these many columns (at most FLAT_ROWS_MAX_BANK_WAYS
#: words a bank: not 24 or 32) go to flat_rows rather than the warp tier. H100, both forced and
#: alternated in one process behind an L2 flush (results 2026-12-07_h100_s82/a3/f32rows.txt), rows of
#: 2^26 elements, flat_rows against warp: 20 0.990 of copy against 0.954, 36 0.993 against 0.918, 40
#: 0.993 against 0.948, 44 0.993 against 0.971, 28 0.993 against 0.997; the rest of 8-64 the warp
#: tier's (12, 52-60: 0.996-1.003 against 0.986-0.993; 16, 24, 32, 48, 64, at 8 words a bank or
#: more: 0.995-1.002 against 0.31-0.90). The backward of all of them the warp tier's (1.010-1.020
#: against 1.003-1.008)
FLOAT32_FORWARD_FLAT_ALIGNED_COLS = (20, 44)


def warp_fills_rows(n: int, itemsize: int) -> bool:
    """Whether 16-bit rows of n on 16-byte boundaries fill the warp tier's group of lanes with
    whole 16-byte packs, at most FLAT_ROWS_WARP_FILLED_16BIT_MAX_COLS columns."""
    packs, whole = divmod(n * itemsize, 16)
    return itemsize == 2 and not whole and 0 < n <= FLAT_ROWS_WARP_FILLED_16BIT_MAX_COLS and packs & (packs - 1) == 0


def takes_flat_rows(
    n: int, dtype: torch.dtype, backward: bool, high_bandwidth: bool = False, aligned: bool = True
) -> bool:
    """Whether "auto" gives rows of n to flat_rows rather than the warp tier (never rows past
    flat_rows_auto_max_cols, or FLAT_ROWS_WIDER_AUTO_MAX_COLS on a GPU of ``high_bandwidth`` an SM; there
    also not rows that fill the warp tier's groups, warp_fills_rows, when ``aligned``: every row of every
    tensor on its 16-byte boundary; and on any GPU rows the warp tier holds over part of a warp,
    FLAT_ROWS_BESIDE_WARP_LANES_MAX_BANK_WAYS, when ``aligned``).
    A lane reads its rows from shared memory, and rows whose pitch lies near a
    multiple of 128 bytes put a warp's lanes on few banks (instances.flat_rows_bank_ways, with a
    warp's rows consecutive or spread, whichever meets fewer).

    16-bit forward (the tight form, results 2026-11-24_h100_s12, both tiers in CUDA graphs
    alternated in one process): bf16 rows of 5-160 0.97-0.99 of copy at up to 3 words a bank, any
    alignment (rows of 40 0.98 against the warp tier's 0.86, 80 0.98 against 0.88, 144 0.99 against
    0.86; rows of 127 with the warp's rows spread 0.99 against 0.90). At 4 words and more the warp
    tier wins on rows on 16-byte boundaries, which it reads in 16-byte packs (24, 48, 96: 0.90-0.91
    against 0.94-0.96; 32 and 64: 0.32 against 0.95-0.97); no row off them meets more than 3 with
    the spread rows, and the warp tier reads those an element at a time (65: 0.99 against 0.51).
    float32 forward: rows off 16-byte boundaries up to 64 and rows of one pack (earlier sets), and
    rows of 65-96 of any alignment (72 and 74 0.99 against 0.92, 80 0.98 against 0.94; at 96, 8
    words a bank, 0.88 against 0.99); aligned rows of up to 64 are level or faster on the warp tier
    (8, 40, 56: 0.96-0.98 against 0.98-1.00 then) but for those of FLOAT32_FORWARD_FLAT_ALIGNED_COLS,
    and past 96 the two are level (127-150: 0.98 against
    0.98-0.99).

    Past 160 (same set): bf16 forward rows off 16-byte boundaries 0.98-0.99 against the warp tier's
    0.85-0.94 (170: 0.99 against 0.85; 255: 0.98 against 0.94); on them, 0.98-0.99 against 0.93-0.98
    up to 208, but 0.98-0.99 against 0.99-1.00 at 224 and 240, and at 4 words a bank (192, 256)
    0.90-0.91 against 0.97-0.98.

    Backward: float32 rows off 16-byte boundaries and rows of one pack (results 2026-11-24_h100_s9),
    and 16-bit rows of up to 184 at up to 3 words a bank (bf16 rows of 24-128 0.98-1.00 against
    0.77-0.96 in the ninth set; with the tight form and spread rows, rows of 129-160 1.00-1.01
    against 0.92-0.98; 161-184 0.99-1.01 against 0.93-1.01, past 184 the warp tier 1.02 against
    0.99-1.01)."""
    itemsize = CXX_TYPES[dtype][2]
    if high_bandwidth and aligned and warp_fills_rows(n, itemsize):
        return False
    # rows of up to 128 keep the rule below, over lanes or not (flat_rows ahead at 2-3 words a bank, 80: 0.98)
    in_lanes = (
        aligned
        and n > FLAT_ROWS_WARP_FILLED_16BIT_MAX_COLS
        and n * itemsize % 16 == 0
        and warp_default_lanes(n, 16 // itemsize, itemsize, backward) is not None
    )
    wider = FLAT_ROWS_WIDER_AUTO_MAX_COLS.get((itemsize, backward), 0) if high_bandwidth else 0
    if flat_rows_auto_max_cols(dtype, backward) < n <= wider:
        max_ways = FLAT_ROWS_BESIDE_WARP_LANES_MAX_BANK_WAYS if in_lanes else FLAT_ROWS_WIDER_MAX_BANK_WAYS
        return flat_rows_bank_ways(n, dtype, backward) <= max_ways
    flat_min = FLAT_ROWS_MIN_COLS_16BIT_FORWARD if itemsize == 2 and not backward else FLAT_ROWS_MIN_COLS
    if not flat_min <= n <= flat_rows_auto_max_cols(dtype, backward):
        return False
    ways = flat_rows_bank_ways(n, dtype, backward)
    if itemsize == 2:
        if not backward and n * itemsize % 16 != 0:
            return True
        if not backward and n > FLAT_ROWS_AUTO_MAX_COLS_16BIT_ALIGNED_FORWARD:
            return False
        return ways <= (FLAT_ROWS_BESIDE_WARP_LANES_MAX_BANK_WAYS if in_lanes else FLAT_ROWS_TIGHT_MAX_BANK_WAYS)
    low, high = FLOAT32_FORWARD_FLAT_ALIGNED_COLS
    aligned_flat = n * itemsize == 16 or (not backward and (n > 64 or low <= n <= high))
    return bool(n * itemsize % 16 or aligned_flat) and ways <= FLAT_ROWS_MAX_BANK_WAYS


def choose_tier(
    outer: int,
    n: int,
    inner: int,
    dtype: torch.dtype,
    backward: bool,
    limits: Limits,
    aligned: bool = True,
    window: bool = True,
    stepped: bool = False,
    log: bool = False,
) -> str:
    if inner > 1:
        # on the default geometry: the dispatcher caches this choice per problem, not per tuning (a
        # tuning changes how the chosen tier launches, through the plan key)
        return strided.choose_tier(outer, n, inner, dtype, backward, limits, aligned, window, stepped, log)
    itemsize = CXX_TYPES[dtype][2]
    if takes_flat_rows(n, dtype, backward, limits.high_bandwidth_per_sm, aligned):
        return "flat_rows"
    if n <= WARP_TIER_MAX_COLS and (
        itemsize == 4 or not backward or n < BLOCK_REGS_MIN_COLS_16BIT or n * itemsize % 16
    ):
        # 16-bit rows of 512-1024 off 16-byte boundaries: warp 0.96-0.99 of copy, block_regs in its
        # window 0.81-0.89 (H100, bf16 rows of 700 and 999, benchmarks/flat_rows_probe.py)
        return "warp"
    rows_aligned = aligned and n * itemsize % 16 == 0
    if warp_takes_long_rows(outer, n, dtype, backward, rows_aligned):
        return "warp"
    # up to the longest row it holds the cluster tier wins with many rows in the backward and, on 16-byte
    # boundaries, with few in both directions (instances.CLUSTER_LONGEST_MIN_ROWS, CLUSTER_FEW_LONG_ROWS);
    # past cluster_preferred_max_cols otherwise, the tiers below
    most = limits.cluster_ctas  # (fewer than 16: the cluster tier alone, in clusters of at most `most`)
    clusters = most > 1 and n <= cluster_preferred_max_cols(dtype, backward, outer, rows_aligned, most)
    # past that, rows held across a cluster's registers and shared memory, the rest re-read
    streams = limits.clusters and outer >= CLUSTER_STREAM_MIN_ROWS
    if n >= SPLIT_ROW_MIN_COLS and outer < limits.sm_count:
        if clusters:
            return "cluster"
        if limits.cooperative and grid_row_in_teams(outer, n, dtype, backward, limits):
            return "grid_row"
        low, high = GRID_ROW_ROW_BYTES.get((itemsize, backward), (0, -1))
        if limits.cooperative and outer <= GRID_ROW_MAX_ROWS and low <= n * itemsize <= high:
            return "grid_row"
        return "cluster_stream" if streams else "split_row"
    if (
        n <= block_regs_max_cols(dtype, backward)
        and block_regs_smem_bytes(n, dtype, backward, rows_aligned) <= limits.smem_per_block
    ):
        if clusters and rows_aligned and not backward and n > CLUSTER_OVER_BLOCK_REGS_AFTER_COLS:
            return "cluster"
        return "block_regs"
    if clusters:
        return "cluster"
    if streams:
        if backward and limits.cooperative and grid_row_in_teams(outer, n, dtype, backward, limits):
            return "grid_row"  # past the SMs' count: the rows the branch above gives the teams
        return "cluster_stream"
    need = row_cache_bytes(n, itemsize, backward) + STATIC_SMEM_RESERVE
    # Caching pays while two blocks still share an SM: with one, every barrier idles the SM.
    if need <= min(limits.smem_per_block, limits.smem_per_sm // 2):
        return "block_smem"
    return "block_uncached"


#: the 16-bit forward's rows past WARP_TIER_MAX_COLS on 16-byte boundaries go to the warp tier (a whole
#: warp a row, instances.WARP_LONG_COLS_16BIT) from this many rows where block_regs' threads would fill at
#: most WARP_LONG_MAX_FILL of their warps (see warp_takes_long_rows)
WARP_LONG_MIN_ROWS = 1024
WARP_LONG_MAX_FILL = 0.75


def warp_takes_long_rows(outer: int, n: int, dtype: torch.dtype, backward: bool, rows_aligned: bool) -> bool:
    """Whether 16-bit forward rows of WARP_TIER_MAX_COLS + 1 up to WARP_LONG_MAX_COLS on 16-byte boundaries
    go to the warp tier (a whole warp a row) rather than block_regs (a block a row, 32 elements a thread
    held raw, whose last warp idles in part unless the row fills it). H100, both forced and alternated in
    one process behind an L2 flush (benchmarks/grid_row_probe.py), fraction of copy, warp against
    block_regs (results 2026-12-06_h100_s78/c2/rawwarp.txt). Where block_regs fills at most 3/4 of its
    warps the warp leads or ties: bf16 130048 x 1032 (a fill of 0.50) 0.989 against 0.814, log-softmax
    0.985 against 0.859; 87381 x 1536 (0.75) 0.995 against 0.998, 4096 x 1536 0.695 against 0.602
    (float16 alike), and against block_regs' float32 form (results 2026-12-06_h100_s77/p1/warp.txt,
    n3/ab.txt) 4096 x 1152 0.613 against 0.457, 1024 x 1536 0.318 against 0.296 (rows of 2049-2304, at
    such fills over 96 threads, measured against the float32 form only and from 12288 rows only: 0.879
    against 0.808). Fuller, block_regs leads or ties on 2048 rows or more: 65536 x 2048 0.993 against
    0.990, 52428 x 2560 (0.83) 0.997 against 0.990, 44739 x 3000 (0.98) 0.986 against 0.980, 43690 x
    3072 0.991 against 0.987, 8192 x 2048 0.819 against 0.814, 4096 x 3000 0.724 against 0.709,
    log-softmax alike (bf16 2048 0.991 against 0.990, 3000 0.983 against 0.981, 4096 x 3000 0.744
    against 0.715); at 1024 x 2048 the warp's softmax leads by a hundredth (0.380 against 0.372; its
    log-softmax 0.382 against 0.383). Measured on the H100 alone."""
    itemsize = CXX_TYPES[dtype][2]
    if not (warp_has_long_rows(itemsize, backward) and rows_aligned):
        return False
    if not WARP_TIER_MAX_COLS < n <= WARP_LONG_MAX_COLS or outer < WARP_LONG_MIN_ROWS:
        return False
    target = block_regs_target(n, itemsize, backward)
    elems, threads = block_regs_shape(n, dtype, WINDOW_PACK[dtype], backward, target)
    return n <= WARP_LONG_MAX_FILL * elems * threads


def warp_max_cols(dtype: torch.dtype, backward: bool) -> int:
    """The longest row the warp tier holds: WARP_LONG_MAX_COLS in the 16-bit forward (past
    WARP_TIER_MAX_COLS on 16-byte boundaries, or forced, in their window), WARP_TIER_MAX_COLS otherwise."""
    return WARP_LONG_MAX_COLS if warp_has_long_rows(CXX_TYPES[dtype][2], backward) else WARP_TIER_MAX_COLS


def supports(tier: str, outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool, limits: Limits) -> bool:
    if dtype not in CXX_TYPES or tier not in TIERS:
        return False
    if tier in strided.TIERS or inner > 1:
        return strided.supports(tier, outer, n, inner, dtype, backward, limits, current_tuning().staged_ctas_per_sm)
    if inner != 1:
        return False
    if tier == "warp":
        return n <= warp_max_cols(dtype, backward)
    if tier == "flat_rows":
        return n <= FLAT_ROWS_MAX_COLS
    if tier == "block_regs":
        return n <= block_regs_max_cols(dtype, backward)
    if tier == "cluster":
        most = limits.cluster_ctas
        return most > 1 and n <= cluster_max_cols(dtype, backward, aligned=True, most=most)
    if tier == "cluster_stream":
        return limits.clusters
    if tier == "block_smem":
        return row_cache_bytes(n, CXX_TYPES[dtype][2], backward) + STATIC_SMEM_RESERVE <= limits.smem_per_block
    # block_uncached, split_row, grid_row: any row length and alignment (grid_row re-reads what the
    # chip does not hold, and takes rows one after another: correct for any number, slow for many)
    return True
