"""Softmax over a strided axis (``inner > 1`` in the canonical ``(outer, n, inner)`` view): its
tiers, their choice, their kernel instances and their plans, apart from the row tiers.

Tiers:

* ``strided_staged`` (strided_staged.cuh): a CTA copies its piece of a tile (rows of n by columns
  of inner) into shared memory, reduces it there and writes it from there: the input is read from
  device memory once. A tile too long for one CTA is split over a team of CTAs that exchange their
  per-column results through global memory (a cooperative, persistent launch). Small inner sizes
  whose n x inner blocks are contiguous are staged as one flat run (16-byte copies across rows and
  columns). Tiles too long for the shared memory of all resident CTAs stream through it twice,
  each CTA re-reading all but the one staging it keeps for its writes.
  Where n x inner is one contiguous run per outer index on 16-byte boundaries and inner a power of
  two up to COLUMNS_MAX, the run is held across a thread-block cluster in registers instead, as the
  row tier "cluster" holds a row (cluster_tier.cuh's column kernels; ``takes_columns``), and runs
  longer than that across a cluster's registers and shared memory, the rest re-read, as the row
  tier "cluster_stream" holds a row (grid_row_tier.cuh's column kernels; ``takes_column_stream``).
* ``strided_warp`` (strided_warp.cuh): short reduced axes (up to 4096 rows forward, 2048 backward)
  held in the registers of a group of warps, each group owning lanes x pack columns of one outer
  index and all n rows of them; the columns' maxima and sums merged by shuffles and, across a
  group's warps, through a small table in shared memory. One read, one write, no staging. "auto"
  takes it where ``takes_warp_columns`` says (16-bit axes up to 512, float32 up to 32, on 16-byte
  boundaries over columns of 128 bytes or more).
* ``strided`` (strided_tier.cuh): tiles of columns reduced over n from registers, then re-read;
  n split over blocks in two kernels when the tiles cannot fill the GPU. Serves the rest: tiles
  too long for all the shared memory of the GPU (e.g. (1048576, 128) over dim 0).

Kernel argument order (every parameter 8 bytes, see ``instances.py``):

* strided: pointers, workspace, n, inner, (stride 0, stride 1, stride 2) of each tensor, chunk,
  splits, mode (the stage, 0 whole / 1 partials / 2 finish, | 4 for chunk-major block order, | 8
  for a finish after strided_merge, | 16 for interleaved chunks, | 32 for the finish's flat sweep);
  strided_merge: workspace, splits, tile width;
* strided_staged: pointers, workspace, outer, n, inner, (stride 0, stride 1) of each tensor (it
  takes no step along inner), geometry (tile columns | copy bytes << 16 | outer index fastest << 31
  | staged rows << 32 | the first wave's wait in microseconds << 48 | the teams it spans << 54), chunk,
  splits;
* strided_warp: pointers, outer, n, inner, (stride 0, stride 1) of each tensor, groups of columns
  an outer index, bits (log2 lanes | log2 row warps << 8);
* the column kernels (cluster_tier.cuh): pointers, outer, n x inner, the outer stride of each
  tensor, inner (``instances.cluster_shape``'s contract, the rows being the runs); grid_row_tier.cuh's
  the same with its shared-memory slots before inner (``instances.cluster_stream_shape``'s).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch

from ... import _layout
from ..base import high_dram_bandwidth_per_sm
from .instances import (
    COLUMN_STREAM_STATIC_SMEM,
    CXX_TYPES,
    DTYPES,
    PACK_SIZES,
    WARP_PACK_SIZES,
    Instance,
    cluster_grid,
    cluster_max_cols,
    cluster_stream_shape,
    counter_words,
    grid_row_dynamic_smem,
    next_pow2,
    widest_pack,
)
from .launch import Kernel, device_facts, stream_workspace, torch_device

#: the tiers of this module, in the order tier choice considers them
TIERS = ("strided_staged", "strided_warp", "strided")

STRIDED_MAX_THREADS = 256
#: the most threads across a tile: a warp's row (the tuning strided_max_width widens it). Why more
#: might pay: the bf16 log-softmax backward's partials over dim 0 of (8192, 8192)[:, ::2] read tiles of
#: 32 columns, 128 bytes of span a row, at 2.8 TB/s where Inductor's reduction reads the same spans at
#: 3.8 (results 2026-12-04_h200_s58/c1/); not measured
STRIDED_MAX_WIDTH = 32
#: packs along the contiguous axis: 16 bytes, or single elements for unaligned views (and pairs
#: of 16-bit elements for views aligned to 4 bytes)
STRIDED_PACK_SIZES = WARP_PACK_SIZES
#: a warp covers this many bytes of one row along the contiguous axis (a cache line)
STRIDED_ROW_BYTES = 128
#: a warp covers this many bytes of one row where rows are at least STRIDED_WIDE_ROW bytes wide:
#: H100, alternated in one process (benchmarks/grid_row_probe.py, results 2026-11-23_h100_s9):
#: float32 (65536, 2048) over dim 0 0.64 of copy against 0.61 forward, 0.60 against 0.58 backward,
#: (8192, 16384) 0.63 against 0.62 and 0.60 against 0.57, bf16 (65536, 2048) backward 0.58 against
#: 0.56, the rest level; rows of 128 columns lost (bf16 (1048576, 128) 0.33 against 0.48).
#: 16-bit types take a warp's whole row of 32 packs (512 bytes): with the interleaved chunks and the
#: merge stage, bf16 (65536, 2048) over dim 0 forward 0.577 -> 0.608 of copy, every other wide
#: case level or up to +0.01 in both directions, float32 level or mixed (kernel_breakdown.py,
#: results 2026-11-24_h100_s11/strided_row_bytes_ab.txt)
STRIDED_WIDE_ROW_BYTES = {2: 512, 4: 256}
STRIDED_WIDE_ROW = 4096
#: the pack of the instances that read inputs with a step of 2 along inner (STEPPED in
#: strided_tier.cuh): a 16-byte pack, its elements picked from the two 16-byte packs of their span.
#: H100, against single elements in one process (benchmarks/step_inner_probe.py, results
#: 2026-11-24_h100_s14/step_inner_probe.txt): float32 forward 0.35 -> 0.36 of copy on x[:, ::2]
#: of (8192, 8192) over dim 0, 0.36 -> 0.39 on (128, 1024, 1024)[..., ::2] over dim 1, 0.37 ->
#: 0.39 on (1024, 16384, 8)[..., ::2], backward within 0.01; bf16 level or 0.01 slower (0.28 ->
#: 0.27 forward on x[:, ::2], step_inner_probe_bf16_packs_not_kept.txt): 16-bit types keep
#: single elements, and have no such instances. Measured again on the H200 (16-bit packs of 8, both
#: alternated in one process, results 2026-12-01_h200_s39/strided_step_packs_ab.txt): bf16 forward
#: 0.249 against 0.281 of copy on (8192, 8192)[:, ::2] over dim 0, 0.309 against 0.346 on (32, 4096,
#: 2048)[..., ::2] over dim 1, level on (1024, 16384, 32)[..., ::2]; backward behind on two of the
#: three, ahead on the third (0.316 against 0.302; log-softmax 0.398 against 0.364)
STRIDED_STEPPED_PACK = {torch.float32: 4}


def strided_row_bytes(inner: int, itemsize: int) -> int:
    return STRIDED_WIDE_ROW_BYTES[itemsize] if inner * itemsize >= STRIDED_WIDE_ROW else STRIDED_ROW_BYTES


#: split problems launch their blocks chunk-major (every tile of a range of rows together) rather
#: than tile-major (every chunk of a tile together): H100, the two alternated in one process
#: (benchmarks/strided_probe.py --variants): (65536, 2048) over dim 0 bf16 0.55 of copy against
#: 0.53 forward and backward, float32 0.59 against 0.57; (1048576, 128) float32 0.59 against 0.57,
#: bf16 a tie at 0.43. A warp row of 512 bytes instead of 128 lost forward (bf16 (1048576, 128)
#: 0.23, (65536, 2048) 0.42)
STRIDED_CHUNK_MAJOR = True
#: the kernels' mode bit for chunk-major order (kChunkMajor in strided_tier.cuh)
STRIDED_MODE_CHUNK_MAJOR = 4
#: split problems of at least this many splits deal their rows round the chunks in groups
#: (strided_tier.cuh's kInterleaved), so that the resident blocks sweep the tensor together rather
#: than each stream its own chunk. H100, the two alternated in one process
#: (benchmarks/kernel_breakdown.py, results 2026-11-24_h100_s10/strided_interleaved_ab.txt): bf16
#: (65536, 2048) over dim 0 (132 splits) forward 0.552 -> 0.570 of copy, backward 0.580 -> 0.595;
#: (1048576, 128) (396 splits) 0.555 -> 0.575 and 0.559 -> 0.581; float32 +0.005 to +0.013. Three
#: splits of many tiles lost ((32, 4096, 1024) over dim 1 one element in, bf16 forward 0.452 ->
#: 0.422, float32 0.572 -> 0.562): they keep contiguous chunks.
STRIDED_INTERLEAVE_MIN_SPLITS = 16
STRIDED_MODE_INTERLEAVED = 16
#: the partials stage's mode bit for twice the rows in flight (kDeepPartials in strided_tier.cuh)
STRIDED_MODE_DEEP_PARTIALS = 64
#: whether the partials stage walks its one tensor with twice the rows in flight, by (dtype size,
#: backward): the 16-bit forward's x, the log-softmax backward's dy (deep_partials). H200, kernel by
#: kernel, the strided tier forced with and without it in one process (results 2026-12-04_h200_s56/
#: c5/): bf16 forward over dim 0 of (65536, 2048) 222.5 -> 218.0 us (its partials pass 83.9 -> 78.7),
#: (1048576, 128) 224.6 -> 219.9, (8192, 16384) 226.9 -> 224.8, (32, 4096, 1024) over dim 1 248.9 ->
#: 245.7, the rest level; the log-softmax backward either way by 1-2% (bf16 (8192, 8192).t() over dim
#: 1 137.7 -> 136.2, (8192, 16384) over dim 0 266.8 -> 269.5; float32 (65536, 2048) 498.1 -> 493.7,
#: (8192, 8192)[::2] 144.8 -> 146.1): it keeps four rows
STRIDED_DEEP_PARTIALS = {(2, False): True, (2, True): False, (4, True): False}


#: blocks of STRIDED_MAX_THREADS threads an SM the partials-only kernels are compiled for (launch
#: bounds), by (dtype size, the walk: "forward", "backward" (y and dy), "log_backward" (dy alone)):
#: the most whose registers hold the walk without spilling (NVRTC 13.5, sm_90: 16-bit packs of 8
#: forward and backward spill 48-64 bytes at five, the float32 backward 32; the log-softmax backward
#: takes 44 registers at five, float32 forwards 48); the two-stage kernels take three or four
STRIDED_PARTIALS_MIN_BLOCKS = {
    (2, "forward"): 4,
    (4, "forward"): 5,
    (2, "backward"): 4,
    (4, "backward"): 4,
    (2, "log_backward"): 5,
    (4, "log_backward"): 5,
}
#: whether split problems launch their partials stage on the partials-only kernel (PARTIALS_ONLY), by
#: (dtype size, walk as STRIDED_PARTIALS_MIN_BLOCKS); the finish stays the two-stage kernel's. H200,
#: kernel by kernel, the strided tier with and without it in one process: the float32 log-softmax
#: backward (results 2026-12-04_h200_s57/c1/) (8192, 8192).t() over dim 1 269.1 -> 253.9 us
#: (torch.compile 251.1), expand(1, 4096, 4096) 676.7 -> 631.0, (8192, 8192)[::2] over dim 0 143.6 ->
#: 133.8 (129.7), (1048576, 128) 501.7 -> 496.7 (495.4), (8192, 16384) and (8192, 8192)[:, ::2] level;
#: the 16-bit one in narrow packs (STRIDED_NARROW_PARTIALS_PACK; c6/), bf16 (8192, 8192).t() 137.5 ->
#: 131.6 (128.7), (8192, 8192)[::2] 77.4 -> 73.3 (69.2), (65536, 2048) 257.7 -> 252.4 (248.5),
#: (1048576, 128) 258.1 -> 253.1 (250.2), (32, 4096, 1024) over dim 1 290.9 -> 280.6 (306.3), (8192,
#: 16384) 269.9 -> 266.6 (273.7); float16 alike. The other walks ran either way by 1-4% in the
#: two-stage kernel's packs (c1/partials_other_walks.txt, c4/partials_forward_bf16.txt)
STRIDED_PARTIALS_KERNEL = {key: False for key in STRIDED_PARTIALS_MIN_BLOCKS} | {
    (2, "log_backward"): True,
    (4, "log_backward"): True,
}
#: the 16-bit log-softmax backward's partials-only kernel (the column sums of dy) reads packs of this
#: many elements where the two-stage kernel reads 16-byte packs, over twice the threads across a tile
#: (the tile as wide, so the workspace's slots are laid out as the finish reads them) and half the
#: slices, compiled for STRIDED_NARROW_PARTIALS_MIN_BLOCKS blocks an SM; the splits stay the two-stage
#: kernel's. H200, benchmarks/column_partials_probe.py (results 2026-12-04_h200_s57/c5/): the column
#: sums of a bf16 (4096, 8192) in tiles of 256 columns over 24 interleaved chunks read at 2.60 TB/s in
#: the two-stage kernel's shape (16-byte packs, 32 x 8 threads, 56 registers, 4 blocks an SM) and 3.39
#: in this one (8-byte packs, 64 x 4 threads, 32 registers, 8 blocks an SM; a read-only sweep 3.48),
#: (8192, 8192) 3.05 and 3.87 (3.96)
STRIDED_NARROW_PARTIALS_PACK = 4
STRIDED_NARROW_PARTIALS_MIN_BLOCKS = 8
#: packs (elements) in which the 16-bit log-softmax backward's partials-only kernel may read a dy that
#: steps by 2 along inner (the tuning strided_stepped_partials; 1 reads element by element): the two
#: packs of each pack's span, every other element kept (STEPPED in strided_tier.cuh), where the
#: two-stage kernel reads such inputs element by element, over fewer threads across the tile (as wide)
#: and more slices. The rule's pack is STRIDED_STEPPED_PARTIALS_PACK. Why: element by element, that
#: kernel's column sums of dy over dim 0 of bf16 (8192, 8192)[:, ::2] took 52-55 us for 134 MB of spans
#: (2.5 TB/s; results 2026-12-04_h200_s57/c4/partials_log_backward_bf16.txt) where its finish reads y's
#: and dy's at 4.0. H200, profiler kernel times alternated in one process (results
#: 2026-12-04_h200_s58/c1/stepped_partials_bf16.txt), element by element against packs of 2, 4, 8:
#: [:, ::2] over dim 0 52.9 us against 62.5, 47.4, 55.1; (32, 4096, 2048)[..., ::2] over dim 1 159.4
#: against 190.6, 139.3, 149.1 (torch.compile's column sums of the first: 35.7)
STRIDED_STEPPED_PARTIALS_PACKS = (2, 4, 8)
STRIDED_STEPPED_PARTIALS_PACK = 4
#: blocks of STRIDED_MAX_THREADS threads an SM the spans' partials-only kernels are compiled for (launch
#: bounds; the tuning strided_spans_blocks compiles others). At STRIDED_PARTIALS_MIN_BLOCKS's five the
#: bf16 kernel of packs of 4 took 40 registers, six blocks an SM, where Inductor's reduction of the same
#: spans runs at full occupancy (Nsight Compute, H200, results 2026-12-04_h200_s59/c3/); at eight, 32
#: registers and no frame (NVRTC 13.5, sm_90). H200, kernel by kernel in one process (c4/), bf16
#: log-softmax backward: (8192, 8192)[:, ::2] over dim 0 partials 46.9 -> 43.2 us, the call 133.2 ->
#: 129.8 (torch.compile 118.1); (32, 4096, 2048)[..., ::2] over dim 1 141.5 -> 132.5, the call
#: 478.6 -> 469.9 (467.7). Splits chosen to fill the partials kernel's waves as well as the finishing
#: kernel's (a rule measured beside it, left out) were slower or level: [:, ::2] 133.2 -> 137.7 us
#: (129.8 -> 132.5 at eight blocks), the other level, (8192, 16384) over dim 0 262.0 -> 274.6; more
#: chunks cost more than the fuller last waves gain. By pack: the tunings' packs keep five, unmeasured
#: at eight (packs of 2 take 35 registers at five, 32 at eight; packs of 8 44, and spill 40-56 bytes at
#: eight).
STRIDED_SPANS_PARTIALS_MIN_BLOCKS = {2: 5, 4: 8, 8: 5}


def partials_walk(backward: bool, log: bool) -> str:
    """What the partials stage walks (STRIDED_PARTIALS_MIN_BLOCKS's keys): x, y and dy, or dy alone."""
    return ("log_backward" if log else "backward") if backward else "forward"


def separate_partials(
    itemsize: int, backward: bool, log: bool, forced: bool | None = None, rereads: bool = False
) -> bool:
    """Whether a split problem's partials stage runs on the partials-only kernel: STRIDED_PARTIALS_KERNEL's
    rule, or ``forced`` (Tuning.strided_partials_kernel). ``rereads``: the walk's tensor is broadcast (its
    stride along outer or n is 0), so its reads are served from the caches; the 16-bit walks keep the
    two-stage kernel there. H200, bf16 expand(1, 4096, 4096) over dim 1 log-softmax backward (y and dy
    of stride 0 along outer; results 2026-12-04_h200_s57/c4/, c6/, c7/): 270.1 us on the two-stage
    kernel, 280.2 on the partials-only kernel in 16-byte packs, 284.6 in narrow packs."""
    if forced is not None:
        return forced
    return STRIDED_PARTIALS_KERNEL[itemsize, partials_walk(backward, log)] and not (itemsize == 2 and rereads)


def narrow_partials(itemsize: int, pack: int, backward: bool, log: bool, slices: int) -> bool:
    """Whether the partials-only kernel of a problem whose two-stage kernel reads ``pack``-element packs
    over ``slices`` slices reads narrower packs (STRIDED_NARROW_PARTIALS_PACK): the 16-bit log-softmax
    backward's 16-byte packs, over two slices or more."""
    return itemsize == 2 and backward and log and pack * itemsize == 16 and slices >= 2


def stepped_partials_pack(
    chosen: int | None, itemsize: int, pack: int, backward: bool, log: bool, steps: tuple, align: int, width: int
) -> int | None:
    """The pack the partials-only kernel reads a stepped dy's spans in: STRIDED_STEPPED_PARTIALS_PACK, or
    ``chosen`` (the tuning strided_stepped_partials: one of STRIDED_STEPPED_PARTIALS_PACKS, or 1 for
    element by element); None where it reads as the two-stage kernel. Spans are read for 16-bit
    log-softmax backwards whose inputs all step by 2 (``steps``: each tensor's step along inner, the
    output's last), read by the two-stage kernel element by element (``pack`` 1), with pointers and
    strides aligned to the pack (``align``, plans.alignment) and a tile of ``width`` columns a whole
    number of packs wide."""
    spans = STRIDED_STEPPED_PARTIALS_PACK if chosen is None else chosen
    fits = (
        spans > 1
        and itemsize == 2
        and backward
        and log
        and pack == 1
        and all(step == 2 for step in steps[:-1])
        and align % (spans * itemsize) == 0
        and width % spans == 0
    )
    return spans if fits else None


def deep_partials(itemsize: int, backward: bool, log: bool, forced: bool | None = None) -> bool:
    """Whether the strided tier's partials stage walks its one tensor with twice the rows in flight:
    STRIDED_DEEP_PARTIALS's rule, or ``forced`` (Tuning.strided_deep_partials) wherever there is a
    deep walk. There is none where the walk reads y and dy (the softmax backward: as many loads as
    the deep walk of one tensor) nor in the float32 forward (kDeepForward: its kernel took 18 more
    registers with one compiled in)."""
    if (backward and not log) or (not backward and itemsize == 4):
        return False
    return STRIDED_DEEP_PARTIALS[itemsize, backward] if forced is None else forced


#: the kernel's stages (strided_tier.cuh): partials and finish, with the finish's bit for a
#: workspace strided_merge has merged (kMerged)
STRIDED_PARTIALS, STRIDED_FINISH, STRIDED_MODE_MERGED = 1, 2, 8
#: split problems of at least this many splits merge each column's pairs once, in a kernel between
#: the two (strided_merge), rather than in every finishing block: H100, bf16 (1048576, 128) over
#: dim 0 (1056 splits, whose finishing blocks read a gigabyte of pairs) forward 0.52 of copy
#: against 0.46, alternated in one process (results 2026-11-23_h100_s9/strided_merge_ab.txt); the
#: other long axes level (a backward pair is one float)
STRIDED_MERGE_MIN_SPLITS = 16
#: strided_merge's most threads a block, and the slots a thread reads (kMergeMaxThreads and
#: kMergeUnroll in strided_tier.cuh)
STRIDED_MERGE_MAX_THREADS = 1024
STRIDED_MERGE_UNROLL = 8
#: merged split problems over dense tensors finish in one elementwise sweep (strided_tier.cuh's kFlat)
#: where flat_finish_fits
STRIDED_MODE_FLAT = 32
#: the flat finish where it applies (flat_finish_fits). H100, against the tiles' finish alternated in
#: one process (benchmarks/kernel_breakdown.py, results 2026-11-24_h100_s13/flat_finish_ab.txt):
#: (1048576, 128) over dim 0, the finishing kernel bf16 forward 186.5 -> 182.7 us, backward 272.9
#: -> 262.7 us (torch.compile's pointwise kernel: 260), float32 387.1 -> 365.1 and 563.0 -> 538.9
#: (the call 0.585 -> 0.601 of copy); bf16 (65536, 2048) level (265.0 -> 263.4 backward). A first
#: form that looked each element's column up in shared memory lost bf16 forward (181 -> 288 us)
STRIDED_FLAT_FINISH = True
#: the backward's flat finish over dense tensors of several outer indices (each pack's outer index and
#: column worked out, its sums read from the workspace) where flat_finish_fits; the tiles' finish
#: otherwise. Why: over dim 1 of float32 (128, 16384, 32) the tiles' finish took 194 us where
#: torch.compile's pointwise kernel took 182.5 (H200, results 2026-12-04_h200_s58/c3/)
STRIDED_FLAT_FINISH_OUTER = True
#: packs a thread of the flat finish has in flight per tensor (kFlatUnroll in strided_tier.cuh); the
#: finish launches one run of block threads x this many packs a block
STRIDED_FLAT_UNROLL = 4
#: when the tiles of a problem fill less than this many waves of resident blocks, n is split over
#: blocks (two kernels) until they do
STRIDED_WAVES = 2
#: ... and on GPUs of much DRAM bandwidth an SM (high_bandwidth_per_sm), by (dtype size, backward):
#: inputs that step along inner, and dense float32 backward (STRIDED_DENSE_WAVES). H200, kernel by
#: kernel, the strided tier forced under each count in one process (benchmarks/kernel_breakdown.py,
#: results 2026-12-03_h200_s49/r3/breakdown_waves.txt), us a call at 2, 4 and 8 waves: float32
#: (8192, 8192)[:, ::2] over dim 0 forward 177.0, 166.4, 162.3, backward 316.8, 284.3, 280.2;
#: (32, 4096, 2048)[..., ::2] over dim 1 forward 645.1, 650.6, 646.6, backward 1179.8, 1120.8,
#: 1116.8; bf16 backward 173.5, 165.9, 165.6 and 633.5, 598.0, 604.3; bf16 forward 108.9, 111.5,
#: 129.1 and 362.4, 364.0, 366.2 (kept at 2). Dense: float32 backward (65536, 2048) over dim 0 624.7,
#: 612.4, 612.4, (1048576, 128) 612.7, 612.8, 614.4; the forward and the 16-bit backward level or
#: slower with more (bf16 (65536, 2048) forward 222.1, 234.1, 254.8). Not measured on an H100.
STRIDED_STEPPED_WAVES = {(2, False): 2, (2, True): 4, (4, False): 8, (4, True): 8}
STRIDED_DENSE_WAVES = {(2, False): 2, (2, True): 2, (4, False): 2, (4, True): 4}


def strided_waves(itemsize: int, backward: bool, steps: bool, high_bandwidth_per_sm: bool) -> int:
    """Waves of resident blocks a split problem of the strided tier fills (``steps``: an input steps
    along inner)."""
    if not high_bandwidth_per_sm:
        return STRIDED_WAVES
    return (STRIDED_STEPPED_WAVES if steps else STRIDED_DENSE_WAVES)[itemsize, backward]


#: whether split problems take the most chunks whose blocks fit their waves of resident blocks
#: (rounded down, True), the fewest that fill them (rounded up, False: a partial wave more wherever
#: the tiles do not divide the waves' blocks), or (None) of those two the one whose last wave of
#: resident blocks is the fuller. H200, bf16 stepped inputs, the strided tier kernel by kernel
#: (results 2026-12-03_h200_s53/c7/breakdown_rule.txt, 2026-12-03_h200_s54/n1/whole_waves.txt): (8192,
#: 8192)[:, ::2] over dim 0 backward, 128 tiles over 660 resident blocks, 20 chunks (3.88 waves, the
#: last 88% full) 161.2-161.3 us against 21 (4.07, 7%) 165.2-165.9; (32, 4096, 2048)[..., ::2] over
#: dim 1, 1024 tiles, 3 chunks (4.65 waves, 65%) 598.1 us against 2 (3.10, 10%) 634.1
STRIDED_WHOLE_WAVES: bool | None = None


def splits_filling(tiles: int, blocks: int, resident: int, whole: bool | None = None) -> int:
    """Chunks of the reduced axis that make ``tiles`` tiles about ``blocks`` blocks (waves of
    ``resident`` blocks): the most that fit them (``whole``), the fewest that fill them (``whole``
    False), or (None) whichever of the two leaves the fuller last wave."""
    down, up = max(1, blocks // tiles), -(-blocks // tiles)
    if whole is not None:
        return down if whole else up

    def last_wave_fill(splits: int) -> float:
        grid = splits * tiles
        return grid / (-(-grid // resident) * resident)

    return down if last_wave_fill(down) > last_wave_fill(up) else up


#: a chunk of n gives each thread at least this many rows
STRIDED_MIN_ROWS_PER_THREAD = 8


STAGED_THREADS = 256
#: staged CTAs per SM the shared memory is divided among (the probe sweeps it with ``staged_tuned``)
STAGED_CTAS_PER_SM = 2
#: float32 strided_staged kernels are compiled for this many resident CTAs an SM (forward,
#: backward): see StagedInstance.launch_bounds
STAGED_F32_CTAS_PER_SM = {False: 3, True: 2}
#: 16-bit strided_staged forward kernels with packs of two or more, by pack: likewise
STAGED_16BIT_FORWARD_CTAS_PER_SM = {2: 4, 4: 4, 8: 3}
#: shared memory the driver reserves per CTA
SMEM_RESERVED_PER_CTA = 1024
#: rows of a split piece come in multiples of this, so that flat pieces start 16-byte aligned
STAGED_CHUNK_ALIGN = 16
#: A tile's team is launched as one thread-block cluster on devices with clusters (sm_90+): one tile
#: a team, no persistent loop, so teams start and finish at their own pace. A team grows to this
#: many CTAs to fill the GPU. H100, alternated in one process with the persistent grid (results
#: 2026-11-24_h100_s2/staged_cluster_ab.txt): teams of 2-4 gain in every dtype and direction (bf16
#: forward of (1024, 16384, 4) over dim 1 0.67 -> 0.82 of copy, backward of (128, 1024, 1024)
#: 0.74 -> 0.88; float32 backward of (1024, 16384, 4) 0.84 -> 0.94); at the time teams of 8-16
#: lost in 16-bit types (bf16 (32, 4096, 1024) forward 0.62 -> 0.54) and in float32 softmax forward
#: ((8192, 16384) over dim 0 0.75 -> 0.68)
STAGED_FILL_CLUSTER = 4
#: Where a tile needs more than STAGED_FILL_CLUSTER CTAs (its rows, or the posts' shared memory) and
#: the tiles' clusters fill the GPU, a cluster of up to this many takes it since the merges of the
#: fourth set of 2026-11-24 (three CTAs an SM): H100, against the persistent grid alternated in one
#: process (benchmarks/kernel_breakdown.py, results 2026-11-25_h100_s15/staged_max_cluster_ab.txt):
#: forward, teams of 8, bf16 (32, 4096, 1024) over dim 1 0.735 -> 0.791 of copy, (8192, 8192)[::2]
#: over dim 0 0.577 -> 0.636, (64, 4096, 256) 0.692 -> 0.730, float32 0.819 -> 0.878 and 0.731 ->
#: 0.770; backward, float32 teams of 16, (32, 4096, 1024) 0.857 -> 0.892, (8192, 8192)[::2] 0.752 ->
#: 0.793, (64, 2048, 1024) 0.875 -> 0.933; bf16 teams of 8, (64, 2048, 1024) 0.831 -> 0.893, the rest
#: level (teams of 16 lost: (32, 4096, 1024) 0.80 -> 0.73, staged_cluster_sizes.txt). By (backward,
#: bytes per element):
STAGED_MAX_CLUSTER = {(False, 2): 8, (False, 4): 8, (True, 2): 8, (True, 4): 16}
#: ... except where an input is broadcast along outer (stride 0), whose tiles of one column range
#: share their reads in L2: expand(1, 4096, 4096) over dim 1 bf16 forward 0.942 of copy with teams of
#: at most 4 against 0.903 with 8, float32 backward 1.309 against 1.123 with 16
STAGED_MAX_CLUSTER_BROADCAST = 4


def staged_max_cluster(dtype: torch.dtype, backward: bool, broadcast: bool = False) -> int:
    """The most CTAs of a clustered strided_staged team (a power of two); ``broadcast``: an input
    has stride 0 along outer."""
    if broadcast:
        return STAGED_MAX_CLUSTER_BROADCAST
    return STAGED_MAX_CLUSTER[(backward, CXX_TYPES[dtype][2])]


#: the longest wait of strided_staged's staggered first wave (six bits of the geometry), and the most
#: teams it spans (nine; teams past it start at once)
STAGED_STAGGER_MAX_US = 63
STAGED_STAGGER_MAX_TEAMS = 511
#: microseconds the teams of odd index among the first wave of persistent teams (the cooperative grid)
#: wait before their first tile, where every team walks STAGED_STAGGER_MIN_ROUNDS tiles or more: teams
#: that start together stay in step, all staging their pieces, then all meeting, then all writing.
#: H100, strided_staged forced, the waits alternated in one process behind an L2 flush (results
#: 2026-12-06_h100_s70/c1/stagger_ab.txt), none -> 4 us: (8192, 16384) over dim 0 (teams of 10 or 20
#: CTAs walking 10-39 tiles each) bf16 forward 0.648 -> 0.673 of copy, backward 0.684 -> 0.708, float32
#: 0.766 -> 0.781 and 0.771 -> 0.780; bf16 (32, 4096, 1024) over dim 1 backward (about 20 tiles each)
#: 0.797 -> 0.813; 8 us level with 4 or behind, 16 us behind. One tile a cluster (clusters in waves)
#: ran level at 4 and 8 us (within 0.008 either way) and behind at 16: no wait there. Measured on an
#: H100 only. The cut at four tiles a team is cluster_stream's (instances.CLUSTER_STREAM_STAGGER_MIN_ROUNDS),
#: not measured here: fewer rounds only add the wait to the launch
STAGED_STAGGER_US = 4
STAGED_STAGGER_MIN_ROUNDS = 4


def staged_stagger_us(persistent: bool, rounds: int, tuning) -> int:
    """The first wave's wait of a strided_staged launch (``persistent``: teams meeting through global
    memory, the cooperative grid, each walking ``rounds`` tiles or more; else one tile a team or
    cluster): Tuning.staged_stagger_us where set, else STAGED_STAGGER_US for persistent teams of
    STAGED_STAGGER_MIN_ROUNDS rounds or more, else none."""
    if tuning.staged_stagger_us is not None:
        return tuning.staged_stagger_us
    return STAGED_STAGGER_US if persistent and rounds >= STAGED_STAGGER_MIN_ROUNDS else 0


#: The float32 forward's tiles take two 128-byte lines of each row (64 columns) where persistent teams
#: then still hold a tile in at most this many CTAs. H100, strided_staged forced, alternated in one
#: process behind an L2 flush (results 2026-12-06_h100_s71/c6/, c1/summary.txt, c7/rule.txt): (8192, 16384)
#: over dim 0 0.766 -> 0.794 (0.776 -> 0.800 in another process), (8192, 8192) 0.759 -> 0.789,
#: (4, 8192, 4096) over dim 1 0.786 -> 0.805, (12288, 16384) 0.761 -> 0.792, teams of 20-29 CTAs at
#: two lines; (16384, 8192), teams of 43, 0.755 -> 0.709. Not the backward ((8192, 16384) 0.781 ->
#: 0.743), not 16-bit types (bf16 at 128 columns behind on all six shapes), not tiles a cluster holds.
#: Teams of 30-42 CTAs were not measured.
STAGED_WIDE_TILE_F32_MAX_TEAM = 32


def staged_wide_tile(shape: StagedShape, wide, dtype: torch.dtype, backward: bool, window: bool, step: int):
    """The float32 forward's persistent-team geometry at tiles of two 128-byte lines a row, where
    STAGED_WIDE_TILE_F32_MAX_TEAM CTAs still hold one (``shape``: the geometry at one line; ``wide()``:
    the geometry at two), else None."""
    line = 128 // CXX_TYPES[dtype][2]
    if dtype != torch.float32 or backward or window or step != 1:
        return None
    if shape.clustered or shape.splits == 1 or not shape.held or shape.tile_cols != line:
        return None
    wider = wide(2 * line)
    if wider is None or wider.clustered or not wider.held or wider.splits > STAGED_WIDE_TILE_F32_MAX_TEAM:
        return None
    return wider


#: values a CTA posts for its cluster at least (a post a column of its tile): a split tile is one
#: 128-byte line of a row unless Tuning.staged_tile_cols widens it; the floor keeps the default
#: clustered geometries' shared memory (float32 lines are 32 columns) as measured
STAGED_POST_COLS = 64
#: Tiles ordered outer index fastest where an input has stride 0 along outer (an expanded tensor):
#: the outer indices of one column range read the same memory, and run together share it in L2.
STAGED_OUTER_FASTEST_WHEN_BROADCAST = True


@dataclass(frozen=True)
class StagedShape:
    """A strided_staged launch: the compute pack, the tile's columns, a CTA's rows of a tile
    (chunk), the rows its buffer holds (stage_rows; < chunk: the chunk streams through twice), the
    CTAs per tile (splits), the teams of the persistent grid (or one a tile, clustered), each CTA's
    shared memory, and whether a team is a thread-block cluster of ``splits`` CTAs."""

    pack: int
    tile_cols: int
    chunk: int
    stage_rows: int
    splits: int
    teams: int
    tiles: int
    smem: int
    clustered: bool = False

    @property
    def held(self) -> bool:
        return self.stage_rows >= self.chunk

    @property
    def grid(self) -> int:
        return self.teams * self.splits


#: Window tiles (strided_staged.cuh's header; 16-bit types, window_tiles) stage each tile row in its
#: 16-byte window: inputs off 16-byte boundaries, inner sizes of no whole number of 16-byte pieces and
#: rows at several phases (window_fits: unit steps). Inputs off their boundaries over inner sizes under
#: this many bytes keep the "strided" tier (tier choice: unmeasured there, and a window tile's one or
#: two straddling pieces a row, moved element by element, would be most of its copies)
STAGED_WINDOW_MIN_INNER_BYTES = 512
#: a window tile's row is at most one warp's packs (store_window exchanges them by shuffles)
STAGED_WINDOW_MAX_PACKS = 32


def window_tiles(dtype: torch.dtype) -> bool:
    """Whether strided_staged stages its tile rows in their 16-byte windows where it can (pointers
    off their boundaries, or inner of no whole number of 16-byte pieces) rather than copying in
    pieces as wide as the pointers and strides allow: 16-bit types (2-byte copies measured 0.14-0.22
    of copy, window_probe_*.txt), not float32 (4-byte copies measured faster, on x[..., :-1] of
    (32, 4096, 1024) too: 0.599 forward and 0.711 backward against the window tiles' 0.520 and
    0.552)."""
    return CXX_TYPES[dtype][2] == 2


def window_fits(inner: int, strides, itemsize: int) -> str | None:
    """Why strided_staged cannot stage the rows of tensors of these strides ((s0, s1, s2) each, the
    output's last) in their 16-byte windows (None: it can, whatever their pointers and row strides)."""
    if inner * itemsize < STAGED_WINDOW_MIN_INNER_BYTES:
        return f"inner {inner} is under {STAGED_WINDOW_MIN_INNER_BYTES} bytes"
    for _, _, s2 in strides:
        if s2 != 1:
            return f"a tensor steps by {s2} along inner"
    return None


def staged_pack(inner: int, dtype: torch.dtype) -> int:
    """Elements a thread reads from shared memory at once: the widest pack (up to 16 bytes) that
    divides inner, so that every staged row starts on a pack."""
    return next(p for p in PACK_SIZES[dtype] if inner % p == 0)


def _chunk_rows(n: int, splits: int) -> int:
    """A CTA's rows when n is split over ``splits``: rounded up to STAGED_CHUNK_ALIGN."""
    return -(-(-(-n // splits)) // STAGED_CHUNK_ALIGN) * STAGED_CHUNK_ALIGN


def staged_shape(
    outer: int,
    n: int,
    inner: int,
    dtype: torch.dtype,
    backward: bool,
    smem_per_sm: int,
    smem_per_block: int,
    sm_count: int,
    ctas_per_sm: int | None = None,
    clustered: bool = False,
    max_cluster: int | None = None,
    broadcast: bool = False,
    window: bool = False,
    per_row: bool = True,
    step: int = 1,
    tile_cols: int | None = None,
) -> StagedShape | None:
    """The strided_staged geometry of a problem (None for inner <= 1, or columns too wide for 16
    rows of one tile in a CTA's shared memory). Tiles are held in shared memory when the resident
    CTAs can hold one (n split over a team of them), else streamed. ``clustered``: a team of at
    most staged_max_cluster CTAs, a power of two, is one cluster, a tile a team, where a tile fits
    in that many CTAs (past STAGED_FILL_CLUSTER, where the clusters fill the GPU too); otherwise the
    persistent team shape. ``max_cluster`` forces that most (then wherever a tile fits);
    ``broadcast``: an input has stride 0 along outer; ``window``: rows staged in their 16-byte
    windows (16-byte packs, at most STAGED_WINDOW_MAX_PACKS a tile's row), ``per_row`` each at its
    own phase (one 16-byte piece more a staged row) rather than at the inputs' one phase; ``step``: the
    inputs' step along inner (2: a staged row is the span of its columns, 16-byte packs); ``tile_cols``
    forces the tile's columns (a multiple of 128 bytes, at most a tile row's packs, and the backward's
    at most STAGED_THREADS; ValueError otherwise)."""
    if inner <= 1:
        return None
    ctas = ctas_per_sm or STAGED_CTAS_PER_SM
    itemsize = CXX_TYPES[dtype][2]
    tensors = 2 if backward else 1
    pack = 16 // itemsize if window or step > 1 else staged_pack(inner, dtype)
    scratch = STAGED_THREADS * pack * 4  # one float a thread's column (the pairs merge as two trees)
    budget = min(smem_per_block, smem_per_sm // ctas - SMEM_RESERVED_PER_CTA)
    per_tensor = (budget - scratch) // tensors // 16 * 16
    resident = sm_count * ctas
    line = 128 // itemsize
    extra = pack if window and per_row else 0  # a staged row at its own phase: one piece more
    span = lambda cols: cols * step + extra  # noqa: E731  (elements a staged row of cols columns takes)
    if tile_cols is not None:
        widest = (STAGED_WINDOW_MAX_PACKS if window else STAGED_THREADS) * pack
        if backward:
            widest = min(widest, STAGED_THREADS)  # a team's CTAs post their column sums a thread each
        if tile_cols <= 0 or tile_cols % line or tile_cols > widest:
            raise ValueError(
                f"strided_staged: tiles of {tile_cols} columns: not a multiple of {line} up to {widest} ({dtype})"
            )
        if not window:
            tile_cols = min(tile_cols, inner)
    elif inner <= line and not window:
        tile_cols = inner
    else:
        # a 128-byte line of each row, widened while a whole tile still fits one CTA and the tiles
        # still outnumber the resident CTAs (short axes: more bytes per CTA, fewer pieces)
        tile_cols = line
        widest = (STAGED_WINDOW_MAX_PACKS if window else STAGED_THREADS) * pack
        while (
            2 * tile_cols <= widest
            and tile_cols < inner
            and n * span(2 * tile_cols) * itemsize <= per_tensor
            and outer * -(-inner // (2 * tile_cols)) >= resident
        ):
            tile_cols *= 2
        if not window:
            tile_cols = min(tile_cols, inner)
    # a window's tiles may keep to the inputs' phase: as many as inner and the most lead elements make
    tiles = outer * -(-(inner + (pack - 1 if window else 0)) // tile_cols)
    rows_fit = per_tensor // (span(tile_cols) * itemsize)
    stage = lambda rows: -(-rows * span(tile_cols) * itemsize // 16) * 16  # noqa: E731
    if rows_fit >= n:
        return StagedShape(pack, tile_cols, n, n, 1, tiles, tiles, tensors * stage(n) + scratch)
    most_rows = rows_fit // STAGED_CHUNK_ALIGN * STAGED_CHUNK_ALIGN
    if most_rows == 0:
        return None
    fewest_splits = -(-n // most_rows)
    largest = max_cluster or staged_max_cluster(dtype, backward, broadcast)
    if clustered and fewest_splits <= largest:
        # the posts take shared memory too: the rows a CTA holds are counted without them, so a
        # chunk may need one more power of two of CTAs
        post = max(STAGED_POST_COLS, tile_cols) * (4 if backward else 8)  # a column's sum, or (max, sum)
        splits = next_pow2(fewest_splits)
        chunk = lambda splits: _chunk_rows(n, splits)  # noqa: E731
        smem = lambda splits: tensors * stage(chunk(splits)) + scratch + post  # noqa: E731
        while splits < largest and (
            smem(splits) > budget or splits < STAGED_FILL_CLUSTER and tiles * splits < resident
        ):
            splits *= 2  # fit the posts, or fill the GPU
        # teams past STAGED_FILL_CLUSTER only where their clusters fill the GPU: a few tiles spread
        # over every SM as persistent teams
        fills = splits <= STAGED_FILL_CLUSTER or tiles * splits >= resident or max_cluster is not None
        if smem(splits) <= budget and fills:
            return StagedShape(pack, tile_cols, chunk(splits), chunk(splits), splits, tiles, tiles, smem(splits), True)
    # held: a team of CTAs holds the tile; streamed: every resident CTA takes a share of the tiles
    teams = min(tiles, max(1, resident // fewest_splits))
    splits = max(1, resident // teams)
    chunk = _chunk_rows(n, splits)
    splits = -(-n // chunk)
    stage_rows = min(chunk, most_rows)
    return StagedShape(pack, tile_cols, chunk, stage_rows, splits, teams, tiles, tensors * stage(stage_rows) + scratch)


#: strided_staged serves problems of at least this many elements: the H100 runs measured it on
#: tensors of 2^25 elements and more; smaller ones are bound by launch and latency, where the
#: "strided" tier (one kernel, no shared-memory staging) serves as before
STAGED_MIN_NUMEL = 1 << 18


#: strided_staged is not chosen for axes this long over 128 columns or more (see choose_tier) ...
STAGED_MAX_N_WIDE = 65536
#: ... except for float32 forward where the tiles, staged at one CTA an SM, are held by at least
#: STAGED_WIDE_MIN_TEAMS persistent teams that each take at least STAGED_WIDE_MIN_ROUNDS tiles in
#: turn. H100, against the strided tier in one process (benchmarks/kernel_breakdown.py, results
#: 2026-11-27_h100_s20/f32_staged_one_cta.txt and bf16_staged_one_cta.txt), fraction of copy, three
#: teams: (65536, 2048) over dim 0 0.672-0.691 against 0.652-0.654 (21 tiles a team), (65536, 4096)
#: 0.732 against 0.637 (43), (65536, 8192) 0.726 against 0.641 (85), (32, 65536, 256) over dim 1
#: 0.706 against 0.618 (85), (8, 65536, 512) 0.701 against 0.609 (43); lost with fewer tiles a team
#: ((65536, 1024) 0.618 against 0.636 at 11, (65536, 512) 0.594 against 0.608 at 5) or fewer teams
#: ((98304, 2048) 0.633 against 0.655 with two, (131072, 1024) 0.469 against 0.656 with one). At the
#: boundary (f32_threshold.txt): 13 tiles a team level ((65536, 1280) 0.627 against 0.625), 16 ahead
#: ((65536, 1536) 0.659-0.665 against 0.648), 19 ahead ((65536, 1792) 0.667 against 0.633). Not
#: 16-bit types (bf16 from 0.055 ahead on (32, 65536, 256) to 0.095 behind on (98304, 2048), 0.06
#: behind on (65536, 2048)), nor the backward (bf16 (65536, 2048) 0.41 against 0.61, float32 0.49
#: against 0.60, stale_rule_probe.txt)
STAGED_WIDE_MIN_TEAMS = 3
STAGED_WIDE_MIN_ROUNDS = 16
# ... and, on GPUs of much DRAM bandwidth an SM (backends.base.high_dram_bandwidth_per_sm), only where
# outer > 1. H200 (4814 GB/s over 132 SMs as its driver reports, 36 an SM; an H100's 3352 are 25),
# "auto" under the rule above (staged teams at one CTA an SM) against the strided tier forced, one
# after the other in one process, two rounds (results 2026-12-01_h200_s38/f32_wide_staged_h200.txt):
# outer 1 lost or tied, (65536, 1536) over dim 0 0.568 and 0.564 against 0.640 and 0.634, (65536,
# 2048) 0.593 and 0.584 against 0.648 and 0.640, (65536, 4096) 0.622 and 0.615 against 0.627 and
# 0.622, (65536, 8192) 0.623 and 0.634 against 0.635 and 0.629; outer > 1 gained, (32, 65536, 256)
# over dim 1 0.640 and 0.624 against 0.583 and 0.579, (8, 65536, 512) 0.590 and 0.615 against 0.586
# and 0.580 (the strided tier's finish runs slower there than on the 2-d shapes: 3.3 against 3.9
# TB/s). Two devices measured: the bound lies anywhere between their 25 and 36. A device that
# reports no memory clock is taken for one of much bandwidth an SM.


def wide_axis_staged_ctas(
    outer: int,
    n: int,
    inner: int,
    dtype: torch.dtype,
    backward: bool,
    smem_per_sm: int,
    smem_per_block: int,
    sms: int,
    *,
    dram_gbps: float | None,
) -> int | None:
    """The CTAs an SM strided_staged takes a long axis over wide columns with (n >=
    STAGED_MAX_N_WIDE, inner >= 128), or None where that axis keeps the strided tier (see
    STAGED_WIDE_MIN_TEAMS and high_dram_bandwidth_per_sm)."""
    if backward or dtype != torch.float32 or n < STAGED_MAX_N_WIDE or inner < 128:
        return None
    if outer == 1 and high_dram_bandwidth_per_sm(dram_gbps, sms):
        return None
    shape = staged_shape(outer, n, inner, dtype, False, smem_per_sm, smem_per_block, sms, 1)
    if shape is None or not shape.held or shape.splits == 1:
        return None
    if shape.teams < STAGED_WIDE_MIN_TEAMS or shape.tiles < STAGED_WIDE_MIN_ROUNDS * shape.teams:
        return None
    return 1


def choose_tier(
    outer: int,
    n: int,
    inner: int,
    dtype: torch.dtype,
    backward: bool,
    limits,
    aligned: bool = True,
    window: bool = True,
    stepped: bool = False,
    log: bool = False,
) -> str:
    """``window``: every input's rows start at one 16-byte phase (the inputs' pointers share it,
    their row strides are whole 16-byte pieces), unit steps along inner. ``stepped``: an input steps
    along inner; then ``window`` says whether strided_staged can stage the spans (stepped_span_fits).
    ``log``: a log-softmax problem."""
    itemsize = CXX_TYPES[dtype][2]
    limits_args = (limits.smem_per_sm, limits.smem_per_block, limits.sm_count)
    if takes_warp_columns(n, inner, dtype, aligned, window, stepped):
        return "strided_warp"
    if stepped and window and takes_stepped_warp_columns(n, inner, dtype, backward, log):
        return "strided_warp"
    if not stepped and not window and takes_spread_columns(n, inner, dtype, backward):
        return "strided_warp"
    if stepped:
        # strided_staged reads each span once; the strided tier reads the elements of a tile of
        # columns, with the span of every sector, twice (its second walk). Past the conditions below,
        # the same rules as dense inputs. H100, x[..., ::2] of these tensors over dim 1, both
        # alternated in one process (fraction of copy, logical bytes; results
        # 2026-11-27_h100_s23/step_span_probe*.txt): bf16 (32, 4096, 2048) 0.449 against 0.356
        # forward, 0.411 against 0.323 backward, (8192, 8192)[:, ::2] over dim 0 0.346 and 0.316
        # against 0.287 and 0.271, (8192, 32, 2048) 0.671 against 0.275; float32 ahead by 0.03-0.25
        # but in the forward over axes of 32 to 64 ((4096, 64, 1024) 0.620 against 0.664, (8192, 32,
        # 2048) 0.646 against 0.667; at 16 and 128 ahead: 0.644 against 0.603, 0.625 against 0.559)
        short_f32_forward = dtype == torch.float32 and not backward and n in STEPPED_F32_FORWARD_STRIDED_N
        long_axis = (
            (dtype == torch.float32 or (backward and log))
            and n > STEPPED_STRIDED_PAST_N
            and limits.high_bandwidth_per_sm
        )
        if not window or inner * itemsize % 16 or short_f32_forward or long_axis:
            return "strided"
        if itemsize == 2 and backward and limits.high_bandwidth_per_sm:
            shape = staged_shape(outer, n, inner, dtype, backward, *limits_args, window=False, step=2)
            if shape is not None and shape.splits > STEPPED_16BIT_BACKWARD_MAX_TEAM:
                return "strided"
    elif aligned and not window and itemsize == 2:
        # 16-bit rows at different 16-byte phases (row strides of no whole number of pieces, e.g.
        # (32, 4096, 1023) over dim 1): the staged tiles would copy 2 bytes at a time, or, in their
        # windows, shift every row's reads and stores. H100 (results 2026-11-25_h100_s16/odd_rows_*.txt
        # and 2026-11-25_h100_s17/odd_rows_window.txt): bf16 (32, 4096, 1023) 0.205 of copy forward
        # and 0.140 backward staged in 2-byte copies, 0.349 and 0.344 in windows, 0.326-0.340 and
        # 0.413-0.428 on the strided tier; (16, 21, 513, 513) 0.313 and 0.427 in windows (Triton 0.553
        # and 0.676: the dispatcher gives the axes Triton's tiles hold to Triton,
        # dispatch.STAGGERED_TRITON_MAX_N)
        return "strided"
    # inputs off their 16-byte boundaries (a view with a storage offset): the staged tiles (16-bit
    # types in their windows, float32 in 4-byte copies) on inner sizes of STAGED_WINDOW_MIN_INNER_BYTES
    # or more; the strided tier otherwise, which loads packs it realigns. H100, alternated in one
    # process (benchmarks/window_probe.py, inputs one element in, outputs on their boundaries,
    # (32, 4096, 1024) and (128, 1024, 1024) over dim 1; results 2026-11-25_h100_s16/window_probe*.txt
    # and 2026-11-25_h100_s17/window_probe*.txt): float32 in 4-byte copies 0.66 and 0.73-0.75 of copy
    # forward, 0.64 and 0.74 backward, against the strided tier's 0.53, 0.57, 0.53, 0.54; bf16 in
    # windows 0.454 and 0.527 forward, 0.522 and 0.543 backward, against 0.439, 0.449, 0.447, 0.445
    # (2-byte copies: 0.14-0.22)
    if dense_log_backward_strided(outer, n, inner, itemsize, backward, log, aligned and window and not stepped, limits):
        return "strided"
    off_boundary = not stepped and not aligned and window and inner * itemsize >= STAGED_WINDOW_MIN_INNER_BYTES
    whole_pieces = inner * itemsize % 16 == 0
    # see OFF_BOUNDARY_16BIT_FORWARD_STRIDED_FROM_N: the windows lead on shorter axes
    long_axis = n >= OFF_BOUNDARY_16BIT_FORWARD_STRIDED_FROM_N
    if off_boundary and itemsize == 2 and not backward and whole_pieces and long_axis and limits.high_bandwidth_per_sm:
        return "strided"
    if outer * n * inner < STAGED_MIN_NUMEL or not (aligned or off_boundary or stepped):
        return "strided"
    if n >= STAGED_MAX_N_WIDE and inner >= 128:
        # a long axis over wide columns splits every tile over a team of CTAs that load, wait and
        # write in step: the strided tier's three passes measured faster there on an H100 (2026-11-27,
        # results 2026-11-27_h100_s20/stale_rule_probe.txt: bf16 (65536, 2048) over dim 0 0.61 of
        # copy against the staged teams' 0.49 forward (0.56 at one CTA an SM) and 0.61 against 0.28
        # backward, (1048576, 128) 0.61 against 0.49 and 0.60 against 0.52), but for the float32
        # forwards of wide_axis_staged_ctas
        staged = aligned and wide_axis_staged_ctas(
            outer, n, inner, dtype, backward, *limits_args, dram_gbps=limits.dram_gbps
        )
        return "strided_staged" if staged else "strided"
    windowed = window_tiles(dtype) and (off_boundary or inner * itemsize % 16 != 0)
    shape = staged_shape(outer, n, inner, dtype, backward, *limits_args, window=windowed, step=2 if stepped else 1)
    # dense rows on their boundaries, staged as computed here, of the widths measured: whole 16-byte
    # pieces, or float32 pairs
    measured_rows = aligned and window and not stepped and not windowed and (whole_pieces or inner * itemsize == 8)
    if shape is None or (measured_rows and one_team_walks_tiles(shape, inner, backward, limits)):
        return "strided"
    return "strided_staged"


#: a problem whose tiles one team of the whole grid takes in turn runs on the strided tier from this many
#: tiles, the backward from this many columns of inner (see one_team_walks_tiles)
ONE_TEAM_STRIDED_MIN_TILES = 4
ONE_TEAM_STRIDED_BACKWARD_MIN_INNER = 16


def one_team_walks_tiles(shape: StagedShape, inner: int, backward: bool, limits) -> bool:
    """Whether a strided_staged launch would be one team of every resident CTA taking
    ONE_TEAM_STRIDED_MIN_TILES tiles or more in turn (each tile split over the whole grid: long axes
    over small inner sizes, measured at 2^16-2^21), which the strided tier runs faster: every forward,
    and the backward from ONE_TEAM_STRIDED_BACKWARD_MIN_INNER columns. H100, the two tiers forced and
    alternated in one process behind an L2 flush (benchmarks/grid_row_probe.py), fraction of copy,
    strided against staged.

    Forward (results 2026-12-06_h100_s76/c5/ab.txt, c8/ab.txt, c8/ab16.txt, 2026-12-06_h100_s75/c1/ab.txt
    and 2026-12-06_h100_s77/n1/streamed16.txt, p1/fwd16.txt). Tiles held by the team: bf16 (4, 1048576,
    8) 0.451 against 0.368 (log-softmax 0.455 against 0.373), (32, 1048576, 8) 0.629 against 0.381,
    (16, 524288, 16) 0.595 against 0.343, (4, 262144, 32) 0.457 against 0.282, (4, 131072, 96) 0.463
    against 0.202, (32, 131072, 64) 0.630 against 0.253; float16 (8, 1048576, 8) 0.534 against 0.372,
    (32, 262144, 32) 0.631 against 0.297; float32 (8, 1048576, 4) 0.574 against 0.493, (64, 1048576,
    4) 0.658 against 0.504, (16, 2097152, 2) 0.596 against 0.536, (4, 524288, 8) 0.521 against 0.465,
    (4, 262144, 16) 0.521 against 0.448, (2, 131072, 64) 0.522 against 0.395, (32, 131072, 32) 0.642
    against 0.421, (32, 131072, 64) 0.632 against 0.413, (4, 131072, 96) 0.591 against 0.405. Tiles
    streamed through the team: float32 (32, 1048576, 8) 0.654 against 0.602, (16, 524288, 16) 0.644
    against 0.578, (4, 262144, 32) 0.582 against 0.511, (4, 1048576, 8) level (0.578 against 0.582);
    bf16 (8, 2097152, 8) 0.594 against 0.497, (4, 1048576, 32) 0.597 against 0.486, (16, 1048576, 16)
    0.632 against 0.466, (16, 524288, 32) 0.633 against 0.421 (log-softmax 0.637 against 0.432), (4,
    524288, 64) 0.598 against 0.443; float16 alike (n1/streamed16.txt).

    Backward (2026-12-06_h100_s77/p1/bwd.txt, n1/bwd.txt; 2026-12-06_h100_s75/c1/ab.txt). From 16
    columns: bf16 (4, 524288, 16) 0.533 against 0.506, (16, 262144, 16) 0.578 against 0.393, (4, 262144,
    32) 0.532 against 0.483, (16, 262144, 32) 0.605 against 0.500, (32, 131072, 64) 0.619 against 0.424,
    (64, 65536, 64) 0.598 against 0.317 (log-softmax 0.662-0.770 against 0.307-0.521); float32 within
    0.01 or ahead, (4, 524288, 16) 0.585 against 0.593, (16, 262144, 32) 0.622 against 0.591, (32, 131072, 64)
    0.581 against 0.588, (64, 65536, 64) 0.588 against 0.479 (log-softmax 0.715-0.778 against
    0.485-0.694). Narrower, the staged tiles lead or tie: bf16 (8, 1048576, 4) 0.505 against 0.514, (4,
    1048576, 8) 0.533 against 0.539; float32 (8, 1048576, 4) 0.586 against 0.635, (4, 1048576, 8)
    0.588 against 0.602 (but (16, 262144, 8) 0.584 against 0.517).

    The staged tiles keep two tiles, which went either way (bf16 (2, 131072, 64) 0.354 against 0.221,
    float32 (2, 2097152, 2) 0.431 against 0.489), and grids of two teams or more (bf16 (8, 1048576, 4)
    with three teams 0.475 against 0.531, (64, 65536, 32) with six 0.572 against 0.607; but (32, 131072,
    32) with three 0.596 against 0.559, n1/teams3.txt). Tier choice asks only of rows on their boundaries
    of whole 16-byte pieces or float32 pairs, the widths measured (float32 rows of 20-28 bytes ran
    staged ahead: (8, 1048576, 5) 0.453 against 0.564, n1/odd32.txt). Measured on the H100 alone; GPUs
    of much DRAM bandwidth an SM (the H200) keep the staged tiles, others (fewer SMs, less shared
    memory) take the rule where their own shapes meet it."""
    walks = shape.teams == 1 and shape.tiles >= ONE_TEAM_STRIDED_MIN_TILES
    wide_enough = not backward or inner >= ONE_TEAM_STRIDED_BACKWARD_MIN_INNER
    return walks and wide_enough and not limits.high_bandwidth_per_sm


#: on GPUs of much DRAM bandwidth an SM, the log-softmax backward of inputs on their 16-byte boundaries
#: over axes longer than this takes the strided tier: 16-bit columns of a 128-byte line or more, float32
#: over one outer index (see dense_log_backward_strided)
LOG_BACKWARD_STRIDED_PAST_N = 1024
LOG_BACKWARD_STRIDED_MIN_INNER_BYTES = 128


#: float32 log-softmax backwards over several outer indices whose (n, inner) blocks are at least this
#: many elements, of inner sizes from FLAT_OUTER_LOG_BACKWARD_MIN_INNER to COLUMNS_MAX in whole 16-byte
#: packs, take the strided tier (see flat_outer_log_backward)
FLAT_OUTER_LOG_BACKWARD_MIN_UNIT = 1 << 19
FLAT_OUTER_LOG_BACKWARD_MIN_INNER = 16


def flat_outer_log_backward(outer: int, n: int, inner: int, itemsize: int) -> bool:
    """Whether a dense float32 log-softmax backward over several outer indices, each a long block of a
    narrow inner size, takes the strided tier: its split partials, then the flat finish sweeping every
    outer index (STRIDED_FLAT_FINISH_OUTER), ahead of Triton's relay (which the dispatcher gives such
    problems otherwise) and of the staged teams. H200, kernel by kernel in one process
    (benchmarks/kernel_breakdown.py --log, results 2026-12-04_h200_s58/c4/), over dim 1: (128, 16384,
    32) 255.1 us against the relay's 272.9 and the tiles' finish's 266.1 (torch.compile 251.4), (64,
    65536, 16) 254.8 against 258.2 and 265.6 (250.9); the staged teams' column kernels took 294.5 on the
    first (c3/). bf16 stays on the relay (131.2 and 133.2 us against the strided tier's 149.3)."""
    return (
        itemsize == 4
        and outer > 1
        and FLAT_OUTER_LOG_BACKWARD_MIN_INNER <= inner <= COLUMNS_MAX
        and inner * itemsize % 16 == 0
        and n * inner >= FLAT_OUTER_LOG_BACKWARD_MIN_UNIT
    )


def dense_log_backward_strided(
    outer: int, n: int, inner: int, itemsize: int, backward: bool, log: bool, dense: bool, limits
):
    """Whether the log-softmax backward of a ``dense`` problem (every tensor on its 16-byte boundaries,
    rows at one phase, unit steps) takes the strided tier over the staged tiles: its first walk reads
    dy alone (the sum of dy), its second y and dy, where the staged teams of a long axis hold both and
    meet before writing. H200, kernel by kernel in one process (benchmarks/kernel_breakdown.py --log),
    bf16 (results 2026-12-04_h200_s55/c4/): (8192, 16384) over dim 0 267.1 us against the staged teams'
    325.3 (torch.compile 273.6), (8192, 8192).t() over dim 1 138.6 against 163.0 (127.7), expand(1,
    4096, 4096) over dim 1 271.0 against 461.4 (413.3). float32 with its partials on the partials-only
    kernel (STRIDED_PARTIALS_KERNEL; results 2026-12-04_h200_s57/c1/) where outer is 1: (8192, 8192).t()
    253.9 against 265.6 (251.1), expand(1, 4096, 4096) 631.0 against 683.1, (8192, 8192)[::2] over dim
    0 133.8 against 135.4 (129.7); over outer indices the staged tiles lead: (32, 4096, 1024) over dim 1
    523.9 against 473.2, (128, 1024, 1024) 512.7 against 417.8; but long narrow blocks of several
    outer indices (flat_outer_log_backward) take it."""
    if not (dense and backward and log and limits.high_bandwidth_per_sm):
        return False
    if flat_outer_log_backward(outer, n, inner, itemsize):
        return True
    return (
        (itemsize == 2 or outer == 1)
        and inner * itemsize >= LOG_BACKWARD_STRIDED_MIN_INNER_BYTES
        and n > LOG_BACKWARD_STRIDED_PAST_N
    )


def stepped_span_fits(inner: int, strides, itemsize: int, align: int) -> str | None:
    """Why strided_staged cannot stage the spans of inputs that step along inner ((s0, s1, s2) each,
    the output's last; ``align``: plans.alignment of the call), or None where it can: every input
    steps by 2 and the output by 1, pointers and row strides on 16-byte boundaries, and inner a whole
    number of 16-byte packs (the spans move in 16-byte pieces, the rows read back in 16-byte packs)."""
    steps = [s[2] for s in strides]
    if any(step != 2 for step in steps[:-1]) or steps[-1] != 1:
        return f"steps along inner {steps} (2 for every input and 1 for the output staged)"
    if align != 0:
        return "a pointer or row stride off its 16-byte boundary"
    if inner * itemsize % 16 != 0:
        return f"inner {inner} is no whole number of 16-byte packs"
    return None


#: float32 forwards of stepped inputs over reduced axes this long keep the strided tier, whose second
#: walk finds them in L2 (see choose_tier)
STEPPED_F32_FORWARD_STRIDED_N = range(32, 65)
#: ... and, on GPUs of much DRAM bandwidth an SM (high_dram_bandwidth_per_sm), stepped inputs over
#: axes longer than this in float32 (both directions) and in the log-softmax backward of every dtype:
#: the strided tier's two walks outran the staged spans there (the log-softmax backward's first walk
#: reads dy alone). H200, both forced in one process (fraction of copy of the logical bytes; results
#: 2026-11-29_h200_s37/step_span_warp.txt, step_span_before.txt, and 2026-12-01_h200_s39/
#: breakdown_steps_tiers.txt, step_span_log_bf16.txt, strided_step_packs_ab.txt): float32 forward
#: (8192, 8192)[:, ::2] over dim 0 0.308-0.380 against 0.297-0.317, (32, 4096, 2048)[..., ::2] over
#: dim 1 0.379-0.403 against 0.337-0.348, (1024, 16384, 32)[..., ::2] 0.385-0.386 against
#: 0.332-0.334; backward 0.291-0.316 against 0.277-0.292, level (0.322-0.335 against 0.327-0.335),
#: 0.325-0.328 against 0.312-0.314; bf16 log-softmax backward 0.265-0.319 against 0.251-0.268,
#: 0.355-0.360 against 0.335-0.350, 0.362-0.364 against 0.336-0.350 (the softmax backward: staged
#: ahead on two of the three). The shortest axis measured is 4096 rows. The H100 (25 GB/s an SM)
#: measured the float32 staged spans ahead (results 2026-11-27_h100_s23/step_span_probe*.txt) and
#: keeps them; its 16-bit log-softmax backward was not measured apart
STEPPED_STRIDED_PAST_N = 1024
#: ... and the 16-bit softmax backward of stepped inputs where strided_staged would split a tile over
#: a team of more than this many CTAs (a long axis over few tiles: every CTA of a team loads, meets
#: the others and writes in step, tile after tile). H200, kernel by kernel (the profiler's GPU time),
#: both forced in one process (results 2026-12-03_h200_s53/c3/breakdown_stepped.txt): bf16 (8192,
#: 8192)[:, ::2] over dim 0 (teams of 43) 178.6 us staged against 165.6 on the strided tier (177.3
#: against 165.9 in 2026-12-03_h200_s49); teams of 20 and fewer keep the staged spans ahead: (32, 4096,
#: 2048)[..., ::2] over dim 1 574.7 against 600.4, (128, 1024, 1024)[..., ::2] (teams of 5) 278.8
#: against 305.5, (2048, 128, 2048)[..., ::2] (one CTA a tile) 704.0 against 826.1
STEPPED_16BIT_BACKWARD_MAX_TEAM = 32

#: on GPUs of more than 30 GB/s of DRAM bandwidth an SM, the 16-bit forward of inputs off their 16-byte
#: boundaries (all at one phase, rows of whole 16-byte pieces) takes the strided tier over axes of this
#: many rows or more, rather than the staged tiles in their windows (see choose_tier). H200, alternated
#: in one process (benchmarks/grid_row_probe.py, inputs one element into their storage, the output on
#: its boundaries; results 2026-12-02_h200_s45/offset_*.txt), bf16 forward, fraction of copy: (512,
#: 256, 1024) 0.492 against 0.424, (256, 512, 1024) 0.478 against 0.427, (64, 2048, 512) 0.379 against
#: 0.324, (32, 4096, 1024) 0.405 against 0.340, (128, 1024, 1024) 0.454 against 0.396, (8, 8192, 2048)
#: 0.402 against 0.380, log-softmax alike; not shorter axes ((1024, 128, 1024) 0.419 against 0.473,
#: (2048, 64, 1024) 0.317 against 0.406), nor the backward (either way by 0.01-0.06), nor rows of a
#: partial last piece ((32, 4096, 1023) of rows 1024 apart, one element in: 0.259 against 0.358). The
#: H100 measured the windows ahead at 1024 and 4096 rows (results 2026-11-25_h100_s17/window_probe*.txt)
OFF_BOUNDARY_16BIT_FORWARD_STRIDED_FROM_N = 256


def supports(
    tier: str,
    outer: int,
    n: int,
    inner: int,
    dtype: torch.dtype,
    backward: bool,
    limits,
    ctas_per_sm: int | None = None,
) -> bool:
    if tier not in TIERS or inner <= 1:
        return False
    if tier == "strided_staged":
        shape = staged_shape(
            outer, n, inner, dtype, backward, limits.smem_per_sm, limits.smem_per_block, limits.sm_count, ctas_per_sm
        )
        return shape is not None
    if tier == "strided_warp":
        return n <= warp_columns_max_n(backward)
    return True


def kernel_name(family: str, inst, shape: str) -> str:
    """The extern "C" name of a strided kernel instance: family, function, direction, type, shape."""
    fn = "logsoftmax" if inst.log else "softmax"
    return f"fs_{family}_{fn}_{'bwd' if inst.backward else 'fwd'}_{CXX_TYPES[inst.dtype][1]}_{shape}"


@dataclass(frozen=True)
class StridedInstance:
    """One strided kernel with every template parameter fixed."""

    dtype: torch.dtype
    backward: bool
    log: bool
    pack: int = 1
    #: inputs step by 2 along inner, read as the two packs their elements lie in (STEPPED in
    #: strided_tier.cuh)
    stepped: bool = False
    #: the partials stage alone (PARTIALS_ONLY in strided_tier.cuh), compiled for
    #: STRIDED_PARTIALS_MIN_BLOCKS blocks an SM
    partials_only: bool = False
    #: a spans kernel compiled for this many blocks an SM instead of STRIDED_SPANS_PARTIALS_MIN_BLOCKS
    #: (the tuning strided_spans_blocks)
    min_blocks: int | None = None
    tier = "strided"
    header = "strided_tier.cuh"

    def __post_init__(self):
        if self.min_blocks is None:
            return
        if not self.spans:
            raise ValueError("strided: only a spans' partials-only kernel takes its own blocks an SM")
        if self.min_blocks == STRIDED_SPANS_PARTIALS_MIN_BLOCKS[self.pack]:  # one spelling per kernel
            object.__setattr__(self, "min_blocks", None)

    @property
    def name(self) -> str:
        suffix = ("_step2" if self.stepped else "") + ("_partials" if self.partials_only else "")
        if self.min_blocks is not None:
            suffix += f"_b{self.min_blocks}"
        return kernel_name("strided", self, f"p{self.pack}" + suffix)

    @property
    def narrow(self) -> bool:
        """A partials-only kernel of narrow packs (STRIDED_NARROW_PARTIALS_PACK, the 16-bit log-softmax
        backward), which no two-stage kernel reads."""
        return (
            self.partials_only
            and not self.stepped
            and self.pack == STRIDED_NARROW_PARTIALS_PACK
            and CXX_TYPES[self.dtype][2] == 2
        )

    @property
    def spans(self) -> bool:
        """A partials-only kernel reading a 16-bit dy's spans (STRIDED_STEPPED_PARTIALS_PACKS), which no
        two-stage kernel reads."""
        return self.partials_only and self.stepped and CXX_TYPES[self.dtype][2] == 2

    def wrapper(self) -> str:
        t = CXX_TYPES[self.dtype][0]
        log = "true" if self.log else "false"
        # every parameter is 8 bytes (pointers and i64), mode included: the launcher's argument
        # slots are uniform; the output's stride 2 is passed with the others and is always 1
        # (strided_pack_for_steps)
        if self.backward:
            params = (
                f"const {t}* y, const {t}* dy, {t}* dx, float* partials, i64 n, i64 inner, i64 ys0, "
                f"i64 ys1, i64 ys2, i64 dys0, i64 dys1, i64 dys2, i64 dxs0, i64 dxs1, i64 dxs2, i64 chunk, "
                f"i64 splits, i64 mode"
            )
            args = (
                "y, dy, dx, partials, n, inner, ys0, ys1, ys2, dys0, dys1, dys2, dxs0, dxs1, chunk, splits, (int)mode"
            )
        else:
            params = (
                f"const {t}* x, {t}* y, float* partials, i64 n, i64 inner, i64 xs0, i64 xs1, i64 xs2, i64 ys0, "
                f"i64 ys1, i64 ys2, i64 chunk, i64 splits, i64 mode"
            )
            args = "x, y, partials, n, inner, xs0, xs1, xs2, ys0, ys1, chunk, splits, (int)mode"
        fn = "strided_backward" if self.backward else "strided_forward"
        stepped = "true" if self.stepped else "false"
        bounds = f"{STRIDED_MAX_THREADS}"
        if self.partials_only:
            itemsize = CXX_TYPES[self.dtype][2]
            if self.narrow:
                bounds += f", {STRIDED_NARROW_PARTIALS_MIN_BLOCKS}"
            elif self.spans:
                bounds += f", {self.min_blocks or STRIDED_SPANS_PARTIALS_MIN_BLOCKS[self.pack]}"
            else:
                bounds += f", {STRIDED_PARTIALS_MIN_BLOCKS[itemsize, partials_walk(self.backward, self.log)]}"
        only = "true" if self.partials_only else "false"
        return (
            f'extern "C" __global__ void __launch_bounds__({bounds}) {self.name}({params}) {{\n'
            f"    {fn}<{t}, {self.pack}, {log}, {stepped}, {only}>({args});\n}}\n"
        )


@dataclass(frozen=True)
class StridedMergeInstance:
    """The strided tier's merge of the split pairs (forward) or sums (backward) of any storage
    type and function: the workspace is float32."""

    backward: bool
    dtype = torch.float32
    log = False
    pack = 1  # a thread merges one column
    tier = "strided"
    header = "strided_tier.cuh"

    @property
    def name(self) -> str:
        return f"fs_strided_merge_{'sums' if self.backward else 'pairs'}"

    def wrapper(self) -> str:
        values = 1 if self.backward else 2
        return (
            f'extern "C" __global__ void __launch_bounds__({STRIDED_MERGE_MAX_THREADS}) '
            f"{self.name}(float* partials, i64 splits, i64 width) {{\n"
            # the host sizes blocks by these: strided_tier.cuh's shared memory must agree
            f"    static_assert(kMergeMaxThreads == {STRIDED_MERGE_MAX_THREADS} && kMergeUnroll == "
            f'{STRIDED_MERGE_UNROLL}, "strided.STRIDED_MERGE_* and strided_tier.cuh disagree");\n'
            f"    strided_merge<{values}>(partials, splits, width);\n}}\n"
        )


def strided_merge_shape(
    tiles: int, width: int, splits: int, sm_count: int, columns: int | None = None, slices: int | None = None
) -> tuple[int, int]:
    """(columns, slices) of a strided_merge block for ``tiles`` tiles of ``width`` columns (a power
    of two) split ``splits`` times: 32 columns (a warp's 128 bytes of sums), halved down to 8 until
    the grid has a block for every SM; slices enough that a thread reads about
    STRIDED_MERGE_UNROLL slots, in one round of loads. ``columns``, ``slices``: the tunings
    strided_merge_columns and strided_merge_slices instead, powers of two (columns dividing the
    tile's width) of at most STRIDED_MERGE_MAX_THREADS threads together."""
    for name, value in (("strided_merge_columns", columns), ("strided_merge_slices", slices)):
        if value is not None and (value < 1 or value & (value - 1)):
            raise ValueError(f"strided: {name}={value} is not a power of two")
    if columns is None:
        columns = min(32, width)
        while columns > 8 and tiles * (width // columns) < sm_count:
            columns //= 2
    elif width % columns:
        raise ValueError(f"strided: strided_merge_columns={columns} does not divide the tile's {width} columns")
    if slices is None:
        slices = min(STRIDED_MERGE_MAX_THREADS // columns, next_pow2(-(-splits // STRIDED_MERGE_UNROLL)))
    if columns * slices > STRIDED_MERGE_MAX_THREADS:
        raise ValueError(
            f"strided: a merge block of {columns} columns x {slices} slices passes {STRIDED_MERGE_MAX_THREADS} threads"
        )
    return columns, slices


@dataclass(frozen=True)
class StagedInstance:
    """One strided_staged kernel: storage type, direction, function and compute pack."""

    dtype: torch.dtype
    backward: bool
    log: bool
    pack: int = 1
    cluster: bool = False  # teams are thread-block clusters (sm_90+)
    window: bool = False  # tile rows staged in their 16-byte windows (16-byte packs only)
    #: inputs step by 2 along inner, their tile rows staged as spans (16-byte packs only)
    stepped: bool = False
    #: flat runs read as rows of lcm(inner, pack) columns, merged by true column (16-byte packs only)
    folded: bool = False
    tier = "strided_staged"
    header = "strided_staged.cuh"

    @property
    def name(self) -> str:
        cl, win = "_cl" if self.cluster else "", "_win" if self.window else ""
        step = "_step2" if self.stepped else ""
        fold = "_fold" if self.folded else ""
        return kernel_name("staged", self, f"p{self.pack}{cl}{win}{step}{fold}")

    def wrapper(self) -> str:
        t = CXX_TYPES[self.dtype][0]
        log = "true" if self.log else "false"
        flags = ", ".join("true" if flag else "false" for flag in (self.cluster, self.window, self.folded))
        targs = f"{t}, {self.pack}, {log}, {flags}"
        load = f"StridedDirectLoad<{t}, 2>" if self.stepped else f"StridedDirectLoad<{t}>"
        if self.backward:
            params = (
                f"const {t}* y, const {t}* dy, {t}* dx, float* ws, i64 outer, i64 n, i64 inner, i64 ys0, i64 ys1, "
                f"i64 dys0, i64 dys1, i64 dxs0, i64 dxs1, i64 geometry, i64 chunk, i64 splits"
            )
            body = (
                f"staged_backward<{targs}>({load}{{y, ys0, ys1}}, {load}{{dy, dys0, dys1}}, "
                f"StridedDirectStore<{t}>{{dx, dxs0, dxs1}}, ws, outer, n, inner, geometry, chunk, splits);"
            )
        else:
            params = (
                f"const {t}* x, {t}* y, float* ws, i64 outer, i64 n, i64 inner, i64 xs0, i64 xs1, i64 ys0, "
                f"i64 ys1, i64 geometry, i64 chunk, i64 splits"
            )
            body = (
                f"staged_forward<{targs}>({load}{{x, xs0, xs1}}, StridedDirectStore<{t}>{{y, ys0, ys1}}, ws, outer, "
                f"n, inner, geometry, chunk, splits);"
            )
        return (
            f'extern "C" __global__ void __launch_bounds__({self.launch_bounds}) {self.name}({params}) {{\n'
            f"    {body}\n}}\n"
        )

    @property
    def launch_bounds(self) -> str:
        """Registers for a number of resident CTAs an SM where that was measured faster than
        ptxas's own choice (H100, alternated in one process; results 2026-11-24_h100_s3, _s4).
        float32: two CTAs' worth took softmax forward (128, 1024, 1024) from 0.84 to 0.94 of
        copy; three's (STAGED_F32_CTAS_PER_SM) kept it there where ptxas later took 86 registers
        (0.85), and took (1024, 16384, 4) from 0.81 to 0.91; the backward keeps two. 16-bit
        forward with packs of 2 or more: three CTAs' worth, with the float scratch that fits
        three CTAs' shared memory, took bf16 (128, 1024, 1024) from 0.73 to 0.85 (one-element
        packs lost 0.03, (4096, 4096, 3)). Packs of 2 and 4 since take four CTAs' worth (64
        registers, no spill; results 2026-11-28_h100_s27/staged_bounds_ab.txt): bf16 (512, 4096,
        6) 0.57 -> 0.63, (1024, 2048, 10) 0.68 -> 0.73, (2048, 1024, 20) 0.79 -> 0.86, log-softmax
        alike, (256, 8192, 12) 0.643 -> 0.637; packs of 8 keep three (four: (32, 4096, 1024) 0.774
        -> 0.766, (128, 1024, 1024) 0.844 -> 0.836). 16-bit backward keeps ptxas's choice: with a
        bound of two, bf16 (128, 1024, 1024) fell from 0.91 to 0.77."""
        if self.dtype == torch.float32:
            return f"{STAGED_THREADS}, {STAGED_F32_CTAS_PER_SM[self.backward]}"
        if not self.backward and self.pack >= 2:
            return f"{STAGED_THREADS}, {STAGED_16BIT_FORWARD_CTAS_PER_SM[self.pack]}"
        return f"{STAGED_THREADS}"


#: strided_warp (strided_warp.cuh): rows of the reduced axis a lane holds, one kernel each (the
#: kernels' ROWS), by direction: the backward holds two tensors. Dense enough that a lane's registers
#: hold few rows past the axis: a kernel keeps registers for all ROWS packs whatever n is, and tests
#: every row against n
WARP_COLUMNS_ROWS = {False: (2, 3, 4, 5, 6, 8, 10, 12, 16), True: (2, 3, 4, 5, 6, 8)}
WARP_COLUMNS_THREADS = 256
#: packs of neighbouring columns a lane moves whole, where the layout aligns them: 16 bytes, or
#: pairs of 16-bit elements; elsewhere a lane's columns are spread (WARP_SPREAD_PACK), which replaced
#: single elements. H200, alternated in one process (results 2026-11-29_h200_s36/spread_probe.txt,
#: the first form of the spread kernels, before their addresses and split were settled): bf16
#: (16, 21, 513, 513) over dim 1 0.63 of copy against 0.36 forward, 0.68 against 0.47 backward,
#: (8, 150, 127, 127) 0.50 against 0.31 and 0.43 against 0.34; float32 0.89 against 0.70 forward on
#: (16, 21, 513, 513) and 0.75 against 0.51 on (8, 150, 127, 127), but 0.64 against 0.72 on (4, 64,
#: 255, 255) and 0.90 against 0.95 backward on (16, 21, 513, 513), which the settled form took to
#: 0.81 and 1.00 (spread_sweep.txt, another process)
WARP_COLUMNS_PACKS = {torch.float32: (4,), torch.float16: (8, 2), torch.bfloat16: (8, 2)}
#: columns of a spread lane (WarpColumnsInstance.spread): its elements arrive in 32-bit registers one
#: an access, 16-bit ones too, so eight of them would take a 16-bit kernel's registers of 16-byte
#: packs twice over (bf16 backward of 8 rows: 128 registers against 103)
WARP_SPREAD_PACK = 4
#: rows a spread lane holds where the axis allows (warp_columns_shape)
WARP_SPREAD_ROWS = 12
#: a row's lanes cover at least this many bytes of it where the columns allow
WARP_COLUMNS_MIN_ROW_BYTES = 128
#: warps of a CTA that may share a group of columns, splitting the axis's rows (a power of two)
WARP_COLUMNS_ROW_WARPS = (1, 2, 4, 8)
#: axes longer than this split over the most row warps (warp_columns_shape), shorter ones the fewest
WARP_COLUMNS_FEW_ROW_WARPS_MAX_N = 64


#: strided_warp's 16-bit forward kernels of 16-byte packs that ask ptxas for registers enough for
#: three CTAs an SM (80), by rows a lane (WarpColumnsInstance.launch_bounds)
WARP_COLUMNS_THREE_CTA_ROWS = (5, 6, 8, 10)
#: ... and for two CTAs an SM (128), at 16 rows a lane: the kernels of inputs that step by 2 along
#: inner (two 16-byte reads a row) otherwise take 128-138 registers, whichever NVRTC compiles them,
#: and one CTA an SM. H200, NVRTC 13.0, Nsight Compute on x[..., ::2] of (4096, 64, 1024) over dim 1
#: (results 2026-12-01_h200_s39/ncu_warp_stepped_r16.txt): the bf16 log-softmax kernel at 134
#: registers ran 323 us at 12% occupancy, the softmax one at 128 registers 216 us at 24%
WARP_COLUMNS_TWO_CTA_ROWS = (16,)


#: "auto" takes strided_warp for reduced axes up to this long (16-bit types; float32), on 16-byte
#: boundaries and over columns of WARP_COLUMNS_MIN_ROW_BYTES or more (takes_warp_columns)
WARP_COLUMNS_AUTO_MAX_N = {2: 512, 4: 32}


def takes_warp_columns(n: int, inner: int, dtype: torch.dtype, aligned: bool, window: bool, stepped: bool) -> bool:
    """Whether "auto" gives a strided problem to strided_warp: 16-byte packs (every tensor on its
    16-byte boundary, row strides of whole 16-byte pieces, unit steps), columns of at least
    WARP_COLUMNS_MIN_ROW_BYTES, and an axis of at most WARP_COLUMNS_AUTO_MAX_N. H200, against what
    "auto" chose before, alternated in one process (benchmarks/warp_columns_probe.py, results
    2026-11-28_h200_s34/warp_columns_probe*.txt), over dim 1: bf16 forward (64, 32, 2048) 0.41-0.47 of
    copy against 0.24, (32, 64, 4096) 0.65 against 0.41, (4096, 64, 512) 0.92 against 0.84, (1024, 8,
    2048) 0.74 against 0.52, (8, 300, 4096) 0.53 against 0.41, (32, 512, 1024) 0.59 against 0.53,
    channel softmax level ((16, 21, 512, 512) 0.79 against 0.78, (8, 150, 128, 128) 0.54-0.57 against
    0.55); bf16 backward 0.83 against 0.70 on (8, 150, 128, 128), 1.00-1.02 against 0.98 on (16, 21,
    512, 512), 0.80-0.86 against 0.44 on (64, 32, 2048). float32 over axes of 33 and more loses to
    the staged tiles and to Triton's wide tiles ((8, 150, 128, 128) forward 0.74 against Triton's
    0.83), and keeps them; over shorter ones it is level or ahead ((64, 32, 2048) 0.78 against 0.53,
    (1024, 8, 2048) 0.89 against 0.75). These figures predate the kernels of exactly a lane's rows,
    their launch bounds and row warps (results 2026-11-28_h200_s35): the bf16 channel forward of (8,
    150, 128, 128) has since gone to 0.69 (the staged tiles: 0.55); float32 past 32 rows was not timed
    again."""
    itemsize = CXX_TYPES[dtype][2]
    if stepped or not (aligned and window) or inner * itemsize % 16 or inner * itemsize < WARP_COLUMNS_MIN_ROW_BYTES:
        return False
    return n <= WARP_COLUMNS_AUTO_MAX_N[itemsize]


#: the reduced axes "auto" gives to strided_warp over inputs that step by 2 along inner, by dtype size
#: and direction (exclusive, inclusive): see takes_stepped_warp_columns
WARP_STEPPED_AUTO_N = {(4, False): (0, 1024), (4, True): (0, 1024), (2, False): (0, 1024), (2, True): (16, 1024)}
#: ... for the log-softmax backward
WARP_STEPPED_AUTO_N_LOG_BACKWARD = {(4, True): (0, 1024), (2, True): (128, 1024)}


def takes_stepped_warp_columns(n: int, inner: int, dtype: torch.dtype, backward: bool, log: bool = False) -> bool:
    """Whether "auto" gives a problem whose inputs step by 2 along inner, and whose spans lie in
    16-byte packs (stepped_span_fits), to strided_warp: columns of at least WARP_COLUMNS_MIN_ROW_BYTES
    and an axis inside WARP_STEPPED_AUTO_N (WARP_STEPPED_AUTO_N_LOG_BACKWARD for a log-softmax
    backward). H200, x[..., ::2] over dim 1 (over dim 0 of 16-1024 rows);
    fractions of copy of the logical bytes, at most about 0.67 forward and 0.6 backward where every
    sector of the spans is read. float32, against the staged spans, the strided tier and
    torch.compile in one process (results 2026-11-29_h200_s37/step_span_warp.txt): forward 0.67-0.70
    from 16 to 1024 rows (auto had 0.36-0.57, torch.compile 0.39-0.53), 0.22 at 4096; backward
    0.56-0.63 (auto 0.35-0.48, torch.compile 0.32-0.62). bf16, since its pack loads are selects and
    its 16-row forward kernels capped at two CTAs an SM (WARP_COLUMNS_TWO_CTA_ROWS), against the
    staged spans, alternated in one process over 8 to 1024 rows (results 2026-12-01_h200_s39/
    stepped_tiers_bf16.txt, cap_r16_ab.txt, step_span_after.txt, step_span_log_bf16.txt): softmax
    forward 0.58-0.68 against 0.36-0.56, log-softmax forward 0.56-0.66 against 0.37-0.57 (0.557
    against 0.395 at 1024 rows); backward from 150 rows ahead in both functions (0.51-0.57 against
    0.34-0.47); over 32-128 rows the softmax backward ahead by 0.01-0.03 (0.567 against 0.540 over
    64 rows, 0.574 against 0.545 over 128), level over 16 (0.595 against 0.591), behind over 8 (0.556
    against 0.568): it keeps the staged spans up to 16 rows; the log-softmax backward behind over
    16-128 rows by 0.02-0.05 (0.538 against 0.565 over 64, 0.551 against 0.601 over 32): it keeps
    them up to 128."""
    wide = inner * CXX_TYPES[dtype][2] >= WARP_COLUMNS_MIN_ROW_BYTES
    bounds = WARP_STEPPED_AUTO_N_LOG_BACKWARD if backward and log else WARP_STEPPED_AUTO_N
    return wide and _axis_within(bounds, n, dtype, backward)


def _axis_within(bounds: dict, n: int, dtype: torch.dtype, backward: bool) -> bool:
    """Whether an axis of n lies inside a rule's (exclusive, inclusive) bounds for the dtype's size
    and the direction (none: outside)."""
    span = bounds.get((CXX_TYPES[dtype][2], backward))
    return span is not None and span[0] < n <= span[1]


#: inner sizes from which "auto" may give staggered rows to spread columns (takes_spread_columns;
#: measured from 127 x 127 up)
WARP_SPREAD_AUTO_MIN_INNER = 8192
#: the axes "auto" gives to spread columns over staggered rows, by dtype size and direction
#: (exclusive, inclusive: takes_spread_columns)
WARP_SPREAD_AUTO_N = {(4, False): (16, 256), (4, True): (16, 96), (2, False): (128, 256)}


def takes_spread_columns(n: int, inner: int, dtype: torch.dtype, backward: bool) -> bool:
    """Whether "auto" gives a problem over rows at several 16-byte phases (odd H x W: no pack
    aligns) to strided_warp's spread columns rather than Triton's tiles of scalar loads. H200, both in
    one process over dim 1, axes of 19 to 256 over 127 x 127 to 513 x 513 (results
    2026-11-29_h200_s36/spread_sweep.txt): float32 forward ahead from 19 rows to 256 ((16, 21, 513,
    513) 0.94 of copy against 0.89, (8, 200, 127, 127) 0.75 against 0.60, level at 48); float32
    backward ahead or level up to 128 ((8, 96, 127, 127) 0.86 against 0.81, (16, 21, 513, 513) 1.00
    against 0.99; taken up to 96, level at 128), behind past it (150 rows: 0.68 against 0.81); 16-bit
    forward ahead past 128 rows
    ((8, 150, 127, 127) 0.50 against 0.41, (8, 200, 127, 127) 0.53 against 0.50, level at 256),
    behind up to it by 0.01-0.07; 16-bit backward behind on all but two shapes (an element an access
    of y and of dy)."""
    return inner >= WARP_SPREAD_AUTO_MIN_INNER and _axis_within(WARP_SPREAD_AUTO_N, n, dtype, backward)


def warp_columns_max_n(backward: bool) -> int:
    """The longest reduced axis strided_warp holds: every lane of a CTA down the axis, each holding
    its most rows."""
    return WARP_COLUMNS_THREADS * max(WARP_COLUMNS_ROWS[backward])


@dataclass(frozen=True)
class WarpColumnsShape:
    lanes: int  # lanes of a warp along inner; 32 / lanes down the reduced axis
    row_warps: int  # warps of a CTA sharing a group of columns, splitting its rows
    rows: int  # the kernel's ROWS: rows of the axis a lane holds, at most
    groups: int  # groups of lanes x pack columns per outer index

    @property
    def bits(self) -> int:
        """The kernels' `bits` argument: log2 lanes | log2 row_warps << 8."""
        return (self.lanes.bit_length() - 1) | (self.row_warps.bit_length() - 1) << 8


def warp_full_rows(rows: int) -> int:
    """Rows of a lane the forward kernel of ``rows`` rows a lane takes as inside the axis without a
    test (strided_warp.cuh's forward_full_rows): the next fewer kernel's rows, which the axis
    outgrows wherever the host takes the fewest rows that cover it."""
    return max((r for r in WARP_COLUMNS_ROWS[False] if r < rows), default=0)


def warp_columns_shape(
    n: int,
    inner: int,
    itemsize: int,
    pack: int,
    backward: bool,
    lanes: int | None = None,
    row_warps: int | None = None,
    rows: int | None = None,
    spread: bool = False,
) -> WarpColumnsShape:
    """The lanes along inner and the row warps of a strided_warp launch (``lanes`` and
    ``row_warps`` where given), and the kernel's rows a lane: of the splits that hold n in at most
    the most ROWS, the one whose warps read the most of WARP_COLUMNS_MIN_ROW_BYTES of a row (or all of
    inner; H200, the bf16 backward of (8, 300, 4096) over dim 1 0.62 of copy at 64 bytes, 0.41 at 16),
    then the one that wastes the fewest slots (rows past n, columns past inner) to a tenth, then,
    for axes up to WARP_COLUMNS_FEW_ROW_WARPS_MAX_N, the fewest row warps (the work of a column's merges
    and constants spread over the most rows a lane, and none through shared memory at one warp), for
    longer ones the most (fewer registers a thread, more warps an SM to cover the loads). H200, the
    most row warps against the fewest, alternated in one process (results 2026-11-28_h200_s35,
    rows_against_before_bf16.txt): bf16 forward (8, 150, 16384) 0.69 of copy against 0.66, (4, 96,
    65536) 0.73 against 0.68, (4096, 64, 512) 0.94 against 0.92, backward level; but (16, 21, 262144)
    0.61 against 0.84 and (1024, 8, 2048) 0.29 against 0.74, where one thread's few rows cannot carry
    the merges. A lane holds the fewest ROWS that cover its rows (``rows`` where given: splits it does
    not cover are passed over).

    ``spread`` columns (WarpColumnsInstance.spread) rank the splits otherwise: after the rows'
    bytes and the waste, the most lanes (a warp's access of one element a lane then covers one row's
    lanes neighbouring elements, not two rows' halves), then the fewest row warps whose lanes hold
    at most WARP_SPREAD_ROWS rows, else the most. H200, alternated in one process (results
    2026-11-29_h200_s36/spread_split_ab.txt), 32 lanes against 16: bf16 backward (16, 21, 513 x 513)
    0.78 of copy against 0.73, float32 1.00 against 0.92; 32 lanes and eight row warps (8 rows a
    lane) against four (16): (4, 64, 255 x 255) forward bf16 0.54 against 0.52, float32 0.80
    against 0.76; four (12 rows) against eight (6): (8, 48, 127 x 127) 0.47 against 0.45, 0.71
    against 0.70; but more row warps over 19 to 21 rows: 0.38-0.44 against 0.55-0.63."""
    if rows is not None and rows not in WARP_COLUMNS_ROWS[backward]:
        raise ValueError(f"strided_warp: {rows} rows a lane is not one of {WARP_COLUMNS_ROWS[backward]}")
    best, short_axis = None, False
    for option in [lanes] if lanes else [1, 2, 4, 8, 16, 32]:
        for warps in [row_warps] if row_warps else WARP_COLUMNS_ROW_WARPS:
            step = 32 // option * warps
            need = -(-n // step)
            held = next((r for r in ([rows] if rows else WARP_COLUMNS_ROWS[backward]) if r >= need), None)
            if held is None:
                continue
            if not backward and warp_full_rows(held) * step >= n:
                short_axis = True  # forced rows past what the axis fills: the kernel would read past n
                continue
            width = option * pack
            groups = -(-inner // width)
            # how far a row's part falls short of WARP_COLUMNS_MIN_ROW_BYTES (0: not, or all of inner)
            short = 0 if width >= inner else max(0, WARP_COLUMNS_MIN_ROW_BYTES // (width * itemsize) - 1)
            waste = 1 - (n * inner) / (need * step * groups * width)
            if spread:
                fits = need <= WARP_SPREAD_ROWS
                score = (short, int(waste * 10), -option, not fits, warps if fits else -warps)
            else:
                score = (short, int(waste * 10), warps if n <= WARP_COLUMNS_FEW_ROW_WARPS_MAX_N else -warps, -option)
            if best is None or score < best[0]:
                best = (score, WarpColumnsShape(option, warps, held, groups))
    if best is None and short_axis:
        raise ValueError(
            f"strided_warp: a reduced axis of {n} is too short for {rows} rows a lane (the forward kernel "
            f"takes its first {warp_full_rows(rows)} rows a lane as inside the axis)"
        )
    if best is None:
        most = warp_columns_max_n(backward)
        asked = f" with {lanes} lanes along inner" if lanes else ""
        asked += f" and {row_warps} row warps" if row_warps else ""
        asked += f" and {rows} rows a lane" if rows else ""
        raise ValueError(f"strided_warp: a reduced axis of {n} is too long{asked} (at most {most})")
    return best[1]


def warp_columns_smem_floats(shape: WarpColumnsShape, pack: int) -> int:
    """Shared memory of a strided_warp launch, in floats (strided_warp.cuh's ColumnTable): none for
    groups of one warp; else each warp's posts, and three values a column of the CTA's groups."""
    if shape.row_warps == 1:
        return 0
    warps = WARP_COLUMNS_THREADS // 32
    return shape.lanes * pack * (warps + 3 * warps // shape.row_warps)


@dataclass(frozen=True)
class WarpColumnsInstance:
    """One strided_warp kernel: storage type, direction, function, pack, rows a lane, and whether a
    lane's pack is spread (its columns ``lanes`` apart, moved element by element)."""

    dtype: torch.dtype
    backward: bool
    log: bool
    pack: int
    rows: int
    spread: bool = False
    #: inputs step by 2 along inner, read as the two 16-byte packs of a lane's span
    stepped: bool = False
    tier = "strided_warp"
    header = "strided_warp.cuh"

    @property
    def name(self) -> str:
        shape = f"p{self.pack}{'s' if self.spread else ''}{'_step2' if self.stepped else ''}_r{self.rows}"
        return kernel_name("strided_warp", self, shape)

    @property
    def launch_bounds(self) -> str:
        """Three CTAs an SM for the 16-bit forward of 16-byte packs at 5 to 10 rows a lane, ptxas's
        own choice elsewhere. H200, alternated in one process (results 2026-11-28_h200_s35,
        rows_launch_bounds_ab_*.txt): bf16 (8, 150, 16384) over dim 1 at 10 rows 0.66 of copy (80
        registers and an 8-byte frame, three CTAs) against 0.58 (98 registers, two CTAs), at 5 rows
        0.68 (72 registers) against 0.60 (ptxas's own 64), (8, 300, 4096) 0.57 against 0.53; at 12 and
        16 rows the cap spills (48 and 112 bytes): (4, 96, 65536) 0.66 against 0.67, (4096, 64, 512)
        0.63 against 0.90. The backward gained on some shapes and lost on others
        ((32, 64, 4096) 0.76 against 0.70, (8, 300, 4096) 0.68 against 0.71) and keeps ptxas's."""
        itemsize = CXX_TYPES[self.dtype][2]
        if not self.backward and itemsize == 2 and self.pack * itemsize == 16:
            if self.rows in WARP_COLUMNS_THREE_CTA_ROWS:
                return f"{WARP_COLUMNS_THREADS}, 3"
            if self.rows in WARP_COLUMNS_TWO_CTA_ROWS:
                return f"{WARP_COLUMNS_THREADS}, 2"
        return f"{WARP_COLUMNS_THREADS}"

    def wrapper(self) -> str:
        t = CXX_TYPES[self.dtype][0]
        flags = ", ".join("true" if flag else "false" for flag in (self.log, self.spread))
        targs = f"{t}, {self.pack}, {self.rows}, {flags}"
        load, store = f"StridedDirectLoad<{t}{', 2' if self.stepped else ''}>", f"StridedDirectStore<{t}>"
        if self.backward:
            params = (
                f"const {t}* y, const {t}* dy, {t}* dx, i64 outer, i64 n, i64 inner, i64 ys0, i64 ys1, i64 dys0, "
                "i64 dys1, i64 dxs0, i64 dxs1, i64 groups, i64 bits"
            )
            body = (
                f"warp_columns_backward<{targs}>({load}{{y, ys0, ys1}}, {load}{{dy, dys0, dys1}}, "
                f"{store}{{dx, dxs0, dxs1}}, outer, n, inner, groups, bits);"
            )
        else:
            params = (
                f"const {t}* x, {t}* y, i64 outer, i64 n, i64 inner, i64 xs0, i64 xs1, i64 ys0, i64 ys1, "
                "i64 groups, i64 bits"
            )
            body = (
                f"warp_columns_forward<{targs}>({load}{{x, xs0, xs1}}, {store}{{y, ys0, ys1}}, outer, n, inner, "
                "groups, bits);"
            )
        return (
            f'extern "C" __global__ void __launch_bounds__({self.launch_bounds}) {self.name}({params}) {{\n'
            f"    {body}\n}}\n"
        )


def _build_warp_columns(load, key):
    """strided_warp: a warp a group of columns of one outer index, every row of the axis in its
    registers (strided_warp.cuh)."""
    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    itemsize = CXX_TYPES[dtype][2]
    stepped = any(s[2] != 1 for s in strides)
    if stepped:
        why = stepped_span_fits(inner, strides, itemsize, align)
        if why is None and tuning.strided_warp_spread:
            why = "spread columns (strided_warp_spread) take unit steps"
        if why is not None:
            raise ValueError(
                "tier 'strided_warp' takes unit steps along inner, or inputs that step by 2 read in the "
                f"16-byte packs of their spans; not here: {why}"
            )
    aligned_pack = widest_pack(WARP_COLUMNS_PACKS[dtype], align, itemsize, lambda p: inner % p == 0)
    spread = aligned_pack is None if tuning.strided_warp_spread is None else tuning.strided_warp_spread
    if not spread and aligned_pack is None:
        raise ValueError(
            f"strided_warp: no pack of {WARP_COLUMNS_PACKS[dtype]} elements aligns with inner={inner} and the "
            "tensors' pointers and strides; only spread columns (strided_warp_spread) take this layout"
        )
    pack = WARP_SPREAD_PACK if spread else aligned_pack
    shape = warp_columns_shape(
        n,
        inner,
        itemsize,
        pack,
        backward,
        tuning.strided_warp_lanes,
        tuning.strided_warp_row_warps,
        tuning.strided_warp_rows,
        spread,
    )
    groups = outer * shape.groups
    per_block = WARP_COLUMNS_THREADS // 32 // shape.row_warps
    if groups >= 1 << 31:  # the kernels index groups in 32 bits; a grid holds fewer CTAs still
        raise ValueError(f"strided_warp: {groups} groups of columns are more than a launch's grid holds")
    inst = WarpColumnsInstance(dtype, backward, log, pack, shape.rows, spread, stepped)
    smem = 4 * warp_columns_smem_floats(shape, pack)
    kernel = Kernel(load(inst, dev), inst.name, dev, 14 if backward else 11, WARP_COLUMNS_THREADS, 1, smem)
    pitches = tuple(s for tensor_strides in strides for s in tensor_strides[:2])
    return kernel.bound(-(-groups // per_block), (outer, n, inner) + pitches + (shape.groups, shape.bits))


def all_instances():
    """Every strided kernel the backend may launch: what CI compiles."""
    return (
        [
            StridedInstance(dtype, backward, log, pack, stepped, partials_only)
            for dtype in DTYPES
            for backward in (False, True)
            for log in (False, True)
            for pack in STRIDED_PACK_SIZES[dtype]
            for stepped in ((False, True) if pack == STRIDED_STEPPED_PACK.get(dtype) else (False,))
            for partials_only in (False, True)
        ]
        + [
            StridedInstance(dtype, True, True, STRIDED_NARROW_PARTIALS_PACK, partials_only=True)
            for dtype in DTYPES
            if CXX_TYPES[dtype][2] == 2
        ]
        + [
            StridedInstance(dtype, True, True, pack, stepped=True, partials_only=True)
            for dtype in DTYPES
            if CXX_TYPES[dtype][2] == 2
            for pack in STRIDED_STEPPED_PARTIALS_PACKS
        ]
        + [
            StagedInstance(dtype, backward, log, pack, cluster, window, stepped, folded)
            for dtype in DTYPES
            for backward in (False, True)
            for log in (False, True)
            for pack in PACK_SIZES[dtype]
            for cluster in (False, True)
            for window, stepped, folded in (
                ((False, False, False), (True, False, False), (False, True, False), (False, False, True))
                if pack * CXX_TYPES[dtype][2] == 16
                else ((False, False, False),)
            )
        ]
        + [
            WarpColumnsInstance(dtype, backward, log, pack, rows, spread, stepped)
            for dtype in DTYPES
            for backward in (False, True)
            for log in (False, True)
            for pack, spread, stepped in [(p, False, False) for p in WARP_COLUMNS_PACKS[dtype]]
            + [(WARP_SPREAD_PACK, True, False), (16 // CXX_TYPES[dtype][2], False, True)]
            for rows in WARP_COLUMNS_ROWS[backward]
        ]
        + [StridedMergeInstance(backward) for backward in (False, True)]
    )


def partials_only_launch(
    dtype: torch.dtype,
    backward: bool,
    log: bool,
    pack: int,
    stepped: bool,
    width: int,
    slices: int,
    outer: int,
    n: int,
    strides,
    align: int,
    tuning,
):
    """The partials-only kernel of a split problem whose two-stage kernel reads ``pack``-element packs
    over blocks of ``width`` x ``slices`` threads, as (instance, width, slices, reshaped), where the
    rule or the tuning takes it (separate_partials); else None. ``reshaped``: in packs of its own
    (narrow_partials, stepped_partials_pack) over a tile as wide, so that the splits stay the two-stage
    kernel's."""
    itemsize = CXX_TYPES[dtype][2]
    # whether the walk re-reads its tensor (x; dy for the log-softmax backward; y, beside dy, for the
    # softmax backward) from the caches: a stride of 0 along outer or n
    walked = strides[1 if backward and log else 0]
    rereads = (outer > 1 and walked[0] == 0) or (n > 1 and walked[1] == 0)
    if not separate_partials(itemsize, backward, log, tuning.strided_partials_kernel, rereads):
        return None
    if narrow_partials(itemsize, pack, backward, log, slices):
        ratio = pack // STRIDED_NARROW_PARTIALS_PACK
        inst = StridedInstance(dtype, backward, log, STRIDED_NARROW_PARTIALS_PACK, stepped, partials_only=True)
        return inst, width * ratio, slices // ratio, True
    inner_steps = tuple(s[2] for s in strides)
    chosen = tuning.strided_stepped_partials
    spans = stepped_partials_pack(chosen, itemsize, pack, backward, log, inner_steps, align, width)
    if spans is not None:
        blocks = tuning.strided_spans_blocks
        inst = StridedInstance(dtype, backward, log, spans, True, partials_only=True, min_blocks=blocks)
        return inst, width // spans, slices * spans, True
    return StridedInstance(dtype, backward, log, pack, stepped, partials_only=True), width, slices, False


def build(load, key):
    """The plan of a problem key with inner > 1 (see ``plans.build``)."""
    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    if tier not in TIERS:
        raise ValueError(f"tier {tier!r} of backend 'cuda' needs inner == 1; use one of {TIERS} for inner > 1")
    if tier == "strided_staged":
        return _build_staged(load, key)
    if tier == "strided_warp":
        return _build_warp_columns(load, key)
    facts = device_facts(dev)
    itemsize = CXX_TYPES[dtype][2]
    # the widest pack every pointer and stride is aligned to, and no wider than the columns
    pack = widest_pack(STRIDED_PACK_SIZES[dtype], align, itemsize, lambda p: p <= inner or p == 1)
    pack, stepped = strided_pack_for_steps(pack, dtype, tuple(s[2] for s in strides), tuning.strided_stepped_packs)
    inst = StridedInstance(dtype, backward, log, pack, stepped)
    row_bytes = tuning.strided_row_bytes or strided_row_bytes(inner, itemsize)
    most = tuning.strided_max_width or STRIDED_MAX_WIDTH
    width = min(most, next_pow2(-(-inner // pack)), max(1, row_bytes // (pack * itemsize)))
    # slices fill the block up to STRIDED_MAX_THREADS, no more than n needs (kUnroll rows each)
    slices = min(STRIDED_MAX_THREADS // width, max(max(1, 32 // width), next_pow2(-(-n // 4))))
    args = 18 if backward else 14
    kernel = Kernel(load(inst, dev), inst.name, dev, args, width, slices)
    # the partials stage on a kernel of its own, where the rule takes it (its splits fill the waves of
    # its own resident blocks; in packs of its own, the two-stage kernel's waves as without it)
    partials_kernel, reshaped = kernel, False
    only = partials_only_launch(dtype, backward, log, pack, stepped, width, slices, outer, n, strides, align, tuning)
    if only is not None:
        only_inst, only_width, only_slices, reshaped = only
        partials_kernel = Kernel(load(only_inst, dev), only_inst.name, dev, args, only_width, only_slices)
    tile_width = width * pack  # columns a tile, as every stage and the workspace's slots count them
    tiles = outer * -(-inner // tile_width)
    resident = max(1, kernel.blocks_per_sm()) * facts.sm_count
    splits = 1
    steps = any(s[2] != 1 for s in strides[:-1])
    waves = tuning.strided_waves or strided_waves(itemsize, backward, steps, facts.high_bandwidth_per_sm)
    if tuning.strided_splits:
        splits = min(tuning.strided_splits, n)
    elif tiles < waves * resident:
        if not reshaped:
            resident = max(1, partials_kernel.blocks_per_sm()) * facts.sm_count
        most = max(1, n // (slices * STRIDED_MIN_ROWS_PER_THREAD))
        whole = STRIDED_WHOLE_WAVES if tuning.strided_whole_waves is None else tuning.strided_whole_waves
        splits = min(most, splits_filling(tiles, waves * resident, resident, whole))
    chunk = -(-n // splits)
    splits = -(-n // chunk)
    grid = tiles * splits
    flat_strides = tuple(s for tensor_strides in strides for s in tensor_strides)  # (s0, s1, s2) each
    merge_block = tuning.strided_merge_columns, tuning.strided_merge_slices
    if splits == 1:
        if tuning.strided_flat_finish:
            raise ValueError("strided: strided_flat_finish=True, but n is not split (one kernel, no finish stage)")
        if merge_block != (None, None):
            raise ValueError("strided: a strided_merge block is tuned, but n is not split (nothing to merge)")
        return kernel.bound(grid, (0, n, inner) + flat_strides + (n, 1, 0))
    workspace = tiles * splits * tile_width * (1 if backward else 2)
    device = torch_device(dev)
    middle = (n, inner) + flat_strides + (chunk, splits)

    chunk_major = STRIDED_CHUNK_MAJOR if tuning.strided_chunk_major is None else tuning.strided_chunk_major
    order = STRIDED_MODE_CHUNK_MAJOR if chunk_major else 0
    if tuning.strided_interleaved is None:
        interleaved = splits >= STRIDED_INTERLEAVE_MIN_SPLITS
    else:
        interleaved = tuning.strided_interleaved
    if interleaved:
        order |= STRIDED_MODE_INTERLEAVED
    partials = STRIDED_PARTIALS | order
    if partials_kernel is kernel and deep_partials(itemsize, backward, log, tuning.strided_deep_partials):
        partials |= STRIDED_MODE_DEEP_PARTIALS

    merge = splits >= STRIDED_MERGE_MIN_SPLITS if tuning.strided_merge is None else bool(tuning.strided_merge)
    finish_grid = grid
    finish = STRIDED_FINISH | order | (STRIDED_MODE_MERGED if merge else 0)
    rule = STRIDED_FLAT_FINISH_OUTER if outer > 1 else STRIDED_FLAT_FINISH
    flat = rule if tuning.strided_flat_finish is None else tuning.strided_flat_finish
    why = "the pairs are not merged first"
    if merge:
        why = flat_finish_fits(outer, n, inner, strides, pack, backward, width * slices, tile_width, itemsize)
    finish_middle = middle
    if flat and why is None:
        run = kernel.block_x * kernel.block_y * STRIDED_FLAT_UNROLL * pack
        finish_grid = tuning.strided_flat_blocks or -(-outer * n * inner // run)
        finish = STRIDED_FINISH | STRIDED_MODE_MERGED | STRIDED_MODE_FLAT
        finish_middle = (n, inner) + flat_strides + (outer, splits)  # the flat sweep takes outer for chunk
    elif tuning.strided_flat_finish and why is not None:
        raise ValueError(f"strided: strided_flat_finish=True, but {why}")
    if not merge and merge_block != (None, None):
        raise ValueError("strided: a strided_merge block is tuned, but the finishing blocks merge the split pairs")

    merger = merge_grid = None
    if merge:
        columns, merge_slices = strided_merge_shape(tiles, tile_width, splits, facts.sm_count, *merge_block)
        merge_inst = StridedMergeInstance(backward)
        merger = Kernel(load(merge_inst, dev), merge_inst.name, dev, 3, columns, merge_slices)
        merge_grid = tiles * (tile_width // columns)
        merge_args = (splits, tile_width)

    def run(pointers, stream):
        scratch = torch.empty(workspace, dtype=torch.float32, device=device)  # held over the launches
        ws = scratch.data_ptr()
        partials_kernel.launch(grid, stream, pointers + (ws,) + middle + (partials,))
        if merger is not None:
            merger.launch(merge_grid, stream, (ws,) + merge_args)
        kernel.launch(finish_grid, stream, pointers + (ws,) + finish_middle + (finish,))
        del scratch  # only now: the allocator reuses it in stream order, after our kernels

    return run


def strided_pack_for_steps(pack: int, dtype: torch.dtype, steps: tuple, packs: bool | None = None) -> tuple[int, bool]:
    """(pack, stepped) of the strided kernel for tensors with these steps along inner (outputs last,
    always 1) and ``pack``, the widest their alignment allows: unit steps keep ``pack``; float32
    inputs that all step by 2 read the two packs of the span their pack lies in and keep the
    16-byte pack (the STRIDED_STEPPED_PACK instance); anything else reads single elements.
    ``packs``: the tuning strided_stepped_packs."""
    if steps[-1] != 1:
        raise ValueError(f"strided: the output must have unit stride along inner, not {steps[-1]}")
    if all(step == 1 for step in steps):
        return pack, False
    why = None
    if dtype not in STRIDED_STEPPED_PACK:
        why = f"{dtype} reads single elements"
    elif pack != STRIDED_STEPPED_PACK[dtype]:
        why = f"the tensors are aligned to packs of {pack} elements, not {STRIDED_STEPPED_PACK[dtype]}"
    elif any(step != 2 for step in steps[:-1]):
        why = f"the inputs' steps along inner are {steps[:-1]}, not all 2"
    if packs and why is not None:
        raise ValueError(f"strided: strided_stepped_packs=True, but {why}")
    if why is None and packs is not False:
        return pack, True
    return 1, False


def flat_finish_fits(
    outer: int, n: int, inner: int, strides, pack: int, backward: bool, threads: int, tile_width: int, itemsize: int
) -> str | None:
    """Why the flat finish (kFlat) cannot take a merged split problem (None: it can): every tensor one
    dense run (over several outer indices, the backward's kernels of 16-byte packs only); the forward
    needs a block's ``threads`` x ``pack`` elements to be a multiple of inner (each thread's columns
    fixed), the backward reads each pack's sums where they are not (over tiles ``tile_width`` columns
    wide). H200, over dim 0 of (65536, 2048) and (65536, 1000), the finishing kernel timed beside the
    tiles' in one process (results 2026-11-29_h200_s37/flat_general.txt): backward bf16 (65536, 1000)
    117.3 -> 88.7 us, float32 219.0 -> 177.7, float32 (65536, 2048) 377.8 -> 364.8; forward bf16
    (65536, 1000) 88.0 -> 111.0. Over outer indices: STRIDED_FLAT_FINISH_OUTER."""
    if outer != 1 and not backward:
        return f"{outer} outer indices (the forward's sweep takes one)"
    if outer != 1 and pack * itemsize != 16:
        return f"{outer} outer indices in packs of {pack * itemsize} bytes (kernels of 16-byte packs sweep several)"
    if any(s[1] != inner or s[2] != 1 or (outer > 1 and s[0] != n * inner) for s in strides):
        return "a tensor is not one dense run of (outer, n, inner)"
    if not backward and threads * pack % inner:
        return f"inner {inner} does not divide a block's {threads} x {pack} elements (the forward holds its columns)"
    if inner % pack:
        return f"inner {inner} is no whole number of packs of {pack}"
    if outer * (-(-inner // tile_width) * tile_width) >= 1 << 31:
        return f"{outer} x {inner} columns are 2^31 or more (the sweep works out columns in 32 bits)"
    if outer > 1 and outer * n * inner >= 1 << 32:
        return f"{outer} outer indices of {n * inner} elements are 2^32 or more (the sweep works out outer in 32 bits)"
    return None


#: the widest inner the column kernels hold (kClusterMaxColumns in cluster_tier.cuh)
COLUMNS_MAX = 32
#: runs (n x inner elements) from which strided_staged holds them across a cluster: see takes_columns
COLUMNS_MIN_RUN = 1 << 15


def column_runs(outer: int, inner: int, dtype: torch.dtype, strides) -> str | None:
    """Why a problem of these strides is no set of runs of interleaved columns the column kernels
    (cluster or cluster_stream) take (None: it is). The pointers are checked per call (16-byte
    boundaries)."""
    itemsize = CXX_TYPES[dtype][2]
    if inner & (inner - 1) or inner > COLUMNS_MAX:
        return f"inner {inner} is not a power of two up to {COLUMNS_MAX}"
    if any(s[1] != inner or s[2] != 1 for s in strides):
        return "the n x inner block of an outer index is not one contiguous run"
    if outer > 1 and any(s[0] * itemsize % 16 for s in strides):
        return "the runs do not start on 16-byte boundaries"
    return None


def columns_fit(outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool, strides) -> str | None:
    """Why the cluster tier's column kernels cannot hold a problem of these strides (None: they can)."""
    why = column_runs(outer, inner, dtype, strides)
    if why is None and n * inner > cluster_max_cols(dtype, backward, aligned=True, columns=inner):
        return f"a run of {n * inner} elements is longer than a cluster holds"
    return why


#: cluster_stream's column kernels take problems of this many runs (outer indices) or more, each a
#: cluster of up to 16 CTAs (fewer leave most SMs idle) ...
COLUMN_STREAM_MIN_RUNS = 8
#: ... whose CTAs hold at least this share of their slices in registers and shared memory (the rest
#: is read twice) ...
COLUMN_STREAM_MIN_HELD = 0.75
#: ... and, float32 forward, runs of this many elements or more (the 16-bit forward keeps the
#: cluster tier's column kernels and the staged tiles)
COLUMN_STREAM_F32_FORWARD_MIN_RUN = 1 << 19


def column_stream_held(run: int, inner: int, dtype: torch.dtype, backward: bool, budget: int) -> float:
    """The share of a run of ``run`` elements that cluster_stream's column kernels hold on chip, with
    ``budget`` bytes of dynamic shared memory a CTA (its CTAs' slices in registers and shared memory)."""
    shape = cluster_stream_shape(run, dtype, backward, budget, columns=inner)
    return min(1.0, shape.ctas * (shape.packs * shape.threads + shape.smem_slots) * shape.pack / run)


def takes_column_stream(
    outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool, budget: int, tuning
) -> bool:
    """Whether runs of n x inner elements (laid out as column_runs requires) are held across a
    cluster's registers and shared memory by cluster_stream's column kernels (the rest re-read)
    rather than by the cluster tier's column kernels or the staged tiles: the backward of runs longer
    than the cluster tier holds, and the float32 forward of runs of 2^19 or more, where 8 runs or more
    are held at least three quarters on chip. H200 (one NVIDIA H200), alternated in one
    process with the staged tiles and the cluster tier's column kernels (benchmarks/grid_row_probe.py,
    results 2026-11-28_h200_s32/column_stream_*.txt), fraction of copy: bf16 backward (64, 65536, 16)
    over dim 1 0.632 against 0.505, (128, 65536, 8) 0.683 against 0.565, (128, 16384, 32) 0.683
    against 0.578, (32, 65536, 16) 0.613 against 0.462; float32 backward (128, 65536, 8) 0.663 against
    0.593; float32 forward (64, 65536, 16) 0.663 against 0.598, (128, 65536, 8) 0.760 against the
    cluster tier's 0.669. Level or behind: runs held half on chip or less ((16, 1048576, 2) 0.44-0.51
    against 0.52, (8, 1048576, 4) 0.40 against 0.44-0.54), and the 16-bit forward everywhere (0.38-0.49
    against 0.41-0.58: its per-column work; two CTAs an SM and packs of 8 columns measured no better).
    ``budget``: the dynamic shared memory a CTA of theirs may take (instances.grid_row_dynamic_smem);
    ``tuning.column_stream`` overrides (True: runs of any length)."""
    if tuning.column_stream is not None:
        return tuning.column_stream
    if outer < COLUMN_STREAM_MIN_RUNS or tuning.staged_columns is False:
        return False
    run = n * inner
    if backward:
        longer = run > cluster_max_cols(dtype, backward, aligned=True, columns=inner)
    else:
        longer = dtype == torch.float32 and run >= COLUMN_STREAM_F32_FORWARD_MIN_RUN
    return longer and column_stream_held(run, inner, dtype, backward, budget) >= COLUMN_STREAM_MIN_HELD


def takes_columns(n: int, inner: int, tuning) -> bool:
    """Whether strided_staged holds the runs across a cluster (where columns_fit allows): every run
    of COLUMNS_MIN_RUN elements or more, in either direction and every type. H100, the column kernels
    and the staged tiles alternated in one process: backward runs of 32K-128K elements bf16 0.97-0.98
    of copy against 0.76-0.91, float32 1.00 against 0.85-0.96 (benchmarks/strided_probe.py, results
    2026-11-24_h100_s8); forward, since the column kernel's straight-line walks
    (benchmarks/grid_row_probe.py, results 2026-11-27_h100_s21/columns_vs_staged.txt), runs of
    32K-512K elements over 4-32 columns, bf16 0.69-0.92 against 0.64-0.88 (log-softmax 0.74-0.94
    against 0.65-0.90), float32 0.78-0.98 against 0.76-0.94 (before them the 16-bit forward trailed:
    (2048, 4096, 8) 0.81 against 0.88)."""
    if tuning.staged_columns is not None:
        return tuning.staged_columns
    return n * inner >= COLUMNS_MIN_RUN


def _build_columns(load, key):
    """The column kernels' plan: one cluster per outer index (instances.cluster_shape's contract,
    the rows being runs of n x inner)."""
    from .plans import tuned_cluster_shape  # plans imports this module

    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    facts = device_facts(dev)
    run = n * inner
    shape = tuned_cluster_shape(run, dtype, backward, outer, facts, tuning, columns=inner)
    inst = Instance("cluster", dtype, backward, log, shape.pack, cols=shape.held, columns=True)
    kernel = Kernel(load(inst, dev), inst.name, dev, 9 if backward else 7, shape.threads, 1, 0, cluster=shape.ctas)
    if shape.non_portable:
        kernel.set_attribute("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
    resident = kernel.resident_clusters()
    if resident < 1:
        raise ValueError(
            f"strided_staged: a cluster of {shape.ctas} CTAs of {shape.threads} threads cannot be resident on "
            f"{facts.arch}"
        )
    pitches = tuple(s[0] for s in strides)
    return kernel.bound(cluster_grid(outer, resident, backward) * shape.ctas, (outer, run) + pitches + (inner,))


def staged_widths(shape: StagedShape, outer: int, n: int, inner: int, strides, itemsize: int) -> tuple[bool, int]:
    """(flat, widest copy in bytes the strides allow): the pointers are checked per call."""
    flat = shape.tile_cols == inner and all(s[1] == inner for s in strides)
    bits = 0
    for s0, s1, _ in strides:
        if outer > 1:
            bits |= s0 * itemsize
        if not flat and n > 1:
            bits |= s1 * itemsize
    if flat:
        # where pieces and stagings start inside the flat run
        bits |= (shape.chunk if shape.splits > 1 else 0) * inner * itemsize
        bits |= (shape.stage_rows if not shape.held else 0) * inner * itemsize
    else:
        bits |= inner * itemsize | shape.tile_cols * itemsize
    width = next(w for w in (16, 8, 4, itemsize) if bits % w == 0)
    return flat, width


def _build_staged(load, key):
    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    if any(s[2] != 1 for s in strides):
        why = stepped_span_fits(inner, strides, CXX_TYPES[dtype][2], align)
        if why is not None:
            raise ValueError(f"tier 'strided_staged' cannot stage these inputs' spans: {why}; use tier 'strided'")
        return _staged_tiles(load, key, False, False, step=2)
    facts = device_facts(dev)
    # the column kernels' plans for calls on 16-byte boundaries, the staged tiles' for the rest
    fallback = lambda: _build_staged_tiles(load, key)  # noqa: E731
    stream_why = column_kernels_refuse(outer, inner, dtype, strides, facts)
    if tuning.column_stream and stream_why is not None:
        raise ValueError(f"strided_staged: column_stream=True, but {stream_why}")
    if streams_columns(outer, n, inner, dtype, backward, strides, facts, tuning):
        return _plan_or_fallback(_build_column_stream(load, key), _on_16_byte_boundaries, fallback)
    if takes_columns(n, inner, tuning):
        why = columns_fit(outer, n, inner, dtype, backward, strides) if stream_why is None else stream_why
        if why is None:
            return _plan_or_fallback(_build_columns(load, key), _on_16_byte_boundaries, fallback)
        if tuning.staged_columns:
            raise ValueError(f"strided_staged: staged_columns=True, but {why}")
    return _build_staged_tiles(load, key)


def column_kernels_refuse(outer: int, inner: int, dtype: torch.dtype, strides, facts) -> str | None:
    """Why neither family of column kernels can take a problem of these strides on a device of
    ``facts`` (None: they can)."""
    if not facts.cluster_launch:
        return f"the column kernels need thread-block clusters (sm_90+), not {facts.arch}"
    return column_runs(outer, inner, dtype, strides)


def streams_columns(outer: int, n: int, inner: int, dtype: torch.dtype, backward: bool, strides, facts, tuning) -> bool:
    """Whether strided_staged holds a problem of these strides across a cluster's registers and
    shared memory (cluster_stream's column kernels): where they can take it and
    takes_column_stream gives it to them."""
    if column_kernels_refuse(outer, inner, dtype, strides, facts) is not None:
        return False
    budget = grid_row_dynamic_smem(facts, 1, COLUMN_STREAM_STATIC_SMEM)
    return takes_column_stream(outer, n, inner, dtype, backward, budget, tuning)


def _build_column_stream(load, key):
    """cluster_stream's column kernels: one cluster a run (of outer), its CTAs holding their slices
    in registers and shared memory and re-reading the rest (instances.cluster_stream_shape's
    contract, the rows being runs of n x inner)."""
    from .plans import cluster_stream_launch  # plans imports this module

    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    # one CTA an SM: two (tuning.cluster_stream_per_sm, rows only) measured 0.01-0.09 behind but for
    # the 16-bit forward, which these kernels do not take (results 2026-11-28_h200_s32/
    # column_stream_per_sm_ab.txt)
    ctas = tuning.cluster_ctas or 0
    kernel, shape, _ = cluster_stream_launch(load, dtype, n * inner, backward, log, dev, ctas, 1, inner)
    pitches = tuple(s[0] for s in strides)
    return kernel.bound(outer * shape.ctas, (outer, n * inner) + pitches + (shape.smem_slots, inner))


def _plan_or_fallback(plan, takes, fallback):
    """``plan`` for calls whose pointers ``takes(pointers)`` accepts, the plan ``fallback()`` builds
    for the rest (built on the first such call)."""
    built = []

    def run(pointers, stream):
        if takes(pointers):
            plan(pointers, stream)
            return
        if not built:
            built.append(fallback())
        built[0](pointers, stream)

    return run


def _on_16_byte_boundaries(pointers) -> bool:
    bits = 0
    for pointer in pointers:
        bits |= pointer
    return bits & 15 == 0


def fold_width(outer: int, n: int, inner: int, strides, dtype: torch.dtype) -> int:
    """The virtual row width W a flat run of n x inner elements is read as (0: none). Where inner is
    shorter than a 16-byte pack, its staged rows would be read back in narrower packs (element by
    element for an odd inner); viewed as rows of W = lcm(inner, pack) columns (a multiple of inner,
    so every virtual row starts at inner's column 0) they are read in whole packs, and the kernel
    merges the virtual columns by true column u % inner (strided_staged.cuh, fold_pairs). Every
    tensor's n x inner block must be one run (starting on a 16-byte boundary where there are
    several), and W must divide the run."""
    itemsize = CXX_TYPES[dtype][2]
    pack = 16 // itemsize
    runs = all(s[2] == 1 and _layout.flat_run(s[0], s[1], inner, itemsize, outer) for s in strides)
    if inner >= pack or not runs:
        return 0
    width = math.lcm(inner, pack)
    return 0 if (n * inner) % width else width


def folds_by_default(outer: int, n: int, inner: int, width: int, dtype: torch.dtype, backward: bool, facts) -> bool:
    """Whether a flat run that fold_width can fold (into rows of ``width``) is folded without the
    tuning asking: the 16-bit backward of an inner no divisor of the pack, each run held by one CTA.
    H100, folded against unfolded alternated in one process (benchmarks/grid_row_probe.py, results
    2026-11-28_h100_s26/folded_runs_by_true_column.txt), bf16 backward over dim 1: (4096, 4096, 3)
    0.967 of copy against 0.926, (256, 4096, 3) 0.554 against 0.480, (1024, 2048, 5) 0.737 against
    0.675, (512, 4096, 6) 0.740 against 0.703, (1024, 2048, 7) 0.811 against 0.732; behind where teams
    of CTAs split a run ((64, 65536, 6) 0.596 against 0.619, (2, 1000008, 3) level) and for inner 2
    and 4 (0.80 against 0.84-0.85). The 16-bit forward lost everywhere ((4096, 4096, 3) 0.521 against
    0.615), most of it because its instance (packs of 8) is compiled for three CTAs an SM where the
    unfolded one-element instance runs four: compiled for four, the fold came to 0.592 against 0.618,
    (1024, 2048, 7) 0.548 against 0.541, (1024, 2048, 5) 0.461 against 0.486 (results
    2026-11-28_h100_s27/fold_forward_bounds_ab.txt), and packs of 8 keep three for the tiles that
    need them (StagedInstance.launch_bounds); float32 level on runs one CTA holds (0.96 against 0.95
    at (4096, 4096, 3) forward), behind on long ones (0.51 against 0.57)."""
    if not backward or CXX_TYPES[dtype][2] != 2 or (16 // CXX_TYPES[dtype][2]) % inner == 0:
        return False
    limits = (facts.smem_per_sm, facts.smem_per_block, facts.sm_count)
    shape = staged_shape(outer, n * inner // width, width, dtype, backward, *limits)
    return shape is not None and shape.splits == 1


def _build_staged_tiles(load, key):
    """The staged tiles' plan: flat runs folded into whole packs where they can be and either the
    tuning asks for it or folds_by_default (for calls whose pointers are on 16-byte boundaries),
    else _build_unfolded_tiles'."""
    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    allowed = tuning.staged_fold is None or bool(tuning.staged_fold)
    width = fold_width(outer, n, inner, strides, dtype) if allowed else 0
    if tuning.staged_fold and not width:
        raise ValueError(f"strided_staged: staged_fold=True, but (n={n}, inner={inner}) is no flat run to fold")
    if width and tuning.staged_fold is None:
        width = width if folds_by_default(outer, n, inner, width, dtype, backward, device_facts(dev)) else 0
    if not width:
        return _build_unfolded_tiles(load, key)
    folded = tuple((s[0], width, 1) for s in strides)
    view = (tier, dtype, outer, n * inner // width, width, folded, log, backward, align, dev, tuning)
    plan = _staged_tiles(load, view, False, False, fold=inner)
    if tuning.staged_fold:
        return plan
    return _plan_or_fallback(plan, _on_16_byte_boundaries, lambda: _build_unfolded_tiles(load, key))


def _build_unfolded_tiles(load, key):
    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    facts = device_facts(dev)
    itemsize = CXX_TYPES[dtype][2]
    if tuning.staged_cluster and not facts.cluster_launch:
        raise ValueError(f"strided_staged: staged_cluster=True needs thread-block clusters (sm_90+), not {facts.arch}")
    # tiles in the inputs' 16-byte window where a pointer is off its boundary or inner is no whole
    # number of 16-byte pieces, and the strides allow it; short rows in one contiguous run per outer
    # index on their boundaries are staged as whole runs instead (_layout.flat_run). H100, bf16 over
    # dim 1 (results 2026-11-25_h100_s18/layouts_bf16.txt against 2026-11-24_h100_s11): (1024, 16384,
    # 4) 0.47 of copy forward and 0.51 backward on the strided tier (the rows' phases), 0.80 and 0.95 as
    # runs; (4096, 4096, 3) 0.38 and 0.40 against 0.60 and 0.91
    flat = align == 0 and all(_layout.flat_run(s[0], s[1], inner, itemsize, outer) for s in strides)
    window = window_tiles(dtype) and (align != 0 or inner * itemsize % 16 != 0) and not flat
    if tuning.staged_window is not None:
        window = tuning.staged_window
    why = window_fits(inner, strides, itemsize) if window else None
    if why is not None and tuning.staged_window:
        raise ValueError(f"strided_staged: staged_window=True, but {why}")
    window = window and why is None
    if not window:
        return _staged_tiles(load, key, False, False)
    # window tiles keep to the inputs' phase where their rows share one (reads unshifted, staged rows
    # no wider than the tile) unless the output's rows are on their boundaries and the inputs' are
    # not (straight stores); elsewhere each row is staged at its own phase (strided_staged.cuh)
    out_rows = _layout.rows_on_boundaries(*strides[-1][:2], itemsize, outer, n)
    in_rows = all(_layout.rows_on_boundaries(*s[:2], itemsize, outer, n) for s in strides[:-1])

    def input_phase(pointers) -> bool:
        phases = {pointer & 15 for pointer in pointers[:-1]}
        return in_rows and len(phases) == 1 and not (out_rows and pointers[-1] & 15 == 0 and phases != {0})

    if tuning.staged_input_phase is not None:
        return _forced_phase_tiles(load, key, tuning.staged_input_phase, in_rows)
    first = in_rows and not out_rows  # the form a call of these strides most likely takes
    plan = _staged_tiles(load, key, True, first)
    plan = _plan_or_fallback(
        plan, lambda pointers: input_phase(pointers) == first, lambda: _staged_tiles(load, key, True, not first)
    )
    if not backward or out_rows or tuning.staged_window is not None:
        return plan
    # a backward whose inputs are off their boundaries and whose output's rows lie at several phases
    # (shifted reads and shifted stores): the strided tier's plan. H100 (results
    # 2026-11-25_h100_s17/layouts_view_channel.txt): bf16 (32, 4096, 1024)[..., 1:] over dim 1 0.35 of
    # copy in windows, 0.42 on the strided tier in the sixteenth set
    inputs_on_boundaries = lambda pointers: all(pointer & 15 == 0 for pointer in pointers[:-1])  # noqa: E731
    return _plan_or_fallback(plan, inputs_on_boundaries, lambda: build(load, ("strided",) + key[1:]))


def _forced_phase_tiles(load, key, input_phase: bool, in_rows: bool):
    """Window tiles in the form tuning.staged_input_phase forces: at the inputs' one phase (an error
    where their rows, or their pointers, lie at several) or each row at its own."""
    if not input_phase:
        return _staged_tiles(load, key, True, False)
    if not in_rows:
        raise ValueError("strided_staged: staged_input_phase=True, but the inputs' rows lie at several 16-byte phases")
    plan = _staged_tiles(load, key, True, True)

    def run(pointers, stream):
        if len({pointer & 15 for pointer in pointers[:-1]}) > 1:
            raise ValueError("strided_staged: staged_input_phase=True, but the inputs lie at different 16-byte phases")
        plan(pointers, stream)

    return run


def _staged_tiles(load, key, window: bool, input_phase: bool, step: int = 1, fold: int = 0):
    """The plan of strided_staged's tiles (``window``: rows in their 16-byte windows, ``input_phase``
    at the inputs' one phase, else each at its own; ``step``: the inputs' step along inner, 2 staging
    their spans; ``fold``: the true inner of a folded run, whose key holds its virtual rows)."""
    tier, dtype, outer, n, inner, strides, log, backward, align, dev, tuning = key
    facts = device_facts(dev)
    itemsize = CXX_TYPES[dtype][2]
    args = (facts.smem_per_sm, facts.smem_per_block, facts.sm_count)
    clustered = facts.cluster_launch and (tuning.staged_cluster is None or bool(tuning.staged_cluster))
    # an input broadcast along outer (stride 0): its tiles of one column range run together
    broadcast = outer > 1 and any(s[0] == 0 for s in strides[:-1])

    def shape_for(ctas_per_sm, clustered):
        def geometry(tile_cols):
            most = tuning.staged_max_cluster
            flags = (clustered, most, broadcast, window, not input_phase, step, tile_cols)
            return staged_shape(outer, n, inner, dtype, backward, *args, ctas_per_sm, *flags)

        shape = geometry(tuning.staged_tile_cols)
        if shape is None:
            raise ValueError(f"tier 'strided_staged' cannot hold (outer={outer}, n={n}, inner={inner}) {dtype}")
        if tuning.staged_tile_cols is None:
            shape = staged_wide_tile(shape, geometry, dtype, backward, window, step) or shape
        return shape

    def kernel_for(shape):
        team = shape.splits > 1
        cluster = team and shape.clustered
        inst = StagedInstance(dtype, backward, log, shape.pack, cluster, window, step == 2, fold > 0)
        kernel = Kernel(
            load(inst, dev),
            inst.name,
            dev,
            16 if backward else 13,
            STAGED_THREADS,
            1,
            shape.smem,
            cluster=shape.splits if shape.clustered else 1,
            cooperative=team and not shape.clustered,
        )
        kernel.allow_dynamic_smem(shape.smem)
        if shape.clustered and shape.splits > 8:
            kernel.set_attribute("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1)
        return kernel

    ctas_per_sm = tuning.staged_ctas_per_sm or wide_axis_staged_ctas(
        outer, n, inner, dtype, backward, *args, dram_gbps=facts.dram_gbps
    )
    shape = shape_for(ctas_per_sm, clustered)
    kernel = kernel_for(shape)
    if shape.clustered and shape.splits > 1 and kernel.resident_clusters() < 1:
        if tuning.staged_cluster:
            raise ValueError(
                f"strided_staged: a cluster of {shape.splits} CTAs of {shape.smem} bytes cannot be resident"
            )
        shape = shape_for(ctas_per_sm, False)
        kernel = kernel_for(shape)
    elif tuning.staged_cluster and not shape.clustered and shape.splits > 1:
        most = tuning.staged_max_cluster or staged_max_cluster(dtype, backward, broadcast)
        raise ValueError(f"strided_staged: a tile of (n={n}) {dtype} needs more than {most} CTAs: no cluster")
    per_sm = kernel.blocks_per_sm()
    if shape.splits > 1 and not shape.clustered and shape.grid > per_sm * facts.sm_count:
        # fewer CTAs fit than the shape assumed (registers, a smaller SM): size for those
        shape = shape_for(max(1, per_sm), False)
        kernel = kernel_for(shape)
        if shape.splits > 1 and shape.grid > kernel.blocks_per_sm() * facts.sm_count:
            raise ValueError(f"strided_staged: {shape} needs more resident CTAs than the device holds")
    flat, widest = (False, 16) if window else staged_widths(shape, outer, n, inner, strides, itemsize)
    flat_strides = tuple(s for tensor_strides in strides for s in tensor_strides[:2])
    middle = (outer, n, inner) + flat_strides
    launchers: dict = {}
    counters = counter_words(shape.tiles)
    scratch_words = shape.tiles * shape.splits * shape.tile_cols * (1 if backward else 2)
    # one tile a team needs no workspace (a cluster exchanges through distributed shared memory);
    # persistent teams meet on counters in the stream's workspace (launch.stream_workspace), which
    # the kernel leaves cleared: no allocation and no clearing fill a call
    persistent_teams = shape.splits > 1 and not shape.clustered

    outer_fastest = int(STAGED_OUTER_FASTEST_WHEN_BROADCAST and broadcast)
    phase = int(input_phase)
    if shape.clustered and shape.splits > 1:
        first_wave = kernel.resident_clusters()
    else:
        first_wave = kernel.blocks_per_sm() * facts.sm_count // shape.splits
    first_wave = min(first_wave, shape.grid // shape.splits)
    wait_us = staged_stagger_us(persistent_teams, shape.tiles // max(1, first_wave), tuning)
    first_wave = min(first_wave, STAGED_STAGGER_MAX_TEAMS)
    if shape.stage_rows >= 1 << 16:  # the geometry's bits 32-47
        raise ValueError(f"strided_staged: {shape.stage_rows} staged rows do not fit the kernel's 16 bits")

    def tail(width: int) -> tuple:
        geometry = shape.tile_cols | width << 16 | fold << 21 | phase << 30 | outer_fastest << 31
        geometry |= shape.stage_rows << 32 | wait_us << 48 | first_wave << 54
        return middle + (geometry, shape.chunk, shape.splits)

    def width_of(pointers) -> int:
        bits = 0
        for pointer in pointers:
            bits |= pointer
        return next(w for w in (16, 8, 4, itemsize) if w <= widest and bits % w == 0)

    def run(pointers, stream):
        width = width_of(pointers)
        go = launchers.get(width)
        if go is None:
            go = launchers[width] = kernel.bound(shape.grid, tail(width))
        if not persistent_teams:
            go(pointers + (0,), stream)
            return
        buffer, address = stream_workspace(dev, stream, counters, scratch_words)
        go(pointers + (address,), stream)
        del buffer  # only now that the launch is enqueued

    return run
