"""The Triton backend: picks a strategy (tier) and block shape per problem and launches the
kernels of ``kernels.py``.

Tiers, from short rows to huge ones (the same tiers serve the strided layout, with the tile
turned so that its wide side runs along the contiguous axis):

``tile``    the reduced axis in registers, several rows (or a block of columns) per program, so
            that rows of 64 elements still give each program kilobytes to move;
``row``     the reduced axis in registers, one row per program, up to ``MAX_TILE`` elements;
``online``  longer rows: two walks over the row per program (online normaliser, then write);
``split``   too few rows to fill the GPU with long ones: each row is cut over many programs.
``relay``   the split tier's two kernels in one launch, each piece re-read soon after its first
            read (from L2), ordered by tickets rather than by a second launch.

Rows of no multiple of 16 elements (or at such a pitch), which these tiers' kernels would load an
element at a time, go through the realigned kernels where REALIGNED_ROW_COLS takes them (the tile and
row tiers hold them, the online tier walks them).

The block shape is a pure function of the problem, cached, so a call costs one dict lookup.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys

import torch

from ... import _layout
from ..base import dram_gbps, high_dram_bandwidth_per_sm

try:
    import triton

    from . import kernels
    from .launch import launch
except ImportError as error:  # pragma: no cover - exercised only where triton is missing
    triton = None
    _IMPORT_ERROR = error
else:
    _IMPORT_ERROR = None

#: Whether the kernels run under the Triton interpreter (on CPU tensors). Triton decides this when
#: the kernels are decorated, so it is fixed when this module is first imported.
INTERPRETED = os.environ.get("TRITON_INTERPRET", "0") == "1"

#: Elements a program may hold in registers: 32 per thread at 1024 threads. Measured on an H100,
#: rows of 32768 held this way run at 0.89 (bf16) and 0.97 (fp32) of copy bandwidth, against 0.75
#: for the two-walk tier; rows of 65536 spill.
MAX_TILE = 32768
#: Backward holds two tensors (y and dy) per element, so half as many elements fit (16384-wide
#: rows measured at 1.0 of copy bandwidth on an H100).
MAX_TILE_BACKWARD = 16384
#: Elements per program the short-row tile aims for: enough bytes per program to hide latency.
TILE_TARGET = 4096
#: Looping tiers (online, split): elements per chunk, warps per program and pipelining depth, as
#: swept by benchmarks/triton_probe.py on an H100.
LOOP_CHUNK_ELEMS = 16384
LOOP_WARPS = 16
LOOP_STAGES = 1
#: Bytes along the contiguous axis that one program of the looping tiers covers in the strided
#: layout: two 32-byte sectors. Narrow column blocks keep each program's working set (n rows of
#: it) small while neighbouring programs read the neighbouring sectors at the same time; 16 bytes
#: and 128 bytes both measured slower.
LOOP_INNER_BYTES = 64
#: Programs per SM of the persistent online tier: few, so that the rows in flight fit in L2.
ONLINE_PROGRAMS_PER_SM = 2
#: Programs per SM the split tier aims for, and its chunk: smaller than the online tier's, since a
#: split program walks only its own piece of the row.
SPLIT_PROGRAMS_PER_SM = 2
SPLIT_CHUNK_ELEMS = 8192
#: Elements each thread should own: two 16-byte vectors of 16-bit data.
ELEMS_PER_THREAD = 16
#: Strided tiles whose loads cannot be 16-byte vectors (rows at several 16-byte phases, as NCHW over C
#: with an odd H x W), over reduced axes of SCALAR_TILE_MIN_N + 1 .. SCALAR_TILE_MAX_N (in powers of
#: two) and inner sizes of SCALAR_TILE_COLUMNS or more: 16-bit tiles of SCALAR_TILE_ELEMS elements,
#: float32 tiles SCALAR_TILE_COLUMNS wide, SCALAR_TILE_PER_THREAD elements a thread. H100, the tile
#: kernels over a grid of block shapes in one process (benchmarks/triton_tile_probe.py, results
#: 2026-11-25_h100_s17/tile_sweep_*.txt), against the shapes planned for vector loads: bf16
#: (16, 21, 513, 513) over dim 1 0.555 -> 0.793 of copy forward, 0.669 -> 0.891 backward (torch.compile
#: 0.800, 0.903); float32 0.623 -> 0.902, 0.856 -> 0.922; (256, 64, 2049) bf16 0.686 -> 0.735 and
#: 0.804 -> 0.809, float32 0.661 -> 0.887, 0.773 -> 0.884. Longer axes ((8, 150, 127, 127)) measured
#: best as planned before.
SCALAR_TILE_MIN_N = 16
SCALAR_TILE_MAX_N = 64
SCALAR_TILE_COLUMNS = 128
SCALAR_TILE_ELEMS = 4096
SCALAR_TILE_PER_THREAD = {2: 32, 4: 16}
#: the 16-bit backward of the scalar tiles over axes of at most this many rows (padded to a power of
#: two: the tiles whose threads hold whole columns) computes 64-bit element offsets (see
#: _wide_offsets), longer axes 32-bit ones; 0: 32-bit everywhere. H200, kernel by kernel in one
#: process (benchmarks/kernel_breakdown.py, results 2026-12-04_h200_s55/c1/), 64-bit against 32-bit
#: offsets, bf16 over dim 1: (16, 21, 513, 513) 151.5 against 155.1 us (same 80 registers); but
#: over 33-64 rows (96 registers against 78 at 4 warps: five CTAs an SM, not six) (16, 40, 513,
#: 513) 374.5 against 318.3 us (torch.compile 331.2), (16, 33, 257, 257) 81.2 against 64.8 (68.5),
#: (8, 48, 513, 513) 216.2 against 192.7 (209.7)
SCALAR_TILE_OFFSETS_64_MAX_N = 32
#: the backward of rows (inner = 1) of this many columns, first to last, computes 64-bit element offsets
#: (see _wide_offsets), other rows 32-bit ones; (0, -1): 32-bit everywhere. Rows the realigned kernels
#: take (REALIGNED_ROW_COLS) do not read it: it rules the multiples of 16 and rows whose pointers lie off
#: 16-byte boundaries. Timed before those kernels existed: H100, the tile tier's softmax
#: backward alternated in one process with each width (benchmarks/triton_offsets_probe.py), us a call
#: with 32-bit against 64-bit offsets: rows of 2^27 elements (results 2026-12-07_h100_s81/a1/offsets.txt)
#: bf16 1032444 x 65 420.1 against 337.4, float32 470.2 against 424.6; bf16 1864135 x 36 384.2 against
#: 321.9, float32 449.8 against 403.4; bf16 1342177 x 100 600.4 against 504.3, float32 770.9 against
#: 689.3; rows of 2^26 (2026-12-07_h100_s82/a4/flat_rows.txt, a3/offsets.txt) bf16 1118481 x 60 260.7
#: against 234.2, 932067 x 72 380.9 against 354.1, float32 366.2 against 330.5 and 452.7 against 426.3;
#: but 32-bit offsets ahead on rows of 3 and 8 (bf16 22369621 x 3 177.0 against 182.6, float32 271.8
#: against 294.2), 127 (bf16 528416 x 127 171.0 against 234.1, float32 271.3 against 312.0), 200 (bf16
#: 164.8 against 175.0) and on 2^26 elements of rows of 100 (bf16 671088 x 100 194.2 against 267.0);
#: rows of 16, 64, 160 and 256-1024 within 1.5% (64-bit ones ahead on the bf16 backward of 1025, 148.2
#: against 158.2, one length past the range)
ROW_BACKWARD_OFFSETS_64_COLS = (17, 100)
#: the forward of 16-bit rows of this many columns, first to last, computes 64-bit element offsets; other
#: forwards 32-bit ones. H100, as above, rows of 2^26 elements: bf16 67176 x 999 125.5 against 106.6 us
#: (124.3 against 104.4 in 2026-12-07_h100_s81/a1), 65472 x 1025 137.4 against 121.8,
#: 134217 x 500 138.0 against 133.1, 65536 x 1024 level; 32-bit offsets ahead on rows of 3-200 (bf16 x
#: 127 202.8 against 226.7, x 200 205.3 against 213.6); float32 level from 500 up, rows of 2000-16384
#: level in both types
ROW_FORWARD_16BIT_OFFSETS_64_COLS = (500, 1025)


def row_offsets_64(n: int, itemsize: int, backward: bool) -> bool:
    """Whether the tile kernels take rows of n columns with 64-bit element offsets, where they
    measured faster so (ROW_BACKWARD_OFFSETS_64_COLS, ROW_FORWARD_16BIT_OFFSETS_64_COLS)."""
    if backward:
        low, high = ROW_BACKWARD_OFFSETS_64_COLS
    else:
        low, high = ROW_FORWARD_16BIT_OFFSETS_64_COLS if itemsize == 2 else (0, -1)
    return low <= n <= high


#: rows (inner == 1) that the tile, row and online tiers take through the realigned kernels
#: (kernels.softmax_*_realigned), by (backward, itemsize): ranges of columns, first to last, of rows whose tensors'
#: pointers lie on 16-byte boundaries, whose pitches lie at one phase of a 16-byte vector and which the tiers' own
#: kernels would load an element at a time (a length or a pitch of no multiple of 16 elements: rows_realign; rows of
#: two vectors at least, 16-bit ones from 17). The realigned kernels cut each row at its own 16-byte boundaries (a
#: head, whole vectors, a tail), so that it moves in 16-byte vectors whatever its length. H100, alternated in one
#: process with the tiers' own kernels and torch.softmax, us a call, rows of 2^26 elements (2670 x 50257: 2^27;
#: results 2026-12-07_h100_s83/r1-r3/realign.txt): forward bf16 1032444 x 65 114.4 against 427.1 (torch 197.4), rows
#: of 20-200 93.8-157.8 against 201.8-427.1, 65472 x 1025 94.1 against 121.4, 22369 x 3000 109.6 against 117.0, 2048
#: x 32767 108.3 against 136.6, 2670 x 50257 278.9 against 398.5 (torch 262.0); float32 rows of 20-200 181.2-225.4
#: against 211.6-430.2; backward bf16 rows of 20-200 136.0-167.7 against 163.2-391.6; float32 rows of 20-100
#: 265.5-273.3 against 301.2-453.6. Rows of 300-999, most of which ran behind at 16 elements a thread (bf16 rows of
#: 450 ahead), run ahead with the held kernels' threads as REALIGNED_HELD_ELEMS_PER_THREAD sets them
#: (2026-12-07_h100_s85/g1_*/): bf16 forward 223696 x 300 100.8 against 169.9, 111848 x 600 105.1 against 145.8,
#: 67176 x 999 95.0 against 106.8; backward 137.3-138.3 against 145.7-157.1; float32 forward 300-999 within 0.7%
#: (183.1-184.8 against 183.1-185.0), backward 267.6-270.4 against 269.1-271.1. From 1025, float32 within 1.0% behind
#: (forward of 1500 184.8 against 182.9, 3000, backward of 1500, 3000) or ahead (forward of 5436 x 12345 184.2
#: against 209.0; 32767 340.1 against 350.3 in r1-r3), but the forward of 50257 (533.9 against 525.4 in r1-r3) and
#: the backward of 1025 (273.2 against 269.3); bf16 forward of 2000 0.5% behind. Behind too: the float32 backward of
#: rows of 8 (279.2 against 268.0 in r1-r3), which the first range leaves out
REALIGNED_ROW_COLS = {
    (False, 2): ((9, 1 << 62),),
    (False, 4): ((9, 1 << 62),),
    (True, 2): ((9, 1 << 62),),
    (True, 4): ((9, 1 << 62),),
}
#: the tiers whose rows may go through the realigned kernels (the split and relay tiers do not)
REALIGNED_TIERS = ("tile", "row", "online")
#: elements a thread of the held realigned kernels owns, which sets their warps (as ELEMS_PER_THREAD the tile
#: kernels'), by direction and element size: ((bytes of a row's body block (the power of two that holds the body,
#: x element size; BLOCK_N of one piece) up to, elements a
#: thread), ...), the first that holds the block. H100, rows of 2^26 elements by 16, 32, 64 and 128 a thread,
#: alternated in one process (results 2026-12-07_h100_s85/g1_*/), us a call: the blocks of 2 KiB (bf16 rows of
#: 520-1031, float32 260-515; the tile tier's 4096 elements a program) ran at 8 and 4 warps up to 1.8 times the time
#: at 2 (16 / 32 / 64 a thread: bf16 forward 111848 x 600 190.1 / 189.8 / 105.1, float32 223696 x 300 227.9 / 252.8 /
#: 183.9, bf16 backward 86370 x 777 157.9 / 168.2 / 137.5), but in the float32 backward, which keeps 32 (223696 x 300
#: 267.6 against 268.9 at 64); elsewhere 32 ran ahead or within 1.2% (bf16 forward 223696 x 300 191.9 / 100.8 /
#: 107.1, 5436 x 12345 166.1 / 101.2 / 133.1; float32 forward 447392 x 150 227.3 / 186.4 / 203.8, backward 319.8 /
#: 268.0 / 273.0) but on blocks of up to 128 bytes in 16 bits and 512 in float32 (bf16 forward 3355443 x 20 121.3 /
#: 132.6, 1032444 x 65 114.8 / 118.3; float32 forward 671088 x 100 183.3 / 185.7) and the bf16 backward of blocks
#: from 16 KiB (13421 x 5000 153.3 / 145.0 / 136.7, 5436 x 12345 158.2 / 148.1 / 143.6; 128 a thread 141.2). Rows
#: past 1024 were timed on the row tier (one row a program, so fewer warps by the same count: rows of 1025 take one
#: warp at 32 or 64 a thread); tiles of few rows (a small outer size) were not timed
REALIGNED_HELD_ELEMS_PER_THREAD = {
    (False, 2): ((128, 16), (1024, 32), (2048, 64), (1 << 62, 32)),
    (False, 4): ((512, 16), (1024, 32), (2048, 64), (1 << 62, 32)),
    (True, 2): ((128, 16), (1024, 32), (2048, 64), (8192, 32), (1 << 62, 64)),
    (True, 4): ((512, 16), (1 << 62, 32)),
}


#: the held realigned kernels hold a row's body just past a power of two p as two pieces, p and the power of
#: two that holds the rest (tile_pieces), where that second piece is at most SHARE of p and at most BYTES long
#: (None: any length), by (backward, itemsize): (SHARE, BYTES); (0, 0): one piece of twice p
#: (realigned_pieces). Threads and rows a program stay those of the one piece. One vector past a power of two
#: the body fills half its block, and one piece runs 14-24% slower there than one vector before (H100, bf16
#: forward 128807 x 521 112.7 us against 94.5 at 519; results 2026-12-07_h100_s86/g2_*/). Two pieces
#: against one, alternated in one process (H100, rows of 2^26 elements; results 2026-12-07_h100_s87/w1_*/
#: and e4/two_pieces.txt): a second piece of one 16-byte vector is faster in the forward (bf16 521 95.3
#: against 112.8 us, 4105 107.6 against 118.0, 73 106.2 against 128.0; float32 133 184.1 against 195.2, 517
#: 187.4 against 197.3, 69 184.9 against 186.0; level at 1029 and 4101) and the 16-bit backward (by 0.5-1.8
#: us), level in the float32 backward (within 0.7 us); bf16 forward pieces of 16-32 elements are faster too
#: (145 98.4 against 109.9, 289 97.4 against 104.0, 545 97.7 against 111.2), of 64 and more slower (577
#: 112.1 against 108.2, 1153 110.2 against 102.3, 4609 116.3 against 110.3, 300 124.1 against 100.9) but
#: 2177 (105.6 against 106.9); the backward's of more than a vector are slower (by up to 2.8 us), the float32
#: forward's mixed (545 186.7 against 193.0, 577 186.6 against 188.4; 289 191.5 against 183.9, 4609 195.9
#: against 183.0). The float32 forward's share of 1/16 rests on rows timed in separate processes (the
#: table's main points, e4/table.json.gz against e3/table.json.gz): 1864135 x 36 (32 + 4) 198.9 against
#: 191.0 us, 906876 x 74 (64 + 8) 189.1 against 182.7. plan() caches what it reads here: clear it
#: (plan.cache_clear()) after a change
REALIGNED_TWO_PIECES = {(False, 2): (0.125, 64), (False, 4): (0.0625, 16), (True, 2): (0.125, 16), (True, 4): (0.0, 0)}


@contextlib.contextmanager
def settings(values: dict):
    """This module's settings (e.g. TWO_PIECE_TILES, REALIGNED_TWO_PIECES) set to ``values`` inside, its
    plans and the dispatcher's choices made afresh on entry and on exit (plan caches what it reads of
    them): for probes, sanitizer runs and compile checks that compare settings."""
    from ... import dispatch

    module = sys.modules[__name__]
    saved = {name: getattr(module, name) for name in values}
    for name, value in values.items():
        setattr(module, name, value)
    plan.cache_clear()
    dispatch.clear_caches()
    try:
        yield
    finally:
        for name, value in saved.items():
            setattr(module, name, value)
        plan.cache_clear()
        dispatch.clear_caches()


def realigned_everywhere(lengths=((1, 1 << 62),)) -> dict:
    """REALIGNED_ROW_COLS with every direction and element size given ``lengths`` (every length by
    default; ``()`` for none): the settings probes and tests compare the realigned kernels under."""
    return dict.fromkeys(REALIGNED_ROW_COLS, lengths)


def held_everywhere(per_thread: int) -> dict:
    """REALIGNED_HELD_ELEMS_PER_THREAD with ``per_thread`` elements a thread on every block of every
    direction and element size: the settings probes compare the held realigned kernels under."""
    return dict.fromkeys(REALIGNED_HELD_ELEMS_PER_THREAD, ((1 << 62, per_thread),))


def realigned_length(n: int, backward: bool, itemsize: int) -> bool:
    """Whether rows of n columns are in REALIGNED_ROW_COLS' ranges for this direction and element size."""
    return any(low <= n <= high for low, high in REALIGNED_ROW_COLS[backward, itemsize])


def takes_realigned(tier: str, shape, itemsize: int, backward: bool, rows) -> bool:
    """Whether a launch of ``tier`` on an (outer, n, inner) problem ``shape`` of inputs of ``itemsize``
    goes through the realigned kernels: rows (inner 1) of the tiers that take them (REALIGNED_TIERS), of
    a length REALIGNED_ROW_COLS holds, where rows_realign says so. ``rows()``: the launch's (strides,
    itemsizes, pointers_aligned) as rows_realign takes them, asked for only past the checks before."""
    outer, n, inner = shape
    if tier not in REALIGNED_TIERS or inner != 1 or not realigned_length(n, backward, itemsize):
        return False
    return rows_realign(outer, n, *rows(), backward)


def rows_realign(outer: int, n: int, strides, itemsizes, pointers_aligned: bool, backward: bool) -> bool:
    """Whether (outer, n) rows take the realigned kernels (REALIGNED_ROW_COLS): each tensor's
    ``strides`` (its outer and reduced ones, elements) those of dense rows of one element size (one
    of ``itemsizes`` a tensor), their pitches at one phase of a 16-byte vector, every pointer on a
    16-byte boundary (``pointers_aligned``), and rows the tiers' own kernels would load an element
    at a time (n or a pitch no multiple of 16: Triton proves vectors whole only from that)."""
    if not pointers_aligned or len(set(itemsizes)) != 1 or not realigned_length(n, backward, itemsizes[0]):
        return False
    vector = 16 // itemsizes[0]
    pitches = [pitch if outer > 1 else 0 for pitch, _ in strides]
    if n < 2 * vector or any(step != 1 for _, step in strides) or len({p % vector for p in pitches}) != 1:
        return False
    return n % 16 != 0 or any(pitch % 16 for pitch in pitches)


#: register caps (Triton's maxnreg) for the 16-bit backward of the scalar tiles whose threads hold
#: whole columns (axes of at most 32), by function (None: none). The log-softmax backward uncapped
#: compiles to 96 registers (five CTAs of 4 warps an SM) where the softmax backward takes 80 (six); at
#: 64 (eight CTAs) it spills a few values to local memory (24 accesses in 16 + 8 rows). H200, kernel by
#: kernel in one process (benchmarks/kernel_breakdown.py --log, results 2026-12-04_h200_s55/c6/), bf16
#: over dim 1, no cap, 80, 72, 64: (16, 21, 513, 513) 184.2, 167.6, 159.1, 157.4 us (torch.compile
#: 163.7 in c4); (16, 19, 513, 513) 143.8, 163.0, 147.1, 141.8; (8, 21, 255, 255) 25.3, 23.6, 21.9,
#: 21.8. The softmax backward at 64 (2 spilling accesses) is not yet timed
SCALAR_TILE_BACKWARD_MAXNREG = {"log_softmax": 64, "softmax": None}
#: a register cap for the float32 forward of the scalar tiles over axes of at most
#: SCALAR_TILE_F32_FORWARD_CAPPED_MAX_N rows (None: none). Uncapped their 32 x 128 tile over 8 warps
#: compiles to 53 registers (four CTAs an SM) where Inductor's persistent reduction of the same tile
#: takes 40 (six; results 2026-12-04_h200_s55/c1/inductor_f32_forward.txt); at 40 it compiles without
#: spills (at 48 it spills). H200, kernel by kernel in one process (results 2026-12-04_h200_s56/c2/,
#: c3/f32_forward_cap.txt), over dim 1, uncapped against 40: (8, 21, 255, 255) 25.0 -> 24.3 us,
#: (16, 21, 255, 255) 47.8 -> 46.6, (4, 21, 513, 513) 48.9 -> 48.0, (2, 21, 513, 513) 25.9 -> 25.3,
#: (64, 21, 127, 127) 46.5 -> 45.2, (8, 19, 255, 255) 23.9 -> 23.0, (8, 32, 255, 255) 37.4 -> 36.9,
#: (16, 21, 513, 513) 188.3 -> 185.4; over 48-96 rows level to 0.2 us behind ((8, 48, 255, 255) 55.9
#: -> 56.1), where it is not applied
SCALAR_TILE_F32_FORWARD_MAXNREG = 40
SCALAR_TILE_F32_FORWARD_CAPPED_MAX_N = 32
#: Strided tiles of scalar loads over longer axes (past SCALAR_TILE_MAX_N, inner sizes of
#: SCALAR_TILE_COLUMNS or more): SCALAR_LONG_ELEMS elements, or more where the axis needs them for
#: SCALAR_LONG_MIN_BYTES of columns (up to SCALAR_LONG_MAX_ELEMS[backward]), SCALAR_LONG_PER_THREAD
#: elements a thread, more past 16 warps. The 16-bit backward keeps the tiles of narrow inner sizes
#: (TILE_TARGET elements, 16 a thread: best there, within 0.01). H200, the tile kernels over a grid
#: of block shapes in one process (results 2026-11-28_h200_s30/tile_probe_long_axes.txt,
#: tile_probe_planned.txt), against those of narrow inner sizes, over dim 1: float32 (8, 150, 127,
#: 127) 0.526 -> 0.647 of copy forward, 0.598 -> 0.788 backward; (4, 96, 255, 255) 0.563 -> 0.679,
#: 0.690 -> 0.857; (32, 300, 63, 63) 0.462 -> 0.678, 0.551 -> 0.718; (16, 1000, 63, 63) forward
#: 0.447 -> 0.635 (32768 elements); bf16 forward (32, 300, 63, 63) 0.323 -> 0.406, (4, 96, 255,
#: 255) 0.501 -> 0.564, (64, 512, 1023) 0.427 -> 0.479, (8, 2000, 33, 33) 0.266 -> 0.315.
SCALAR_LONG_ELEMS = 8192
SCALAR_LONG_MAX_ELEMS = {False: 32768, True: 16384}
SCALAR_LONG_MIN_BYTES = {2: 32, 4: 128}
SCALAR_LONG_PER_THREAD = 32
#: Strided tiles of 16-byte loads over inner sizes of SCALAR_TILE_COLUMNS or more and axes longer
#: than SCALAR_TILE_MIN_N: TILE_TARGET elements or more, for at least WIDE_TILE_MIN_BYTES of
#: columns forward (WIDE_TILE_MIN_COLUMNS backward), WIDE_TILE_PER_THREAD elements a thread
#: either way, up to 16 warps. H200, the tile kernels over a
#: grid of block shapes in one process (results 2026-11-28_h200_s30/tile_probe_aligned.txt), at 32 a
#: thread both ways, against the rule of the narrower inner sizes
#: (TILE_TARGET elements, 16 a thread, a sector to a line of columns), over dim 1: float32 (128,
#: 1024, 1024) 0.691 -> 0.906 of copy forward, 0.723 -> 0.959 backward; (8, 150, 128, 128) 0.779 ->
#: 0.838 and 0.811 -> 0.899; (16, 21, 512, 512) 0.277 -> 0.834 and 0.713 -> 1.002; (4096, 64, 512)
#: 0.751 -> 1.005; bf16 (16, 21, 512, 512) backward 0.400 -> 0.725, (8, 150, 128, 128) 0.599 ->
#: 0.735, (128, 1024, 1024) forward 0.505 -> 0.616. Eight warps or more over tiles of 32 by 64 or
#: 128 columns ran a third as fast as four (0.271 against 0.837). The forward takes 64 elements a
#: thread (half the warps): H200, every form alternated in one process (results 2026-12-05_h200_s66/,
#: sweep*.txt), 16-bit inputs level or ahead on twelve shapes over dim 1: bf16 (16, 21, 512, 512)
#: 0.274 -> 0.715 (its one pass to float32 0.358 -> 0.824), (512, 32, 1024) 0.369 -> 0.822,
#: (128, 64, 4096) 0.652 -> 0.885, (8, 150, 128, 128) 0.519 -> 0.532; float32 (16, 21, 512, 512)
#: 0.848 -> 0.979, the others within 0.02 either way. The backward too, swept apart (results
#: 2026-12-05_h200_s67/, c1/sweep_backward.txt, c3/): bf16 (16, 21, 512, 512) 0.734 -> 1.001 (one pass from float32
#: 1.008 -> 1.032), (8, 150, 128, 128) 0.809 -> 0.839; float32 level.
WIDE_TILE_MIN_BYTES = 64
WIDE_TILE_MIN_COLUMNS_BACKWARD = 32
WIDE_TILE_PER_THREAD = 64
#: The split tier merges at most this many partial results per row (one register tile).
MAX_SPLITS = 1024
#: The relay tier (see kernels.py): elements a program's tile covers a step, bytes of each tensor a
#: work item (a piece of a reduction unit) reads, warps a program, bytes of columns a unit covers in
#: the strided layout, work items taken between a piece's two reads per SM (by itemsize: the data
#: they stream must fit in L2 beside the pieces waiting for their second read) and programs of the
#: persistent grid per SM (each item in flight holds its piece until its finish: few programs,
#: small pieces). H200, the backward over a grid of them in one process (results
#: 2026-11-28_h200_s31/relay_probe_*.txt): of 8-16 K elements a piece, tiles of 4096 or 8192, lags
#: of 1-8 and 2-8 programs per SM, these were best or within 0.01-0.02 of it on six shapes.
RELAY_TILE_ELEMS = 4096
RELAY_CHUNK_BYTES = 32768
RELAY_WARPS = 8
RELAY_INNER_BYTES = 64
RELAY_LAG_ITEMS_PER_SM = {2: 4, 4: 2}
RELAY_PROGRAMS_PER_SM = 4
#: backward problems the relay tier takes (relay_takes): inner sizes of 2 to RELAY_MAX_INNER, at
#: least RELAY_MIN_UNIT elements an outer index (more than the CUDA tiers hold on chip), at least
#: RELAY_MIN_OUTER outer indices and RELAY_MIN_NUMEL elements in all (the sizes measured)
RELAY_MAX_INNER = 32
RELAY_MIN_UNIT = 1 << 19
RELAY_MIN_OUTER = 8
RELAY_MIN_NUMEL = 1 << 25
#: The largest element offset the tile kernels compute in 32 bits (see _wide_offsets)
INT32_MAX = (1 << 31) - 1


def _pow2(value: int) -> int:
    return 1 << max(0, (int(value) - 1).bit_length())


#: Which strided tiles hold a reduced axis just past a power of two as two pieces (tile_pieces):
#: "16bit", the 16-bit scalar tiles of whole columns (SCALAR_TILE_*); "all" strided tiles; "none".
#: H200, kernel by kernel and alternated in one process (benchmarks/kernel_breakdown.py,
#: benchmarks/scalar_tile_probe.py; results 2026-12-03_h200_s54/), two pieces against one, bf16 over
#: dim 1: (16, 21, 513, 513) forward 116.5 against 127.3 us (torch.compile 138.6), backward 152.1
#: against 163.6 (152.6), 80 registers against 108; (16, 19, 513, 513) 103.2 against 125.8 and 135.9
#: against 157.5; (16, 40, 513, 513) 282.2 against 301.8 and 374.8 against 503.6; (16, 33, 257, 257)
#: 55.7 against 77.8 and 80.0 against 129.7. Behind everywhere else measured: float32 there (8 warps:
#: 219.6 against 188.9 us forward; at 4 warps of whole columns 227.6 against 211.9), (8, 150, 127,
#: 127) bf16 backward 54.7 against 50.5, the 16-byte tiles of (16, 21, 512, 512) 599.4 against 306.8,
#: and a second piece half the first where two threads share a column ((8, 48, 513, 513) 160.1
#: against 152.0, 234.3 against 220.9: TWO_PIECE_SHARED_MAX_TAIL)
TWO_PIECE_TILES = "16bit"
#: where threads share a tile's columns (more threads than BLOCK_I), the second piece at most this
#: share of the first (see TWO_PIECE_TILES); where each thread holds whole columns, any
TWO_PIECE_SHARED_MAX_TAIL = 0.25
#: the forward's second piece at most this share of the first on a GPU of less DRAM bandwidth an SM
#: than HIGH_DRAM_GBPS_PER_SM (an H100; the measurements of TWO_PIECE_TILES are an H200's). H100,
#: kernel by kernel in one process, bf16 over dim 1 (results 2026-12-06_h100_s69/c1/, c3/two_pieces.txt),
#: two pieces against one: forward (16, 21, 513, 513) 164.9 against 142.4 us (torch.compile 147.6), (16,
#: 19, 513, 513) 147.7 against 132.3 (131.7), (16, 40, 513, 513) 328.7 against 315.8, but (16, 33, 257,
#: 257) 61.6 against 78.6 (a tail of 1 in 32; tails between 1/32 and 1/4 not measured, the cut lies
#: anywhere between); the backwards as on the H200 (two pieces ahead or level:
#: 174.3 against 181.8, 393.2 against 421.1, 79.2 against 97.4, 194.6 against 194.0). Register caps on
#: the two pieces of the first did not close the gap (c1/breakdown_odd_forward.txt: 40, 48 and 64
#: registers 173.7, 166.6 and 155.5 us) and are not applied
TWO_PIECE_FORWARD_MAX_TAIL_LOW_BANDWIDTH = 0.125


def tile_pieces(n: int, max_tail: float = 0.5) -> tuple[int, int]:
    """Rows of a strided tile's two pieces along a reduced axis of n (and the columns of a realigned row's
    body, realigned_plan): (_pow2(n), 0), or where n is
    past a power of two p and the power of two that holds the rest is at most ``max_tail`` of p,
    (p, that power of two), fewer rows in all: 21 channels 16 + 8, 40 32 + 8, 150 128 + 32, 5 4 + 1 (a
    masked row costs its registers and its predicated loads as a held one does)."""
    whole = _pow2(n)
    head = whole // 2
    if n <= 2 or n == whole or _pow2(n - head) > max_tail * head:
        return whole, 0
    return head, _pow2(n - head)


def _tile_pieces_planned(
    n: int, itemsize: int, scalar_tile: bool, whole_columns: bool, backward: bool, high_bandwidth: bool
) -> tuple[int, int]:
    """The pieces ``plan`` gives a strided tile (TWO_PIECE_TILES); ``scalar_tile``: one of the
    SCALAR_TILE_* tiles; ``whole_columns``: each thread holds whole columns of the tile;
    ``high_bandwidth``: a GPU of much DRAM bandwidth an SM (TWO_PIECE_FORWARD_MAX_TAIL_LOW_BANDWIDTH)."""
    if TWO_PIECE_TILES == "all":
        return tile_pieces(n)
    if TWO_PIECE_TILES == "16bit" and scalar_tile and itemsize == 2:
        max_tail = 0.5 if whole_columns else TWO_PIECE_SHARED_MAX_TAIL
        if not (backward or high_bandwidth):
            max_tail = min(max_tail, TWO_PIECE_FORWARD_MAX_TAIL_LOW_BANDWIDTH)
        return tile_pieces(n, max_tail)
    return _pow2(n), 0


def _warps(tile_elems: int, per_thread: int = ELEMS_PER_THREAD) -> int:
    return max(1, min(32, tile_elems // (32 * per_thread)))


@functools.lru_cache(maxsize=None)
def _sm_count(device_index: int) -> int:
    if device_index < 0:
        return 132  # the interpreter: any plausible number, it only steers tier choice
    return torch.cuda.get_device_properties(device_index).multi_processor_count


@functools.lru_cache(maxsize=None)
def _high_bandwidth(device_index: int) -> bool:
    """Whether the GPU has much DRAM bandwidth an SM (backends.base.high_dram_bandwidth_per_sm);
    under the interpreter, an H100's answer (no)."""
    if device_index < 0:
        return False
    properties = triton.runtime.driver.active.utils.get_device_properties(device_index)
    gbps = dram_gbps(properties.get("mem_clock_rate", 0), properties.get("mem_bus_width", 0))
    return high_dram_bandwidth_per_sm(gbps, _sm_count(device_index))


def scalar_tiles_hold(n: int, inner: int) -> bool:
    """Whether the tile tier takes whole columns a thread (SCALAR_TILE_*) for a strided problem of
    reduced axis n and inner size inner whose loads cannot be 16-byte vectors."""
    return SCALAR_TILE_MIN_N < _pow2(n) <= SCALAR_TILE_MAX_N and inner >= SCALAR_TILE_COLUMNS


def wide_tiles_hold(n: int, inner: int, scalar: bool) -> bool:
    """Whether a strided problem of reduced axis n takes the WIDE_TILE_* tiles (where the tile
    tier holds n): 16-byte loads over inner sizes of SCALAR_TILE_COLUMNS or more."""
    return not scalar and inner >= SCALAR_TILE_COLUMNS and _pow2(n) > SCALAR_TILE_MIN_N


def scalar_long_tiles_hold(n: int, inner: int, itemsize: int, backward: bool) -> bool:
    """Whether a strided problem of scalar loads, reduced axis n, takes the SCALAR_LONG_* tiles
    (where the tile tier holds n)."""
    long_axis = _pow2(n) > SCALAR_TILE_MAX_N and inner >= SCALAR_TILE_COLUMNS
    return long_axis and not (backward and itemsize == 2)


@functools.lru_cache(maxsize=4096)
def plan(
    tier: str,
    outer: int,
    n: int,
    inner: int,
    itemsize: int,
    backward: bool,
    sm_count: int,
    log: bool = False,
    scalar: bool = False,
    high_bandwidth: bool = False,
    realign: bool = False,
) -> dict:
    """Block shape and launch parameters of ``tier`` for a problem (raises ValueError when the tier
    cannot hold it). ``configs`` holds, per kernel launched, its constexprs and compile options.
    ``scalar``: a strided problem whose loads cannot be 16-byte vectors (a pointer or a row stride
    of no whole number of 16-byte pieces); ``high_bandwidth``: a GPU of much DRAM bandwidth an SM
    (_high_bandwidth: the rules measured to differ between an H100 and an H200 take the H200's);
    ``realign``: rows the tile, row and online tiers take through the realigned kernels (rows_realign)."""
    block_n = _pow2(n)
    sector = max(1, 32 // itemsize)  # elements in one 32-byte memory sector
    line = max(1, 128 // itemsize)  # elements in one 128-byte line
    max_tile = MAX_TILE_BACKWARD if backward else MAX_TILE
    strided = inner > 1
    if tier in ("tile", "row"):
        if block_n * (sector if strided else 1) > max_tile:
            raise ValueError(f"tier {tier!r} holds the reduced axis in registers, at most {max_tile} elements; got {n}")
        if realign and not strided:
            return realigned_plan(tier, outer, n, itemsize, backward, sm_count, log)
        if strided:
            block_i = min(_pow2(inner), line, max(sector, TILE_TARGET // block_n))
            block_i = min(block_i, max(1, max_tile // block_n))
        else:
            block_i = 1
        block_o = 1
        offsets_64 = not strided and row_offsets_64(n, itemsize, backward)
        scalar_tile = strided and scalar and scalar_tiles_hold(n, inner)
        if scalar_tile:
            block_i = SCALAR_TILE_COLUMNS if itemsize == 4 else SCALAR_TILE_ELEMS // block_n
            warps = block_n * block_i // (32 * SCALAR_TILE_PER_THREAD[itemsize])
            # the tiles measured slower with 32-bit offsets (see _wide_offsets)
            offsets_64 = backward and itemsize == 2 and block_n <= SCALAR_TILE_OFFSETS_64_MAX_N
        elif strided and scalar and scalar_long_tiles_hold(n, inner, itemsize, backward):
            block_i = max(SCALAR_LONG_MIN_BYTES[itemsize] // itemsize, SCALAR_LONG_ELEMS // block_n)
            block_i = min(block_i, _pow2(inner), max(1, SCALAR_LONG_MAX_ELEMS[backward] // block_n))
            warps = max(1, min(16, block_n * block_i // (32 * SCALAR_LONG_PER_THREAD)))
        elif strided and wide_tiles_hold(n, inner, scalar):
            columns = WIDE_TILE_MIN_COLUMNS_BACKWARD if backward else WIDE_TILE_MIN_BYTES // itemsize
            block_i = min(max(columns, TILE_TARGET // block_n), _pow2(inner), max(1, max_tile // block_n))
            warps = max(1, min(16, block_n * block_i // (32 * WIDE_TILE_PER_THREAD)))
        else:
            if tier == "tile":
                block_o = max(1, min(TILE_TARGET // (block_n * block_i), _pow2(outer)))
            warps = _warps(block_o * block_n * block_i)
        # the thread count as planned for block_n rows; a tile of two pieces gives each fewer elements
        whole_columns = warps * 32 <= block_i  # no two threads share a column
        if strided:
            head, tail = _tile_pieces_planned(n, itemsize, scalar_tile, whole_columns, backward, high_bandwidth)
        else:
            head, tail = block_n, 0
        blocks = (
            ("BLOCK_O", block_o),
            ("BLOCK_N", head),
            ("BLOCK_N2", tail),
            ("BLOCK_I", block_i),
            ("num_warps", warps),
        )
        cap = None
        if scalar_tile and whole_columns and backward and itemsize == 2:
            cap = SCALAR_TILE_BACKWARD_MAXNREG["log_softmax" if log else "softmax"]
        elif scalar_tile and not backward and itemsize == 4 and n <= SCALAR_TILE_F32_FORWARD_CAPPED_MAX_N:
            cap = SCALAR_TILE_F32_FORWARD_MAXNREG
        if cap:
            blocks += (("maxnreg", cap),)
        return dict(
            kind="tile",
            programs=triton.cdiv(outer, block_o) * triton.cdiv(inner, block_i),
            configs=((("LOG", log),) + blocks,),
            offsets_64=offsets_64,
        )
    if tier == "relay":
        return relay_plan(outer, n, inner, itemsize, backward, sm_count, log)
    if tier not in ("online", "split"):
        raise ValueError(f"unknown triton tier {tier!r}; expected one of {TritonBackend.tiers}")
    if tier == "online" and realign and not strided:
        return realigned_plan(tier, outer, n, itemsize, backward, sm_count, log)
    block_i = min(_pow2(inner), max(1, LOOP_INNER_BYTES // itemsize)) if strided else 1
    chunk_elems = LOOP_CHUNK_ELEMS if tier == "online" else SPLIT_CHUNK_ELEMS
    chunk_n = min(block_n, max(1, chunk_elems // block_i))
    column_programs = outer * triton.cdiv(inner, block_i)
    blocks = (
        ("BLOCK_O", 1),
        ("BLOCK_N", chunk_n),
        ("BLOCK_I", block_i),
        ("num_warps", max(1, min(32, LOOP_WARPS, chunk_n * block_i // 256))),
        ("num_stages", LOOP_STAGES),
    )
    if tier == "online":
        return dict(
            kind="online",
            programs=min(column_programs, ONLINE_PROGRAMS_PER_SM * sm_count),
            column_programs=column_programs,
            configs=((("LOG", log),) + blocks,),
        )
    chunks = triton.cdiv(n, chunk_n)
    splits = min(chunks, MAX_SPLITS, max(1, triton.cdiv(SPLIT_PROGRAMS_PER_SM * sm_count, column_programs)))
    chunk = triton.cdiv(chunks, splits) * chunk_n
    splits = triton.cdiv(n, chunk)
    partials = blocks if not backward else (("LOG", log),) + blocks
    finish = (("LOG", log),) + blocks[:3] + (("BLOCK_S", _pow2(splits)),) + blocks[3:]
    return dict(kind="split", programs=column_programs * splits, SPLITS=splits, CHUNK=chunk, configs=(partials, finish))


def realigned_pieces(body: int, itemsize: int, backward: bool) -> tuple[int, int]:
    """The held realigned kernels' pieces of a row's body of ``body`` elements: (BLOCK_N, BLOCK_N2) as
    REALIGNED_TWO_PIECES gives them (BLOCK_N2 0: one piece)."""
    share, most_bytes = REALIGNED_TWO_PIECES[backward, itemsize]
    block_n, block_n2 = tile_pieces(body, share)
    if most_bytes is not None and block_n2 * itemsize > most_bytes:
        return _pow2(body), 0
    return block_n, block_n2


def realigned_plan(tier: str, outer: int, n: int, itemsize: int, backward: bool, sm_count: int, log: bool) -> dict:
    """The realigned kernels' launch of rows of n (see kernels.py): the tile and row tiers' held in
    registers, BLOCK_O rows of a body of up to BLOCK_N columns a program (the longest body, a row's
    whole vectors, sets BLOCK_N; just past a power of two, BLOCK_N + BLOCK_N2 as two pieces where
    REALIGNED_TWO_PIECES says so), the online tier's walked in chunks by a persistent grid."""
    vector = 16 // itemsize
    if tier == "online":
        chunk_n = min(_pow2(n), LOOP_CHUNK_ELEMS)
        blocks = (("WALKED", True), ("BLOCK_O", 1), ("BLOCK_N", chunk_n), ("VEC", vector), ("BLOCK_N2", 0))
        options = (("num_warps", max(1, min(LOOP_WARPS, chunk_n // 256))), ("num_stages", LOOP_STAGES))
        programs = min(outer, ONLINE_PROGRAMS_PER_SM * sm_count)
        return dict(kind="realigned_walked", programs=programs, configs=((("LOG", log),) + blocks + options,))
    body = n // vector * vector  # the longest body of a row, at any phase
    block_n, block_n2 = realigned_pieces(body, itemsize, backward)
    # rows a program and threads are those of one piece (_pow2(body)): two pieces change the lanes alone
    whole = _pow2(body)
    block_o = max(1, min(TILE_TARGET // whole, _pow2(outer))) if tier == "tile" else 1
    blocks = (("WALKED", False), ("BLOCK_O", block_o), ("BLOCK_N", block_n), ("VEC", vector), ("BLOCK_N2", block_n2))
    steps = REALIGNED_HELD_ELEMS_PER_THREAD[backward, itemsize]
    per_thread = next(elems for most, elems in steps if whole * itemsize <= most)
    blocks += (("num_warps", _warps(block_o * whole, per_thread)),)
    return dict(kind="realigned_held", programs=triton.cdiv(outer, block_o), configs=((("LOG", log),) + blocks,))


def relay_plan(
    outer: int,
    n: int,
    inner: int,
    itemsize: int,
    backward: bool,
    sm_count: int,
    log: bool = False,
    tile_elems: int = RELAY_TILE_ELEMS,
    chunk_elems: int | None = None,
    warps: int = RELAY_WARPS,
    inner_bytes: int = RELAY_INNER_BYTES,
    lag_items_per_sm: int | None = None,
    programs_per_sm: int = RELAY_PROGRAMS_PER_SM,
    stages: int | None = None,
) -> dict:
    """The relay tier's launch (see kernels.py): its reduction units (rows, or blocks of BLOCK_I
    columns), each cut into SPLITS pieces of CHUNK along the reduced axis, a gather and a finish item
    each, the finish items LAG units behind, taken by a persistent grid. Where the (n, inner) blocks
    are contiguous and inner is narrower than a block of columns, ``folded`` is the plan of the same
    problem seen as (outer, n * inner / w, w) pseudo-columns (see kernels.py), which the launch takes
    when the tensors' strides allow. The keyword arguments are the tier's tunables (RELAY_*)."""
    if chunk_elems is None:
        chunk_elems = RELAY_CHUNK_BYTES // itemsize
    if lag_items_per_sm is None:
        lag_items_per_sm = RELAY_LAG_ITEMS_PER_SM[itemsize]

    def one(n: int, inner: int, fold: int) -> dict:
        block_i = min(_pow2(inner), max(1, inner_bytes // itemsize)) if inner > 1 else 1
        block_n = max(1, min(_pow2(n), tile_elems // block_i))
        chunk = max(1, chunk_elems // (block_n * block_i)) * block_n
        chunk = max(chunk, triton.cdiv(triton.cdiv(n, MAX_SPLITS), block_n) * block_n)
        splits = triton.cdiv(n, chunk)
        units = outer * triton.cdiv(inner, block_i)
        lag = min(units, max(1, triton.cdiv(lag_items_per_sm * sm_count, 2 * splits)))
        config = (
            ("LOG", log),
            ("BLOCK_N", block_n),
            ("BLOCK_I", block_i),
            ("BLOCK_S", _pow2(splits)),
            ("FOLD", fold or block_i),
            ("num_warps", max(1, min(warps, block_n * block_i // 32))),
        ) + ((("num_stages", stages),) if stages else ())
        items = 2 * units * splits
        programs = min(items, programs_per_sm * sm_count)
        if items + programs > INT32_MAX:  # tickets are int32, and every program draws one past the last item
            raise ValueError(f"tier 'relay' takes under 2^31 work items; ({outer}, {n}, {inner}) makes {items}")
        relay = dict(UNITS=units, SPLITS=splits, CHUNK=chunk, LAG=lag)
        return dict(kind="relay", programs=programs, configs=(config,), **relay)

    p = one(n, inner, 0)
    width = max(16, inner_bytes // itemsize)
    if 1 < inner < width and width % inner == 0 and (n * inner) % width == 0:
        p["folded"] = (width, one(n * inner // width, width, inner))
    return p


class TritonBackend:
    name = "triton"
    tiers = ("tile", "row", "online", "split", "relay")

    def unavailable_reason(self, device: torch.device) -> str | None:
        if _IMPORT_ERROR is not None:
            return f"backend='triton' needs the triton package (pip install triton): {_IMPORT_ERROR}"
        if device.type == "cuda":
            return None
        if device.type == "cpu" and INTERPRETED:
            return None
        if device.type == "cpu":
            return (
                "backend='triton' runs CUDA tensors; for CPU tensors set TRITON_INTERPRET=1 before importing "
                "fastsoftmax to run the Triton kernels in the interpreter"
            )
        return f"backend='triton' does not run on {device.type} tensors"

    def choose_tier(
        self,
        outer: int,
        n: int,
        inner: int,
        dtype: torch.dtype,
        backward: bool,
        device_index: int | None = None,
        aligned: bool = True,
        window: bool = True,
        stepped: bool = False,
        log: bool = False,
    ) -> str:
        if device_index is None:
            device_index = torch.cuda.current_device() if torch.cuda.is_available() else -1
        return _choose_tier(outer, n, inner, _ITEMSIZE[dtype], backward, _sm_count(device_index))

    def supports(
        self,
        tier: str,
        outer: int,
        n: int,
        inner: int,
        dtype: torch.dtype,
        backward: bool,
        device_index: int | None = None,
    ) -> bool:
        try:
            plan(tier, outer, n, inner, _ITEMSIZE[dtype], backward, 132)
        except ValueError:
            return False
        return True

    def realigns(self, tier: str, n: int, dtype: torch.dtype, backward: bool) -> bool:
        return True  # masked loads of any alignment

    def forward(self, x: torch.Tensor, y: torch.Tensor, log: bool, tier: str | None = None) -> None:
        p, device_index = _plan_for((x, y), tier, False, log)
        strides = (x.stride(0), x.stride(1), x.stride(2), y.stride(0), y.stride(1))
        _launch_forward(*_resolved(p, tuple(x.shape), strides, False), x, y, device_index)

    def backward(self, y: torch.Tensor, dy: torch.Tensor, dx: torch.Tensor, log: bool, tier: str | None = None) -> None:
        p, device_index = _plan_for((y, dy, dx), tier, True, log)
        strides = (*y.stride(), *dy.stride(), dx.stride(0), dx.stride(1))
        _launch_backward(*_resolved(p, tuple(y.shape), strides, True), y, dy, dx, device_index)

    def prepare(
        self,
        tier: str,
        shape,
        strides,
        dtype: torch.dtype,
        device_index: int,
        backward: bool,
        out_dtype: torch.dtype | None = None,
    ):
        """``run(x, y, log)`` (forward) or ``run(y, dy, dx, log)`` (backward) for full tensors whose
        canonical views have exactly this shape and these strides (one stride tuple per tensor, in
        the order of the arguments): the host path of a repeated call (see functional.py). The
        kernels take a pointer and strides, and a canonical view starts at its tensor's first
        element, so the tensors go to them as they are, with no view built per call; the plan of
        each (log, loads of 16 bytes or not, rows realigned or not) and its offset width are worked
        out once. What a call still checks is its pointers' 16-byte alignment (the plan's ``scalar``
        and ``realign``), as _plan_for does.
        ``out_dtype``: the output's type where it is not the inputs' ``dtype`` (a 16-bit input
        written as float32, and back in the backward: the kernels convert at the store)."""
        outer, n, inner = shape
        itemsize = _ITEMSIZE[dtype]
        sm_count, high_bandwidth = _sm_count(device_index), _high_bandwidth(device_index)
        sizes = [itemsize] * (len(strides) - 1) + [_ITEMSIZE[out_dtype or dtype]]
        staggered = inner > 1 and _rows_staggered(strides, sizes, outer, n)
        # rows that take the realigned kernels where every pointer lies on a 16-byte boundary
        realigned_rows = takes_realigned(
            tier, shape, itemsize, backward, lambda: ([s[:2] for s in strides], sizes, True)
        )
        pointers_matter = (inner > 1 and not staggered) or realigned_rows
        if backward:
            flat = (*strides[0], *strides[1], strides[2][0], strides[2][1])
            launch_kind = _launch_backward
        else:
            flat = (*strides[0], strides[1][0], strides[1][1])
            launch_kind = _launch_forward
        ready: dict = {}  # (log, off a 16-byte boundary) -> _resolved(the plan)

        def run(*tensors_and_log):
            *tensors, log = tensors_and_log
            misaligned = False
            if pointers_matter:
                for t in tensors:
                    if t.data_ptr() % 16:
                        misaligned = True
            planned = ready.get((log, misaligned))
            if planned is None:
                scalar, realign = staggered or (inner > 1 and misaligned), realigned_rows and not misaligned
                p = plan(tier, outer, n, inner, itemsize, backward, sm_count, log, scalar, high_bandwidth, realign)
                planned = ready[(log, misaligned)] = _resolved(p, shape, flat, backward)
            launch_kind(*planned, *tensors, device_index)

        return run


def _offsets_64(p: dict, shape: tuple, strides: tuple, backward: bool) -> bool:
    """Whether plan ``p``'s tile or realigned kernel takes 64-bit element offsets (its ``WIDE``): where the plan
    asks for them, or some element lies 2^31 or more elements past its pointer (_wide_offsets).
    ``strides`` as the launches take them (the outputs' inner stride, 1, left out)."""
    if p["kind"] != "tile" and p["kind"] not in REALIGNED_KINDS:
        return True  # the looping tiers compute in 64 bits
    views = (strides[:3], strides[3:6], (*strides[6:], 1)) if backward else (strides[:3], (*strides[3:], 1))
    return p.get("offsets_64", False) or _wide_offsets(*shape, *views)


def _resolved(p: dict, shape: tuple, strides: tuple, backward: bool) -> tuple:
    """``(plan, wide, shape, strides)`` as plan ``p`` launches on (outer, n, inner) problem ``shape``
    of these element strides (each input's three, the output's outer and reduced ones): a relay
    plan's pseudo-column plan where every tensor's (n, inner) block is contiguous, with the shape
    and strides it runs on; ``wide``, whether a tile kernel takes 64-bit offsets (_offsets_64).
    Worked out once per geometry by ``prepare``."""
    folded = p.get("folded")
    if folded is not None:
        outer, n, inner = shape
        reduced, unit = strides[1::3], strides[2::3]  # every tensor's; the output's inner stride is 1
        if all(step == inner for step in reduced) and all(step == 1 for step in unit):
            width, p = folded
            # each tensor's outer stride stays; its reduced stride becomes the width, its inner one 1
            strides = tuple(width if k % 3 == 1 else (1 if k % 3 == 2 else v) for k, v in enumerate(strides))
            shape = (outer, n * inner // width, width)
    return p, _offsets_64(p, shape, strides, backward), shape, strides


#: the plan kinds of the realigned kernels (kernels.softmax_*_realigned, WALKED in their configs)
REALIGNED_KINDS = ("realigned_held", "realigned_walked")


def _relay_arguments(p: dict, device: torch.device) -> tuple:
    """A relay launch's zeroed counters and its (UNITS, SPLITS, CHUNK, LAG)."""
    flags = torch.zeros(1 + p["UNITS"], dtype=torch.int32, device=device)
    return flags, (p["UNITS"], p["SPLITS"], p["CHUNK"], p["LAG"])


def _launcher(p: dict, device_index: int):
    """``go(kernel, tensors, scalars, config)``: one launch of plan ``p``'s programs on the device."""

    def go(kernel, tensors: tuple, scalars: tuple, config: tuple) -> None:
        launch(kernel, p["programs"], tensors, scalars, config, device_index, INTERPRETED)

    return go


def _launch_forward(p: dict, wide: bool, shape: tuple, strides: tuple, x, y, device_index: int) -> None:
    """The launches of forward plan ``p`` (offsets in 64 bits if ``wide``) on (outer, n, inner)
    problem ``x`` -> ``y`` of these element strides (x's three, y's outer and reduced ones)."""
    outer, n, inner = shape
    configs, go = p["configs"], _launcher(p, device_index)
    if p["kind"] == "tile":
        go(kernels.softmax_fwd_tile, (x, y), shape + strides, configs[0] + (("WIDE", wide),))
    elif p["kind"] in REALIGNED_KINDS:
        go(kernels.softmax_fwd_realigned, (x, y), (outer, n, strides[0], strides[3]), configs[0] + (("WIDE", wide),))
    elif p["kind"] == "online":
        go(kernels.softmax_fwd_online, (x, y), shape + strides + (p["column_programs"],), configs[0])
    elif p["kind"] == "relay":
        # (one allocation, split in two at once: indexing a tensor costs host time per call)
        maxima, sums = torch.empty((2, outer, p["SPLITS"], inner), dtype=torch.float32, device=x.device).unbind(0)
        flags, relay = _relay_arguments(p, x.device)
        go(kernels.softmax_fwd_relay, (x, y, maxima, sums, flags), shape + strides + relay, configs[0])
    else:
        splits, chunk = p["SPLITS"], p["CHUNK"]
        maxima, sums = torch.empty((2, outer, splits, inner), dtype=torch.float32, device=x.device).unbind(0)
        go(kernels.softmax_fwd_partials, (x, maxima, sums), shape + strides[:3] + (splits, chunk), configs[0])
        go(kernels.softmax_fwd_split, (x, y, maxima, sums), shape + strides + (splits, chunk), configs[1])


def _launch_backward(p: dict, wide: bool, shape: tuple, strides: tuple, y, dy, dx, device_index: int) -> None:
    """The launches of backward plan ``p`` (offsets in 64 bits if ``wide``) on (outer, n, inner)
    problem ``y``, ``dy`` -> ``dx`` of these element strides (y's and dy's three, dx's outer and
    reduced ones)."""
    outer, n, inner = shape
    configs, go = p["configs"], _launcher(p, device_index)
    if p["kind"] == "tile":
        go(kernels.softmax_bwd_tile, (y, dy, dx), shape + strides, configs[0] + (("WIDE", wide),))
    elif p["kind"] in REALIGNED_KINDS:
        go(
            kernels.softmax_bwd_realigned,
            (y, dy, dx),
            (outer, n, strides[0], strides[3], strides[6]),
            configs[0] + (("WIDE", wide),),
        )
    elif p["kind"] == "online":
        go(kernels.softmax_bwd_online, (y, dy, dx), shape + strides + (p["column_programs"],), configs[0])
    elif p["kind"] == "relay":
        sums = torch.empty((outer, p["SPLITS"], inner), dtype=torch.float32, device=y.device)
        flags, relay = _relay_arguments(p, y.device)
        go(kernels.softmax_bwd_relay, (y, dy, dx, sums, flags), shape + strides + relay, configs[0])
    else:
        splits, chunk = p["SPLITS"], p["CHUNK"]
        sums = torch.empty((outer, splits, inner), dtype=torch.float32, device=y.device)
        go(kernels.softmax_bwd_partials, (y, dy, sums), shape + strides[:6] + (splits, chunk), configs[0])
        go(kernels.softmax_bwd_split, (y, dy, dx, sums), shape + strides + (splits, chunk), configs[1])


_ITEMSIZE = {torch.float32: 4, torch.float16: 2, torch.bfloat16: 2}


def _plan_for(tensors: tuple, tier: str | None, backward: bool, log: bool) -> tuple[dict, int]:
    """The launch plan of a call's canonical views ``tensors`` (the tier's, or the chosen tier's),
    and the CUDA device index (-1 under the interpreter)."""
    t = tensors[0]
    outer, n, inner = t.shape
    device_index = t.device.index if t.is_cuda else -1
    sm_count = _sm_count(device_index)
    itemsize = _ITEMSIZE[t.dtype]
    if tier is None:
        tier = _choose_tier(outer, n, inner, itemsize, backward, sm_count)
    scalar = inner > 1 and _scalar(tensors)
    realign = takes_realigned(
        tier,
        (outer, n, inner),
        itemsize,
        backward,
        lambda: (
            [(t.stride(0), t.stride(1)) for t in tensors],
            [t.element_size() for t in tensors],
            not any(t.data_ptr() % 16 for t in tensors),
        ),
    )
    high_bandwidth = _high_bandwidth(device_index)
    p = plan(tier, outer, n, inner, itemsize, backward, sm_count, log, scalar, high_bandwidth, realign)
    return p, device_index


def _wide_offsets(outer: int, n: int, inner: int, *strides) -> bool:
    """Whether the tile kernels need 64-bit element offsets: some element of a canonical (outer, n,
    inner) view lies 2^31 or more elements past its pointer (``strides``: each tensor's three, the
    outputs' inner stride 1; plain arithmetic on the strides a call already holds, as this runs on
    every launch). Elsewhere they compute offsets in 32 bits (summed before the pointer moves),
    which an H200 ran faster, alternated in one process with the 64-bit kernels on the backend's
    plans (results 2026-11-28_h200_s29/tile_wide_ab.txt): (16, 21, 513, 513) over dim 1 float32
    forward 0.773 -> 0.880 of copy, backward 0.783 -> 0.980, bf16 forward 0.658 -> 0.676; (8, 150,
    127, 127) bf16 forward 0.319 -> 0.389, backward 0.406 -> 0.500; its rows level (within 0.015). The
    16-bit backward of the scalar tiles over axes of at most 32 keeps 64-bit offsets (plan's
    ``offsets_64``, SCALAR_TILE_OFFSETS_64_MAX_N): bf16 (16, 21, 513, 513) 0.765 against 0.732; so does
    the backward of rows of 17-100 columns and the 16-bit forward of rows of 500-1025, which an H100 ran
    faster with them (row_offsets_64). The looping tiers keep them too (not timed)."""
    last_o, last_n, last_i = outer - 1, n - 1, inner - 1
    for so, sn, si in strides:
        if last_o * so + last_n * sn + last_i * si > INT32_MAX:
            return True
    return False


def _scalar(tensors) -> bool:
    """Whether a strided call's loads cannot be 16-byte vectors: a pointer, or an outer or reduced
    stride, of no whole number of 16-byte pieces."""
    outer, n, _ = tensors[0].shape
    return any(  # each tensor at its own element size: a float32 result may come from 16-bit inputs
        t.data_ptr() % 16 or not _layout.rows_on_boundaries(t.stride(0), t.stride(1), t.element_size(), outer, n)
        for t in tensors
    )


def _rows_staggered(strides, itemsizes, outer: int, n: int) -> bool:
    """Whether some tensor's (outer, n) rows, of these strides (one tuple a tensor) and element sizes
    (one a tensor), lie at several 16-byte phases: an outer or reduced stride of no whole number of
    16-byte pieces."""
    return not all(_layout.rows_on_boundaries(s[0], s[1], size, outer, n) for s, size in zip(strides, itemsizes))


def relay_takes(outer: int, n: int, inner: int, backward: bool) -> bool:
    """Whether the relay tier takes a problem when the backend chooses (see RELAY_MAX_INNER): the
    backward over a long axis of a narrow inner size. H200, as planned, in one process against the
    CUDA backend's choice and torch.compile (results 2026-11-28_h200_s31/relay_planned_backward.txt),
    over dim 1: bf16 (64, 65536, 16) 0.559 of copy against 0.493 and 0.543; (128, 65536, 8) 0.601
    against 0.560 and 0.493; (16, 1048576, 2) 0.510 against 0.494 and 0.455; (128, 16384, 32) 0.595
    against 0.578 and 0.555; float32 0.621, 0.698, 0.557, 0.607 against 0.567, 0.613, 0.497, 0.592
    (torch.compile 0.587, 0.539, 0.454, 0.586); fp16 as bf16. Shorter units stay on chip in the CUDA
    tiers ((256, 4096, 32): 0.756 against the relay's 0.553), and the forward, whose gather items
    compute an exponential and an online rescale an element, measured slower than the CUDA tiers
    (bf16 (64, 65536, 16) 0.35 against 0.51, relay_probe_persistent.txt)."""
    return (
        backward
        and 2 <= inner <= RELAY_MAX_INNER
        and n * inner >= RELAY_MIN_UNIT
        and outer >= RELAY_MIN_OUTER
        and outer * n * inner >= RELAY_MIN_NUMEL
    )


@functools.lru_cache(maxsize=4096)
def _choose_tier(outer: int, n: int, inner: int, itemsize: int, backward: bool, sm_count: int) -> str:
    strided = inner > 1
    sector = max(1, 32 // itemsize)
    max_tile = MAX_TILE_BACKWARD if backward else MAX_TILE
    if _pow2(n) * (sector if strided else 1) <= max_tile:
        if not strided and _pow2(n) > 1024:
            return "row"
        return "tile"
    if relay_takes(outer, n, inner, backward):
        return "relay"
    block_i = min(_pow2(inner), sector) if strided else 1
    column_programs = outer * -(-inner // block_i)
    return "online" if column_programs >= 2 * sm_count else "split"


BACKEND = TritonBackend()
