"""Every CUDA tier and the ladder, under compute-sanitizer: forward and backward, softmax and
log-softmax, three dtypes, odd lengths, misaligned views and inputs broadcast along outer
(expanded). Every result is also checked against float64, so a run that the sanitizer passes but
that computes wrong values still fails.

    compute-sanitizer --tool memcheck python3 benchmarks/sanitize.py [--tiers warp,strided]

(``benchmarks/device_run.sh sanitize`` runs it under memcheck, racecheck, initcheck and synccheck.)
Sizes are small: the sanitizer runs kernels orders of magnitude slower than the GPU does.
"""

from __future__ import annotations

import argparse
import sys

import torch

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.cuda import BACKEND, TIERS

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def _input(shape, dtype, misaligned):
    """Rows of ``shape``: a fresh tensor (misaligned False), rows of a wider one starting one element
    in (True), or rows end to end from one element past a 16-byte boundary ("dense+1": the row
    tiers' windows read edge packs whole inside such a tensor, never past its ends)."""
    if misaligned == "dense+1":
        flat = (torch.randn(shape[0] * shape[1] + 1, device="cuda") * 4).to(dtype)
        return flat[1:].view(shape)
    x = (torch.randn(shape[0], shape[1] + misaligned, device="cuda") * 4).to(dtype)
    return x[:, 1:] if misaligned else x


#: per tier: (shape, dim) problems it can hold, odd lengths first
PROBLEMS = {
    # (9, 777): 16-bit forward rows past 512 columns off 16-byte boundaries, held in their windows;
    # (29, 37) and (41, 50): 16-bit rows in narrow packs held by groups of 16 and 8 lanes
    "warp": [((37, 7), -1), ((5, 1000), -1), ((3, 65), -1), ((9, 777), -1), ((29, 37), -1), ((41, 50), -1)],
    # rows of 21: every run starts and ends off a 16-byte boundary; a group of one lane; 64 columns;
    # rows over 32 lanes of 4 (16-bit backward) or of 32 slots, up to the longest the tier holds;
    # every group size of lanes a row (1-32) in one direction or both; rows of up to 256 take the
    # tight form (37: the 16-bit backward over lanes of 32; 150 and 250: groups of 8 lanes, the last
    # slot partial), and main() runs them again in the general form
    "flat_rows": [
        ((3001, 21), -1),
        ((700, 3), -1),
        ((500, 8), -1),
        ((200, 13), -1),
        ((257, 37), -1),
        ((130, 64), -1),
        ((301, 127), -1),
        ((90, 150), -1),
        ((70, 250), -1),
        ((64, 300), -1),
        ((40, 1001), -1),
    ],
    "block_regs": [((6, 3001), -1), ((3, 32768), -1), ((2, 9000), -1)],
    "block_smem": [((4, 40001), -1)],
    "block_uncached": [((3, 70001), -1)],
    "split_row": [((2, 70001), -1), ((1, 300007), -1)],
    # the fourth: 16-byte aligned 16-bit rows in one wave, where softmax keeps its exponentials;
    # then clusters of 2 over the rows of 9217-32768 that "auto" gives the tier (aligned views and
    # misaligned ones), and float32 rows of 2^18, which it holds in registers on 16-byte boundaries
    # only (the backward's misaligned views run cluster_stream's plan); (140, 12288), more CTAs than SMs,
    # holds 64 16-bit elements a thread on GPUs of much DRAM bandwidth an SM (CLUSTER_HELD_FIRST);
    # (64, 131072): more rows than clusters resident at once, staggers the backward's first wave;
    # (20, 151936): float32 backward CTAs of 320 threads, the capped form (CLUSTER_CAPPED_MAX_REGISTERS);
    # (12, 65536) and (9, 50257), rows enough to leave the decode rule: the 16-bit backward's 4 CTAs
    # past three quarters of their 32 KiB (8 on GPUs of much DRAM bandwidth an SM)
    "cluster": [
        ((3, 50257), -1),
        ((2, 70001), -1),
        ((20, 40001), -1),
        ((4, 50264), -1),
        ((3, 16384), -1),
        ((2, 9224), -1),
        ((1, 262144), -1),
        ((140, 12288), -1),
        ((64, 131072), -1),
        ((20, 151936), -1),
        ((12, 65536), -1),
        ((9, 50257), -1),
    ],
    # small odd rows that still spread over every resident CTA (one cooperative launch, a grid
    # barrier per row), two rows so the workspace halves alternate; misaligned views come from
    # run_tier itself (x misaligned, y not: the re-read path); the last holds its slices in
    # registers and in shared memory (its cp.async groups), and float32 re-reads a rest; 4 x 3000017
    # takes the grid in teams of a row each (four in the 16-bit forward, two in the float32 forward
    # and the 16-bit backward, shared memory held too), the float32 backward the whole grid (its
    # tuned runs: teams forced on and off)
    "grid_row": [((1, 300007), -1), ((2, 1000003), -1), ((3, 4099), -1), ((1, 12000007), -1), ((4, 3000017), -1)],
    # the same kernels with a cluster for the team: rows held in registers, in shared memory too, and
    # (float32 2^20 + 3 backward at 16 CTAs, and the 2-CTA run below) partly re-read; the last, rows
    # enough for every resident cluster to take four or more, staggers its first wave
    "cluster_stream": [((3, 300007), -1), ((2, 1000003), -1), ((3, 4099), -1), ((540, 1031), -1)],
    # the last three: a long axis over few columns, split over hundreds of blocks whose pairs a
    # kernel of their own merges (strided_merge), finished by the tiles and (32 columns, dense) by the flat
    # sweep (kFlat), and rows of 4 KiB and more over a partial last tile (16-bit warps a whole row
    # of packs; the workspace read in 16-byte loads)
    "strided": [
        ((300, 40), 0),
        ((7, 101, 5), 1),
        ((3, 4001, 33), 1),
        ((40001, 33), 0),
        ((40001, 32), 0),
        ((4100, 2056), 0),
    ],
    # a tile held by one CTA, columns wider than a line, and axes long enough that a team of CTAs
    # splits each tile and exchanges partials (the cooperative launch); the last two have more
    # tiles than resident CTAs (blocks that wait for a free SM; teams that walk several tiles)
    "strided_staged": [
        ((5, 301, 40), 1),
        ((3, 2001, 130), 1),
        ((1, 40001, 4), 1),
        ((20011, 6), 0),
        ((600, 64, 16), 1),
        ((150, 700, 64), 1),
        ((40, 304, 3), 1),  # rows of 3 in one run an outer index: 16-bit rows at every phase, staged whole
    ],
    # groups of several row warps merging through shared memory (150), one warp a group (21), the
    # longest axis of the backward's rows, a partial last group of columns, pairs (inner 10) and
    # spread columns (an odd inner)
    "strided_warp": [((5, 150, 40), 1), ((3, 21, 72), 1), ((2, 2000, 24), 1), ((7, 33, 10), 1), ((4, 17, 13), 1)],
}
#: strided_staged's chunks longer than one staging (a tile past the shared memory of every resident
#: CTA: streamed through it twice, the chunk's partial piece staged first and the whole one left
#: staged for the writes): two to five stagings a chunk across the dtypes and directions
STREAMED_PROBLEMS = [((1, 4194304, 4), 1)]
#: strided_staged's flat runs folded into rows of lcm(inner, pack) columns (strided.fold_width, forced
#: in both directions): a run a CTA, inner dividing the pack, a cluster team and persistent teams;
#: every one folds in every dtype (rows of 24 or 8 in 16-bit types, 12 or 4 in float32)
FOLDED_PROBLEMS = [((40, 304, 3), 1), ((3, 200, 2), 1), ((1, 40008, 3), 1)]
#: strided_staged's runs of interleaved columns held across a cluster (staged_columns): two to
#: thirty-two columns, clusters of 2 to 16, ragged last CTAs
COLUMN_PROBLEMS = [((3, 5000, 2), 1), ((2, 4098, 4), 1), ((5, 3001, 8), 1), ((1, 16000, 16), 1), ((3, 1030, 32), 1)]

#: cluster_stream's column kernels (strided_staged's runs longer than a cluster holds in registers,
#: forced on shorter ones): clusters of 2 whose CTAs re-read part of their slices (a run ending
#: inside a pack), and a cluster of 4 over 32 columns held on chip
COLUMN_STREAM_RUNS = [
    ({"column_stream": True, "cluster_ctas": 2}, [((3, 24000, 16), 1), ((1, 400001, 2), 1)]),
    ({"column_stream": True, "cluster_ctas": 4}, [((2, 9000, 32), 1)]),
]

#: strided_staged's teams of more than four CTAs as clusters of 8 and 16 (tiles of 4000 and 3001
#: rows, a partial last tile, the last CTA's rows short)
LARGE_TEAM_PROBLEMS = [((3, 4000, 64), 1), ((2, 3001, 100), 1)]

#: strided_staged's tiles in the inputs' 16-byte window: inputs one element into rows of whole
#: 16-byte pieces (x[..., 1:1 + inner], the column before never written: initcheck sees any read of
#: it), outputs on rows of inner elements (off their boundaries by a different amount each where
#: inner is no whole number of pieces); a tile a CTA, a cluster team, a persistent team
WINDOW_PROBLEMS = [((3, 301, 600), 1), ((2, 3001, 300), 1), ((1, 40001, 520), 1)]

#: strided_staged's tiles over inputs that step by 2 along inner (x, y and dy; the elements between
#: written too, only the view's own read into results): each tile row's span staged in 16-byte pieces,
#: a tile a CTA, a cluster team, a persistent team (inner a multiple of 8: every tensor's rows on
#: their 16-byte boundaries)
STEPPED_PROBLEMS = [((5, 301, 40), 1), ((4, 600, 64), 1), ((2, 20001, 48), 1)]
#: strided_warp over inputs that step by 2 along inner (the two 16-byte packs of a lane's span):
#: groups of several row warps, one warp a group, a partial last group of columns, 16 rows a lane
#: (the forward kernel capped at two CTAs an SM) over a partial last row of lanes
WARP_STEPPED_PROBLEMS = [((5, 150, 40), 1), ((3, 21, 72), 1), ((4, 100, 8), 1), ((2, 60, 64), 1)]


def check(name, out, reference, dtype) -> str | None:
    err = (out.double().cpu() - reference).abs().nan_to_num(float("inf")).max().item()
    tolerance = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]
    scale = reference.abs().max().item() or 1.0
    return None if err <= tolerance * scale else f"{name}: error {err:.3g} (scale {scale:.3g})"


#: --verbose: each launch's label printed before it runs, so that a fault names its problem
VERBOSE = False
#: --shapes: the problems every run takes instead of its own (None: their own)
SHAPES = None
#: --dtypes: the only dtypes run (None: every run's own)
ONLY_DTYPES = None


def announce(label: str) -> None:
    if VERBOSE:
        print("launch", label, flush=True)


def run_tier(tier: str, problems=None, only=None, dtypes=DTYPES) -> list[str]:
    failures = []
    for shape, dim in SHAPES or problems or PROBLEMS[tier]:
        for dtype in dtypes if ONLY_DTYPES is None else [d for d in dtypes if d in ONLY_DTYPES]:
            # rows: aligned and misaligned views; (outer, n, inner): dense, and broadcast along
            # outer (expanded x, y and dy: strided_staged then takes its tiles outer index fastest);
            # the strided tier: inputs with a step of 2 along inner too (x, y and dy; float32 in
            # packs of their span, 16-bit types element by element). ``only``: that variant alone
            variants = (False, True) + (("dense+1",) if len(shape) == 2 else ())
            if tier == "strided_staged" and len(shape) == 3 and shape[-1] * 2 >= 512:
                variants += ("window",)
            variants += ("step",) if tier == "strided" else ()
            for misaligned in variants if only is None else (only,):
                broadcast = len(shape) == 3 and misaligned is True
                stepped = misaligned == "step"
                window = misaligned == "window"
                if broadcast and shape[0] == 1:
                    continue
                if stepped:
                    x = _stepped((torch.randn(shape, device="cuda") * 4).to(dtype))
                elif window:
                    x = _window((torch.randn(shape, device="cuda") * 4).to(dtype))
                elif len(shape) == 2:
                    x = _input(shape, dtype, misaligned)
                elif broadcast:
                    x = (torch.randn((1,) + shape[1:], device="cuda") * 4).to(dtype).expand(shape)
                else:
                    x = (torch.randn(shape, device="cuda") * 4).to(dtype)
                if not BACKEND.supports(tier, *_canonical(x, dim), dtype, True):
                    directions = (False,)
                else:
                    directions = (False, True)
                for log in (False, True):
                    view = "broadcast" if broadcast else f"misaligned={misaligned}"
                    label = f"{tier} {tuple(x.shape)} dim {dim} {dtype} log={log} {view}"
                    # references on the CPU: the sanitizer then sees only this package's kernels
                    # (racecheck flags torch's own float64 reduction on long rows)
                    x64 = x.double().cpu()
                    reference = torch.log_softmax(x64, dim) if log else torch.softmax(x64, dim)
                    announce(label)
                    with dispatch.forced("cuda", tier):
                        y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim)
                    torch.cuda.synchronize()
                    failures.append(check(label, y, reference, dtype))
                    if True in directions:
                        dy = torch.randn_like(y)
                        if broadcast:
                            dy, y = dy[:1].expand(shape), y[:1].expand(shape)
                        if stepped:
                            dy, y = _stepped(dy), _stepped(y)
                        if window:
                            dy, y = _window(dy), _window(y)
                        announce(label + " backward")
                        with dispatch.forced("cuda", tier):
                            dx = fastsoftmax.softmax_backward(dy, y, dim, log=log)
                        torch.cuda.synchronize()
                        y64, dy64 = reference, dy.double().cpu()
                        if log:
                            ref_dx = dy64 - y64.exp() * dy64.sum(dim, keepdim=True)
                        else:
                            ref_dx = y64 * (dy64 - (dy64 * y64).sum(dim, keepdim=True))
                        failures.append(check(label + " backward", dx, ref_dx, dtype))
    return [f for f in failures if f]


def _stepped(values):
    """``values`` copied into every other element of the last dim of a tensor twice as wide (the
    elements between are written too: only the view's own are read into results)."""
    wide = torch.zeros(values.shape[:-1] + (2 * values.shape[-1],), dtype=values.dtype, device=values.device)
    return wide[..., ::2].copy_(values)


def _window(values):
    """``values`` copied into x[..., 1:1 + inner] of a tensor whose rows are whole 16-byte pieces,
    the elements outside never written."""
    per = 16 // values.element_size()
    pitch = -(-(values.shape[-1] + 1) // per) * per
    wide = torch.empty(values.shape[:-1] + (pitch,), dtype=values.dtype, device=values.device)
    return wide[..., 1 : 1 + values.shape[-1]].copy_(values)


def _canonical(x, dim):
    """(outer, n, inner) of a contiguous-in-memory problem, for ``supports``."""
    dim = dim % x.dim()
    outer = 1
    for size in x.shape[:dim]:
        outer *= size
    inner = 1
    for size in x.shape[dim + 1 :]:
        inner *= size
    return outer, x.shape[dim], inner


def run_ladder() -> list[str]:
    from fastsoftmax import ladder

    failures = []
    x = torch.randn(64, 1024, device="cuda") * 4
    reference = torch.softmax(x.double().cpu(), -1)
    for step in range(1, 8):
        y = torch.full_like(x, float("nan"))
        ladder.softmax(x, step, out=y)
        torch.cuda.synchronize()
        failures.append(check(f"ladder step {step}", y, reference, torch.float32))
    return [f for f in failures if f]


#: strided_staged's persistent teams sized for one CTA an SM (strided.wide_axis_staged_ctas): an axis
#: split over teams of 26-42 CTAs, a partial last tile, a ragged last chunk
ONE_CTA_TEAM_PROBLEMS = [((1, 12001, 136), 1)]


#: the warp tier's long 16-bit rows off 16-byte boundaries (spans of n + 7 columns up to 3072: 40, 48, 64, 80
#: and 96 columns a lane; those of 48, 80 and 96 at full spans)
WARP_LONG_WINDOW_ROWS = [((37, 1030), -1), ((11, 1529), -1), ((9, 2007), -1), ((13, 2553), -1), ((7, 3065), -1)]

#: per tier, the runs again under tuning values (and problems) other than the defaults: rows off
#: 16-byte boundaries in their windows' packs and in narrow packs; flat_rows' general form beside
#: its tight one; the strided tier's merged finish by the tiles beside the flat sweep;
#: strided_staged's persistent teams (where clusters exist, auto launches short teams as clusters),
#: its column kernels and its clusters of up to 16 (its window tiles: --tiers strided_window). An
#: entry is (tuning values, problems or None for the tier's own[, the one input variant run_tier takes
#: or None[, the dtypes]])
TUNED_RUNS = {
    # a few small rows in teams of the grid (below the size tier choice gives them teams at), 17 rows
    # in teams that do not divide them (float32, and the 16-bit backward: some teams idle in the last
    # round), and the whole grid on each row in turn, its workspace's two halves alternating
    "grid_row": [
        ({"grid_row_teams": True}, [((2, 1000003), -1), ((3, 4099), -1), ((17, 1048579), -1)]),
        ({"grid_row_teams": False}, [((2, 1000003), -1), ((3, 4099), -1), ((4, 3000017), -1)]),
    ],
    # one warp a group of columns on an axis a split of two lanes holds, and eight row warps of two
    # lanes each
    "strided_warp": [
        ({"strided_warp_row_warps": 1}, [((5, 100, 40), 1)]),
        ({"strided_warp_row_warps": 8, "strided_warp_lanes": 2}, [((5, 100, 40), 1)]),
        # spread columns where 16-byte packs align too, and groups of four row warps over an odd
        # inner whose last group holds a lane's columns in part
        ({"strided_warp_spread": True, "strided_warp_row_warps": 4}, [((5, 100, 40), 1), ((3, 21, 77), 1)]),
    ],
    # and every count of rows a group (one to four) with a
    # partial last block, on rows on 16-byte boundaries (the only ones that take other counts)
    "warp": [
        ({"row_window": True}, None),
        ({"row_window": False}, None),
        *(
            ({"warp_rows": rows}, [((1001, 8), -1), ((301, 64), -1), ((77, 256), -1), ((45, 512), -1)], False)
            for rows in (1, 2, 4)
        ),
        # and rows over 4, 8 or 16 lanes of several packs each (16-bit types: float32 has no such kernel;
        # 4 lanes hold at most 128 columns)
        *(
            ({"warp_lanes": lanes}, shapes, False, (torch.float16, torch.bfloat16))
            for lanes, shapes in (
                (4, [((1001, 64), -1), ((77, 96), -1), ((45, 40), -1)]),
                (8, [((301, 256), -1), ((77, 200), -1), ((1001, 64), -1)]),
                (16, [((301, 256), -1), ((77, 200), -1)]),
            )
        ),
        # and 16-bit forward rows past 1024 columns over a whole warp (instances.WARP_LONG_COLS_16BIT;
        # the default tuning, forward only: the backward has no such rows), on 16-byte boundaries, a
        # partial last block
        (
            {},
            [((37, 1032), -1), ((11, 1536), -1), ((9, 2048), -1), ((13, 2560), -1), ((5, 3000), -1), ((7, 3072), -1)],
            False,
            (torch.float16, torch.bfloat16),
        ),
        # and off them in their window's 16-byte packs (spans of n + 7 up to 3072; a forced tier only):
        # rows of a wider tensor one element in, then rows end to end from one element past a boundary
        *(
            (
                {},
                WARP_LONG_WINDOW_ROWS,
                variant,
                (torch.float16, torch.bfloat16),
            )
            for variant in (True, "dense+1")
        ),
    ],
    # and blocks taking rows in turn (a wave of resident blocks over more rows than it holds, the
    # staged storage's shared memory refilled row after row)
    "block_regs": [
        ({"row_window": True}, None),
        ({"row_window": False}, None),
        ({"block_regs_waves": 1}, [((3000, 1000), -1), ((3000, 3001), -1), ((800, 24576), -1)]),
        # 16-bit forward rows of 8-32 elements a thread held as float32 or staged (short_row_storage_16bit;
        # raw by default)
        ({"short_row_storage_16bit": "staged"}, [((300, 1000), -1), ((300, 3000), -1), ((300, 3001), -1)]),
        (
            {"short_row_storage_16bit": "float"},
            [((300, 1000), -1), ((300, 2500), -1), ((300, 3001), -1), ((64, 8191), -1)],
        ),
    ],
    # the backward of odd rows end to end cut at the rows' 16-byte boundaries (by default such rows,
    # whose tensors share every row's offset, take their whole packs with the ends apart)
    "cluster": [({"cluster_alike": False}, [((3, 50257), -1), ((20, 40001), -1)])],
    "flat_rows": [({"flat_rows_tight": False}, None)],
    # the partials stage's deep walk forced (by default the 16-bit forward's only: the log-softmax
    # backward's dy too), the partials stage on the partials-only kernels, and those reading the spans
    # of a stepped 16-bit dy in packs of 2 and 8 (strided_stepped_partials; the default runs take packs
    # of 4: its step variants whose rows the packs' alignment allows)
    "strided": [
        ({"strided_flat_finish": False}, None),
        ({"strided_deep_partials": True}, None),
        ({"strided_partials_kernel": True}, None),
        ({"strided_partials_kernel": True, "strided_stepped_partials": 2}, None),
        ({"strided_partials_kernel": True, "strided_stepped_partials": 8}, None),
        # the backward's flat finish over several outer indices of dense tensors (its merged problems)
        ({"strided_merge": True}, [((3, 20001, 64), 1), ((4, 6001, 1000), 1), ((130, 8193, 16), 1)]),
        # tiles of more threads across than a warp (strided_max_width)
        ({"strided_max_width": 128}, [((20001, 1000), 0), ((6, 3001, 700), 1), ((9001, 600), 0)]),
        # the spans' kernel at five blocks an SM (the default is eight; 2026-12-04_h200_s59's call 4 ran
        # these problems with eight, and with a splits rule measured and left out)
        ({"strided_spans_blocks": 5}, [((20001, 200), 0), ((2, 30001, 64), 1), ((40001, 64), 0)]),
    ],
    "cluster_stream": [
        # a grid of the resident clusters walking more rows than it holds, the next row's shared-memory
        # slots copied while the last writes its registers
        ({"cluster_stream_persistent": True}, [((70, 300007), -1), ((20, 600011), -1)]),
        ({"cluster_ctas": 2}, [((2, 700001), -1)]),
        ({"cluster_ctas": 16}, [((2, 4099), -1)]),
        ({"cluster_stream_per_sm": 2}, [((3, 300007), -1), ((2, 1000003), -1)]),
        ({"cluster_stream_per_sm": 1}, [((3, 300007), -1)]),
    ],
    "strided_staged": [
        ({"staged_cluster": False}, None),
        ({"staged_columns": True}, COLUMN_PROBLEMS),
        *COLUMN_STREAM_RUNS,
        ({"staged_max_cluster": 16}, LARGE_TEAM_PROBLEMS),
        # persistent teams at one CTA an SM, as float32 long axes over wide columns take them
        ({"staged_ctas_per_sm": 1, "staged_cluster": False}, ONE_CTA_TEAM_PROBLEMS),
        # the first wave staggered: persistent teams, then clusters
        ({"staged_stagger_us": 2, "staged_cluster": False}, None),
        ({"staged_stagger_us": 2}, None),
        # tiles of wider rows: 128 columns (their cluster posts wider than a line's), and the float32
        # forward's two lines a row for persistent teams (strided.staged_wide_tile)
        ({"staged_tile_cols": 128}, None),
        ({"staged_tile_cols": 64, "staged_cluster": False}, None),
        # chunks streamed through the staging twice
        ({"staged_cluster": False}, STREAMED_PROBLEMS),
    ],
}


def run_and_report(label: str, run) -> list[str]:
    found = run()
    print(f"{label}: {'ok' if not found else f'{len(found)} wrong results'}", flush=True)
    return found


def tuned_runs(tier: str) -> list[tuple[dict, list | None, str | None, tuple]]:
    """A tier's tuned runs in order (its parts 1, 2, ...): (tuning values, problems (None: the tier's
    own), the only variant or None, dtypes), TUNED_RUNS' entries with their defaults filled."""
    return [
        (values, problems, rest[0] if rest else None, rest[1] if len(rest) > 1 else DTYPES)
        for values, problems, *rest in TUNED_RUNS.get(tier, [])
    ]


def run_tuned(tier: str, values: dict, problems=None, only=None, dtypes=DTYPES) -> list[str]:
    from fastsoftmax.backends.cuda import tiers

    with tiers.tuned(**values):
        return run_tier(tier, problems, only, dtypes)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument(
        "--tiers",
        default=",".join(TIERS) + ",ladder",
        help="tiers, 'ladder', 'strided_columns', 'strided_column_stream', 'strided_window', 'strided_stepped', "
        "'strided_step', 'strided_warp_stepped', 'strided_folded'; "
        "TIER@K for one part of a tier (0: its problems, K: its K-th tuned run)",
    )
    parser.add_argument(
        "--shapes",
        help="the problems every run takes instead of its own, e.g. 64x131072,2x131072 (over the last dim; "
        "three sizes: over the middle one; SHAPE:DIM over that dim)",
    )
    parser.add_argument(
        "--list-parts",
        action="store_true",
        help="print the tiers' problems one a line (TIER@K SHAPE:DIM DTYPE), each runnable alone, and stop",
    )
    parser.add_argument(
        "--tuning",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a tuning value for every run (tiers.Tuning's field; True, False, None and integers parsed)",
    )
    parser.add_argument("--dtypes", help="only these dtypes, e.g. float16,bfloat16")
    parser.add_argument("--verbose", action="store_true", help="print each launch's label before it runs")
    args = parser.parse_args()
    global VERBOSE, SHAPES, ONLY_DTYPES
    VERBOSE = args.verbose
    if args.dtypes:
        ONLY_DTYPES = [getattr(torch, name) for name in args.dtypes.split(",")]
    if args.shapes:
        SHAPES = [_problem(item) for item in args.shapes.split(",")]
    if args.list_parts:
        for line in parts(args.tiers.split(",")):
            print(line)
        return 0
    from fastsoftmax.backends.cuda import tiers

    with tiers.tuned(**dict(_tuning_value(item) for item in args.tuning)):
        return _run(parser, args)


def _problem(text: str):
    """``64x131072`` (over the last dim), ``5x301x40`` (over the middle one) or ``300x40:0`` (over
    the dim given): a (shape, dim) problem."""
    sizes, _, dim = text.partition(":")
    shape = tuple(int(size) for size in sizes.split("x"))
    return shape, int(dim) if dim else (-1 if len(shape) == 2 else 1)


def parts(tiers: list[str]) -> list[str]:
    """One line a problem and dtype of each tier's parts (of part K alone for TIER@K), "TIER@K SHAPE:DIM
    DTYPE" (tiers sanitize.py names without parts, such as strided_columns, as "TIER - -"): what
    ``--tiers TIER@K --shapes SHAPE:DIM --dtypes DTYPE`` runs alone, so that a slow tool (racecheck)
    can take them in parallel."""
    lines = []
    for spec in tiers:
        tier, _, only_part = spec.partition("@")
        if tier not in PROBLEMS:
            lines.append(f"{spec} - -")
            continue
        runs = [(PROBLEMS[tier], DTYPES)] + [
            (problems or PROBLEMS[tier], dtypes) for _, problems, _, dtypes in tuned_runs(tier)
        ]
        for k, (problems, dtypes) in enumerate(runs):
            if only_part not in ("", str(k)):
                continue
            for shape, dim in problems:
                for dtype in dtypes:
                    name = str(dtype).removeprefix("torch.")
                    lines.append(f"{tier}@{k} {'x'.join(map(str, shape))}:{dim} {name}")
    return lines


def _tuning_value(item: str):
    key, _, text = item.partition("=")
    value = {"True": True, "False": False, "None": None}.get(text, text)
    if isinstance(value, str) and value.lstrip("-").isdigit():
        value = int(value)
    return key, value


def _run(parser, args) -> int:
    torch.manual_seed(0)
    failures = []
    for tier in args.tiers.split(","):
        if tier == "strided_columns":  # the column kernels alone (racecheck is slow)
            values = {"staged_columns": True}
            failures += run_and_report(tier, lambda: run_tuned("strided_staged", values, COLUMN_PROBLEMS))
            continue
        if tier == "strided_column_stream":  # cluster_stream's column kernels alone
            for values, problems in COLUMN_STREAM_RUNS:
                settings = ", ".join(f"{key}={value}" for key, value in values.items())
                label = f"{tier} ({settings})"
                failures += run_and_report(label, lambda: run_tuned("strided_staged", values, problems))
            continue
        if tier == "strided_folded":  # the folded flat runs alone, in clusters and persistent teams
            folded = {"staged_fold": True}
            for values, problems in (
                (folded, FOLDED_PROBLEMS),
                ({**folded, "staged_cluster": False}, FOLDED_PROBLEMS[-1:]),
            ):
                settings = ", ".join(f"{key}={value}" for key, value in values.items())
                failures += run_and_report(
                    f"{tier} ({settings})", lambda: run_tuned("strided_staged", values, problems)
                )
            continue
        if tier == "strided_stepped":  # the staged spans of stepped inputs alone
            failures += run_and_report(tier, lambda: run_tier("strided_staged", STEPPED_PROBLEMS, only="step"))
            continue
        if tier == "strided_step":  # the strided tier's stepped inputs alone
            failures += run_and_report(tier, lambda: run_tier("strided", only="step"))
            continue
        if tier == "strided_warp_stepped":  # strided_warp's spans of stepped inputs alone
            failures += run_and_report(tier, lambda: run_tier("strided_warp", WARP_STEPPED_PROBLEMS, only="step"))
            continue
        if tier == "strided_window":  # the window tiles alone; float32's only where forced
            failures += run_and_report(tier, lambda: run_tier("strided_staged", WINDOW_PROBLEMS))
            values = {"staged_window": True}
            label = f"{tier} (staged_window=True)"
            # forced, the window must fit every variant: dense rows of whole 16-byte pieces too
            whole = [problem for problem in WINDOW_PROBLEMS if problem[0][-1] % 8 == 0]
            failures += run_and_report(label, lambda: run_tuned("strided_staged", values, whole))
            # each window form forced on inputs one element in (outputs on their boundaries where
            # inner is whole 16-byte pieces, at several phases where not)
            for phase in (True, False):
                forced = {"staged_window": True, "staged_input_phase": phase}
                run = lambda: run_tuned("strided_staged", forced, WINDOW_PROBLEMS, "window")  # noqa: E731
                failures += run_and_report(f"{tier} (staged_input_phase={phase})", run)
            continue
        # TIER@K: one part of a tier alone (0: its own problems, K: its K-th tuned run), so that a
        # slow tool (racecheck) can take a tier's parts in parallel processes
        tier, _, part = tier.partition("@")
        if part not in ("", *map(str, range(len(TUNED_RUNS.get(tier, [])) + 1))):
            parser.error(f"{tier} has parts 0 to {len(TUNED_RUNS.get(tier, []))}, not {part!r}")
        if part in ("", "0"):
            failures += run_and_report(tier, run_ladder if tier == "ladder" else lambda: run_tier(tier))
        for k, (values, problems, only, dtypes) in enumerate(tuned_runs(tier), 1):
            if part not in ("", str(k)):
                continue
            settings = ", ".join(f"{key}={value}" for key, value in values.items())
            failures += run_and_report(f"{tier} ({settings})", lambda: run_tuned(tier, values, problems, only, dtypes))
    for failure in failures:
        print("WRONG", failure)
    return 1 if failures else 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    sys.exit(main())
