"""The strided tiers of the "cuda" backend (inner > 1) against float64 on a GPU: every staged path
(held in shared memory, split over a team of CTAs, streamed twice; flat small-inner runs and
per-row tiles; 16-byte and narrower copies), random (outer, n, inner), views, dtypes, softmax and
log-softmax, forward and backward, through the public API and through the backend. Outputs are
poisoned with NaN (tests/conftest.py)."""

from __future__ import annotations

import math

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inputs import graph_replays_right, recording_loads
from reference import check_backward, check_forward, softmax64

import fastsoftmax
from fastsoftmax import dispatch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
TIERS = ["strided_staged", "strided"]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def rand(shape, dtype):
    return (torch.randn(shape, device="cuda") * 3).to(dtype)


def view_of(kind: str, shape, dtype, step: int = 2):
    """A tensor of ``shape`` laid out as ``kind`` says (its data fresh random numbers)."""
    if kind == "contiguous":
        return rand(shape, dtype)
    if kind == "step_inner":  # every step-th element of the innermost dim
        return rand(tuple(shape[:-1]) + (step * shape[-1],), dtype)[..., ::step]
    if kind == "step_inner_offset":  # the same, one element in: off a 16-byte boundary
        return rand(tuple(shape[:-1]) + (step * shape[-1],), dtype)[..., 1::step]
    if kind == "transpose":
        return rand(shape[:-2] + (shape[-1], shape[-2]), dtype).transpose(-1, -2)
    if kind == "step":
        return rand((2 * shape[0],) + tuple(shape[1:]), dtype)[::2]
    if kind == "offset":
        numel = torch.Size(shape).numel()
        return rand((numel + 3,), dtype)[3:].view(shape)
    if kind == "channels_last":
        return rand(shape, dtype).to(memory_format=torch.channels_last)
    if kind == "expand":
        return rand((1,) + tuple(shape[1:]), dtype).expand(shape)
    raise ValueError(kind)


def run(x, dim, log, tier, backward=True):
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    with dispatch.forced("cuda", tier):
        y = op(x, dim)
        check_forward(y, x, dim, log)
        if backward:
            leaf = x.detach().requires_grad_()
            dy = rand(x.shape, x.dtype)
            (dx,) = torch.autograd.grad(op(leaf, dim), leaf, dy)
            check_backward(dx, x, dy, dim, log)


@pytest.mark.parametrize("tier", TIERS)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,dim",
    [
        ((3, 37, 5), 1),  # odd inner: single-element packs, flat run
        ((2, 1000, 3), 1),
        ((4, 64, 16), 1),  # flat, 16-byte copies across rows
        ((7, 9, 130), 1),  # per-row tiles, a partial last tile
        ((2, 300, 200), 1),
        ((1, 70000, 64), 1),  # a team of CTAs per tile
        ((3, 200003, 2), 1),  # long axis, tiny inner, odd length
        ((8, 21, 64, 64), 1),  # NCHW channel softmax
        ((2, 150, 33, 17), 1),
        ((3, 300, 2056), 1),  # rows of 4 KiB and more: a warp's whole row of packs, a partial last tile
    ],
)
def test_shapes(shape, dim, dtype, tier):
    for log in (False, True):
        run(rand(shape, dtype), dim, log, tier)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "shape,dim",
    [((1 << 20, 16), 0), ((1 << 20, 128), 0), ((1 << 22, 4), 0), ((3687000, 4), 0), ((65536, 2048), 0)],
)
def test_long_axes_streamed_and_split(shape, dim, dtype):
    # beyond what the resident CTAs' shared memory holds: streamed twice ((1 << 22, 4): chunks of a
    # whole staging and a small partial piece, staged first; (3687000, 4) on an H100: partial pieces
    # of 16 rows, whose first copy group is empty, and a ragged last chunk); (65536, 2048): held by
    # teams of CTAs
    x = rand(shape, dtype)
    run(x, dim, False, "strided_staged", backward=False)
    run(x, dim, True, "strided_staged", backward=shape[0] * shape[1] <= 1 << 24)


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "shape,dim,kind",
    [
        ((40001, 33), 0, "contiguous"),  # hundreds of splits over two tiles, a ragged last group
        ((3, 4001, 33), 1, "contiguous"),  # a few splits: some chunks one group short of others
        ((2, 70000, 64), 1, "offset"),  # single-element packs
        ((1 << 16, 256), 0, "contiguous"),
    ],
)
def test_split_chunks_interleaved_or_contiguous(shape, dim, kind, dtype, interleaved):
    # the strided tier's split problems with their rows dealt round the chunks in groups, and in
    # contiguous chunks, whichever auto would choose
    from fastsoftmax.backends.cuda import tiers

    x = view_of(kind, shape, dtype)
    with tiers.tuned(strided_interleaved=interleaved):
        for log in (False, True):
            run(x, dim, log, "strided")


@pytest.mark.parametrize("interleaved", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,dim,kind",
    [
        ((40001, 33), 0, "contiguous"),  # hundreds of splits over two tiles, a ragged last group
        ((3, 4001, 33), 1, "contiguous"),  # a few splits: some chunks one group short of others
        ((2, 70000, 64), 1, "offset"),  # single-element packs
        ((2, 30001, 64), 1, "step_inner"),  # inputs stepping along inner
        ((1 << 16, 256), 0, "contiguous"),
        ((20001, 200), 0, "contiguous"),  # 16-byte packs in tiles of 64 columns, the last one ragged
    ],
)
def test_split_partials_walks(shape, dim, kind, dtype, interleaved):
    # the strided tier's split problems with their partials stage walking one tensor twice as deep
    # (strided_deep_partials, where the kernel has that walk: the 16-bit forward, the log-softmax
    # backward), on a kernel of its own (strided_partials_kernel: more blocks an SM, the splits
    # filling their waves; the 16-bit log-softmax backward's in narrower packs over twice the threads
    # across a tile), and on the two-stage kernel four rows a step; the rest of each call unchanged
    from fastsoftmax.backends.cuda import tiers

    x = view_of(kind, shape, dtype)
    for deep, separate in ((True, False), (False, True), (False, False)):
        tuning = dict(strided_deep_partials=deep, strided_partials_kernel=separate)
        with tiers.tuned(strided_interleaved=interleaved, **tuning):
            for log in (False, True):
                run(x, dim, log, "strided")


@pytest.mark.parametrize("pack", [2, 4, 8])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "shape,dim",
    [
        ((20001, 200), 0),  # tiles of 32 columns, the last one ragged
        ((3, 4001, 36), 1),  # a second tile of 4 columns
        ((2, 30001, 64), 1),
        ((9000, 8), 0),  # a tile of 8 columns: one thread across it in packs of 8
    ],
)
def test_stepped_partials_spans(shape, dim, dtype, pack):
    """The 16-bit log-softmax backward over inputs that step by 2 along inner (rows on 16-byte
    boundaries), its partials (the column sums of dy) on the partials-only kernel reading the spans
    of packs of ``pack`` elements (strided_stepped_partials), over fewer threads across the tile and
    more slices, the finish element by element: right against float64, and the span kernel is the
    one launched."""
    from fastsoftmax.backends.cuda import BACKEND, tiers

    x = view_of("step_inner", shape, dtype)
    y = view_of("step_inner", shape, dtype).copy_(softmax64(x, dim, True))
    dy = view_of("step_inner", shape, dtype)
    with tiers.tuned(strided_partials_kernel=True, strided_stepped_partials=pack):
        with dispatch.forced("cuda", "strided"), recording_loads(BACKEND) as loaded:
            check_backward(fastsoftmax.softmax_backward(dy, y, dim, log=True), x, dy, dim, True)
    spans = [inst for inst in loaded if getattr(inst, "partials_only", False)]
    # (3, 4001, 36): dx's rows lie 72 bytes apart, so packs of 16 bytes are refused (element by element)
    want = 1 if shape == (3, 4001, 36) and pack == 8 else pack
    assert any(inst.stepped == (want > 1) and inst.pack == want for inst in spans), [inst.name for inst in loaded]


@pytest.mark.parametrize("blocks", [None, 5])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize(
    "kind,shape,dim",
    [
        ("step_inner", (20001, 200), 0),  # the spans' kernel, ragged last tile
        ("step_inner", (2, 30001, 64), 1),
        ("contiguous", (40001, 64), 0),  # the narrow packs' kernel: strided_spans_blocks leaves it
    ],
)
def test_spans_kernel_blocks_an_sm(kind, shape, dim, dtype, blocks):
    """The 16-bit log-softmax backward's partials-only kernels, the spans' compiled for
    STRIDED_SPANS_PARTIALS_MIN_BLOCKS blocks an SM or for five (strided_spans_blocks): right against
    float64, and the kernel of those bounds is the one launched (the narrow packs' as it was)."""
    from fastsoftmax.backends.cuda import BACKEND, tiers

    stepped = kind == "step_inner"
    x = view_of(kind, shape, dtype)
    y = view_of(kind, shape, dtype).copy_(softmax64(x, dim, True))
    dy = view_of(kind, shape, dtype)
    with tiers.tuned(strided_spans_blocks=blocks):
        with dispatch.forced("cuda", "strided"), recording_loads(BACKEND) as loaded:
            check_backward(fastsoftmax.softmax_backward(dy, y, dim, log=True), x, dy, dim, True)
    only = [inst for inst in loaded if getattr(inst, "partials_only", False)]
    want = blocks if stepped else None
    assert any(inst.stepped == stepped and inst.min_blocks == want for inst in only), [i.name for i in loaded]


@pytest.mark.parametrize("flat", [False, None])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape",
    [
        (40001, 32),  # one tile, hundreds of splits, a ragged last group
        (20001, 64),
        (30001, 256),  # several tiles
        (40001, 33),  # single elements: a thread's packs lie in different columns
        (9001, 2048),  # float32: a block's threads x packs cover half a row
        (6001, 1000),  # a row no whole number of a block's packs
    ],
)
def test_merged_finish_swept_flat_or_by_tiles(shape, dtype, flat):
    # the strided tier's merged split problems over a dense tensor, finished by the tiles (flat
    # False) or, where it can, by one elementwise sweep (kFlat: a run of packs a block, or a
    # persistent grid of a few blocks; the backward wherever inner is whole packs, the forward where
    # a block's threads x packs are a multiple of inner)
    from fastsoftmax.backends.cuda import tiers

    x = rand(shape, dtype)
    for blocks in (None, 7) if flat is None else (None,):
        with tiers.tuned(strided_flat_finish=flat, strided_merge=True, strided_flat_blocks=blocks):
            for log in (False, True):
                run(x, 0, log, "strided")


@pytest.mark.parametrize("most", [64, 256])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,dim,kind",
    [
        ((20001, 1000), 0, "contiguous"),  # split, a ragged last tile
        ((6, 3001, 700), 1, "contiguous"),  # tiles of several outer indices
        ((9001, 600), 0, "step_inner"),  # stepped spans, element by element, split
        ((4001, 520), 0, "step"),
    ],
)
def test_tiles_wider_than_a_warp(shape, dim, kind, dtype, most):
    """The strided tier with more threads across a tile than a warp (strided_max_width): forward and
    backward, softmax and log-softmax, right against float64."""
    from fastsoftmax.backends.cuda import tiers

    x = view_of(kind, shape, dtype)
    with tiers.tuned(strided_max_width=most):
        for log in (False, True):
            run(x, dim, log, "strided")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape",
    [
        (3, 20001, 64),  # one tile an outer index
        (5, 9001, 40),  # a ragged tile an outer index: merged slots padded past inner
        (4, 6001, 1000),  # several tiles an outer index, the last ragged
        (130, 8193, 16),  # many outer indices of a few packs each
    ],
)
def test_merged_finish_swept_flat_over_outer_indices(shape, dtype):
    """The backward's flat finish over several outer indices of a dense tensor (each pack's outer
    index and column worked out, its sums read from the workspace), forced where the rule would not
    take it: right against float64, softmax and log-softmax, a run of packs a block or a grid of a
    few blocks."""
    from fastsoftmax.backends.cuda import tiers

    x, dy = rand(shape, dtype), rand(shape, dtype)
    for log in (False, True):
        y = softmax64(x, 1, log).to(dtype)
        for blocks in (None, 7):
            with tiers.tuned(strided_flat_finish=True, strided_merge=True, strided_flat_blocks=blocks):
                with dispatch.forced("cuda", "strided"):
                    check_backward(fastsoftmax.softmax_backward(dy, y, 1, log=log), x, dy, 1, log)


@pytest.mark.parametrize(
    "shape,dim,kind,why",
    [
        ((40001, 32), 0, "step", "dense run"),
        ((3, 20001, 64), 1, "contiguous", "outer indices"),
        ((40001, 33), 0, "contiguous", "does not divide"),  # the forward holds its columns' scales
        ((64, 32), 0, "contiguous", "not split"),
    ],
)
def test_flat_finish_forced_where_it_cannot_sweep(shape, dim, kind, why):
    from fastsoftmax.backends.cuda import tiers

    x = view_of(kind, shape, torch.bfloat16)
    with tiers.tuned(strided_flat_finish=True, strided_merge=True), dispatch.forced("cuda", "strided"):
        with pytest.raises(ValueError, match=why):
            fastsoftmax.softmax(x, dim)
    with tiers.tuned(strided_merge=True):
        run(x, dim, False, "strided")  # where it cannot, the tiles finish


@pytest.mark.parametrize("tier", TIERS + [None])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(6, 333, 40), (3, 700, 96), (2, 70000, 64)])
@pytest.mark.parametrize(
    "y_kind,dy_kind",
    [
        ("contiguous", "step"),
        ("step", "offset"),
        ("offset", "contiguous"),
        ("step_inner", "contiguous"),
        ("contiguous", "step_inner"),
        ("step_inner", "step_inner"),
    ],
)
def test_gradient_laid_out_unlike_the_output(y_kind, dy_kind, shape, dtype, tier):
    # dy in a layout of its own that folds into the same (outer, n, inner) axes as y: read where
    # it lies, with its own strides (and alignment), not copied to y's layout first
    # y the forward output rounded once to its type, as check_backward's error bars assume
    x = rand(shape, dtype)
    for log in (False, True):
        y = view_of(y_kind, shape, dtype).copy_(softmax64(x, 1, log))
        dy = view_of(dy_kind, shape, dtype)
        with dispatch.forced("cuda", tier):
            if tier == "strided_staged" and (y_kind == "step_inner") != (dy_kind == "step_inner"):
                # the staged tiles take spans where every input steps (both here: the spans' test)
                with pytest.raises(ValueError, match="steps along inner"):
                    fastsoftmax.softmax_backward(dy, y, 1, log=log)
                continue
            dx = fastsoftmax.softmax_backward(dy, y, 1, log=log)
        check_backward(dx, x, dy, 1, log)
    # over the last dim: rows, dy with its own pitch
    with dispatch.forced("cuda"):
        y = view_of(y_kind, shape, dtype).copy_(softmax64(x, 2))
        dy = view_of(dy_kind, shape, dtype)
        check_backward(fastsoftmax.softmax_backward(dy, y, 2), x, dy, 2, False)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(9, 700, 96), (3, 70000, 64), (400, 340, 64)])
def test_staged_inputs_broadcast_along_outer(shape, dtype):
    # stride 0 along outer (expanded x, y, dy): the tiles go outer index fastest
    # (strided.STAGED_OUTER_FASTEST_WHEN_BROADCAST); one tile a team, teams of CTAs, more tiles
    # than teams
    x = rand((1,) + shape[1:], dtype).expand(shape)
    dy = rand((1,) + shape[1:], dtype).expand(shape)
    before = (x.clone(), dy.clone())
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        with dispatch.forced("cuda", "strided_staged"):
            y = op(x, 1)
            check_forward(y, x, 1, log)
            dx = fastsoftmax.softmax_backward(dy, y[:1].expand(shape), 1, log=log)
        check_backward(dx, x, dy, 1, log)
    assert torch.equal(x, before[0]) and torch.equal(dy, before[1]), "an expanded input was written"


@pytest.mark.parametrize("ctas", [1, 3, 8])
def test_staged_tuning_changes_nothing_but_speed(ctas):
    from fastsoftmax.backends.cuda import tiers

    x = rand((2, 5000, 24), torch.bfloat16)
    with tiers.tuned(staged_ctas_per_sm=ctas):  # part of the plan key: no cached plan is reused
        run(x, 1, False, "strided_staged")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(400, 340, 64), (40, 3000, 200)])
def test_teams_walk_several_tiles(shape, dtype):
    # 8 CTAs a SM: teams of CTAs split each tile, and there are more tiles than teams
    from fastsoftmax.backends.cuda import strided, tiers
    from fastsoftmax.backends.cuda.launch import device_facts

    facts = device_facts(torch.cuda.current_device())
    args = (facts.smem_per_sm, facts.smem_per_block, facts.sm_count, 8)
    for backward in (False, True):
        geometry = strided.staged_shape(*shape, dtype, backward, *args)
        assert geometry.held and geometry.splits > 1 and geometry.tiles > geometry.teams
    x = rand(shape, dtype)
    with tiers.tuned(staged_ctas_per_sm=8, staged_cluster=False):
        for log in (False, True):
            run(x, 1, log, "strided_staged")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cluster", [False, True], ids=["persistent", "clustered"])
def test_staggered_first_wave(cluster, dtype):
    # the teams of odd index among the first wave wait before their first tile: persistent teams
    # walking four tiles or more (where the rule waits too), and clusters of one tile each in several
    # waves; results only (the wait's bits in the geometry: test_strided_layouts.py)
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.launch import device_facts

    if cluster and not device_facts(torch.cuda.current_device()).cluster_launch:
        pytest.skip("needs thread-block clusters (sm_90+)")
    shape = (40, 3000, 200) if cluster else (2000, 340, 64)
    x = rand(shape, dtype)
    for wait_us in (3, 63):
        with tiers.tuned(
            staged_ctas_per_sm=8 if not cluster else None, staged_cluster=cluster, staged_stagger_us=wait_us
        ):
            for log in (False, True):
                run(x, 1, log, "strided_staged")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("cluster", [False, True], ids=["persistent", "clustered"])
def test_wider_tiles(cluster, dtype):
    # tiles of two and four 128-byte lines a row (Tuning.staged_tile_cols), their posts wider than a
    # line's: a partial last tile at two lines (inner 200), all of inner in one tile at four (bf16), an
    # odd n, teams of several CTAs
    from fastsoftmax.backends.cuda import strided, tiers
    from fastsoftmax.backends.cuda.launch import device_facts

    facts = device_facts(torch.cuda.current_device())
    if cluster and not facts.cluster_launch:
        pytest.skip("needs thread-block clusters (sm_90+)")
    shape = (6, 1001, 200)
    line = 128 // dtype.itemsize
    x = rand(shape, dtype)
    args = (facts.smem_per_sm, facts.smem_per_block, facts.sm_count, None, cluster)
    clustered = []
    for cols in (2 * line, 4 * line):
        geometry = strided.staged_shape(*shape, dtype, False, *args, tile_cols=cols)
        assert geometry.tile_cols == min(cols, 200) and geometry.splits > 1
        clustered.append(geometry.clustered)
        with tiers.tuned(staged_cluster=None if cluster else False, staged_tile_cols=cols):  # None: where one fits
            for log in (False, True):
                run(x, 1, log, "strided_staged")
    assert clustered[0] == cluster and (cluster or not any(clustered))


def test_team_counters_are_left_cleared():
    """The teams meet on counters in one workspace a stream that no call clears
    (launch.stream_workspace): every launch must leave them at zero for the next. Two problems of
    different tile counts alternate on one stream, and a second stream and a captured CUDA graph
    each keep to their own workspace; every result is checked against float64."""
    from fastsoftmax.backends.cuda import launch, tiers

    device = torch.cuda.current_device()
    problems = [rand((400, 340, 64), torch.bfloat16), rand((40, 3000, 200), torch.float32)]

    def zone_is_clear(stream) -> bool:
        buffer, zone = launch._STREAM_BUFFERS[(device, stream.cuda_stream)]
        return bool((buffer[:zone] == 0).all())

    with tiers.tuned(staged_ctas_per_sm=8, staged_cluster=False):
        for _ in range(3):
            for x in problems:
                run(x, 1, False, "strided_staged")
        torch.cuda.synchronize()
        assert zone_is_clear(torch.cuda.current_stream())

        side = torch.cuda.Stream()
        with torch.cuda.stream(side):
            for x in problems:
                run(x, 1, True, "strided_staged")
        torch.cuda.synchronize()
        assert zone_is_clear(side)

        capture = torch.cuda.Stream()
        graph_replays_right(problems[1], 1, "strided_staged", stream=capture, replays=3)
        assert (device, capture.cuda_stream) not in launch._STREAM_BUFFERS


@pytest.mark.parametrize("merge", [True, False], ids=["merged", "in-finish"])
def test_split_long_axis_replays_in_a_cuda_graph(merge):
    """A long axis split over blocks runs two or three kernels (partials, strided_merge, finish)
    over a workspace the call allocates: captured in a CUDA graph, every replay right."""
    from fastsoftmax.backends.cuda import tiers

    with tiers.tuned(strided_merge=merge):
        graph_replays_right(rand((2, 65536, 130), torch.bfloat16), 1, "strided", replays=3)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_float32_long_axis_over_wide_columns_takes_staged_teams(backend, log):
    """float32 forward of (65536, 1536) over dim 0 (three persistent teams of 44 CTAs at one CTA an
    SM, 16 tiles each, on GPUs of little DRAM bandwidth an SM: strided.wide_axis_staged_ctas): "auto"
    takes the staged teams there and the strided tier elsewhere, right against float64 either way;
    its backward keeps the strided tier."""
    from fastsoftmax.backends.cuda import strided

    limits = backend.limits(None)
    wide = (limits.smem_per_sm, limits.smem_per_block, limits.sm_count)
    staged = strided.wide_axis_staged_ctas(1, 65536, 1536, torch.float32, False, *wide, dram_gbps=limits.dram_gbps)
    x = rand((65536, 1536), torch.float32)
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    with recording_loads(backend) as launched:
        y = op(x, 0)
    check_forward(y, x, 0, log)
    assert {i.tier for i in launched} == {"strided_staged" if staged else "strided"}, launched
    if not staged:  # the teams other GPUs take, forced
        from fastsoftmax.backends.cuda import tiers

        with tiers.tuned(staged_ctas_per_sm=1), dispatch.forced("cuda", "strided_staged"):
            with recording_loads(backend) as launched:
                y = op(x, 0)
        check_forward(y, x, 0, log)
        assert {i.tier for i in launched} == {"strided_staged"}, launched
    leaf = x.detach().requires_grad_()
    dy = rand(x.shape, x.dtype)
    with recording_loads(backend) as launched:
        (dx,) = torch.autograd.grad(op(leaf, 0), leaf, dy)
    check_backward(dx, x, dy, 0, log)
    assert "strided" in {i.tier for i in launched}, launched


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize(
    "shape, dtype",
    [((4, 1048576, 8), torch.bfloat16), ((8, 1048576, 4), torch.float32), ((4, 262144, 32), torch.bfloat16)],
)
def test_one_team_walking_tiles_takes_the_strided_tier(backend, shape, dtype, log):
    """The forward over dim 1 of a few small-inner columns of a long axis, whose tiles one team of the
    whole grid takes in turn on an H100 (strided.one_team_walks_tiles): the CUDA backend runs the strided
    tier where the rule holds on this GPU (on an H100 it does) and the staged tiles elsewhere, right
    against float64 either way, and each of the two forced; the backward runs the tier its choice names."""
    from fastsoftmax.backends.cuda import strided

    limits = backend.limits(None)
    outer, n, inner = shape
    staged = strided.staged_shape(
        outer, n, inner, dtype, False, limits.smem_per_sm, limits.smem_per_block, limits.sm_count
    )
    one_team = staged is not None and strided.one_team_walks_tiles(staged, inner, False, limits)
    if "H100" in torch.cuda.get_device_name():
        assert one_team
    expected = backend.choose_tier(outer, n, inner, dtype, False, log=log)
    assert expected == ("strided" if one_team else "strided_staged")
    x = rand(shape, dtype)
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    for tier in (None, "strided", "strided_staged"):
        with dispatch.forced("cuda", tier), recording_loads(backend) as launched:
            y = op(x, 1)
        check_forward(y, x, 1, log)
        assert {i.tier for i in launched} == {tier or expected}, launched
    leaf = x.detach().requires_grad_()
    dy = rand(shape, dtype)
    with dispatch.forced("cuda"):
        y = op(leaf, 1)
        with recording_loads(backend) as launched:
            (dx,) = torch.autograd.grad(y, leaf, dy)
    check_backward(dx, x, dy, 1, log)
    assert {i.tier for i in launched} == {backend.choose_tier(outer, n, inner, dtype, True, log=log)}, launched


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape",
    [
        (1, 1400, 64),  # one tile over 4 CTAs
        (3, 1500, 40),  # flat runs of 40 columns
        (40, 1500, 200),  # a partial last tile of each outer index
        (2, 6901, 8),  # flat, odd length
    ],
)
def test_cluster_teams(shape, dtype):
    # teams of CTAs launched as thread-block clusters, exchanging through distributed shared memory
    from fastsoftmax.backends.cuda import strided, tiers
    from fastsoftmax.backends.cuda.launch import device_facts

    facts = device_facts(torch.cuda.current_device())
    if not facts.cluster_launch:
        pytest.skip("needs thread-block clusters (sm_90+)")
    args = (facts.smem_per_sm, facts.smem_per_block, facts.sm_count, None, True)
    for backward in (False, True):
        geometry = strided.staged_shape(*shape, dtype, backward, *args)
        assert geometry.clustered and geometry.splits > 1
    x = rand(shape, dtype)
    with tiers.tuned(staged_cluster=True):
        for log in (False, True):
            run(x, 1, log, "strided_staged")


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(40, 6000, 100), (24, 5001, 192)])
@pytest.mark.parametrize("most", [None, 16])
def test_cluster_teams_past_four_ctas(shape, dtype, most):
    # tiles that need 5-16 CTAs, as clusters of 8 or 16 (strided.staged_max_cluster, or forced to
    # 16): partial last tiles, an odd n, the last CTA's rows short
    from fastsoftmax.backends.cuda import strided, tiers
    from fastsoftmax.backends.cuda.launch import device_facts

    facts = device_facts(torch.cuda.current_device())
    if not facts.cluster_launch:
        pytest.skip("needs thread-block clusters (sm_90+)")
    args = (facts.smem_per_sm, facts.smem_per_block, facts.sm_count, None, True)
    teams = []
    for backward in (False, True):
        geometry = strided.staged_shape(*shape, dtype, backward, *args, most)
        if geometry.clustered:
            teams.append(geometry.splits)
    assert teams and max(teams) > strided.STAGED_FILL_CLUSTER, teams
    x = rand(shape, dtype)
    with tiers.tuned(staged_max_cluster=most):
        for log in (False, True):
            run(x, 1, log, "strided_staged")


@pytest.mark.parametrize(
    "kind,n,tier",
    [("contiguous", 512, "strided_warp"), ("contiguous", 600, "strided_staged"), ("offset", 512, "strided")],
)
def test_auto_tier_follows_alignment(kind, n, tier, monkeypatch):
    # a view off a 16-byte boundary would leave strided_warp and strided_staged narrow accesses
    from fastsoftmax.backends.cuda.backend import BACKEND

    chosen = []
    forward = BACKEND.forward
    monkeypatch.setattr(BACKEND, "forward", lambda x, y, log, t: (chosen.append(t), forward(x, y, log, t)))
    x = view_of(kind, (32, n, 64), torch.bfloat16)
    with dispatch.forced("cuda"):
        y = fastsoftmax.softmax(x, 1)
    check_forward(y, x, 1, False)
    assert chosen == [tier]


@pytest.mark.parametrize("kind", ["transpose", "step", "step_inner", "offset", "channels_last", "expand"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_views(kind, dtype):
    shape = (4, 21, 12, 10) if kind == "channels_last" else (6, 333, 40)
    for dim in range(len(shape)):
        x = view_of(kind, shape, dtype)
        before = x.clone() if kind == "expand" else None
        run(x, dim, dim % 2 == 1, None, backward=kind != "expand")
        if before is not None:
            assert torch.equal(x, before), "an expanded input was written"


@pytest.mark.parametrize("packs", [None, False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,dim,kind,step,aligned",
    [
        ((6, 333, 40), 1, "step_inner", 2, True),  # whole packs: two 16-byte reads a pack
        ((3, 700, 38), 1, "step_inner", 2, False),  # dense output rows 38 apart: single elements
        ((3, 700, 37), 1, "step_inner", 2, False),  # input rows 74 elements apart
        ((40001, 48), 0, "step_inner", 2, True),  # a long axis: split, merged, finished by tiles
        ((2, 300, 5, 24), 1, "step_inner", 2, True),  # two dims fold into one stepped inner of 120
        ((6, 333, 40), 1, "step_inner", 3, False),  # other steps: single elements
        ((6, 333, 40), 1, "step_inner_offset", 2, False),  # off a 16-byte boundary
    ],
)
def test_inputs_stepped_along_inner(shape, dim, kind, step, aligned, dtype, packs):
    # x[..., ::2] over a dim other than the last is read where it lies (no dense copy): in float32
    # with whole 16-byte packs of its span where every input steps by 2 from a 16-byte boundary,
    # else element by element; the outputs are dense
    from fastsoftmax.backends.cuda import tiers

    can_pack = aligned and dtype == torch.float32
    x = view_of(kind, shape, dtype, step)
    if packs and not can_pack:
        with tiers.tuned(strided_stepped_packs=True), pytest.raises(ValueError, match="strided_stepped_packs"):
            with dispatch.forced("cuda", "strided"):
                fastsoftmax.softmax(x, dim)
        return
    with tiers.tuned(strided_stepped_packs=packs):
        for log in (False, True):
            run(x, dim, log, None)
            y = view_of(kind, shape, dtype, step).copy_(softmax64(x, dim, log))
            dy = view_of(kind, shape, dtype, step)
            with dispatch.forced("cuda", "strided"):
                dx = fastsoftmax.softmax_backward(dy, y, dim, log=log)
            assert dx.is_contiguous()
            check_backward(dx, x, dy, dim, log)


def stepped_backward_right(x, dim, log, tier="strided_staged"):
    """The backward on ``tier`` of y and dy laid out as ``x`` (both stepping by 2 along inner), against
    float64; dx is dense."""

    y = view_of("step_inner", x.shape, x.dtype).copy_(softmax64(x, dim, log))
    dy = view_of("step_inner", x.shape, x.dtype)
    with dispatch.forced("cuda", tier):
        dx = fastsoftmax.softmax_backward(dy, y, dim, log=log)
    assert dx.is_contiguous()
    check_backward(dx, x, dy, dim, log)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,dim,cluster",
    [
        ((6, 333, 40), 1, None),  # a tile of all of inner, held by one CTA
        ((3, 700, 136), 1, None),  # tiles of 64 or 128 columns and a partial last one
        ((2, 300, 5, 24), 1, None),  # two dims fold into one stepped inner of 120
        ((4, 600, 64), 1, True),  # split over a cluster of CTAs
        ((40001, 48), 0, False),  # a long axis split over a persistent team
        ((1, 9000, 264), 1, None),
        ((1 << 20, 16), 0, None),  # more than the resident CTAs hold: streamed twice
    ],
)
def test_stepped_inputs_staged_as_spans(shape, dim, cluster, dtype):
    # x[..., ::2] over a dim other than the last, its tile rows staged as their spans (every other
    # element read back), forward and backward with y and dy both stepping
    from fastsoftmax.backends.cuda import BACKEND, tiers

    x = view_of("step_inner", shape, dtype)
    with recording_loads(BACKEND) as loaded, tiers.tuned(staged_cluster=cluster):
        for log in (False, True):
            with dispatch.forced("cuda", "strided_staged"):
                y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim)
            assert y.is_contiguous()
            check_forward(y, x, dim, log)
            stepped_backward_right(x, dim, log)
    assert {inst.backward for inst in loaded if inst.stepped} == {False, True}, [inst.name for inst in loaded]


@pytest.mark.parametrize(
    "kind,shape,dtype,why",
    [
        ("step_inner_offset", (6, 333, 40), torch.float32, "16-byte boundary"),
        ("step_inner", (6, 333, 36), torch.bfloat16, "16-byte boundary"),  # dense output rows 72 bytes apart
    ],
)
def test_spans_refused_where_they_cannot_be_staged(kind, shape, dtype, why):
    x = view_of(kind, shape, dtype)
    with dispatch.forced("cuda", "strided_staged"), pytest.raises(ValueError, match=why):
        fastsoftmax.softmax(x, 1)
    three = view_of("step_inner", shape, dtype, 3)
    with dispatch.forced("cuda", "strided_staged"), pytest.raises(ValueError, match="steps along inner"):
        fastsoftmax.softmax(three, 1)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_auto_stages_the_spans_of_large_stepped_inputs(dtype):
    # (32, 2048, 512)[..., ::2] over dim 1 through the public API: the stepped staged tiles, both
    # directions (float32 on GPUs of much DRAM bandwidth an SM: the strided tier's stepped packs,
    # strided.STEPPED_STRIDED_PAST_N); one element in, the strided tier
    from fastsoftmax.backends.cuda import BACKEND

    limits = BACKEND.limits(None)
    fast = dtype == torch.float32 and limits.high_bandwidth_per_sm
    tier = "strided" if fast else "strided_staged"

    x = view_of("step_inner", (32, 2048, 256), dtype)
    with recording_loads(BACKEND) as loaded:
        leaf = x.detach().requires_grad_()
        y = fastsoftmax.softmax(leaf, 1)
        check_forward(y.detach(), x, 1, False)
        dy = rand(x.shape, dtype)
        (dx,) = torch.autograd.grad(y, leaf, dy)
        check_backward(dx, x, dy, 1, False)
        # again: the remembered plan
        check_forward(fastsoftmax.softmax(x, 1), x, 1, False)
    assert any(inst.tier == tier and inst.stepped for inst in loaded), [inst.name for inst in loaded]
    with recording_loads(BACKEND) as loaded:
        off = view_of("step_inner_offset", (32, 2048, 256), dtype)
        check_forward(fastsoftmax.softmax(off, 1), off, 1, False)
    assert {inst.tier for inst in loaded} == {"strided"}, [inst.name for inst in loaded]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_stepped_backward_tier_choice_sees_the_function(dtype):
    """y and dy that step by 2 along inner, through softmax_backward ("auto"): the 16-bit softmax and
    log-softmax backwards are chosen for apart (strided.takes_stepped_warp_columns and
    STEPPED_STRIDED_PAST_N), each right against float64, the second call of each on its own plan."""
    from fastsoftmax.backends.cuda import BACKEND

    limits = BACKEND.limits(None)
    fast = limits.high_bandwidth_per_sm
    cases = [
        ((32, 64, 256), "strided_warp", "strided_staged"),  # 64 rows: strided_warp for softmax only
        ((4, 2048, 256), "strided_staged", "strided" if fast else "strided_staged"),  # past 1024 rows
    ]
    for shape, softmax_tier, log_tier in cases:
        x = view_of("step_inner", shape, dtype)
        for log, tier in ((False, softmax_tier), (True, log_tier), (False, softmax_tier)):
            y = view_of("step_inner", shape, dtype).copy_(softmax64(x, 1, log))
            dy = view_of("step_inner", shape, dtype)
            with recording_loads(BACKEND) as loaded:
                for _ in range(2):
                    check_backward(fastsoftmax.softmax_backward(dy, y, 1, log=log), x, dy, 1, log)
            assert {inst.tier for inst in loaded} == {tier}, (shape, log, [inst.name for inst in loaded])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32], ids=str)
def test_dense_log_backward_tier_choice_sees_the_function(dtype):
    """Dense tensors on their 16-byte boundaries through softmax_backward on the CUDA backend: past
    1024 rows over a 128-byte line of columns or more (float32: of one outer index), the log-softmax
    backward takes the strided tier on GPUs of much DRAM bandwidth an SM (strided.
    dense_log_backward_strided; float32 with its partials on the partials-only kernel), the softmax
    backward the staged tiles; each right against float64, the second call of each on its own plan."""
    from fastsoftmax.backends.cuda import BACKEND

    fast = BACKEND.limits(None).high_bandwidth_per_sm
    shape = (1, 2048, 256) if dtype == torch.float32 else (4, 2048, 256)
    x = torch.randn(shape, device="cuda", dtype=dtype)
    log_tier = "strided" if fast else "strided_staged"
    for log, tier in ((False, "strided_staged"), (True, log_tier), (False, "strided_staged")):
        y = softmax64(x, 1, log).to(dtype)
        dy = torch.randn_like(x)
        with recording_loads(BACKEND) as loaded:
            for _ in range(2):
                check_backward(fastsoftmax.softmax_backward(dy, y, 1, log=log, backend="cuda"), x, dy, 1, log)
        assert {inst.tier for inst in loaded} == {tier}, (log, [inst.name for inst in loaded])


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_stepped_16bit_backward_of_large_teams_through_auto(dtype):
    """(8192, 8192)[:, ::2] over dim 0 through softmax_backward ("auto"), the shape
    strided.STEPPED_16BIT_BACKWARD_MAX_TEAM was set on: the staged spans would split each tile over a
    team of more than 32 CTAs, so on GPUs of much DRAM bandwidth an SM the strided tier takes it
    (split over chunks of the axis, merged, finished); right against float64 either way."""
    from fastsoftmax.backends.cuda import BACKEND

    fast = BACKEND.limits(None).high_bandwidth_per_sm
    x = view_of("step_inner", (8192, 4096), dtype)
    y = view_of("step_inner", x.shape, dtype).copy_(softmax64(x, 0, False))
    dy = view_of("step_inner", x.shape, dtype)
    with recording_loads(BACKEND) as loaded:
        check_backward(fastsoftmax.softmax_backward(dy, y, 0), x, dy, 0, False)
    if fast:
        assert {inst.tier for inst in loaded} == {"strided"}, [inst.name for inst in loaded]


@SETTINGS
@given(
    outer=st.integers(1, 6),
    n=st.integers(1, 3000),
    inner=st.integers(2, 300),
    dtype=st.sampled_from(DTYPES),
    log=st.booleans(),
    kind=st.sampled_from(["contiguous", "offset", "step"]),
)
def test_random_problems(outer, n, inner, dtype, log, kind):
    x = view_of(kind, (outer, n, inner), dtype)
    run(x, 1, log, "strided_staged")


def test_non_finite_like_torch():
    x = rand((3, 50, 6), torch.float32)
    x[0, :, 0] = float("-inf")
    x[1, 3, 1] = float("nan")
    x[2, 7, 2] = float("inf")
    for tier in TIERS:
        with dispatch.forced("cuda", tier):
            for log in (False, True):
                ours = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, 1)
                theirs = (torch.log_softmax if log else torch.softmax)(x, 1)
                torch.testing.assert_close(ours, theirs, equal_nan=True)


def columns_of_every_kind(dtype, outer=2, n=300, inner=16):
    """(outer, n, inner) whose columns (softmax runs over n) reach the kernels' special cases side by
    side, so that one thread's columns mix them: maxima at, above and below 2^20 (where the staged
    tier's exponent changes form, kernels/common.cuh ExpShift), magnitudes near the type's top,
    outputs in the subnormal range, and ordinary columns."""
    x = torch.randn((outer, n, inner), device="cuda") * 3
    limit = float(1 << 20) if dtype != torch.float16 else 6e4  # float16 tops out at 65504
    for c, top in enumerate([limit, limit + 1.0, -limit, limit - 0.5]):
        x[:, :, c] = top - torch.rand((outer, n), device="cuda") * 8
        x[:, c, c] = top
    big = 2e4 if dtype == torch.float16 else 1e30
    x[:, :, 4] = (torch.rand((outer, n), device="cuda") * 2 - 1) * big
    x[:, 0, 4] = big
    x[:, :, 5] = torch.rand((outer, n), device="cuda") * 4 - 92
    x[:, 1, 5] = 0
    return x.to(dtype)


@pytest.mark.parametrize("tier", TIERS + ["strided_warp"])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_columns_of_every_magnitude(tier, dtype):
    with dispatch.forced("cuda", tier):
        for inner in (16, 64):
            x = columns_of_every_kind(dtype, inner=inner)
            for log in (False, True):
                check_forward((fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, 1), x, 1, log)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "tier,n",  # one CTA a column; a team of CTAs; strided_warp's groups of row warps
    [(tier, n) for tier in TIERS for n in (300, 40000)] + [("strided_warp", 300)],
)
def test_non_finite_columns_beside_finite_ones(tier, dtype, n):
    """A column of -inf (NaN, as torch), one with a NaN (NaN), one with +inf (NaN), beside
    ordinary columns that stay exact, and one whose first half is -inf and second near -100 (a
    piece of a column all -inf beside a maximum whose exp(-max) overflows: finite, exact)."""
    x = columns_of_every_kind(dtype, n=n)
    x[:, :, 8] = float("-inf")
    x[:, 5, 9] = float("nan")
    x[:, 7, 10] = float("inf")
    n = x.shape[1]
    x[:, : n // 2, 11] = float("-inf")
    x[:, n // 2 :, 11] = (torch.randn((x.shape[0], n - n // 2), device="cuda") - 100).to(dtype)
    with dispatch.forced("cuda", tier):
        for log in (False, True):
            ours = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, 1)
            theirs = (torch.log_softmax if log else torch.softmax)(x.float(), 1)
            assert torch.equal(ours.isnan(), theirs.isnan()), "NaN pattern differs from torch"
            finite = [c for c in range(x.shape[2]) if c not in (8, 9, 10)]
            check_forward(ours[:, :, finite], x[:, :, finite], 1, log)


def test_plans_sharing_a_kernel_keep_their_shared_memory():
    """Two strided_staged problems on one kernel that ask for different dynamic shared memory (both
    over 48 KiB, which a launch opts in to per function: 93184 and 54784 bytes on an H100): the
    larger one still launches after the smaller one was planned, and both stay right."""
    from fastsoftmax.backends.cuda import BACKEND

    larger, smaller = rand((1, 600, 1024), torch.bfloat16), rand((1, 300, 1024), torch.bfloat16)
    BACKEND.clear_plans()  # plan both here, in this order
    with dispatch.forced("cuda", "strided_staged"):
        for x in (larger, smaller, larger, smaller):
            check_forward(fastsoftmax.softmax(x, 1), x, 1, False)


@pytest.mark.parametrize("backend", ["cuda", "auto"])
def test_public_api_autograd(backend):
    x = rand((4, 777, 24), torch.bfloat16).requires_grad_()
    y = fastsoftmax.softmax(x, 1, backend=backend)
    dy = rand(y.shape, y.dtype)
    y.backward(dy)
    check_forward(y.detach(), x.detach(), 1)
    check_backward(x.grad, x.detach(), dy, 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape",
    [
        (3, 5000, 2),  # two columns in a pack's four positions
        (2, 4098, 4),  # one column a position
        (5, 3001, 8),  # two lanes a group of columns
        (1, 16000, 16),  # one outer index over a cluster of 16
        (3, 1030, 32),  # eight lanes a group of columns, clusters of two
    ],
)
def test_runs_of_columns_held_across_a_cluster(shape, dtype):
    """strided_staged holds each (n x inner) run across a thread-block cluster (the column kernels of
    cluster_tier.cuh), forward and backward, softmax and log-softmax, with -inf, NaN and +inf in some
    columns beside ordinary ones; misaligned calls of the same plan take the staged tiles."""
    from fastsoftmax.backends.cuda import BACKEND, tiers
    from fastsoftmax.backends.cuda.launch import device_facts

    if not device_facts(torch.cuda.current_device()).cluster_launch:
        pytest.skip("needs thread-block clusters (sm_90+)")
    with recording_loads(BACKEND) as loaded, tiers.tuned(staged_columns=True):
        check_columns_both_ways(shape, dtype)
        columns = {inst.name for inst in loaded if getattr(inst, "columns", False)}
        assert {name.split("_")[3] for name in columns} == {"fwd", "bwd"}, sorted(columns)
        check_offset_call_takes_staged_tiles(loaded, shape, dtype)


def check_columns_both_ways(shape, dtype):
    """strided_staged (forced) on (outer, n, inner) runs with a column of -inf, a NaN and a +inf in
    columns of their own where inner allows, beside finite ones: softmax and log-softmax forward
    (NaN positions as torch's, the finite columns against float64) and backward (on this thread:
    autograd's would not see the tuning), on fresh inputs."""
    outer, n, inner = shape
    x = rand(shape, dtype)
    x[0, :, 0] = float("-inf")
    if inner > 2:
        x[-1, n // 3, 1] = float("nan")
        x[-1, n // 2, inner - 1] = float("inf")
    special = {0, 1, inner - 1} if inner > 2 else {0}
    finite = [c for c in range(inner) if c not in special]
    with dispatch.forced("cuda", "strided_staged"):
        for log in (False, True):
            op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
            ours = op(x, 1)
            theirs = (torch.log_softmax if log else torch.softmax)(x.float(), 1)
            assert torch.equal(ours.isnan(), theirs.isnan()), "NaN pattern differs from torch"
            check_forward(ours[:, :, finite], x[:, :, finite], 1, log)
            clean, dy = rand(shape, dtype), rand(shape, dtype)
            dx = fastsoftmax.softmax_backward(dy, op(clean, 1), 1, log=log)
            check_backward(dx, clean, dy, 1, log)


def check_offset_call_takes_staged_tiles(loaded, shape, dtype):
    """A call off a 16-byte boundary of a plan held across a cluster takes the staged tiles (loaded
    on its first such call)."""
    del loaded[:]
    with dispatch.forced("cuda", "strided_staged"):
        offset = view_of("offset", shape, dtype)
        check_forward(fastsoftmax.softmax(offset, 1), offset, 1, False)
    assert any(inst.tier == "strided_staged" for inst in loaded), [inst.name for inst in loaded]


def test_runs_of_columns_forced_where_they_cannot_be_held():
    from fastsoftmax.backends.cuda import tiers

    x = rand((2, 3000, 12), torch.float32)  # inner not a power of two
    with tiers.tuned(staged_columns=True), dispatch.forced("cuda", "strided_staged"):
        with pytest.raises(ValueError, match="power of two"):
            fastsoftmax.softmax(x, 1)
        narrow = rand((2, 3000, 32), torch.float32)[:, :, :16]  # not one contiguous run
        with pytest.raises(ValueError, match="contiguous run"):
            fastsoftmax.softmax(narrow, 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,ctas",
    [
        ((3, 24000, 16), 2),  # registers, shared memory and a re-read rest (two lanes a group of columns)
        ((1, 400001, 2), 2),  # a run ending inside a pack, the rest re-read
        ((2, 9000, 32), 4),  # eight lanes (four in float32) a group of columns
        ((4, 70000, 4), 16),  # registers and shared memory only
        ((9, 3000, 8), None),  # the cluster size of the launch's choice
    ],
)
def test_long_runs_of_columns_streamed_across_a_cluster(shape, ctas, dtype):
    """cluster_stream's column kernels (forced: auto takes them past what the cluster tier holds),
    forward and backward, softmax and log-softmax, with -inf, NaN and +inf in some columns beside
    ordinary ones; misaligned calls of the same plan take the staged tiles."""
    from fastsoftmax.backends.cuda import BACKEND, tiers
    from fastsoftmax.backends.cuda.launch import device_facts

    if not device_facts(torch.cuda.current_device()).cluster_launch:
        pytest.skip("needs thread-block clusters (sm_90+)")
    with recording_loads(BACKEND) as loaded, tiers.tuned(column_stream=True, cluster_ctas=ctas):
        check_columns_both_ways(shape, dtype)
        streams = {inst for inst in loaded if inst.tier == "cluster_stream" and inst.columns}
        assert {inst.backward for inst in streams} == {False, True}, sorted(inst.name for inst in streams)
        check_offset_call_takes_staged_tiles(loaded, shape, dtype)


def test_long_runs_of_columns_forced_where_they_cannot_be_streamed():
    from fastsoftmax.backends.cuda import tiers

    with tiers.tuned(column_stream=True), dispatch.forced("cuda", "strided_staged"):
        with pytest.raises(ValueError, match="power of two"):
            fastsoftmax.softmax(rand((2, 3000, 12), torch.float32), 1)
        with pytest.raises(ValueError, match="contiguous run"):
            fastsoftmax.softmax(rand((2, 3000, 32), torch.float32)[:, :, :16], 1)


@pytest.mark.parametrize("backward", [False, True])
def test_auto_streams_long_runs_of_columns(backward):
    """(8, 32768, 16) over dim 1 backward in every type, (8, 65536, 16) forward in float32: runs
    cluster_stream's column kernels hold on chip (strided.takes_column_stream); the 16-bit forward
    keeps the staged tiles."""
    from fastsoftmax.backends.cuda import BACKEND
    from fastsoftmax.backends.cuda.launch import device_facts

    if not device_facts(torch.cuda.current_device()).cluster_launch:
        pytest.skip("needs thread-block clusters (sm_90+)")
    shape = (8, 32768, 16) if backward else (8, 65536, 16)
    for dtype in (torch.float32, torch.bfloat16):
        with recording_loads(BACKEND) as loaded:
            check_auto_call(shape, dtype, backward)
        streamed = {inst.backward for inst in loaded if inst.tier == "cluster_stream" and inst.columns}
        # the float32 forward of a backward's autograd call takes them too (runs of 2^19)
        expected = ({True} if backward else set()) | ({False} if dtype == torch.float32 else set())
        assert streamed == expected, [inst.name for inst in loaded]


@pytest.mark.parametrize("backward", [False, True])
def test_auto_holds_runs_of_columns_where_measured_faster(backward):
    """(256, 4096, 8) over dim 1: the column kernels in both directions, every type (strided.takes_columns)."""
    from fastsoftmax.backends.cuda import BACKEND
    from fastsoftmax.backends.cuda.launch import device_facts

    if not device_facts(torch.cuda.current_device()).cluster_launch:
        pytest.skip("needs thread-block clusters (sm_90+)")
    for dtype in (torch.float32, torch.bfloat16):
        with recording_loads(BACKEND) as loaded:
            check_auto_call(shape=(256, 4096, 8), dtype=dtype, backward=backward)
        held = {inst.backward for inst in loaded if getattr(inst, "columns", False)}
        assert held == ({False, True} if backward else {False}), [inst.name for inst in loaded]


def check_auto_call(shape, dtype, backward: bool):
    """Softmax over dim 1 of fresh inputs through the public API on the CUDA backend's own choice of
    tier, against float64, with its backward through autograd where asked."""
    x = rand(shape, dtype)
    with dispatch.forced("cuda"):
        y = fastsoftmax.softmax(x.requires_grad_(backward), 1)
        check_forward(y.detach(), x.detach(), 1, False)
        if backward:
            dy = rand(y.shape, dtype)
            (dx,) = torch.autograd.grad(y, x, dy)
            check_backward(dx, x.detach(), dy, 1, False)


def window_view(shape, dtype, lead: int, pitch: int | None = None):
    """A (outer, n, inner) view whose rows start ``lead`` elements past a 16-byte boundary, every row
    stride a multiple of 16 bytes (rows of ``pitch``, the next multiple of 16 bytes past inner + lead
    by default): x[..., lead:lead + inner] of a wider tensor."""
    outer, n, inner = shape
    per = 16 // torch.empty((), dtype=dtype).element_size()
    pitch = pitch or -(-(inner + lead) // per) * per
    return rand((outer, n, pitch), dtype)[..., lead : lead + inner]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,lead",
    [((3, 700, 1023), 0), ((3, 700, 1024), 1), ((5, 6000, 600), 3), ((2, 40000, 520), 5), ((4, 300, 2000), 7)],
)
def test_window_tiles(shape, lead, dtype):
    # inputs off their 16-byte boundaries, or rows of no whole number of 16-byte pieces: staged in
    # tiles of their window (one CTA a tile, a cluster, a persistent team), chosen by "auto", the
    # output's rows off their boundaries by another amount each (rows of inner elements)
    from fastsoftmax.backends.cuda import strided, tiers
    from fastsoftmax.backends.cuda.backend import BACKEND

    per = 16 // torch.empty((), dtype=dtype).element_size()
    lead %= per
    x = window_view(shape, dtype, lead)
    assert (x.data_ptr() // x.element_size()) % per == lead
    if not strided.window_tiles(dtype):
        # float32 copies 4 bytes at a time by default (measured faster): correct, and no window
        with recording_loads(BACKEND) as loaded:
            for log in (False, True):
                run(x, 1, log, None)
        assert not any(getattr(inst, "window", False) for inst in loaded)
    forced = tiers.tuned(staged_window=True if not strided.window_tiles(dtype) else None)
    with recording_loads(BACKEND) as loaded, forced:
        for log in (False, True):
            for tier in (None, "strided_staged"):  # auto (strided.choose_tier), and forced
                run(x, 1, log, tier)
                # the backward's inputs off their boundaries by one amount (y rounded once, as
                # check_backward's error bars assume), and by two (each row staged at its own phase)
                y = window_view(shape, dtype, lead).copy_(softmax64(x, 1, log))
                for dy in (window_view(shape, dtype, lead), window_view(shape, dtype, (lead + 1) % per)):
                    with dispatch.forced("cuda", tier):
                        dx = fastsoftmax.softmax_backward(dy, y, 1, log=log)
                    check_backward(dx, x, dy, 1, log)
    windows = {(inst.backward, inst.log) for inst in loaded if getattr(inst, "window", False)}
    assert windows == {(False, False), (False, True), (True, False), (True, True)}, windows


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,lead", [((3, 700, 1024), 1), ((2, 40000, 520), 5), ((4, 300, 2000), 7)])
def test_window_tiles_in_either_phase_form(shape, lead, dtype):
    # tuning.staged_input_phase forces the window tiles' form: every row at the inputs' one phase
    # (reads unshifted, stores shifted onto the output's boundaries) or each at its own (shifted
    # reads); both right, forward and backward, and the first refused where the inputs' phases differ
    from fastsoftmax.backends.cuda import tiers

    per = 16 // torch.empty((), dtype=dtype).element_size()
    lead %= per
    x = window_view(shape, dtype, lead)
    for input_phase in (True, False):
        with tiers.tuned(staged_window=True, staged_input_phase=input_phase):
            for log in (False, True):
                run(x, 1, log, "strided_staged", backward=False)
                y = window_view(shape, dtype, lead).copy_(softmax64(x, 1, log))
                dy = window_view(shape, dtype, lead)
                with dispatch.forced("cuda", "strided_staged"):
                    dx = fastsoftmax.softmax_backward(dy, y, 1, log=log)
                check_backward(dx, x, dy, 1, log)
                if input_phase and lead:
                    other = window_view(shape, dtype, (lead + 1) % per)
                    with dispatch.forced("cuda", "strided_staged"), pytest.raises(ValueError, match="phases"):
                        fastsoftmax.softmax_backward(other, y, 1, log=log)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,dim", [((64, 4096, 3), 1), ((256, 1024, 4), 1), ((131072, 4), 0)])
def test_short_rows_in_one_run_are_staged_whole(shape, dim, dtype):
    # rows of 3-4 elements (each at another 16-byte phase in 16-bit types) over a contiguous n x inner
    # block: "auto" stages the whole runs (flat tiles), or holds them across a cluster (the column
    # kernels, where a run fits one: the forward of (131072, 4) over dim 0), not windows or the
    # strided tier
    from fastsoftmax.backends.cuda.backend import BACKEND

    x = rand(shape, dtype)
    with recording_loads(BACKEND) as loaded:
        for log in (False, True):
            op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
            dy = rand(shape, dtype)
            with dispatch.forced("cuda"):
                y = op(x, dim)
                check_forward(y, x, dim, log)
                y = y.copy_(softmax64(x, dim, log))  # rounded once, as check_backward's bars assume
                dx = fastsoftmax.softmax_backward(dy, y, dim, log=log)
            check_backward(dx, x, dy, dim, log)
    whole_runs = [
        (inst.tier == "strided_staged" and not getattr(inst, "window", False)) or getattr(inst, "columns", False)
        for inst in loaded
    ]
    assert loaded and all(whole_runs), [(inst.tier, getattr(inst, "window", None)) for inst in loaded]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "outer,n,inner",
    [
        (3, 4096, 3),  # one CTA a run
        (2, 808, 5),
        (2, 3000, 6),
        (5, 64, 7),
        (3, 200, 2),  # inner divides the pack
        (2, 4000, 4),
        (1, 200008, 3),  # a team of CTAs a run
        (2, 40000, 5),
        (1, 70000, 7),
    ],
)
def test_flat_runs_folded_into_whole_packs(outer, n, inner, dtype):
    """Flat runs whose inner holds no whole 16-byte pack, read as rows of lcm(inner, pack) columns in
    whole packs and folded back into inner's columns (strided.fold_width): against float64, forward
    and backward, with a column of -inf, one holding a NaN and one a +inf (NaN, as torch) beside
    ordinary ones, whose virtual columns of a row are neighbours of theirs."""
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.backend import BACKEND

    pack = 16 // torch.empty((), dtype=dtype).element_size()
    if inner >= pack:
        pytest.skip("inner is no shorter than a pack: nothing to fold")
    x = rand((outer, n, inner), dtype)
    x[:, :, 0] = float("-inf")
    special = [0]
    if inner >= 5:
        x[:, n // 3, 1] = float("nan")
        x[:, n - 1, 2] = float("inf")
        special = [0, 1, 2]
    finite = [c for c in range(inner) if c not in special]
    # long runs: cluster teams, then persistent teams meeting in device memory
    tunings = [{}] + ([{"staged_cluster": False}] if n > 10000 else [])
    runs = [(tuning, log) for tuning in tunings for log in (False, True)]
    with recording_loads(BACKEND) as loaded, dispatch.forced("cuda", "strided_staged"):
        for tuning, log in runs:
            BACKEND.clear_plans()
            with tiers.tuned(staged_fold=True, **tuning):
                op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
                y = op(x, 1)
                theirs = (torch.log_softmax if log else torch.softmax)(x.float(), 1)
                assert torch.equal(y.isnan(), theirs.isnan()), "NaN pattern differs from torch"
                check_forward(y[..., finite], x[..., finite], 1, log)
                dy = rand(x.shape, dtype)
                y = softmax64(x, 1, log).to(dtype)  # rounded once, as check_backward's bars assume
                dx = fastsoftmax.softmax_backward(dy, y, 1, log=log)
                assert torch.equal(dx.isnan(), y.isnan()), "NaN pattern of the backward differs"
                check_backward(dx[..., finite], x[..., finite], dy[..., finite], 1, log)
    assert loaded and all(inst.pack == pack for inst in loaded if inst.tier == "strided_staged"), loaded


def test_fold_forced_where_there_is_no_run_to_fold():
    from fastsoftmax.backends.cuda import tiers

    x = rand((2, 1001, 3), torch.bfloat16)  # 3003 elements: no whole number of rows of 24
    with dispatch.forced("cuda", "strided_staged"), tiers.tuned(staged_fold=True):
        with pytest.raises(ValueError, match="no flat run to fold"):
            fastsoftmax.softmax(x, 1)
    with dispatch.forced("cuda", "strided_staged"), tiers.tuned(staged_fold=False):
        check_forward(fastsoftmax.softmax(x, 1), x, 1, False)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)
def test_backward_off_boundaries_into_rows_at_several_phases_takes_the_strided_tier(dtype):
    # y and dy one element in, dx dense with rows of 1023 (each at its own phase): the plan of the
    # staged tiles hands such calls to the strided tier's (measured faster); y and dy on their
    # boundaries keep the window tiles
    from fastsoftmax.backends.cuda.backend import BACKEND

    shape = (3, 700, 1023)
    x = window_view(shape, dtype, 1)
    with recording_loads(BACKEND) as loaded:
        for lead in (1, 0):
            y = window_view(shape, dtype, lead).copy_(softmax64(x, 1, False))
            dy = window_view(shape, dtype, lead)
            with dispatch.forced("cuda", "strided_staged"):
                dx = fastsoftmax.softmax_backward(dy, y, 1)
            check_backward(dx, x, dy, 1, False)
    assert any(inst.tier == "strided" for inst in loaded)
    assert any(getattr(inst, "window", False) and inst.backward for inst in loaded)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lead,out_lead", [(0, 1), (1, 0), (2, 6), (5, 5), (7, 3)])
def test_window_tiles_into_outputs_off_their_boundaries(lead, out_lead, dtype):
    # through the backend: every shift between the input's and the output's rows (store_window),
    # outputs poisoned, rows of 16-byte strides and of odd length
    from fastsoftmax.backends.cuda import tiers
    from fastsoftmax.backends.cuda.backend import BACKEND

    per = 16 // torch.empty((), dtype=dtype).element_size()
    lead, out_lead = lead % per, out_lead % per
    with tiers.tuned(staged_window=True):  # float32 too (its default copies 4 bytes at a time)
        _window_tiles_into(lead, out_lead, per, dtype, BACKEND)


def _window_tiles_into(lead, out_lead, per, dtype, BACKEND):
    # rows of 16-byte strides, then rows at several phases (each input row, and each output row, off
    # its boundary by another amount): every row staged in its own window
    for shape, odd in (((3, 900, 1000), False), ((2, 6000, 777), True)):
        in_pitch = shape[2] + lead + 3 if odd else None
        out_pitch = shape[2] + out_lead + 1 if odd else None
        x = window_view(shape, dtype, lead, in_pitch)
        for log in (False, True):
            y = window_view(shape, dtype, out_lead, out_pitch).fill_(float("nan"))
            BACKEND.forward(x, y, log, "strided_staged")
            check_forward(y, x, 1, log)
            ref = window_view(shape, dtype, lead, in_pitch).copy_(softmax64(x, 1, log))
            dy = window_view(shape, dtype, lead, in_pitch)
            dx = window_view(shape, dtype, out_lead, out_pitch).fill_(float("nan"))
            BACKEND.backward(ref, dy, dx, log, "strided_staged")
            check_backward(dx, x, dy, 1, log)
            # y and dy off by two amounts
            other = window_view(shape, dtype, (lead + 1) % per, in_pitch)
            dx.fill_(float("nan"))
            BACKEND.backward(ref, other, dx, log, "strided_staged")
            check_backward(dx, x, other, 1, log)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape,backend", [((2, 21, 33, 31), "triton"), ((2, 3000, 1023), "cuda")])
def test_rows_at_several_phases(shape, backend, dtype, monkeypatch):
    # row strides of no whole number of 16-byte pieces (an odd H x W under NCHW over C): 16-bit
    # types go to Triton where its tiles hold the axis, else to the strided tier; float32 to the
    # staged tiles' 4-byte copies, but over axes Triton's tiles of scalar loads hold where the GPU
    # time outlasts a Triton launch (dispatch._float32_staggered_to_triton, tested on the CPU)
    from fastsoftmax.backends.cuda import strided

    backward_backend = backend
    if dtype == torch.float32:
        n, inner, numel = shape[1], math.prod(shape[2:]), math.prod(shape)
        backend, backward_backend = (
            "triton" if dispatch._float32_staggered_to_triton(n, inner, numel, backward) else "cuda"
            for backward in (False, True)
        )
    chosen = []
    original = dispatch.resolve

    def recording(*args, **kwargs):
        result = original(*args, **kwargs)
        chosen.append((args[6], result))  # (backward, (backend, tier))
        return result

    monkeypatch.setattr(dispatch, "resolve", recording)
    x = rand(shape, dtype)
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        check_forward(op(x, 1), x, 1, log)  # auto
        leaf, dy = x.detach().requires_grad_(), rand(shape, dtype)
        (dx,) = torch.autograd.grad(op(leaf, 1), leaf, dy)
        check_backward(dx, x, dy, 1, log)
    first = next(result for backward, result in chosen if not backward)
    first_backward = next(result for backward, result in chosen if backward)
    assert first[0].name == backend, first
    assert first_backward[0].name == backward_backend, first_backward
    if backend == "cuda":
        staged = not strided.window_tiles(dtype) and x.numel() >= strided.STAGED_MIN_NUMEL
        assert first[1] == ("strided_staged" if staged else "strided"), first


# ---- strided_warp: a warp a group of columns, the whole axis in its registers ------------------


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize(
    "shape,dim",
    [
        ((8, 150, 32, 32), 1),  # NCHW channel softmax: 16-byte packs, two lanes a row
        ((4, 21, 64, 64), 1),  # few classes: many lanes a row
        ((3, 21, 33, 31), 1),  # odd H x W: rows at several 16-byte phases, spread columns
        ((2, 2048, 40), 1),  # the longest axis backward holds; a partial last group of columns
        ((2, 4096, 24), 1),  # the longest axis forward holds (backward: refused, see below)
        ((5, 2, 16), 1),  # an axis of two
        ((3, 37, 6), 1),  # an inner no pack divides but pairs
        ((1, 33, 3), 1),  # odd inner, fewer columns than a row's lanes
    ],
)
def test_strided_warp_shapes(shape, dim, dtype):
    backward = shape[dim] <= 2048
    for log in (False, True):
        run(rand(shape, dtype), dim, log, "strided_warp", backward=backward)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("row_warps", [1, 2, 8])
@pytest.mark.parametrize("lanes", [1, 2, 4, 8, 16, 32])
def test_strided_warp_every_split(lanes, row_warps, dtype):
    """Every split of a CTA's lanes between the columns and the axis (forced through the tuning),
    on axes that leave the last rows of a step empty and columns past inner in the last group, and
    an error where the split cannot hold the axis."""
    from fastsoftmax.backends.cuda import strided, tiers

    for n in (5, 100, 300):
        rows = -(-n // (32 // lanes * row_warps))  # a lane's rows of the axis
        x = rand((3, n, 72), dtype)
        with tiers.tuned(strided_warp_lanes=lanes, strided_warp_row_warps=row_warps):
            for log in (False, True):
                if rows > max(strided.WARP_COLUMNS_ROWS[False]):
                    with pytest.raises(ValueError, match="too long"):
                        run(x, 1, log, "strided_warp", backward=False)
                    continue
                run(x, 1, log, "strided_warp", backward=rows <= max(strided.WARP_COLUMNS_ROWS[True]))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_warp_every_rows_kernel(dtype):
    """Each kernel of a lane's rows (strided.WARP_COLUMNS_ROWS, forced through the tuning; the
    16-bit forward at 5 to 10 under its launch bounds) on axes that fill its rows and that leave
    the last of them empty, over 16-byte packs and single elements, both directions."""
    from fastsoftmax.backends.cuda import strided, tiers

    for backward in (False, True):
        for rows in strided.WARP_COLUMNS_ROWS[backward]:
            # one warp a group of 8 lanes along inner: 4 rows a step, so rows * 4 rows fill a lane's
            for n, inner in ((rows * 4, 64), (rows * 4 - 3, 64), (rows * 4 - 1, 13)):
                x = rand((3, n, inner), dtype)
                with tiers.tuned(strided_warp_lanes=8, strided_warp_row_warps=1, strided_warp_rows=rows):
                    for log in (False, True):
                        run(x, 1, log, "strided_warp", backward=backward)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("lanes", [1, 4, 16, 32])
def test_strided_warp_spread_columns(lanes, dtype):
    """A lane's columns `lanes` apart, element by element (forced through the tuning, and "auto"'s
    choice where no pack aligns): rows at every 16-byte phase (odd H x W), a last group of columns
    whose lanes hold 1 to 3 of their 4 columns inside inner or none, an axis that leaves rows of a
    step empty, an inner that packs would have served, a view off its boundary; both directions."""
    from fastsoftmax.backends.cuda import strided, tiers

    pack = strided.WARP_SPREAD_PACK
    for n, inner in ((21, 33 * 31), (9, lanes * pack + 1), (40, lanes * pack + 3), (60, 64), (5, max(lanes - 1, 2))):
        x = rand((3, n, inner), dtype)
        with tiers.tuned(strided_warp_spread=True, strided_warp_lanes=lanes):
            for log in (False, True):
                run(x, 1, log, "strided_warp", backward=-(-n // (32 // lanes * 8)) <= 8)
    offset = view_of("offset", (3, 21, 40), dtype)
    for log in (False, True):
        run(offset, 1, log, "strided_warp")


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_strided_warp_spread_every_rows_kernel(dtype):
    """Each spread kernel of a lane's rows, on odd H x W, axes that fill its rows and that leave
    the last of them empty."""
    from fastsoftmax.backends.cuda import strided, tiers

    for backward in (False, True):
        for rows in strided.WARP_COLUMNS_ROWS[backward]:
            for n in (rows * 4, rows * 4 - 3):
                x = rand((2, n, 9, 13), dtype)
                with tiers.tuned(strided_warp_lanes=8, strided_warp_row_warps=1, strided_warp_rows=rows):
                    for log in (False, True):
                        run(x, 1, log, "strided_warp", backward=backward)


@pytest.mark.parametrize("kind", ["step", "offset", "transpose", "expand"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_strided_warp_views(kind, dtype):
    x = view_of(kind, (4, 40, 24, 8), dtype)
    before = x.clone()
    for log in (False, True):
        run(x, 1, log, "strided_warp")
    assert torch.equal(x, before), "the input was written"


def test_strided_warp_refuses_what_it_cannot_hold():
    from fastsoftmax.backends.cuda import tiers

    x = rand((2, 4097, 16), torch.float32)
    with dispatch.forced("cuda", "strided_warp"), pytest.raises(ValueError, match="strided_warp"):
        fastsoftmax.softmax(x, 1)
    odd = rand((2, 40, 15), torch.float32)
    with dispatch.forced("cuda", "strided_warp"), tiers.tuned(strided_warp_spread=False):
        with pytest.raises(ValueError, match="only spread columns"):
            fastsoftmax.softmax(odd, 1)
    # stepped inputs off their 16-byte boundaries, or whose spans are no whole 16-byte packs
    for kind, shape in (("step_inner_offset", (2, 40, 16)), ("step_inner", (2, 40, 6))):
        stepped = view_of(kind, shape, torch.float32)
        with dispatch.forced("cuda", "strided_warp"), pytest.raises(ValueError, match="unit steps along inner"):
            fastsoftmax.softmax(stepped, 1)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_strided_warp_stepped_every_rows_kernel(dtype):
    """Inputs that step by 2 along inner (x[..., ::2]; y and dy both, backward), read as the two
    16-byte packs of a lane's span: each kernel of a lane's rows, on axes that fill its rows and that
    leave the last of them empty, over whole groups of columns and a partial last one; the inputs
    never written."""
    from fastsoftmax.backends.cuda import strided, tiers

    pack = 16 // dtype.itemsize
    for backward in (False, True):
        for rows in strided.WARP_COLUMNS_ROWS[backward]:
            for n, inner in ((rows * 4, 8 * pack), (rows * 4 - 3, 3 * pack)):
                x = rand((3, n, inner), dtype)
                with tiers.tuned(strided_warp_lanes=8, strided_warp_row_warps=1, strided_warp_rows=rows):
                    for log in (False, True):
                        if not backward:
                            stepped = view_of("step_inner", x.shape, dtype).copy_(x)
                            before = stepped.clone()
                            run(stepped, 1, log, "strided_warp", backward=False)
                            assert torch.equal(stepped, before), "the input was written"
                            continue
                        y = view_of("step_inner", x.shape, dtype).copy_(softmax64(x, 1, log))
                        dy = view_of("step_inner", x.shape, dtype)
                        with dispatch.forced("cuda", "strided_warp"):
                            dx = fastsoftmax.softmax_backward(dy, y, 1, log=log)
                        check_backward(dx, x, dy, 1, log)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(64, 64, 256), (16, 150, 8, 48), (2, 300, 40)])
def test_strided_warp_stepped_auto_and_split(shape, dtype):
    # stepped inputs through the public API ("auto"), and forced onto strided_warp with its own
    # split (groups of several row warps over 150 and 300 rows)
    from fastsoftmax.backends.cuda import strided

    x = view_of("step_inner", shape, dtype)
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        check_forward(op(x, 1), x, 1, log)
        run(x, 1, log, "strided_warp", backward=False)
        y = view_of("step_inner", shape, dtype).copy_(softmax64(x, 1, log))
        dy = view_of("step_inner", shape, dtype)
        check_backward(fastsoftmax.softmax_backward(dy, y, 1, log=log), x, dy, 1, log)
        if shape[1] <= strided.warp_columns_max_n(True):
            with dispatch.forced("cuda", "strided_warp"):
                check_backward(fastsoftmax.softmax_backward(dy, y, 1, log=log), x, dy, 1, log)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16], ids=str)
def test_strided_warp_graphs_and_threads(dtype):
    import concurrent.futures

    graph_replays_right(rand((4, 150, 16, 16), dtype), 1, "strided_warp", replays=3)

    def call(seed):
        torch.manual_seed(seed)
        shape = (2 + seed % 3, 21 + 40 * (seed % 4), 24, 8)
        x = rand(shape, dtype)
        with dispatch.forced("cuda", "strided_warp"):
            for _ in range(5):
                check_forward(fastsoftmax.softmax(x, 1), x, 1, False)

    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        list(pool.map(call, range(8)))


def loads_through_the_public_api(shape, dtype):
    """The CUDA kernel instances "auto" loads for softmax and log-softmax over dim 1 of a fresh
    tensor, forward and backward through autograd, every result checked against float64."""
    from fastsoftmax.backends.cuda import BACKEND

    x = rand(shape, dtype)
    with recording_loads(BACKEND) as loaded:
        for log in (False, True):
            op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
            leaf = x.detach().requires_grad_()
            y = op(leaf, 1)
            check_forward(y.detach(), x, 1, log)
            dy = rand(shape, dtype)
            (dx,) = torch.autograd.grad(y, leaf, dy)
            check_backward(dx, x, dy, 1, log)
    return loaded


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_auto_takes_strided_warp_through_the_public_api(dtype):
    """Channel softmax of a 16-bit NCHW tensor, and a float32 one over a short axis, go to
    strided_warp under "auto" (strided.takes_warp_columns), forward and backward through autograd."""
    loaded = loads_through_the_public_api((2, 21, 32, 32) if dtype == torch.float32 else (2, 150, 16, 16), dtype)
    tiers_loaded = {inst.tier for inst in loaded}
    assert tiers_loaded == {"strided_warp"}, [inst.name for inst in loaded]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_auto_takes_spread_columns_for_odd_images(dtype):
    """The channel softmax of an NCHW tensor of odd H x W (rows at several 16-byte phases) goes to
    strided_warp's spread columns under "auto" where they lead (strided.takes_spread_columns: the
    16-bit forward over 150 classes, float32 both ways over 21), through the public API; the
    backward is right wherever it goes."""
    loaded = loads_through_the_public_api((2, 21, 91, 91) if dtype == torch.float32 else (2, 150, 91, 91), dtype)
    spread = [inst for inst in loaded if inst.tier == "strided_warp" and inst.spread]
    assert {inst.backward for inst in spread} == ({False, True} if dtype == torch.float32 else {False}), loaded
    assert len(spread) == len(loaded), loaded


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize(
    "y_kind,dy_kind", [("contiguous", "step"), ("step", "offset"), ("offset", "contiguous"), ("contiguous", "expand")]
)
def test_strided_warp_gradient_laid_out_unlike_the_output(y_kind, dy_kind, dtype):
    """strided_warp's backward reads y and dy each with its own strides (and alignment, which sets
    the pack), groups of one warp and of several."""
    for shape in [(6, 150, 64), (5, 21, 72)]:
        x = rand(shape, dtype)
        for log in (False, True):
            y = view_of(y_kind, shape, dtype).copy_(softmax64(x, 1, log))
            dy = view_of(dy_kind, shape, dtype)
            with dispatch.forced("cuda", "strided_warp"):
                dx = fastsoftmax.softmax_backward(dy, y, 1, log=log)
            check_backward(dx, x, dy, 1, log)
