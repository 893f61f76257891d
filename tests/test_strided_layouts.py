"""Softmax over strided axes and non-dense views, on the CPU: the staged tier's geometry (pure
Python), and the Triton strided kernels in the interpreter through the public API against
float64, forward and backward, with poisoned outputs (conftest.py)."""

from __future__ import annotations

import dataclasses

import pytest
import torch
from reference import DEVICE, check_backward, check_forward, softmax64

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.cuda import launch, strided

H100 = dict(smem_per_sm=228 * 1024, smem_per_block=227 * 1024, sm_count=132)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize(
    "outer,n,inner",
    [
        (1, 8192, 16384),
        (1, 65536, 2048),
        (1, 1 << 20, 128),
        (32, 4096, 1024),
        (16, 21, 262144),
        (3, 37, 5),
        (1, 1 << 24, 4),
        (4096, 4096, 3),
        (1, 1, 2),
        (2, 5, 7),
    ],
)
def test_staged_geometry(outer, n, inner, dtype, backward):
    shape = strided.staged_shape(outer, n, inner, dtype, backward, **H100)
    itemsize = torch.empty((), dtype=dtype).element_size()
    assert shape is not None
    assert inner % shape.pack == 0 and shape.tile_cols % shape.pack == 0
    assert shape.pack * itemsize <= 16
    assert shape.splits * shape.chunk >= n > (shape.splits - 1) * shape.chunk  # every split has rows
    assert shape.tile_cols <= inner and shape.tile_cols // shape.pack <= strided.STAGED_THREADS
    assert shape.smem <= H100["smem_per_sm"] // strided.STAGED_CTAS_PER_SM
    if shape.splits > 1:  # a cooperative grid: every team mate resident
        assert shape.grid <= H100["sm_count"] * strided.STAGED_CTAS_PER_SM
        assert shape.chunk % strided.STAGED_CHUNK_ALIGN == 0
    if not shape.held:
        assert shape.stage_rows % strided.STAGED_CHUNK_ALIGN == 0


@pytest.mark.parametrize(
    "outer,n,inner,staged",
    [
        (1, 65536, 2048, True),  # three teams of 44 CTAs, 21 tiles each
        (1, 65536, 8192, True),
        (32, 65536, 256, True),
        (1, 65536, 1024, False),  # 11 tiles a team
        (1, 98304, 2048, False),  # two teams
        (1, 131072, 1024, False),  # one team
        (1, 1 << 20, 128, False),  # not held on chip
    ],
)
def test_long_axes_over_wide_columns(outer, n, inner, staged):
    """A long axis over wide columns takes the strided tier's passes, but for the float32 forwards
    whose tiles persistent teams hold at one CTA an SM, many tiles a team (strided.STAGED_WIDE_*),
    where the GPU has little DRAM bandwidth an SM or outer > 1: the staged teams then, sized for one
    CTA an SM."""
    from fastsoftmax.backends.cuda import tiers

    limits = tiers.H100_LIMITS
    wide = (limits.smem_per_sm, limits.smem_per_block, limits.sm_count)
    expected = "strided_staged" if staged else "strided"
    assert strided.choose_tier(outer, n, inner, torch.float32, False, limits) == expected
    h100 = strided.wide_axis_staged_ctas(outer, n, inner, torch.float32, False, *wide, dram_gbps=limits.dram_gbps)
    assert h100 == (1 if staged else None)
    # more DRAM bandwidth an SM (an H200's), or none reported: outer 1 takes the strided tier
    for dram_gbps in (4814.3, None):
        other = dataclasses.replace(limits, dram_gbps=dram_gbps)
        expected_there = expected if outer > 1 else "strided"
        assert strided.choose_tier(outer, n, inner, torch.float32, False, other) == expected_there
    for dtype, backward in ((torch.float32, True), (torch.bfloat16, False), (torch.float16, False)):
        assert strided.choose_tier(outer, n, inner, dtype, backward, limits) == "strided"
        ctas = strided.wide_axis_staged_ctas(outer, n, inner, dtype, backward, *wide, dram_gbps=limits.dram_gbps)
        assert ctas is None
    if staged:
        shape = strided.staged_shape(outer, n, inner, torch.float32, False, **H100, ctas_per_sm=1)
        assert shape.held and shape.teams >= strided.STAGED_WIDE_MIN_TEAMS
        assert shape.grid <= H100["sm_count"]  # one CTA an SM: every team mate resident


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize(
    "outer,n,inner",
    [(128, 1024, 1024), (1, 1400, 64), (3, 1500, 40), (40, 1500, 200), (2, 6901, 8)],
)
def test_clustered_geometry(outer, n, inner, dtype, backward):
    shape = strided.staged_shape(outer, n, inner, dtype, backward, **H100, clustered=True)
    persistent = strided.staged_shape(outer, n, inner, dtype, backward, **H100)
    assert shape.clustered and shape.held and shape.splits > 1
    # a power of two of at most staged_max_cluster CTAs a tile, a tile a team, every row in one of them
    assert shape.splits & (shape.splits - 1) == 0 and shape.splits <= strided.staged_max_cluster(dtype, backward)
    assert shape.teams == shape.tiles and shape.grid == shape.tiles * shape.splits
    assert shape.splits * shape.chunk >= n and shape.chunk % strided.STAGED_CHUNK_ALIGN == 0
    assert shape.chunk <= -(-n // (shape.splits // 2 or 1))  # no more CTAs than the tile needs, or the GPU
    assert shape.tile_cols <= strided.STAGED_POST_COLS
    assert shape.smem <= H100["smem_per_sm"] // strided.STAGED_CTAS_PER_SM
    assert (shape.pack, shape.tile_cols, shape.tiles) == (persistent.pack, persistent.tile_cols, persistent.tiles)


@pytest.mark.parametrize("backward", [False, True])
def test_staged_float32_kernels_are_compiled_for_their_resident_ctas(backward):
    # registers for as many CTAs an SM as the measured choice, never fewer than the persistent
    # grid's residency assumes (STAGED_CTAS_PER_SM)
    wanted = strided.STAGED_F32_CTAS_PER_SM[backward]
    assert wanted >= strided.STAGED_CTAS_PER_SM
    staged = [i for i in strided.all_instances() if isinstance(i, strided.StagedInstance) and i.backward == backward]
    assert staged
    for instance in staged:
        if instance.dtype == torch.float32:
            assert f"__launch_bounds__({strided.STAGED_THREADS}, {wanted})" in instance.wrapper()
        elif not backward and instance.pack >= 2:
            ctas = strided.STAGED_16BIT_FORWARD_CTAS_PER_SM[instance.pack]
            assert ctas >= strided.STAGED_CTAS_PER_SM
            assert f"__launch_bounds__({strided.STAGED_THREADS}, {ctas})" in instance.wrapper()
        else:
            assert f"__launch_bounds__({strided.STAGED_THREADS})" in instance.wrapper()


@pytest.mark.parametrize(
    "outer,n,inner,strides,pack,why,why_backward",
    [
        # (stride of outer, stride of n, step along inner) a tensor
        (1, 65536, 2048, ((1 << 27, 2048, 1), (1 << 27, 2048, 1)), 8, None, None),  # 256 threads x 8: one row
        (1, 1 << 20, 128, ((1 << 27, 128, 1),) * 3, 8, None, None),
        (1, 40001, 33, ((40001 * 33, 33, 1),) * 2, 1, "does not divide", None),  # each pack's sums read
        (1, 65536, 2048, ((1 << 27, 2048, 1),) * 2, 4, "does not divide", None),  # float32: half a row
        (1, 40001, 36, ((40001 * 36, 36, 1),) * 2, 8, "does not divide", "whole number of packs"),
        (3, 20001, 64, ((20001 * 64, 64, 1),) * 2, 8, "outer indices", None),  # the backward sweeps outer too
        (3, 20001, 64, ((40002 * 64, 64, 1), (20001 * 64, 64, 1)), 8, "outer indices", "dense run"),  # gaps
        (1 << 21, 1 << 10, 1 << 10, ((1 << 20, 1 << 10, 1),) * 2, 8, "outer indices", "2^31 or more"),
        (3, 20001, 64, ((20001 * 64, 64, 1),) * 2, 4, "outer indices", "8 bytes"),  # 16-byte packs only
        (1, 40001, 32, ((80002 * 32, 64, 1), (40001 * 32, 32, 1)), 8, "dense run", "dense run"),  # x[::2]
        (1, 40001, 32, ((40001 * 64, 64, 2), (40001 * 32, 32, 1)), 8, "dense run", "dense run"),  # x[..., ::2]
    ],
)
def test_flat_finish_takes_dense_runs_of_whole_packs(outer, n, inner, strides, pack, why, why_backward):
    for backward, expected in ((False, why), (True, why_backward)):
        found = strided.flat_finish_fits(outer, n, inner, strides, pack, backward, 256, tile_width=256, itemsize=2)
        assert (found is None) if expected is None else (expected in found)


@pytest.mark.parametrize(
    "tiles,width,splits,expected",
    [
        (8, 256, 264, (8, 64)),  # bf16 (65536, 2048) over dim 0: 8 x 32 blocks of 8 columns
        (1, 128, 1056, (8, 128)),  # (1048576, 128): a block's 1024 threads read 8 or 9 slots each
        (1, 4, 16, (4, 2)),  # tiles narrower than 8 columns keep their width
        (200, 256, 16, (32, 2)),  # tiles enough for every SM: a warp's 32 columns
    ],
)
def test_merge_blocks_fill_the_gpu_and_read_a_round_of_slots_a_thread(tiles, width, splits, expected):
    columns, slices = strided.strided_merge_shape(tiles, width, splits, sm_count=132)
    assert (columns, slices) == expected
    assert width % columns == 0 and columns * slices <= strided.STRIDED_MERGE_MAX_THREADS
    assert slices & (slices - 1) == 0  # the tree over slices halves them
    assert slices * strided.STRIDED_MERGE_UNROLL >= splits or columns * slices == strided.STRIDED_MERGE_MAX_THREADS


def test_merge_block_tunings_are_taken_as_given_or_refused():
    shape = strided.strided_merge_shape
    assert shape(8, 256, 264, 132, columns=32) == (32, 32)  # slices still sized for a round of slots
    assert shape(8, 256, 264, 132, slices=4) == (8, 4)
    assert shape(8, 256, 264, 132, columns=16, slices=64) == (16, 64)
    with pytest.raises(ValueError, match="strided_merge_columns=12 is not a power of two"):
        shape(8, 256, 264, 132, columns=12)
    with pytest.raises(ValueError, match="strided_merge_slices=0 is not a power of two"):
        shape(8, 256, 264, 132, slices=0)
    with pytest.raises(ValueError, match="does not divide the tile's 4 columns"):
        shape(1, 4, 16, 132, columns=8)
    with pytest.raises(ValueError, match="passes 1024 threads"):
        shape(8, 256, 264, 132, columns=32, slices=64)


@pytest.mark.parametrize(
    "pack,dtype,steps,packs,expected",
    [
        (8, torch.bfloat16, (1, 1), None, (8, False)),  # dense: the aligned pack
        (4, torch.float32, (2, 1), None, (4, True)),  # x[..., ::2]: packs of its span
        (4, torch.float32, (2, 2, 1), None, (4, True)),  # backward, y and dy stepped
        (4, torch.float32, (2, 1, 1), None, (1, False)),  # mixed steps: element by element
        (4, torch.float32, (3, 1), None, (1, False)),
        (8, torch.bfloat16, (2, 1), None, (1, False)),  # 16-bit types: single elements
        (4, torch.float32, (2, 1), False, (1, False)),
        (8, torch.bfloat16, (1, 1), True, (8, False)),  # no step: the tuning has nothing to do
    ],
)
def test_stepped_inputs_take_the_packs_of_their_span_where_every_input_steps_by_2(pack, dtype, steps, packs, expected):
    assert strided.strided_pack_for_steps(pack, dtype, steps, packs) == expected


@pytest.mark.parametrize(
    "pack,dtype,steps,why",
    [
        (4, torch.float32, (3, 1), "not all 2"),
        (1, torch.float32, (2, 1), "aligned to packs of 1"),
        (4, torch.float32, (2, 1, 1), "not all 2"),
        (8, torch.bfloat16, (2, 1), "single elements"),
    ],
)
def test_stepped_packs_forced_where_they_cannot_be_read(pack, dtype, steps, why):
    with pytest.raises(ValueError, match=why):
        strided.strided_pack_for_steps(pack, dtype, steps, True)
    with pytest.raises(ValueError, match="unit stride"):
        strided.strided_pack_for_steps(pack, dtype, (1, 2))


def test_stepped_inputs_are_chosen_as_unaligned_ones():
    # a step along inner rules out 16-byte packs of unit stride: tier choice takes it as off a
    # boundary (CUDA's strided tier reads either)
    from fastsoftmax import _layout, functional

    x = torch.randn(8, 64, 2 * 96)[..., ::2]
    x3, y3, _, copied = _layout.canonical_pair(x, 1)
    assert not copied and not functional._packable(x3, y3)
    x3, y3, _, _ = _layout.canonical_pair(torch.randn(8, 64, 96), 1)
    assert functional._packable(x3, y3) == functional._aligned(x3, y3)


@pytest.mark.parametrize(
    "inner,strides,align,why",
    [
        (1024, ((1 << 22, 2048, 2), (1 << 21, 1024, 1)), 0, None),  # x[..., ::2], forward
        (1024, ((1 << 22, 2048, 2), (1 << 22, 2048, 2), (1 << 21, 1024, 1)), 0, None),  # y and dy stepped
        (1024, ((1 << 22, 2048, 2), (1 << 21, 1024, 1), (1 << 21, 1024, 1)), 0, "steps along inner"),  # dy dense
        (1024, ((3 << 22, 3072, 3), (1 << 21, 1024, 1)), 0, "steps along inner"),
        (1024, ((1 << 22, 2048, 2), (1 << 21, 1024, 1)), 2, "16-byte boundary"),
        (1020, ((1 << 22, 2040, 2), (1 << 21, 1020, 1)), 0, "16-byte packs"),  # bf16: 127.5 packs
    ],
)
def test_stepped_spans_staged_where_every_input_steps_by_2_on_16_byte_boundaries(inner, strides, align, why):
    found = strided.stepped_span_fits(inner, strides, 2, align)
    assert (found is None) if why is None else (why in found)


def test_a_staged_span_takes_twice_a_rows_shared_memory():
    dense = strided.staged_shape(32, 4096, 1024, torch.bfloat16, False, **H100, clustered=True)
    spans = strided.staged_shape(32, 4096, 1024, torch.bfloat16, False, **H100, clustered=True, step=2)
    assert spans.pack == 8 and spans.tile_cols == dense.tile_cols
    # the same tile over twice the CTAs (or, where the clusters run out, more rows streamed)
    assert spans.splits * spans.stage_rows >= 4096 and spans.chunk * spans.tile_cols * 2 * 2 <= spans.smem
    assert spans.splits > dense.splits


@pytest.mark.parametrize(
    "outer,n,inner,spans,expected",
    [
        (32, 4096, 1024, True, "strided_staged"),  # (32, 4096, 2048)[..., ::2] over dim 1
        (1, 8192, 4096, True, "strided_staged"),  # (8192, 8192)[:, ::2] over dim 0
        (32, 4096, 1024, False, "strided"),  # off a 16-byte boundary, or a step of 3
        (1, 1000, 40, True, "strided"),  # small: one launch of the strided tier
        (1, 65536, 2048, True, "strided"),  # a long axis over wide columns (choose_tier's rule)
        (32, 4096, 1020, True, "strided"),  # no whole number of packs (bf16)
    ],
)
def test_stepped_inputs_take_the_staged_spans_where_they_fit(outer, n, inner, spans, expected):
    from fastsoftmax.backends.cuda import tiers

    for backward in (False, True):
        chosen = tiers.choose_tier(outer, n, inner, torch.bfloat16, backward, tiers.H100_LIMITS, False, spans, True)
        assert chosen == expected, backward


def test_short_stepped_axes_take_strided_warp_or_keep_their_tiers():
    import dataclasses

    from fastsoftmax.backends.cuda import tiers

    def chosen(n, dtype, backward, inner=1024, limits=tiers.H100_LIMITS, log=False):
        return tiers.choose_tier(8192, n, inner, dtype, backward, limits, False, True, True, log)

    # spans read into registers: axes up to 1024 rows, but the 16-bit softmax backward over 16 rows
    # or fewer and the 16-bit log-softmax backward over 128 or fewer
    for n in (8, 16, 17, 64, 128, 150, 1024):
        for dtype in (torch.float32, torch.bfloat16, torch.float16):
            wide = dtype == torch.float32
            assert chosen(n, dtype, False) == chosen(n, dtype, False, log=True) == "strided_warp", (n, dtype)
            expected = "strided_warp" if wide or n > 16 else "strided_staged"
            assert chosen(n, dtype, True) == expected, (n, dtype)
            expected = "strided_warp" if wide or n > 128 else "strided_staged"
            assert chosen(n, dtype, True, log=True) == expected, (n, dtype)
    assert chosen(1025, torch.bfloat16, False) == chosen(2048, torch.float32, False) == "strided_staged"
    assert chosen(2048, torch.bfloat16, True) == chosen(2048, torch.float32, True) == "strided_staged"
    # columns narrower than strided_warp's rows (64 bytes of float32): float32 forwards over 32-64
    # rows keep the strided tier
    assert chosen(64, torch.float32, False, 16) == chosen(32, torch.float32, False, 16) == "strided"
    assert chosen(16, torch.float32, False, 16) == chosen(128, torch.float32, False, 16) == "strided_staged"
    assert chosen(64, torch.float32, True, 16) == chosen(64, torch.bfloat16, False, 16) == "strided_staged"
    # past strided_warp's axes, on GPUs of more DRAM bandwidth an SM (an H200's, or none reported):
    # the strided tier for float32 and for the 16-bit log-softmax backward; the staged spans for the
    # rest, and for all of it on an H100's
    for dram_gbps in (4814.0, None):
        fast = dataclasses.replace(tiers.H100_LIMITS, dram_gbps=dram_gbps)
        for backward in (False, True):
            assert chosen(2048, torch.float32, backward, limits=fast) == "strided"
            assert chosen(16384, torch.float32, backward, 16, limits=fast) == "strided"
            assert chosen(2048, torch.bfloat16, backward, limits=fast) == "strided_staged"
            assert chosen(1024, torch.float32, backward, limits=fast) == "strided_warp"
        assert chosen(2048, torch.bfloat16, True, limits=fast, log=True) == "strided"
        assert chosen(2048, torch.bfloat16, False, limits=fast, log=True) == "strided_staged"
        assert chosen(1024, torch.bfloat16, True, limits=fast, log=True) == "strided_warp"
    assert chosen(2048, torch.bfloat16, True, log=True) == "strided_staged"


def test_long_stepped_axes_over_few_tiles_take_the_strided_tier_in_the_16_bit_backward():
    """On a GPU of much DRAM bandwidth an SM, the 16-bit softmax backward of stepped inputs leaves
    the staged spans where they would split a tile over a team of more than
    STEPPED_16BIT_BACKWARD_MAX_TEAM CTAs ((8192, 8192)[:, ::2] over dim 0: teams of 43); shorter
    teams, the forward and an H100 keep them."""
    import dataclasses

    from fastsoftmax.backends.cuda import tiers

    fast = dataclasses.replace(tiers.H100_LIMITS, dram_gbps=4814.0)
    limits_args = (fast.smem_per_sm, fast.smem_per_block, fast.sm_count)

    def team(outer, n, inner, dtype):
        return strided.staged_shape(outer, n, inner, dtype, True, *limits_args, window=False, step=2).splits

    for dtype in (torch.bfloat16, torch.float16):
        for outer, n, inner in ((1, 8192, 4096), (4, 16384, 2048), (32, 4096, 1024), (8, 6144, 1024)):
            big = team(outer, n, inner, dtype) > strided.STEPPED_16BIT_BACKWARD_MAX_TEAM
            assert big == (n >= 8192), (outer, n, inner)
            stepped = (False, True, True)  # not aligned, the spans fit, stepped
            for limits, backward in ((fast, False), (tiers.H100_LIMITS, True), (tiers.H100_LIMITS, False)):
                assert strided.choose_tier(outer, n, inner, dtype, backward, limits, *stepped) == "strided_staged"
            expected = "strided" if big else "strided_staged"
            assert strided.choose_tier(outer, n, inner, dtype, True, fast, *stepped) == expected


def test_one_team_walking_tiles_takes_the_strided_tier():
    """The forward whose tiles one team of every resident CTA would take in turn, ONE_TEAM_STRIDED_MIN_TILES
    of them or more (held by the team, or streamed through it), goes to the strided tier on an H100, and
    so does the backward of 16 columns of inner or more; two tiles, grids of several teams, rows neither
    of whole 16-byte pieces nor float32 pairs, narrower backwards and a GPU of much DRAM bandwidth an SM
    keep the staged tiles."""
    from fastsoftmax.backends.cuda import tiers

    h100 = tiers.H100_LIMITS
    fast = dataclasses.replace(h100, dram_gbps=4814.0)
    limits_args = (h100.smem_per_sm, h100.smem_per_block, h100.sm_count)

    def tier(outer, n, inner, dtype, backward=False, limits=h100):
        return strided.choose_tier(outer, n, inner, dtype, backward, limits)

    def one_team(outer, n, inner, dtype, backward):  # the staged shape, asserted one team of enough tiles
        shape = strided.staged_shape(outer, n, inner, dtype, backward, *limits_args)
        assert shape.teams == 1 and shape.tiles >= strided.ONE_TEAM_STRIDED_MIN_TILES, (outer, n, inner, dtype)
        return shape

    forward_one_team = [
        (4, 1048576, 8, torch.bfloat16),
        (4, 262144, 32, torch.float16),
        (32, 131072, 64, torch.bfloat16),
        (8, 1048576, 4, torch.float32),
        (4, 131072, 96, torch.float32),
        (32, 1048576, 8, torch.float32),  # streamed through the team
        (8, 2097152, 8, torch.bfloat16),
        (4, 1048576, 32, torch.float16),
        (32, 1048576, 8, torch.bfloat16),  # held by it
        (16, 2097152, 2, torch.float32),  # float32 pairs
    ]
    for outer, n, inner, dtype in forward_one_team:
        one_team(outer, n, inner, dtype, False)
        assert tier(outer, n, inner, dtype) == "strided", (outer, n, inner, dtype)
        assert tier(outer, n, inner, dtype, limits=fast) == "strided_staged"
    # the backward from 16 columns of inner (ONE_TEAM_STRIDED_BACKWARD_MIN_INNER), both functions
    backward_one_team = [
        (4, 524288, 16, torch.bfloat16),
        (64, 65536, 64, torch.bfloat16),
        (4, 262144, 32, torch.float16),
        (16, 262144, 16, torch.float32),
        (32, 131072, 64, torch.float32),
    ]
    narrow = [(8, 1048576, 4, torch.bfloat16), (4, 1048576, 8, torch.bfloat16), (16, 262144, 8, torch.float32)]
    for outer, n, inner, dtype in backward_one_team + narrow:
        shape = one_team(outer, n, inner, dtype, True)
        want = "strided" if inner >= strided.ONE_TEAM_STRIDED_BACKWARD_MIN_INNER else "strided_staged"
        for log in (False, True):
            got = strided.choose_tier(outer, n, inner, dtype, True, h100, log=log)
            assert got == want, (outer, n, inner, dtype, log)
        assert not strided.one_team_walks_tiles(shape, inner, True, fast)
    kept = [
        (2, 131072, 64, torch.bfloat16),  # two tiles
        (2, 2097152, 2, torch.float32),
        (8, 1048576, 4, torch.bfloat16),  # 16-bit rows of 8 bytes (windows, or flat runs)
        (32, 131072, 32, torch.bfloat16),  # three teams
        (128, 131072, 4, torch.bfloat16),
        (8, 1048576, 5, torch.float32),  # float32 rows of 20 and 24 bytes: one team, staged ahead
        (4, 1048576, 6, torch.float32),
    ]
    for outer, n, inner, dtype in kept:
        assert tier(outer, n, inner, dtype) == "strided_staged", (outer, n, inner, dtype)
    for outer, n, inner, dtype in ((8, 2097152, 8, torch.bfloat16), (4, 1048576, 32, torch.float16)):
        streamed = strided.staged_shape(outer, n, inner, dtype, False, *limits_args)
        assert streamed.teams == 1 and not streamed.held
    assert strided.staged_shape(32, 131072, 32, torch.bfloat16, False, *limits_args).teams == 3
    for outer, inner in ((8, 5), (4, 6)):  # what keeps these is their width alone
        assert strided.staged_shape(outer, 1048576, inner, torch.float32, False, *limits_args).teams == 1


def test_spans_aligned_on_the_canonical_views():
    from fastsoftmax import _layout, functional

    def spans(x, dim=1):
        x3, y3, _, _ = _layout.canonical_pair(x, dim)
        return functional._spans_aligned((x3,), y3)

    assert spans(torch.randn(8, 64, 2 * 96)[..., ::2])
    assert not spans(torch.randn(8, 64, 2 * 96 + 1)[..., 1::2])  # one element in
    assert not spans(torch.randn(8, 64, 3 * 96)[..., ::3])
    assert not spans(torch.randn(8, 63, 2 * 95)[..., ::2])  # rows 190 elements apart


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("clustered", [False, True])
def test_forced_tile_columns(dtype, backward, clustered):
    # Tuning.staged_tile_cols: whole 128-byte lines of each row; a cluster's posts take a value (or a
    # pair) a column of the wider tile; widths of no whole line, or past a tile row's packs, refused
    line = 128 // dtype.itemsize
    auto = strided.staged_shape(32, 4096, 1024, dtype, backward, **H100, clustered=clustered)
    assert auto.tile_cols == line
    for lines in (2, 4):
        shape = strided.staged_shape(
            32, 4096, 1024, dtype, backward, **H100, clustered=clustered, tile_cols=lines * line
        )
        assert shape.tile_cols == lines * line and shape.tiles == 32 * 1024 // (lines * line)
        assert shape.held and shape.splits * shape.chunk >= 4096
        # a cluster wherever the wider tile still fits the largest one
        largest = strided.staged_max_cluster(dtype, backward)
        assert shape.clustered == (clustered and shape.splits <= largest)
        staged = (2 if backward else 1) * shape.stage_rows * lines * line * dtype.itemsize
        if shape.clustered:  # the posts: a value (a pair forward) a column of the wide tile
            assert shape.smem >= staged + lines * line * (4 if backward else 8)
        else:
            assert shape.smem >= staged
    for cols in (line + line // 2, 16 * line * 16, -line):
        with pytest.raises(ValueError, match=f"tiles of {cols} columns"):
            strided.staged_shape(32, 4096, 1024, dtype, backward, **H100, clustered=clustered, tile_cols=cols)
    # the backward's team posts a column sum a thread: tiles of more columns than threads refused
    wide = 2 * strided.STAGED_THREADS
    if backward:
        with pytest.raises(ValueError, match=f"tiles of {wide} columns"):
            strided.staged_shape(4, 4096, 2048, dtype, True, **H100, clustered=clustered, tile_cols=wide)
    else:
        assert strided.staged_shape(4, 4096, 2048, dtype, False, **H100, clustered=clustered, tile_cols=wide)
    from fastsoftmax.backends.cuda import tiers

    with pytest.raises(ValueError, match="staged_tile_cols=0"):
        tiers.Tuning(staged_tile_cols=0)


def test_wide_tile_posts_fill_the_cluster():
    # bf16 (6, 1001, 200) at two lines a row: a cluster of 4, each CTA's shared memory its 256 staged
    # rows of 128 columns, the scratch and 128 (max, sum) posts (a one-line tile's 64 would be short)
    shape = strided.staged_shape(6, 1001, 200, torch.bfloat16, False, **H100, clustered=True, tile_cols=128)
    assert shape.clustered and shape.splits == 4 and shape.chunk == 256
    assert shape.smem == 256 * 128 * 2 + strided.STAGED_THREADS * 8 * 4 + 128 * 8


@pytest.mark.parametrize(
    "shape,dtype,backward,cluster,wide",
    [
        ((1, 8192, 16384), torch.float32, False, None, True),
        ((4, 8192, 4096), torch.float32, False, None, True),
        ((1, 12288, 16384), torch.float32, False, None, True),
        ((1, 16384, 8192), torch.float32, False, None, False),  # 43 CTAs a team at two lines
        ((1, 8192, 16384), torch.float32, True, None, False),
        ((1, 4096, 16384), torch.float32, True, False, False),  # the backward: 20 CTAs at two lines
        ((1, 8192, 16384), torch.bfloat16, False, None, False),
        ((32, 4096, 1024), torch.float32, False, None, False),  # a cluster holds the one-line tile
        ((1, 65536, 2048), torch.float32, False, None, False),  # two lines: one team of 128 CTAs
    ],
)
def test_float32_forward_wide_tiles(monkeypatch, shape, dtype, backward, cluster, wide):
    """The plan's tiles: two 128-byte lines a row for the float32 forward's persistent teams of at
    most STAGED_WIDE_TILE_F32_MAX_TEAM CTAs (strided.staged_wide_tile), one elsewhere; a tuning's
    width wins either way (bits 0-15 of the geometry)."""
    from fastsoftmax.backends.cuda import strided, tiers

    monkeypatch.setattr(strided, "device_facts", lambda dev: _StagedFacts())
    monkeypatch.setattr(strided, "Kernel", _StagedKernel)
    monkeypatch.setattr(strided, "stream_workspace", lambda *args: (object(), 0x9000))
    tensors = 3 if backward else 2
    strides = ((shape[1] * shape[2], shape[2], 1),) * tensors
    line = 128 // dtype.itemsize
    for forced in (None, line, 2 * line):
        tuning = tiers.Tuning(staged_tile_cols=forced, staged_cluster=cluster)
        key = ("strided_staged", dtype, *shape, strides, False, backward, 0, 0, tuning)
        _StagedKernel.launches = []
        strided._staged_tiles(lambda inst, dev: inst.name, key, False, False)(
            tuple(range(16, 16 * (tensors + 1), 16)), 5
        )
        ((kernel, _, args),) = _StagedKernel.launches
        tile_cols = args[-3] & 0xFFFF
        assert tile_cols == (forced or (2 * line if wide else line))
        if forced is None and wide:
            assert kernel.cooperative and not kernel.cluster > 1


def test_tiles_longer_than_a_cluster_stay_persistent():
    # (65536, 2048) over dim 0: 88 CTAs a tile
    shape = strided.staged_shape(1, 65536, 2048, torch.bfloat16, False, **H100, clustered=True)
    assert not shape.clustered and shape.splits > strided.staged_max_cluster(torch.bfloat16, False)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize(
    "outer,n,inner", [(2, 1400, 1024), (32, 4096, 1024), (3, 6000, 100), (40, 6000, 100), (1, 9000, 64)]
)
def test_tiles_of_more_than_four_ctas_take_larger_clusters(outer, n, inner, dtype, backward):
    # teams grow past STAGED_FILL_CLUSTER only for tiles that need it: what fit in four stays
    shape = strided.staged_shape(outer, n, inner, dtype, backward, **H100, clustered=True)
    before = strided.staged_shape(
        outer, n, inner, dtype, backward, **H100, clustered=True, max_cluster=strided.STAGED_FILL_CLUSTER
    )
    largest = strided.staged_max_cluster(dtype, backward)
    if before.clustered or not shape.clustered:
        assert shape == before
        return
    assert strided.STAGED_FILL_CLUSTER < shape.splits <= largest and shape.splits & (shape.splits - 1) == 0
    assert shape.held and shape.splits * shape.chunk >= n and shape.grid == shape.tiles * shape.splits
    assert shape.chunk < -(-n // (shape.splits // 2))  # half as many CTAs could not hold the tile
    assert shape.smem <= H100["smem_per_sm"] // strided.STAGED_CTAS_PER_SM
    assert shape.grid >= H100["sm_count"] * strided.STAGED_CTAS_PER_SM  # the clusters fill the GPU
    assert (shape.pack, shape.tile_cols) == (before.pack, before.tile_cols)


def test_larger_clusters_where_measured():
    args = (32, 4096, 1024)
    cases = [
        (torch.bfloat16, False, 8),
        (torch.float32, False, 8),
        (torch.float32, True, 16),
        (torch.bfloat16, True, 0),
    ]
    for dtype, backward, splits in cases:
        shape = strided.staged_shape(*args, dtype, backward, **H100, clustered=True)
        assert shape.clustered == bool(splits) and (shape.splits == splits or not splits)
    # inputs broadcast along outer keep teams of four at most: their tiles take the persistent grid
    for dtype, backward, _ in cases:
        shape = strided.staged_shape(*args, dtype, backward, **H100, clustered=True, broadcast=True)
        assert not shape.clustered and shape.splits > strided.STAGED_FILL_CLUSTER


def test_staged_reads_once_where_the_gpu_can_hold_a_tile():
    held = strided.staged_shape(1, 65536, 2048, torch.bfloat16, False, **H100)
    assert held.held and held.splits > 1
    # 2^20 rows of a 128-byte line: 128 MB a tile, more than all shared memory: streamed
    streamed = strided.staged_shape(1, 1 << 20, 128, torch.bfloat16, False, **H100)
    assert not streamed.held


def test_tier_choice():
    limits = fastsoftmax.backends.cuda.tiers.H100_LIMITS
    assert strided.choose_tier(32, 4096, 1024, torch.bfloat16, False, limits) == "strided_staged"
    assert strided.supports("strided", 1, 5, 2, torch.float32, False, limits)
    assert not strided.supports("strided_staged", 1, 5, 1, torch.float32, False, limits)


def test_dense_log_backward_of_long_axes_takes_the_strided_tier():
    """strided.dense_log_backward_strided: on a GPU of much DRAM bandwidth an SM, the 16-bit
    log-softmax backward over axes past 1024 rows and columns of a 128-byte line or more, on their
    16-byte boundaries, and the float32 one over such axes of one outer index or over long narrow
    blocks of several; the softmax backward, float32 over other outer indices, short axes, narrow
    columns, other GPUs and inputs off their boundaries keep their tiers."""
    limits = fastsoftmax.backends.cuda.tiers.H100_LIMITS
    h200 = dataclasses.replace(limits, dram_gbps=4800.0)
    for dtype in (torch.bfloat16, torch.float16):
        for outer, n, inner in ((1, 8192, 16384), (1, 8192, 8192), (16, 4096, 4096), (32, 4096, 1024)):
            assert strided.choose_tier(outer, n, inner, dtype, True, h200, log=True) == "strided", (n, inner)
            assert strided.choose_tier(outer, n, inner, dtype, True, h200) == "strided_staged", (n, inner)
            assert strided.choose_tier(outer, n, inner, dtype, True, limits, log=True) == "strided_staged"
        for outer, n, inner in ((128, 1024, 1024), (512, 8192, 16), (1024, 16384, 4)):
            tier = strided.choose_tier(outer, n, inner, dtype, True, h200, log=True)
            assert tier == strided.choose_tier(outer, n, inner, dtype, True, h200), (n, inner)
        assert strided.choose_tier(32, 4096, 1024, dtype, True, h200, False, True, log=True) == "strided_staged"
    for n, inner in ((8192, 16384), (8192, 8192), (4096, 4096), (2048, 32)):
        assert strided.choose_tier(1, n, inner, torch.float32, True, h200, log=True) == "strided", (n, inner)
        assert strided.choose_tier(1, n, inner, torch.float32, True, h200) != "strided" or inner == 32
        assert strided.choose_tier(1, n, inner, torch.float32, True, limits, log=True) != "strided" or inner == 32
    for outer, n, inner in ((32, 4096, 1024), (128, 1024, 1024), (1, 1024, 8192)):
        assert strided.choose_tier(outer, n, inner, torch.float32, True, h200, log=True) == "strided_staged"
    # float32 over several outer indices of long narrow blocks (flat_outer_log_backward): the strided
    # tier, whose finish sweeps them flat; not over 8 columns, short blocks, or the softmax backward
    for outer, n, inner in ((128, 16384, 32), (64, 65536, 16), (32, 65536, 16)):
        assert strided.flat_outer_log_backward(outer, n, inner, 4)
        assert strided.choose_tier(outer, n, inner, torch.float32, True, h200, log=True) == "strided"
        assert strided.choose_tier(outer, n, inner, torch.float32, True, h200) == "strided_staged"
        assert strided.choose_tier(outer, n, inner, torch.float32, True, limits, log=True) != "strided"
    for outer, n, inner, itemsize in ((128, 65536, 8, 4), (256, 4096, 32, 4), (128, 16384, 32, 2), (1, 1 << 20, 16, 4)):
        assert not strided.flat_outer_log_backward(outer, n, inner, itemsize), (outer, n, inner, itemsize)
    # off their 16-byte boundaries, float32 keeps its 4-byte staged copies
    assert strided.choose_tier(1, 8192, 8192, torch.float32, True, h200, False, True, log=True) == "strided_staged"


def test_staged_widths():
    s = strided.staged_shape(4, 64, 16, torch.bfloat16, False, **H100)
    assert strided.staged_widths(s, 4, 64, 16, ((1024, 16, 1), (1024, 16, 1)), 2) == (True, 16)
    # an odd outer stride: narrower copies
    assert strided.staged_widths(s, 4, 64, 16, ((1027, 16, 1), (1024, 16, 1)), 2) == (True, 2)
    s = strided.staged_shape(2, 300, 200, torch.float32, False, **H100)
    # 200 columns in tiles of 32: rows of each tile, 16-byte copies
    assert strided.staged_widths(s, 2, 300, 200, ((60000, 200, 1), (60000, 200, 1)), 4) == (False, 16)


def test_tensors_whose_rows_lie_at_several_phases_take_the_strided_tier():
    from types import SimpleNamespace

    limits = SimpleNamespace(**H100)
    args = (32, 4096, 1024, torch.bfloat16, False, limits)
    assert strided.choose_tier(*args) == "strided_staged"
    # off a 16-byte boundary, rows at different phases: the staged tiles would copy 2 bytes at a time
    assert strided.choose_tier(*args, aligned=False, window=False) == "strided"
    # on its boundary, rows at different phases (row strides of no whole number of 16-byte pieces)
    assert strided.choose_tier(*args, aligned=True, window=False) == "strided"
    # float32 copies 4 bytes at a time there (measured faster than the strided tier)
    assert strided.choose_tier(32, 4096, 1023, torch.float32, False, limits, True, False) == "strided_staged"


@pytest.fixture
def table_says_cuda(monkeypatch):
    """Both kernel backends available and the measured table naming the CUDA backend everywhere:
    what is left is the dispatch's own rules."""
    dispatch.clear_caches()
    monkeypatch.setattr(dispatch, "unavailable_reason", lambda name, device_type, index: None)
    monkeypatch.setattr(dispatch, "_table_choice", lambda *args, **where: "cuda")
    yield
    monkeypatch.undo()
    dispatch.clear_caches()


def test_staggered_rows_go_to_triton_where_its_tiles_hold_the_axis(table_says_cuda):
    for n, inner, backward, dtype, name in (
        (21, 263169, False, torch.bfloat16, "triton"),
        (2048, 263169, False, torch.float16, "triton"),
        (2049, 263169, False, torch.bfloat16, "cuda"),
        (1025, 263169, True, torch.bfloat16, "cuda"),
        # float32: Triton's tiles of scalar loads over inner sizes of 128 or more where they hold
        # the axis and the GPU time outlasts a Triton launch's host time, else the 4-byte copies
        (21, 263169, False, torch.float32, "cuda"),  # strided_warp's spread columns (the next test)
        (64, 4097, False, torch.float32, "triton"),
        (21, 263169, True, torch.float32, "cuda"),
        (64, 4097, True, torch.float32, "triton"),
        (150, 16129, False, torch.float32, "cuda"),
        (150, 16129, True, torch.float32, "triton"),
        (2048, 4097, False, torch.float32, "triton"),
        (2049, 4097, False, torch.float32, "cuda"),
        (1025, 4097, True, torch.float32, "cuda"),
        (150, 200, False, torch.float32, "cuda"),  # 15 MB moved: launch-bound
        (16, 4097, False, torch.float32, "cuda"),
        (21, 127, False, torch.float32, "cuda"),
    ):
        args = ("auto", "cuda", 0, dtype, 64, n, inner, backward)
        assert dispatch._choose_backend(*args, True, False, False) == name, (n, backward, dtype)
        if dtype != torch.float32:  # (float32 in one phase: the next test)
            assert dispatch._choose_backend(*args, True, False, True) == "cuda"  # rows in one phase


def test_staggered_rows_go_to_spread_columns_where_they_lead(table_says_cuda):
    """Rows at several 16-byte phases (odd H x W): strided_warp's spread columns for the float32
    forward over axes of 17 to 256 and backward up to 96, the 16-bit forward over 129 to 256, on
    inner sizes of WARP_SPREAD_AUTO_MIN_INNER or more; never the 16-bit backward."""
    from fastsoftmax.backends.cuda import strided, tiers

    limits = tiers.H100_LIMITS
    for n, inner, backward, dtype, taken in (
        (150, 16129, False, torch.bfloat16, True),
        (256, 16129, False, torch.float16, True),
        (128, 16129, False, torch.bfloat16, False),
        (257, 16129, False, torch.bfloat16, False),
        (21, 263169, False, torch.bfloat16, False),
        (150, 16129, True, torch.bfloat16, False),
        (21, 263169, True, torch.float16, False),
        (150, 4095, False, torch.bfloat16, False),  # inner too short
        (17, 16129, False, torch.float32, True),
        (256, 16129, False, torch.float32, True),
        (16, 16129, False, torch.float32, False),
        (257, 16129, False, torch.float32, False),
        (21, 263169, True, torch.float32, True),
        (96, 16129, True, torch.float32, True),
        (97, 16129, True, torch.float32, False),
    ):
        assert strided.takes_spread_columns(n, inner, dtype, backward) is taken, (n, inner, dtype, backward)
        tier = strided.choose_tier(8, n, inner, dtype, backward, limits, True, False)
        assert (tier == "strided_warp") is taken, (n, inner, dtype, backward, tier)
        if taken:
            args = ("auto", "cuda", 0, dtype, 8, n, inner, backward)
            assert dispatch._choose_backend(*args, True, False, False) == "cuda"
    # rows in one phase: the rules for packs
    assert strided.choose_tier(8, 150, 16129, torch.float32, False, limits, True, True) != "strided_warp"
    # but the float32 forward over few classes of smaller tensors leaves them for Triton's capped
    # scalar tiles (dispatch._float32_few_classes_to_triton), not its backward, nor 32 classes, nor
    # tensors past FEW_CLASSES_TRITON's elements
    most_n, most_numel = dispatch.FEW_CLASSES_TRITON
    for outer, n, inner, backward, backend in (
        (4, 21, 263169, False, "triton"),
        (64, 21, 16129, False, "triton"),
        (8, most_n, 65025, False, "triton"),
        (8, 21, 263169, False, "cuda"),  # 44M elements
        (8, 32, 65025, False, "cuda"),
        (4, 21, 263169, True, "cuda"),
    ):
        assert strided.takes_spread_columns(n, inner, torch.float32, backward)
        args = ("auto", "cuda", 0, torch.float32, outer, n, inner, backward)
        assert dispatch._choose_backend(*args, True, False, False) == backend, (outer, n, inner, backward)
        assert (outer * n * inner <= most_numel) is (backend == "triton" or backward or n > most_n)


def test_float32_on_boundaries_goes_to_triton_wide_tiles_over_axes_of_33_to_1024(table_says_cuda):
    for outer, n, inner, dtype, name in (
        (128, 1024, 1024, torch.float32, "triton"),
        (8, 150, 16384, torch.float32, "triton"),
        (4096, 33, 512, torch.float32, "triton"),
        (16, 32, 262144, torch.float32, "cuda"),  # shorter axes: the CUDA tiles
        (64, 1025, 1024, torch.float32, "cuda"),
        (4096, 64, 127, torch.float32, "cuda"),  # narrower inner sizes
        (2, 150, 1024, torch.float32, "cuda"),  # 2.5 MB moved: launch-bound
        (128, 1024, 1024, torch.bfloat16, "cuda"),  # 16-bit types keep the table's choice
    ):
        for backward in (False, True):
            args = ("auto", "cuda", 0, dtype, outer, n, inner, backward)
            assert dispatch._choose_backend(*args, True, False, True) == name, (outer, n, inner, dtype)
            assert dispatch._choose_backend(*args, False, False, True) == "cuda"  # off a boundary


def test_short_16_bit_axes_on_boundaries_go_forward_to_triton_wide_tiles(table_says_cuda):
    def chosen(dtype, outer, n, inner, backward=False, aligned=True, stepped=False):
        args = ("auto", "cuda", 0, dtype, outer, n, inner)
        return dispatch._choose_backend(*args, backward=backward, aligned=aligned, stepped=stepped, window=True)

    for outer, n, inner, dtype, name in (
        (512, 32, 1024, torch.bfloat16, "triton"),
        (64, 64, 8192, torch.float16, "triton"),
        (1024, 48, 2048, torch.float16, "triton"),  # 192 MiB: no upper bound
        (2048, 40, 1024, torch.bfloat16, "cuda"),
        (128, 40, 4096, torch.bfloat16, "cuda"),  # 40 of a tile's 64 rows: too few
        (256, 47, 2048, torch.float16, "cuda"),
        (256, 48, 2048, torch.float16, "triton"),  # three quarters: enough
        (1024, 31, 1024, torch.bfloat16, "cuda"),  # shorter axes
        (256, 65, 1024, torch.bfloat16, "cuda"),  # longer axes
        (4096, 48, 127, torch.bfloat16, "cuda"),  # narrower inner sizes
        (448, 32, 1024, torch.bfloat16, "cuda"),  # 59 MB moved: launch-bound (480: not)
        (480, 32, 1024, torch.bfloat16, "triton"),
    ):
        problem = (dtype, outer, n, inner)
        assert chosen(*problem) == name, problem
        assert chosen(*problem, backward=True) == "cuda"  # the backward keeps the table's choice
        assert chosen(*problem, aligned=False) == "cuda"
        assert chosen(*problem, stepped=True) == "cuda"


def test_triton_tiles_of_scalar_loads():
    # rows at several 16-byte phases load element by element: few-class axes take tiles of whole
    # columns a thread (triton.SCALAR_TILE_*); vector loads, longer axes and narrow inner keep theirs
    from fastsoftmax.backends import triton as tb

    def blocks(n, inner, itemsize, scalar, backward=False):
        config = dict(tb.plan("tile", 16, n, inner, itemsize, backward, 132, False, scalar)["configs"][0])
        return config["BLOCK_O"], config["BLOCK_I"], config["num_warps"]

    assert blocks(21, 263169, 2, True) == (1, 128, 4)
    assert blocks(21, 263169, 2, True, backward=True) == (1, 128, 4)
    assert blocks(21, 263169, 4, True) == (1, 128, 8)
    assert blocks(64, 4097, 2, True) == (1, 64, 4)
    assert blocks(64, 4097, 4, True) == (1, 128, 16)
    # longer axes over wide inner sizes: 8192-element tiles, wider for at least 128 bytes of float32
    # columns (32 bytes of 16-bit ones) up to 32768 elements forward and 16384 backward, 32 elements
    # a thread up to 16 warps; the 16-bit backward keeps TILE_TARGET elements, 16 a thread
    assert blocks(150, 16129, 4, True) == (1, 32, 8)
    assert blocks(150, 16129, 4, True, backward=True) == (1, 32, 8)
    assert blocks(96, 65025, 4, True) == (1, 64, 8)
    assert blocks(300, 3969, 4, True) == (1, 32, 16)
    assert blocks(1000, 961, 4, True) == (1, 32, 16)
    assert blocks(1000, 961, 4, True, backward=True) == (1, 16, 16)
    assert blocks(150, 16129, 2, True) == (1, 32, 8)
    assert blocks(300, 3969, 2, True) == (1, 16, 8)
    assert blocks(2000, 1089, 2, True) == (1, 16, 16)
    assert blocks(150, 16129, 2, True, backward=True) == (1, 16, 8)
    for n, inner, scalar in ((21, 263168, False), (16, 4097, True), (21, 100, True), (150, 100, True)):
        for itemsize in (2, 4):
            assert blocks(n, inner, itemsize, scalar) == blocks(n, inner, itemsize, False), (n, inner, scalar)


def test_triton_wide_tiles_of_vector_loads():
    # 16-byte loads over inner sizes of 128 or more and axes past 16: 4096 elements or more for at
    # least 64 bytes of columns forward (32 columns backward), 64 elements a thread, up to 16 warps
    from fastsoftmax.backends import triton as tb

    def blocks(outer, n, inner, itemsize, backward=False):
        config = dict(tb.plan("tile", outer, n, inner, itemsize, backward, 132, False, False)["configs"][0])
        return config["BLOCK_O"], config["BLOCK_I"], config["num_warps"]

    assert blocks(16, 21, 262144, 4) == (1, 128, 2)
    assert blocks(8, 150, 16384, 4) == (1, 16, 2)
    assert blocks(8, 150, 16384, 4, backward=True) == (1, 32, 4)
    assert blocks(8, 150, 16384, 2) == (1, 32, 4)
    assert blocks(128, 1024, 1024, 4) == (1, 16, 8)
    assert blocks(128, 1024, 1024, 2) == (1, 32, 16)
    assert blocks(16, 21, 262144, 2, backward=True) == (1, 128, 2)
    assert blocks(128, 1024, 1024, 2, backward=True) == (1, 16, 8)  # the backward's register tile
    # narrower inner sizes and axes of 16 or fewer keep the rule of TILE_TARGET elements
    assert blocks(64, 512, 100, 4) == (1, 8, 8)
    assert blocks(16, 16, 4096, 4) == (8, 32, 8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_triton_wide_tiles(dtype):
    # through the public API, poisoned outputs: a wide tile of 16-byte loads (64 x 64 here, the
    # last tile of each outer index partly past inner)
    x = (torch.randn(2, 40, 136, device=DEVICE) * 3).to(dtype)
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        check_forward(op(x, 1, backend="triton"), x, 1, log)
        leaf, dy = x.detach().requires_grad_(), torch.randn(x.shape, device=DEVICE).to(dtype)
        (dx,) = torch.autograd.grad(op(leaf, 1, backend="triton"), leaf, dy)
        check_backward(dx, x, dy, 1, log)


@pytest.mark.parametrize("classes", [21, 150], ids=["whole-columns", "long-axis"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_triton_scalar_tiles(dtype, classes):
    # NCHW over C with an odd H x W (rows at several phases), through the public API, poisoned
    # outputs: few classes take the tiles of whole columns a thread, more the SCALAR_LONG_* tiles
    x = (torch.randn(2, classes, 11, 13, device=DEVICE) * 3).to(dtype)
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        check_forward(op(x, 1, backend="triton"), x, 1, log)
        leaf, dy = x.detach().requires_grad_(), torch.randn(x.shape, device=DEVICE).to(dtype)
        (dx,) = torch.autograd.grad(op(leaf, 1, backend="triton"), leaf, dy)
        check_backward(dx, x, dy, 1, log)


def test_triton_tile_pieces():
    # a strided tile may hold an axis just past a power of two as two pieces, rows [0, BLOCK_N) and
    # [BLOCK_N, BLOCK_N + BLOCK_N2), fewer in all than the next power of two
    from fastsoftmax.backends import triton as tb

    expected = {1: (1, 0), 2: (2, 0), 3: (2, 1), 5: (4, 1), 7: (8, 0), 8: (8, 0), 12: (8, 4), 19: (16, 4)}
    expected.update({21: (16, 8), 24: (16, 8), 25: (32, 0), 96: (64, 32), 100: (128, 0), 150: (128, 32)})
    expected.update({1025: (1024, 1), 1536: (1024, 512), 1537: (2048, 0)})
    for n, pieces in expected.items():
        assert tb.tile_pieces(n) == pieces, n
        assert pieces[0] + pieces[1] >= n
    assert tb.tile_pieces(40, 0.25) == (32, 8) and tb.tile_pieces(48, 0.25) == (64, 0)

    def pieces(outer, n, inner, itemsize, backward, scalar, high_bandwidth=True):
        p = tb.plan("tile", outer, n, inner, itemsize, backward, 132, False, scalar, high_bandwidth)
        config = dict(p["configs"][0])
        return config["BLOCK_N"], config["BLOCK_N2"], config["BLOCK_I"], config["num_warps"]

    # by default the 16-bit scalar tiles of whole columns: any second piece where each thread holds
    # whole columns (128 threads over 128 columns up to 32 classes), at most a quarter of the first
    # where two threads share a column (64 columns from 33)
    assert tb.TWO_PIECE_TILES == "16bit"
    for high_bandwidth in (False, True):  # the backward on any GPU, a tail of 1 in 32 forward too
        assert pieces(16, 21, 263169, 2, True, True, high_bandwidth) == (16, 8, 128, 4)  # the threads of 32 rows
        assert pieces(16, 40, 263169, 2, True, True, high_bandwidth) == (32, 8, 64, 4)
        assert pieces(8, 48, 263169, 2, True, True, high_bandwidth) == (64, 0, 64, 4)
        assert pieces(16, 33, 66049, 2, False, True, high_bandwidth) == (32, 1, 64, 4)  # a tail of 1 in 32
    assert pieces(16, 21, 263169, 2, False, True) == (16, 8, 128, 4)
    assert pieces(16, 40, 263169, 2, False, True) == (32, 8, 64, 4)
    # the forward on a GPU of less DRAM bandwidth an SM (an H100): a tail of at most an eighth
    assert pieces(16, 21, 263169, 2, False, True, False) == (32, 0, 128, 4)
    assert pieces(16, 19, 263169, 2, False, True, False) == (32, 0, 128, 4)
    assert pieces(16, 40, 263169, 2, False, True, False) == (64, 0, 64, 4)
    assert pieces(16, 17, 263169, 2, False, True, False) == (16, 1, 128, 4)
    assert pieces(16, 21, 263169, 4, False, True) == (32, 0, 128, 8)  # float32
    assert pieces(8, 150, 16129, 2, True, True) == (256, 0, 16, 8)  # the long axes' scalar tiles
    assert pieces(16, 21, 262144, 2, False, False)[:2] == (32, 0)  # 16-byte loads
    assert pieces(64, 21, 1, 4, False, False)[:2] == (32, 0)  # rows (inner 1)
    # a GPU's class from the memory clock (kHz) and bus width its driver reports: an H100 SXM's 2619 MHz
    # over 5120 bits (3352 GB/s, 25 an SM) no, an H200's 3201 MHz over 6144 (4916, 37) yes, a driver
    # that reports neither yes (HIGH_DRAM_GBPS_PER_SM); the interpreter plans as for an H100
    from fastsoftmax.backends.base import dram_gbps, high_dram_bandwidth_per_sm

    assert round(dram_gbps(2619000, 5120)) == 3352 and dram_gbps(0, 5120) is None
    assert not high_dram_bandwidth_per_sm(dram_gbps(2619000, 5120), 132)
    assert high_dram_bandwidth_per_sm(dram_gbps(3201000, 6144), 132)
    assert high_dram_bandwidth_per_sm(dram_gbps(0, 0), 132)
    assert tb._high_bandwidth(-1) is False


@pytest.mark.parametrize("two_pieces", ["all", "none"], ids=["two-pieces", "one-piece"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_triton_tiles_of_two_pieces(dtype, two_pieces, monkeypatch):
    # through the public API, poisoned outputs, forward and backward, the axis in one piece and in
    # two: the row maximum in the second piece, a column of -inf but in the second piece, a column
    # of -inf throughout (NaN, as torch), a NaN in the second piece only, a +inf in the first
    from fastsoftmax.backends import triton as tb

    monkeypatch.setattr(tb, "TWO_PIECE_TILES", two_pieces)
    tb.plan.cache_clear()
    dispatch.clear_caches()
    try:
        for shape in ((2, 21, 7), (3, 5, 40), (1, 150, 9), (2, 3, 13, 5)):
            x = (torch.randn(shape, device=DEVICE) * 3).to(dtype)
            n = shape[1]
            x[:, n - 1, 0] = 40.0
            x[:, : n - 1, 1] = float("-inf")
            x[:, :, 2] = float("-inf")
            x[0, n - 1, 3] = float("nan")
            x[-1, 0, 4] = float("inf")
            for log in (False, True):
                op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
                check_forward(op(x, 1, backend="triton"), x, 1, log)
                finite = x.nan_to_num(0.0, 5.0, -5.0)
                leaf, dy = finite.detach().requires_grad_(), torch.randn(shape, device=DEVICE).to(dtype)
                (dx,) = torch.autograd.grad(op(leaf, 1, backend="triton"), leaf, dy)
                check_backward(dx, finite, dy, 1, log)
    finally:
        tb.plan.cache_clear()
        dispatch.clear_caches()


def test_triton_tile_offsets_width():
    # the tile kernels compute element offsets in 32 bits unless some element of a view lies 2^31 or
    # more elements past its pointer (strides and sizes alone decide: no tensor that large is needed)
    # or the plan asks for 64 bits (below)
    from fastsoftmax.backends import triton as tb

    last = (1 << 31) - 1
    assert not tb._wide_offsets(2, 21, 128, (last - 20 * 128 - 127, 128, 1), (21 * 128, 128, 1))
    assert tb._wide_offsets(2, 21, 128, (21 * 128, 128, 1), (last - 20 * 128 - 126, 128, 1))
    assert tb._wide_offsets(65537, 32768, 1, (32768, 1, 1), (32768, 1, 1))
    assert not tb._wide_offsets(1, 65536, 32768, (0, 32768, 1))  # the last element: 2^31 - 1
    assert not tb._wide_offsets(0, 21, 128, (0, 128, 1))  # empty
    # and where measured faster, whatever the size: the 16-bit backward of the scalar tiles whose
    # threads hold whole columns (axes of 17-32), not of those sharing them (33-64)
    for n in (17, 21, 32):
        assert tb.plan("tile", 16, n, 263169, 2, True, 132, False, True)["offsets_64"]
    cases = ((21, 263169, 2, False), (21, 263169, 4, True), (150, 16129, 2, True), (33, 66049, 2, True))
    for n, inner, itemsize, backward in cases + ((40, 263169, 2, True), (64, 263169, 2, True)):
        assert not tb.plan("tile", 16, n, inner, itemsize, backward, 132, False, True)["offsets_64"]
    # and rows where measured faster (row_offsets_64): the backward of rows of 17-100 (softmax and
    # log-softmax, every type) and the 16-bit forward of rows of 500-1025, as the launch takes them
    assert tb.ROW_BACKWARD_OFFSETS_64_COLS == (17, 100) and tb.ROW_FORWARD_16BIT_OFFSETS_64_COLS == (500, 1025)
    for n, itemsize, backward, log, tier in (
        (17, 2, True, False, "tile"),
        (65, 2, True, True, "tile"),
        (100, 4, True, False, "tile"),
        (500, 2, False, False, "tile"),
        (999, 2, False, True, "tile"),
        (1025, 2, False, False, "row"),
    ):
        rows = (1 << 16, n, 1)
        p = tb.plan(tier, *rows, itemsize, backward, 132, log)
        strides = (n, 1, 1) * 2 + (n, 1) if backward else (n, 1, 1, n, 1)
        assert p["offsets_64"] and tb._offsets_64(p, rows, strides, backward), (n, itemsize, backward)
    for n, itemsize, backward, tier in (
        (3, 2, True, "tile"),
        (16, 4, True, "tile"),
        (101, 2, True, "tile"),
        (127, 4, True, "tile"),
        (999, 2, True, "tile"),
        (100, 2, False, "tile"),
        (499, 2, False, "tile"),
        (999, 4, False, "tile"),
        (1026, 2, False, "row"),
        (4096, 4, True, "row"),
        (16384, 2, False, "row"),
    ):
        rows = (1 << 10, n, 1)
        p = tb.plan(tier, *rows, itemsize, backward, 132)
        strides = (n, 1, 1) * 2 + (n, 1) if backward else (n, 1, 1, n, 1)
        assert not p["offsets_64"] and not tb._offsets_64(p, rows, strides, backward), (n, itemsize, backward)


def test_triton_tile_register_caps(monkeypatch):
    """The 16-bit log-softmax backward of the scalar tiles of whole columns compiles under
    SCALAR_TILE_BACKWARD_MAXNREG["log_softmax"], the softmax backward under its "softmax" cap where
    that is set (it is not by default), and the float32 forward of the scalar tiles over axes of at
    most SCALAR_TILE_F32_FORWARD_CAPPED_MAX_N rows under SCALAR_TILE_F32_FORWARD_MAXNREG; no other
    tile takes a cap."""
    from fastsoftmax.backends import triton as tb

    def options(n, itemsize, backward, log, scalar=True):
        return dict(tb.plan("tile", 16, n, 263169, itemsize, backward, 132, log, scalar)["configs"][0])

    def uncapped(*cases):
        return all("maxnreg" not in options(*case) for case in cases)

    for n in (17, 21, 32):
        assert options(n, 2, True, True)["maxnreg"] == tb.SCALAR_TILE_BACKWARD_MAXNREG["log_softmax"]
    for n in (17, 19, 21, tb.SCALAR_TILE_F32_FORWARD_CAPPED_MAX_N):
        for log in (False, True):
            assert options(n, 4, False, log)["maxnreg"] == tb.SCALAR_TILE_F32_FORWARD_MAXNREG
    assert tb.SCALAR_TILE_BACKWARD_MAXNREG["softmax"] is None
    assert uncapped((21, 2, True, False), (21, 2, False, True), (21, 4, True, True), (40, 2, True, True))
    assert uncapped((21, 2, True, True, False), (21, 4, False, False, False), (48, 4, False, False))
    monkeypatch.setattr(tb, "SCALAR_TILE_F32_FORWARD_MAXNREG", None)
    monkeypatch.setattr(tb, "SCALAR_TILE_BACKWARD_MAXNREG", {"log_softmax": 64, "softmax": 72})
    tb.plan.cache_clear()
    try:
        assert options(21, 2, True, False)["maxnreg"] == 72
        assert uncapped((21, 4, False, True), (21, 4, True, False), (21, 2, False, False), (40, 2, True, False))
    finally:
        tb.plan.cache_clear()  # plans made under the settings above must not outlive them


def _check_triton_both_ways(problems, dtype: torch.dtype) -> None:
    """Softmax and log-softmax of fresh inputs of each (shape, dim) in ``problems`` on the Triton
    backend, forward and backward through autograd, against float64."""
    for shape, dim in problems:
        x = (torch.randn(shape, device=DEVICE) * 3).to(dtype)
        for log in (False, True):
            op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
            check_forward(op(x, dim, backend="triton"), x, dim, log)
            leaf, dy = x.detach().requires_grad_(), torch.randn(shape, device=DEVICE).to(dtype)
            (dx,) = torch.autograd.grad(op(leaf, dim, backend="triton"), leaf, dy)
            check_backward(dx, x, dy, dim, log)


@pytest.mark.parametrize("wide", [False, True], ids=["32-bit", "64-bit"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_triton_tiles_with_either_offset_width(dtype, wide, monkeypatch):
    # the tile kernels on small problems of both layouts (rows, a strided axis, scalar tiles), forward
    # and backward through the public API: as chosen (32-bit offsets, but 64-bit for the backward of
    # rows of 96, tb.row_offsets_64, and the 16-bit backward of the scalar tiles), and with the 64-bit
    # form forced (what views past 2^31 take); rows of a multiple of 16, which the realigned kernels
    # leave to the tile kernels
    from fastsoftmax.backends import triton as tb

    launched = []
    original = tb.launch

    def spy(kernel, programs, tensors, scalars, config, *rest):
        if "tile" in kernel.__name__:
            backward = kernel.__name__ == "softmax_bwd_tile"
            launched.append((backward, scalars[2], dict(config)["WIDE"]))  # scalars: outer, n, inner, strides
        return original(kernel, programs, tensors, scalars, config, *rest)

    monkeypatch.setattr(tb, "launch", spy)
    if wide:
        monkeypatch.setattr(tb, "_wide_offsets", lambda *args: True)
    dispatch.clear_caches()  # repeated calls' plans hold the offset width worked out when first made
    _check_triton_both_ways((((37, 96), -1), ((6, 40, 24), 1), ((2, 21, 11, 13), 1)), dtype)
    # 64-bit where forced, or for the backward of rows and the 16-bit backward of the scalar tiles
    # (inner 11 x 13: rows at several 16-byte phases)
    assert {inner for _, inner, _ in launched} == {1, 24, 143} and any(b for b, _, _ in launched)
    for backward, inner, got in launched:
        planned = backward and (inner == 1 or (inner == 143 and dtype == torch.bfloat16))
        assert got == (wide or planned), launched


def _views():
    base = torch.randn(6, 24, 10, device=DEVICE) * 3
    yield "contiguous", base
    yield "transpose", base.transpose(1, 2)
    yield "step", torch.randn(12, 24, 10, device=DEVICE)[::2]
    yield "step_inner", torch.randn(6, 24, 20, device=DEVICE)[..., ::2]
    yield "offset", torch.randn(6 * 24 * 10 + 1, device=DEVICE)[1:].view(6, 24, 10)
    yield "expand", torch.randn(1, 24, 10, device=DEVICE).expand(6, 24, 10)
    yield "channels_last", torch.randn(2, 5, 4, 3, device=DEVICE).to(memory_format=torch.channels_last)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("name,x", list(_views()), ids=[v[0] for v in _views()])
def test_views_triton(name, x, dtype):
    x = x.to(dtype)
    before = x.clone()
    for dim in range(x.dim()):
        log = dim % 2 == 1
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        y = op(x, dim, backend="triton")
        check_forward(y, x, dim, log)
        if name != "expand":
            leaf = x.detach().requires_grad_()
            dy = torch.randn(x.shape, device=DEVICE).to(dtype)
            (dx,) = torch.autograd.grad(op(leaf, dim, backend="triton"), leaf, dy)
            check_backward(dx, x, dy, dim, log)
    assert torch.equal(x, before)


def test_staged_ctas_per_sm_is_tuning_and_so_part_of_every_plan_key():
    # a thread sweeping the staged tier's CTAs per SM must not hand its plans to other threads:
    # the setting lives in the tuning, which every CUDA plan key holds
    import torch

    from fastsoftmax.backends.cuda import strided, tiers

    assert tiers.current_tuning().staged_ctas_per_sm is None
    with tiers.tuned(staged_ctas_per_sm=3):
        tuning = tiers.current_tuning()
    assert tuning.staged_ctas_per_sm == 3 and tuning != tiers.DEFAULT_TUNING
    assert tiers.current_tuning() is tiers.DEFAULT_TUNING
    h100 = (228 * 1024, 227 * 1024, 132)
    one, eight = (strided.staged_shape(1, 40001, 4, torch.float32, False, *h100, c) for c in (1, 8))
    assert one != eight and one.grid < eight.grid


def test_staged_stagger_is_tuning_within_its_bits():
    # the wait travels in six bits of the staged geometry: a tuning outside them is refused, and
    # one inside replaces the rule (a wait for persistent teams that walk enough tiles) everywhere
    import pytest

    from fastsoftmax.backends.cuda import strided, tiers

    for wait_us in (-1, strided.STAGED_STAGGER_MAX_US + 1, 2.5, True):
        with pytest.raises(ValueError, match=f"staged_stagger_us={wait_us}"):
            tiers.Tuning(staged_stagger_us=wait_us)
    assert 0 < strided.STAGED_STAGGER_US <= strided.STAGED_STAGGER_MAX_US
    least = strided.STAGED_STAGGER_MIN_ROUNDS
    for persistent in (False, True):
        for rounds in (1, least - 1, least, 10 * least):
            rule = strided.staged_stagger_us(persistent, rounds, tiers.DEFAULT_TUNING)
            assert rule == (strided.STAGED_STAGGER_US if persistent and rounds >= least else 0)
            assert strided.staged_stagger_us(persistent, rounds, tiers.Tuning(staged_stagger_us=9)) == 9
            assert strided.staged_stagger_us(persistent, rounds, tiers.Tuning(staged_stagger_us=0)) == 0


@pytest.mark.parametrize("tier", ["tile", "online", "split", "relay"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_stepped_inputs_triton(tier, dtype):
    # x, y and dy skipping every other (or third) element along inner, read where they lie by each
    # Triton tier; outputs dense
    from fastsoftmax import dispatch

    def stepped(values, step):
        return torch.empty(values.shape[:-1] + (step * values.shape[-1],), dtype=dtype, device=DEVICE)[
            ..., ::step
        ].copy_(values)

    for step, log in ((2, False), (3, True)):
        x = stepped(torch.randn(3, 300, 20, device=DEVICE) * 3, step)
        y = stepped(softmax64(x, 1, log), step)
        dy = stepped(torch.randn(x.shape, device=DEVICE), step)
        with dispatch.forced("triton", tier):
            out = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, 1)
            dx = fastsoftmax.softmax_backward(dy, y, 1, log=log)
        check_forward(out, x, 1, log)
        check_backward(dx, x, dy, 1, log)
        assert out.is_contiguous() and dx.is_contiguous()


def test_a_strided_plan_is_kept_to_inputs_on_a_16_byte_boundary(monkeypatch):
    # the tier of a strided problem depends on alignment, so a remembered plan of an aligned call
    # must not serve an offset view of the same shape and strides
    from fastsoftmax import dispatch

    dispatch.clear_caches()
    seen = []
    resolve = dispatch.resolve
    monkeypatch.setattr(dispatch, "resolve", lambda *args: (seen.append(args[7]), resolve(*args))[1])
    flat = torch.randn(4 * 40 * 6 + 4, device=DEVICE)
    aligned, offset = flat[:960].view(4, 40, 6), flat[1:961].view(4, 40, 6)
    for x in (aligned, aligned, offset, offset):
        check_forward(fastsoftmax.softmax(x, 1, backend="triton"), x, 1, False)
        y = x.detach().requires_grad_()
        dy = torch.randn_like(x)
        (dx,) = torch.autograd.grad(fastsoftmax.softmax(y, 1, backend="triton"), y, dy)
        check_backward(dx, x, dy, 1, False)
    # resolved: the first aligned forward and backward, then every forward of an offset view (the
    # backward's y and dy are fresh tensors, aligned: their plan serves them)
    assert seen == [True, True, False, False, False, False]
    dispatch.clear_caches()


def _broadcast_cases(dtype):
    """(input, dim, the (outer, n, inner) the kernels see): inputs broadcast along dims besides
    dim. Those whose layout folds are read where they lie, whole; the others one slice a call."""

    def rand(*shape):
        return torch.randn(shape, device=DEVICE).to(dtype)

    yield rand(1, 24, 10).expand(6, 24, 10), 1, (6, 24, 10)  # folds: outer of stride 0
    # two broadcast dims folding into outer, but a dense output cannot follow that order: one slice
    yield rand(1, 24, 1, 5).expand(3, 24, 4, 5), 1, (1, 24, 5)
    yield rand(1, 24, 10).expand(6, 24, 10), 2, (24, 10, 1)  # rows repeated: one slice
    yield rand(4, 24, 1).expand(4, 24, 7), 1, (4, 24, 1)  # broadcast innermost: one slice
    cl = rand(1, 6, 4, 3).to(memory_format=torch.channels_last)
    yield cl.expand(5, 6, 4, 3), 1, (12, 6, 1)  # channels-last, broadcast over the batch: one slice


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("case", range(5))
def test_broadcast_inputs(case, dtype, monkeypatch):
    # forward, and backward with y and dy both broadcast, through the public API: right, never
    # writing the input, the output laid out as torch.empty_like(input), and the problem the
    # kernels see that of one slice wherever the layout does not fold (the rest copied out)
    from fastsoftmax import _layout, dispatch

    x, dim, problem = list(_broadcast_cases(dtype))[case]
    part = _layout.first_slice(x, _layout.broadcast_dims(dim, x))
    # y and dy as one slice each, broadcast as x is
    ys = {log: torch.empty_like(part).copy_(softmax64(part, dim, log)).expand(x.shape) for log in (False, True)}
    dy = torch.randn(part.shape, device=DEVICE).to(dtype).expand(x.shape)
    before = x.clone()
    dispatch.clear_caches()
    seen = []
    resolve = dispatch.resolve
    monkeypatch.setattr(dispatch, "resolve", lambda *args: (seen.append(tuple(args[3:6])), resolve(*args))[1])
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        for _ in range(2):  # the second call takes the remembered plan
            y = op(x, dim, backend="triton")
            check_forward(y, x, dim, log)
            assert y.stride() == torch.empty_like(x).stride()
            dx = fastsoftmax.softmax_backward(dy, ys[log], dim, log=log, backend="triton")
            check_backward(dx, x, dy, dim, log)
            assert dx.stride() == torch.empty_like(ys[log]).stride()
    assert torch.equal(x, before), "a broadcast input was written"
    assert seen and set(seen) == {problem}, seen
    dispatch.clear_caches()


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.float16], ids=str)
@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize(
    "outer,n,inner", [(32, 4096, 1023), (32, 4096, 1024), (3, 5000, 600), (2, 40000, 520), (400, 64, 2048)]
)
def test_window_geometry(outer, n, inner, dtype, backward):
    # rows staged in their 16-byte windows: 16-byte packs whatever inner is, tiles of whole 128-byte
    # lines of at most one warp's packs, each staged row one 16-byte piece longer than its tile
    itemsize = torch.empty((), dtype=dtype).element_size()
    shape = strided.staged_shape(outer, n, inner, dtype, backward, **H100, clustered=True, window=True)
    assert shape is not None and shape.pack * itemsize == 16
    assert shape.tile_cols % (128 // itemsize) == 0
    assert shape.tile_cols // shape.pack <= strided.STAGED_WINDOW_MAX_PACKS
    assert shape.tile_cols & (shape.tile_cols - 1) == 0  # a row's packs divide a warp
    assert shape.tiles == outer * -(-(inner + shape.pack - 1) // shape.tile_cols)
    assert shape.splits * shape.chunk >= n > (shape.splits - 1) * shape.chunk
    assert shape.smem <= H100["smem_per_block"]
    tensors = 2 if backward else 1
    assert shape.smem >= tensors * shape.stage_rows * (shape.tile_cols + shape.pack) * itemsize


def test_window_fits_and_tier_choice():
    limits = fastsoftmax.backends.cuda.tiers.H100_LIMITS
    dense = lambda outer, n, inner, pitch=None: ((n * (pitch or inner), pitch or inner, 1),) * 2  # noqa: E731
    assert strided.window_fits(1023, dense(32, 4096, 1023, 1024), 2) is None
    assert strided.window_fits(1023, dense(32, 4096, 1023), 2) is None  # rows of 2046 bytes: each its phase
    assert "under" in strided.window_fits(200, dense(32, 4096, 200), 2)  # 400 bytes
    assert "steps" in strided.window_fits(1024, ((8 << 20, 2048, 2), (4 << 20, 1024, 1)), 2)
    args = (32, 4096, 1024, torch.bfloat16, False, limits)
    # off a 16-byte boundary: the window's staged tiles where the inputs share it, else "strided"
    assert strided.choose_tier(*args, aligned=False, window=True) == "strided_staged"
    assert strided.choose_tier(*args, aligned=False, window=False) == "strided"
    assert strided.window_tiles(torch.bfloat16) and not strided.window_tiles(torch.float32)
    assert strided.choose_tier(32, 4096, 200, torch.bfloat16, False, limits, False, True) == "strided"
    assert strided.choose_tier(*args) == "strided_staged"
    # where the staged tiles measured faster than the strided tier (strided.choose_tier): 16-bit
    # types in window tiles, float32 in 4-byte copies, both directions
    for dtype, backward, inner, tier in (
        (torch.bfloat16, True, 1024, "strided_staged"),
        (torch.float16, False, 1023, "strided_staged"),
        (torch.float32, False, 1024, "strided_staged"),
        (torch.float32, True, 1023, "strided_staged"),
        (torch.float32, True, 100, "strided"),  # under STAGED_WINDOW_MIN_INNER_BYTES
    ):
        assert strided.choose_tier(32, 4096, inner, dtype, backward, limits, False, True) == tier, (dtype, backward)
    # on a GPU of much DRAM bandwidth an SM, the 16-bit forward over axes of 256 rows or more takes the
    # strided tier where the rows are whole 16-byte pieces (OFF_BOUNDARY_16BIT_FORWARD_STRIDED_FROM_N)
    h200 = dataclasses.replace(limits, dram_gbps=4800.0)
    assert h200.high_bandwidth_per_sm and not limits.high_bandwidth_per_sm
    for dtype in (torch.bfloat16, torch.float16):
        for n, inner, backward, tier in (
            (256, 1024, False, "strided"),
            (4096, 1024, False, "strided"),
            (8192, 2048, False, "strided"),
            (128, 1024, False, "strided_staged"),
            (4096, 1023, False, "strided_staged"),  # a partial last piece: the windows
            (4096, 1024, True, "strided_staged"),
        ):
            assert strided.choose_tier(32, n, inner, dtype, backward, h200, False, True) == tier, (dtype, n, inner)
            assert strided.choose_tier(32, n, inner, dtype, backward, limits, False, True) == "strided_staged"
        assert strided.choose_tier(32, 4096, 1024, dtype, False, h200) == "strided_staged"  # on its boundaries
    assert strided.choose_tier(32, 4096, 1024, torch.float32, False, h200, False, True) == "strided_staged"


def test_window_instances_have_16_byte_packs():
    names = {i.name for i in strided.all_instances() if getattr(i, "window", False)}
    assert len(names) == 3 * 2 * 2 * 2  # dtype, direction, function, clustered
    for inst in strided.all_instances():
        if getattr(inst, "window", False):
            assert inst.pack * torch.empty((), dtype=inst.dtype).element_size() == 16, inst.name


def test_short_rows_in_one_run_are_not_rows_at_several_phases():
    # (outer, n, 3) in 16-bit types: rows of 6 bytes, each at another phase, but every outer index
    # one contiguous run on its boundary, which the staged tiles copy whole (_layout.flat_run)
    from fastsoftmax import _layout, functional

    for shape, dim, runs in (
        ((64, 256, 3), 1, True),
        ((1024, 512, 4), 1, True),
        ((300000, 4), 0, True),
        ((64, 256, 65), 1, False),  # rows over a 128-byte line: rows of their own
        ((2, 21, 33, 31), 1, False),  # NCHW over C, an odd H x W
        ((63, 256, 3), 1, True),
    ):
        x = torch.randn(shape, dtype=torch.bfloat16)
        x3, y3, _, _ = _layout.canonical_pair(x, dim)
        assert functional._window_aligned((x3,), y3) == runs, shape
    # runs of 24 elements 25 apart: each outer index's run at another phase
    odd_runs = torch.randn(5, 25, dtype=torch.bfloat16)[:, :24].unflatten(1, (8, 3))
    x3, y3, _, _ = _layout.canonical_pair(odd_runs, 1)
    assert x3.stride() == (25, 3, 1) and not functional._window_aligned((x3,), y3)


def test_calls_sharing_a_window_are_told_apart():
    # the inputs off their boundaries by one amount, unit steps, row strides of whole 16-byte pieces
    from fastsoftmax import _layout, functional

    base = torch.randn(8, 64, 1024)
    for view, window in (
        (base[..., 1:], True),  # every row one element in
        (base[..., :-1], False),  # on its boundary (aligned: the plan lays its tiles in the window)
        (torch.randn(8, 64, 1023)[..., 1:], False),  # rows of 1023: each off by another amount
        (torch.randn(8, 64, 2048)[..., 1::2], False),  # a step along inner
    ):
        x3, y3, _, _ = _layout.canonical_pair(view, 1)
        aligned = functional._packable(x3, y3)
        assert (not aligned and functional._window_aligned((x3,), y3)) == window, view.stride()
    y = base[..., 1:]
    y3, dx3, _, _ = _layout.canonical_pair(y, 1)
    dy3, _, _, _ = _layout.canonical_pair(torch.randn(8, 64, 1024)[..., 2:1023], 1)
    assert not functional._window_aligned((y3, dy3), dx3)  # one element in against two


class _StagedFacts:
    sm_count, smem_per_sm, smem_per_block = 132, 228 * 1024, 227 * 1024
    cluster_ctas, arch = 16, "sm_90"
    cluster_launch = launch.DeviceFacts.cluster_launch  # the real rule, over cluster_ctas
    dram_gbps = 3352.3  # an H100's (tiers.H100_LIMITS): the rule for CTAs an SM reads it


class _StagedKernel:
    """Records the launches a strided_staged plan makes, in place of launch.Kernel."""

    launches: list = []

    def __init__(self, function, name, device, nargs, block_x, block_y=1, smem=0, cluster=1, cooperative=False):
        self.cluster, self.cooperative, self.nargs = cluster, cooperative, nargs

    def allow_dynamic_smem(self, smem, static=0):
        pass

    def set_attribute(self, name, value):
        pass

    def blocks_per_sm(self, threads=None, smem=None):
        return 8

    def resident_clusters(self):
        return 16

    def bound(self, grid, tail):
        return lambda pointers, stream: _StagedKernel.launches.append((self, stream, tuple(pointers) + tuple(tail)))


@pytest.mark.parametrize("backward", [False, True])
def test_staged_plan_gives_persistent_teams_the_streams_workspace(monkeypatch, backward):
    """A one-tile-a-team launch passes no workspace; persistent teams (no clusters) get the
    stream's workspace (launch.stream_workspace), with their counters and scratch sized from the
    shape, on every call."""
    from fastsoftmax.backends.cuda import strided, tiers

    asked = []

    def workspace(dev, stream, counter_words, scratch_words):
        asked.append((dev, stream, counter_words, scratch_words))
        return object(), 0x9000 + 16 * len(asked)

    monkeypatch.setattr(strided, "device_facts", lambda dev: _StagedFacts())
    monkeypatch.setattr(strided, "Kernel", _StagedKernel)
    monkeypatch.setattr(strided, "stream_workspace", workspace)
    _StagedKernel.launches = []
    tensors = 3 if backward else 2
    pointers = tuple(0x10000 * (i + 1) for i in range(tensors))
    for shape, teams in (((64, 64, 512), False), ((400, 340, 64), True)):
        strides = ((shape[1] * shape[2], shape[2], 1),) * tensors
        tuning = tiers.Tuning(staged_ctas_per_sm=8, staged_cluster=False)
        key = ("strided_staged", torch.bfloat16, *shape, strides, False, backward, 0, 0, tuning)
        run = strided._staged_tiles(lambda inst, dev: inst.name, key, False, False)
        _StagedKernel.launches, asked[:] = [], []
        run(pointers, 5)
        run(pointers, 5)
        assert [launch[2][:tensors] for launch in _StagedKernel.launches] == [pointers, pointers]
        addresses = [launch[2][tensors] for launch in _StagedKernel.launches]
        geometry = strided.staged_shape(*shape, torch.bfloat16, backward, 228 * 1024, 227 * 1024, 132, 8)
        if not teams:
            assert geometry.splits == 1 and addresses == [0, 0] and asked == []
            continue
        assert geometry.splits > 1 and _StagedKernel.launches[0][0].cooperative
        counters = -(-geometry.tiles // 4) * 4
        scratch = geometry.tiles * geometry.splits * geometry.tile_cols * (1 if backward else 2)
        assert asked == [(0, 5, counters, scratch)] * 2
        assert addresses == [0x9010, 0x9020]


def test_staged_plan_staggers_the_first_wave_of_persistent_teams(monkeypatch):
    """The geometry carries the first wave's wait (bits 48-53) and the teams it spans (54-62): the
    rule's wait for persistent teams that walk enough tiles, none for one tile a cluster, a tuning's
    wait for either; the staged rows (bits 32-47) stay as they were."""
    from fastsoftmax.backends.cuda import strided, tiers

    monkeypatch.setattr(strided, "device_facts", lambda dev: _StagedFacts())
    monkeypatch.setattr(strided, "Kernel", _StagedKernel)
    monkeypatch.setattr(strided, "stream_workspace", lambda *args: (object(), 0x9000))
    shape = (2000, 340, 64)
    strides = ((shape[1] * shape[2], shape[2], 1),) * 2
    pointers = (0x10000, 0x20000)
    for cluster, wait in ((False, None), (True, None), (True, 7), (False, 0)):
        tuning = tiers.Tuning(staged_ctas_per_sm=8, staged_cluster=cluster, staged_stagger_us=wait)
        key = ("strided_staged", torch.bfloat16, *shape, strides, False, False, 0, 0, tuning)
        _StagedKernel.launches = []
        strided._staged_tiles(lambda inst, dev: inst.name, key, False, False)(pointers, 5)
        ((kernel, _, args),) = _StagedKernel.launches
        geometry, splits = args[-3], args[-1]
        planned = strided.staged_shape(*shape, torch.bfloat16, False, 228 * 1024, 227 * 1024, 132, 8, cluster)
        teams = min(16 if cluster else 8 * 132 // splits, planned.grid // splits)
        assert kernel.cooperative != cluster and planned.tiles >= strided.STAGED_STAGGER_MIN_ROUNDS * teams
        expected = wait if wait is not None else (0 if cluster else strided.STAGED_STAGGER_US)
        assert (geometry >> 48) & 0x3F == expected and geometry >> 54 == teams
        assert (geometry >> 32) & 0xFFFF == planned.stage_rows and geometry < 1 << 63


def test_strided_warp_shapes_and_auto_rule():
    """strided_warp's split of a CTA's lanes (strided.warp_columns_shape) and auto's rule
    (strided.takes_warp_columns), without a GPU."""
    from fastsoftmax.backends.cuda import strided, tiers

    # 16-byte packs of bf16: rows of 128 bytes or more where the axis allows, then the fewest wasted
    # slots, then the most row warps past 64 rows and the fewest up to it, then the most lanes; a lane
    # holds the fewest ROWS that cover its rows
    shape = strided.warp_columns_shape(150, 16384, 2, 8, False)
    assert (shape.lanes, shape.row_warps, shape.rows) == (16, 8, 10)
    assert shape.bits == 4 | 3 << 8
    assert strided.warp_columns_shape(150, 16384, 2, 8, True).rows == 5
    assert strided.warp_columns_shape(21, 262144, 2, 8, False) == strided.WarpColumnsShape(16, 1, 12, 2048)
    assert strided.warp_columns_shape(64, 4096, 2, 8, False).row_warps == 1
    # forced rows a lane: the splits they cover, or an error naming them
    assert strided.warp_columns_shape(200, 16384, 2, 8, False, rows=16).rows == 16
    assert strided.warp_columns_shape(150, 16384, 2, 8, True, rows=8).rows == 8
    with pytest.raises(ValueError, match="2 rows a lane"):
        strided.warp_columns_shape(2000, 64, 2, 8, False, rows=2)
    with pytest.raises(ValueError, match="is not one of"):
        strided.warp_columns_shape(150, 16384, 2, 8, False, rows=7)
    # the forward kernel takes a lane's first rows (the next fewer kernel's) as inside the axis:
    # forced rows the axis does not outgrow are refused there, and taken backward
    assert [strided.warp_full_rows(r) for r in strided.WARP_COLUMNS_ROWS[False]] == [0, 2, 3, 4, 5, 6, 8, 10, 12]
    with pytest.raises(ValueError, match="too short for 10 rows"):
        strided.warp_columns_shape(20, 64, 2, 8, False, lanes=8, row_warps=1, rows=10)
    assert strided.warp_columns_shape(33, 64, 2, 8, False, lanes=8, row_warps=1, rows=10).rows == 10
    assert strided.warp_columns_shape(20, 64, 2, 8, True, lanes=8, row_warps=1, rows=8).rows == 8
    for n in range(1, 513):
        s = strided.warp_columns_shape(n, 4096, 2, 8, False)
        assert strided.warp_full_rows(s.rows) * 32 // s.lanes * s.row_warps < n
    # an axis only narrower rows hold: 64 bytes before 16
    assert strided.warp_columns_shape(300, 4096, 2, 8, True).lanes == 4
    # every split holds its axis, and covers inner with its groups
    for n in (1, 7, 150, 512, 2048):
        for backward in (False, True):
            if n > strided.warp_columns_max_n(backward):
                continue
            s = strided.warp_columns_shape(n, 100, 4, 4, backward)
            assert s.rows * 32 // s.lanes * s.row_warps >= n and s.groups * s.lanes * 4 >= 100
    with pytest.raises(ValueError, match="too long"):
        strided.warp_columns_shape(5000, 64, 2, 8, False)
    with pytest.raises(ValueError, match="too long"):
        strided.warp_columns_shape(100, 64, 2, 8, False, lanes=32, row_warps=1)
    # three CTAs an SM asked of ptxas only for the 16-bit forward of 16-byte packs at 5 to 10 rows,
    # two at 16 rows
    bounds = {
        (dtype, backward, pack, rows): strided.WarpColumnsInstance(dtype, backward, False, pack, rows).launch_bounds
        for dtype, pack in ((torch.bfloat16, 8), (torch.float16, 8), (torch.bfloat16, 2), (torch.float32, 4))
        for backward in (False, True)
        for rows in strided.WARP_COLUMNS_ROWS[backward]
    }
    assert {key for key, value in bounds.items() if value == "256, 3"} == {
        (dtype, False, 8, rows) for dtype in (torch.bfloat16, torch.float16) for rows in (5, 6, 8, 10)
    }
    assert {key for key, value in bounds.items() if value == "256, 2"} == {
        (dtype, False, 8, 16) for dtype in (torch.bfloat16, torch.float16)
    }
    assert set(bounds.values()) == {"256", "256, 3", "256, 2"}
    # one table a CTA for groups of several row warps, none for one warp a group
    assert strided.warp_columns_smem_floats(strided.WarpColumnsShape(8, 1, 16, 4), 8) == 0
    assert strided.warp_columns_smem_floats(strided.WarpColumnsShape(8, 4, 16, 4), 8) == 64 * (8 + 6)

    limits = tiers.H100_LIMITS
    assert strided.choose_tier(8, 150, 16384, torch.bfloat16, False, limits) == "strided_warp"
    assert strided.choose_tier(8, 150, 16384, torch.bfloat16, True, limits) == "strided_warp"
    assert strided.choose_tier(8, 600, 16384, torch.bfloat16, False, limits) != "strided_warp"
    assert strided.choose_tier(8, 150, 16384, torch.float32, False, limits) != "strided_warp"
    assert strided.choose_tier(64, 32, 2048, torch.float32, False, limits) == "strided_warp"
    # narrow columns, off 16-byte boundaries, rows at several phases: not taken; a step along inner
    # whose spans lie in 16-byte packs: taken (takes_stepped_warp_columns)
    assert strided.choose_tier(4096, 64, 8, torch.bfloat16, False, limits) != "strided_warp"
    assert strided.choose_tier(8, 150, 16384, torch.bfloat16, False, limits, False) != "strided_warp"
    assert strided.choose_tier(8, 96, 16384, torch.bfloat16, False, limits, True, False) != "strided_warp"
    assert strided.choose_tier(8, 150, 16384, torch.bfloat16, False, limits, False, True, True) == "strided_warp"
    assert strided.choose_tier(8, 150, 16384, torch.bfloat16, False, limits, False, False, True) != "strided_warp"
    with pytest.raises(ValueError, match="power of two"):
        tiers.Tuning(strided_warp_lanes=3)
    with pytest.raises(ValueError, match="one of"):
        tiers.Tuning(strided_warp_row_warps=16)


def test_strided_waves_by_steps_and_bandwidth():
    """The strided tier's split problems fill more waves of blocks on GPUs of much DRAM bandwidth an
    SM where inputs step along inner (float32 both ways, the 16-bit backward) and for the dense
    float32 backward; elsewhere, and on other GPUs, STRIDED_WAVES."""
    from fastsoftmax.backends.cuda import strided

    assert strided.strided_waves(4, False, True, True) == 8
    assert strided.strided_waves(4, True, True, True) == 8
    assert strided.strided_waves(2, True, True, True) == 4
    assert strided.strided_waves(2, False, True, True) == strided.STRIDED_WAVES
    assert strided.strided_waves(4, True, False, True) == 4
    for itemsize, backward in ((2, False), (2, True), (4, False)):
        assert strided.strided_waves(itemsize, backward, False, True) == strided.STRIDED_WAVES
    for itemsize in (2, 4):
        for backward in (False, True):
            for steps in (False, True):
                assert strided.strided_waves(itemsize, backward, steps, False) == strided.STRIDED_WAVES


def test_strided_deep_partials_rule():
    """The strided tier's partials stage walks one tensor twice as deep in the 16-bit forward by
    default; forced, wherever the kernel has that walk (the log-softmax backward too); never where
    the walk reads y and dy (the softmax backward) nor in the float32 forward."""
    from fastsoftmax.backends.cuda import strided

    for log in (False, True):
        assert strided.deep_partials(2, False, log)
        assert not strided.deep_partials(4, False, log)
        assert not strided.deep_partials(2, False, log, forced=False)
        assert not strided.deep_partials(4, False, log, forced=True)
        for itemsize in (2, 4):
            assert not strided.deep_partials(itemsize, True, False, forced=True)
            assert strided.deep_partials(itemsize, True, True, forced=True)
            assert strided.deep_partials(itemsize, True, log) is (log and strided.STRIDED_DEEP_PARTIALS[itemsize, True])


def test_strided_partials_kernel():
    """The partials-only strided kernels: one beside each two-stage kernel (what CI compiles),
    compiled for the blocks an SM of their walk (launch bounds) and named apart; taken where
    STRIDED_PARTIALS_KERNEL says or the tuning forces."""
    from fastsoftmax.backends.cuda import strided

    instances = [inst for inst in strided.all_instances() if isinstance(inst, strided.StridedInstance)]
    two_stage = {inst.name for inst in instances if not inst.partials_only}
    only = [inst for inst in instances if inst.partials_only and not (inst.narrow or inst.spans)]
    narrow = [inst for inst in instances if inst.narrow]
    spans = [inst for inst in instances if inst.spans]
    assert {inst.name.removesuffix("_partials") for inst in only} == two_stage
    for inst in only:
        walk = strided.partials_walk(inst.backward, inst.log)
        blocks = strided.STRIDED_PARTIALS_MIN_BLOCKS[torch.empty((), dtype=inst.dtype).element_size(), walk]
        assert f"__launch_bounds__({strided.STRIDED_MAX_THREADS}, {blocks})" in inst.wrapper()
        assert ", true>(" in inst.wrapper()
    # the 16-bit log-softmax backward's narrow packs: a partials-only kernel with no two-stage twin
    assert {(inst.dtype, inst.backward, inst.log, inst.pack) for inst in narrow} == {
        (dtype, True, True, strided.STRIDED_NARROW_PARTIALS_PACK) for dtype in (torch.bfloat16, torch.float16)
    }
    for inst in narrow:
        assert inst.name.removesuffix("_partials") not in two_stage
        bounds = f"__launch_bounds__({strided.STRIDED_MAX_THREADS}, {strided.STRIDED_NARROW_PARTIALS_MIN_BLOCKS})"
        assert bounds in inst.wrapper()
    for itemsize, pack, backward, log, slices, want in (
        (2, 8, True, True, 8, True),
        (2, 8, True, True, 1, False),  # one slice: no half of it
        (2, 2, True, True, 8, False),  # packs narrower already
        (2, 8, True, False, 8, False),  # the softmax backward reads y and dy
        (2, 8, False, False, 8, False),
        (4, 4, True, True, 8, False),
    ):
        assert strided.narrow_partials(itemsize, pack, backward, log, slices) is want
    # the 16-bit log-softmax backward's stepped spans (the tuning strided_stepped_partials): partials-only
    # kernels with no two-stage twin, compiled for their pack's blocks an SM (STRIDED_SPANS_PARTIALS_MIN_BLOCKS)
    assert {(inst.dtype, inst.backward, inst.log, inst.pack) for inst in spans} == {
        (dtype, True, True, pack)
        for dtype in (torch.bfloat16, torch.float16)
        for pack in strided.STRIDED_STEPPED_PARTIALS_PACKS
    }
    for inst in spans:
        assert inst.name.removesuffix("_partials") not in two_stage and not inst.narrow
        blocks = strided.STRIDED_SPANS_PARTIALS_MIN_BLOCKS[inst.pack]
        assert f"__launch_bounds__({strided.STRIDED_MAX_THREADS}, {blocks})" in inst.wrapper()
    steps = (2, 2, 1)
    assert strided.stepped_partials_pack(8, 2, 1, True, True, steps, 0, 32) == 8
    assert strided.stepped_partials_pack(2, 2, 1, True, True, steps, 4, 32) == 2
    # the rule's pack unless the tuning chooses one
    rule = strided.STRIDED_STEPPED_PARTIALS_PACK
    assert strided.stepped_partials_pack(None, 2, 1, True, True, steps, 0, 32) == rule
    for args in (
        (1, 2, 1, True, True, steps, 0, 32),  # element by element, chosen
        (None, 2, 1, True, True, steps, rule, 32),  # aligned to fewer bytes than the rule's pack
        (8, 2, 1, True, True, steps, 4, 32),  # pointers or strides aligned to 4 bytes, not 16
        (8, 2, 1, True, True, steps, 0, 4),  # a tile of 4 columns, not a whole pack
        (8, 2, 1, True, True, (2, 1, 1), 0, 32),  # y steps by 2, dy not
        (8, 2, 1, True, False, steps, 0, 32),  # the softmax backward
        (8, 2, 8, True, True, (1, 1, 1), 0, 32),  # unit steps: 16-byte packs already
        (4, 4, 1, True, True, steps, 0, 32),  # float32
    ):
        assert strided.stepped_partials_pack(*args) is None, args
    # the walk's tensor broadcast (read from the caches): the 16-bit walks keep the two-stage kernel
    assert strided.separate_partials(2, True, True) and not strided.separate_partials(2, True, True, rereads=True)
    assert strided.separate_partials(4, True, True, rereads=True)
    assert strided.separate_partials(2, True, True, forced=True, rereads=True)
    for itemsize in (2, 4):
        for backward, log, walk in ((False, False, "forward"), (True, False, "backward"), (True, True, "log_backward")):
            assert strided.separate_partials(itemsize, backward, log) is strided.STRIDED_PARTIALS_KERNEL[itemsize, walk]
            assert strided.separate_partials(itemsize, backward, log, forced=True)
            assert not strided.separate_partials(itemsize, backward, log, forced=False)


def test_strided_splits_is_refused_unless_positive():
    from fastsoftmax.backends.cuda import tiers

    for bad in (0, -3):
        with pytest.raises(ValueError, match=f"strided_splits={bad} is not positive"):
            with tiers.tuned(strided_splits=bad):
                pass
    with tiers.tuned(strided_splits=20):
        assert tiers.current_tuning().strided_splits == 20


def test_partials_only_launch():
    """strided.partials_only_launch: which partials-only kernel a split problem launches, over which
    block, and whether its splits stay the two-stage kernel's."""
    from fastsoftmax.backends.cuda import strided, tiers

    plain, spans8, single = (tiers.Tuning(strided_stepped_partials=p) for p in (None, 8, 1))
    dense = ((8192 * 4096, 4096, 1),) * 3  # y, dy, dx of one outer index
    stepped = ((8192 * 8192, 8192, 2), (8192 * 8192, 8192, 2), (8192 * 4096, 4096, 1))
    args = (32, 8, 1, 8192)  # width, slices, outer, n
    inst, width, slices, reshaped = strided.partials_only_launch(
        torch.bfloat16, True, True, 8, False, *args, dense, 0, plain
    )
    assert (inst.pack, inst.stepped, inst.partials_only, width, slices, reshaped) == (4, False, True, 64, 4, True)
    # dy broadcast along outer: the 16-bit walk stays on the two-stage kernel
    broadcast = ((0, 4096, 1), (0, 4096, 1), (8192 * 4096, 4096, 1))
    launch = strided.partials_only_launch
    assert launch(torch.bfloat16, True, True, 8, False, 32, 8, 2, 8192, broadcast, 0, plain) is None
    # the stepped spans where the tuning asks for them, element by element otherwise
    inst, width, slices, reshaped = strided.partials_only_launch(
        torch.bfloat16, True, True, 1, False, *args, stepped, 0, spans8
    )
    assert (inst.pack, inst.stepped, width, slices, reshaped) == (8, True, 4, 64, True)
    inst, width, slices, reshaped = strided.partials_only_launch(
        torch.bfloat16, True, True, 1, False, *args, stepped, 0, plain
    )
    assert (inst.pack, inst.stepped, width, slices, reshaped) == (4, True, 8, 32, True)
    inst, width, slices, reshaped = strided.partials_only_launch(
        torch.bfloat16, True, True, 1, False, *args, stepped, 0, single
    )
    assert (inst.pack, inst.stepped, width, slices, reshaped) == (1, False, 32, 8, False)
    # float32's own packs and block, its splits filling its own waves; the softmax backward off
    inst, width, slices, reshaped = strided.partials_only_launch(
        torch.float32, True, True, 4, False, *args, dense, 0, plain
    )
    assert (inst.pack, width, slices, reshaped) == (4, 32, 8, False)
    assert strided.partials_only_launch(torch.bfloat16, True, False, 8, False, *args, dense, 0, plain) is None


def test_strided_max_width_is_refused_unless_a_power_of_two_of_a_block():
    from fastsoftmax.backends.cuda import tiers

    for bad in (0, 16, 48, 512):
        with pytest.raises(ValueError, match=f"strided_max_width={bad} is not one of"):
            with tiers.tuned(strided_max_width=bad):
                pass
    for good in (32, 64, 128, 256):
        with tiers.tuned(strided_max_width=good):
            assert tiers.current_tuning().strided_max_width == good


def test_strided_stepped_partials_is_refused_unless_a_span_pack():
    from fastsoftmax.backends.cuda import tiers

    for bad in (0, 3, 16):
        with pytest.raises(ValueError, match=f"strided_stepped_partials={bad} is not one of"):
            with tiers.tuned(strided_stepped_partials=bad):
                pass
    for good in (1, 4):
        with tiers.tuned(strided_stepped_partials=good):
            assert tiers.current_tuning().strided_stepped_partials == good


def test_spans_kernels_compiled_for_their_own_blocks():
    from fastsoftmax.backends.cuda import tiers

    # eight blocks of 256 threads an SM: the bf16 kernel of packs of 4 at 32 registers, not 40 at five
    assert strided.STRIDED_SPANS_PARTIALS_MIN_BLOCKS[4] == 8
    default = strided.StridedInstance(torch.bfloat16, True, True, 4, True, partials_only=True)
    assert default.name.endswith("_p4_step2_partials")
    assert "__launch_bounds__(256, 8)" in default.wrapper()
    inst = strided.StridedInstance(torch.bfloat16, True, True, 4, True, partials_only=True, min_blocks=5)
    assert inst.name.endswith("_p4_step2_partials_b5")
    assert strided.StridedInstance(torch.bfloat16, True, True, 4, True, partials_only=True, min_blocks=8) == default
    assert "__launch_bounds__(256, 5)" in inst.wrapper()
    with pytest.raises(ValueError, match="only a spans' partials-only kernel"):
        strided.StridedInstance(torch.bfloat16, True, True, 8, False, partials_only=True, min_blocks=8)
    with tiers.tuned(strided_spans_blocks=5):
        assert tiers.current_tuning().strided_spans_blocks == 5
    for bad in (0, 9):
        with pytest.raises(ValueError, match=f"strided_spans_blocks={bad} is not from 1 to 8"):
            with tiers.tuned(strided_spans_blocks=bad):
                pass


def test_split_chunks_fill_the_waves_rounded_up_or_down():
    from fastsoftmax.backends.cuda import tiers

    # (8192, 8192)[:, ::2] over dim 0, bf16 backward on an H200: 128 tiles, four waves of 660 blocks
    assert strided.splits_filling(128, 4 * 660, 660, whole=False) == 21  # 2688 blocks: 4.07 waves
    assert strided.splits_filling(128, 4 * 660, 660, whole=True) == 20  # 2560: 3.88
    # by default the one whose last wave is fuller: 3.88 waves (88%) against 4.07 (7%) there; (32,
    # 4096, 2048)[..., ::2] over dim 1, 1024 tiles: 3 chunks, 4.65 waves (65%) against 3.10 (10%)
    assert strided.STRIDED_WHOLE_WAVES is None
    assert strided.splits_filling(128, 4 * 660, 660) == 20
    assert strided.splits_filling(1024, 4 * 660, 660) == 3
    for whole in (True, False, None):
        assert strided.splits_filling(8, 2 * 660, 660, whole) == 165  # the tiles divide the waves
        assert strided.splits_filling(4000, 660, 660, whole) == 1
    with tiers.tuned(strided_whole_waves=True):
        assert tiers.current_tuning().strided_whole_waves is True
