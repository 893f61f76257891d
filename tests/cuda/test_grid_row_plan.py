"""Host logic of the grid_row tier, on the CPU: its launch geometry, what it supports, where tier
choice takes it (where its device A/B against split_row measured it faster), and the plan it
builds (the kernel arguments, the cooperative launch, the workspace held over the launch)."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from fastsoftmax.backends.cuda import instances, launch, plans, tiers
from fastsoftmax.backends.cuda.instances import (
    CXX_TYPES,
    DTYPES,
    GRID_ROW_HELD_PACKS,
    GRID_ROW_TEAMS_IDLE_SHARE,
    GRID_ROW_TEAMS_UNEVEN_MIN_ROUND_BYTES,
    GRID_ROW_THREADS,
    all_instances,
    cluster_chunk,
    cluster_pack,
    cluster_preferred_max_cols,
    cluster_slots,
    grid_row_dynamic_smem,
    grid_row_instance,
    grid_row_shape,
    grid_row_slots,
    grid_row_team_shape,
    grid_row_team_workspace,
    grid_row_workspace,
    source_for,
)

H100_BUDGET = 227 * 1024 - 1024
LENGTHS = [1, 7, 8, 9, 1055, 1056, 1057, 300007, 1000003, 1 << 20, (1 << 24) + 7, 1 << 26, 1 << 27]


def one_per_sm(budget=227 * 1024):
    """An occupancy query of a kernel that fits one CTA per SM with up to ``budget`` bytes."""
    return lambda smem: 1 if smem <= budget else 0


def slice_of(n: int, shift: int, dtype: torch.dtype, ctas: int, rank: int) -> tuple[int, int]:
    """ClusterSlice (cluster_tier.cuh), which grid_row_tier.cuh cuts the row with: chunks of the
    row's packs, which start `shift` columns before the row."""
    chunk = cluster_chunk(n + shift, dtype, ctas)
    start = rank * chunk - shift
    return min(n, max(0, start)), min(n, max(0, start + chunk))


def first_of(begin: int, shift: int, pack: int) -> int:
    """ClusterSlice::first: the column of the slice's first pack in a tensor of misalignment shift."""
    return begin - (begin + shift) % pack


def slot_count(begin: int, end: int, first: int, pack: int) -> int:
    return -(-(end - first) // pack) if end > begin else 0


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_shape_covers_the_row(dtype, backward):
    """The grid is every resident CTA; the slices cover the row, each at a pack boundary; the
    registers plus the shared memory hold every slot of the largest slice, at any misalignment,
    or shared memory is at its budget (the rest is re-read); shared memory stays within budget."""
    pack = cluster_pack(dtype)
    tensors = 2 if backward else 1
    for sm_count in (108, 132):
        for n in LENGTHS:
            shape = grid_row_shape(n, dtype, backward, sm_count, one_per_sm(), H100_BUDGET)
            assert shape.ctas == sm_count
            assert shape.threads == GRID_ROW_THREADS and shape.pack == pack
            assert shape.packs == GRID_ROW_HELD_PACKS[backward]
            assert shape.chunk % pack == 0 and shape.chunk * shape.ctas >= n
            assert shape.smem_bytes == shape.smem_slots * 16 * tensors <= H100_BUDGET
            regs = shape.packs * shape.threads
            slots = grid_row_slots(n, dtype, shape.ctas)
            if shape.smem_bytes == 0:
                assert slots <= regs
            else:
                assert slots > regs
                assert shape.smem_slots == slots - regs or (shape.smem_slots + 1) * 16 * tensors > H100_BUDGET
            assert grid_row_instance(dtype, backward, True).cols == shape.held


def test_grid_follows_occupancy():
    """Two CTAs per SM without shared memory: twice the grid; with shared memory the CTAs it
    leaves room for; none: refused."""
    two = lambda smem: 2 if smem == 0 else 1  # noqa: E731
    small = grid_row_shape(1000003, torch.bfloat16, False, 132, two, H100_BUDGET)
    assert small.ctas == 264 and small.smem_bytes == 0
    big = grid_row_shape(1 << 24, torch.bfloat16, False, 132, two, H100_BUDGET)
    assert big.ctas == 132 and big.smem_bytes > 0
    with pytest.raises(ValueError, match="not one CTA"):
        grid_row_shape(1 << 24, torch.bfloat16, False, 132, lambda smem: 0, H100_BUDGET)
    # a smaller budget (an A100's 163 KiB): less shared memory, more re-read, never more than allowed
    a100 = grid_row_shape(1 << 24, torch.float32, False, 108, one_per_sm(163 * 1024), 163 * 1024 - 1024)
    assert a100.ctas == 108 and 0 < a100.smem_bytes <= 163 * 1024 - 1024


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_slices_partition_the_row(dtype):
    """Every column belongs to exactly one CTA's slice; only the row's own first and last pack are
    partial (slices meet at 16-byte boundaries of the row's memory); and no slice needs more slots
    than the host sized for, in the tensor that cut it or in one misaligned otherwise (the kernels'
    slot walk, in Python)."""
    pack = cluster_pack(dtype)
    for n in (1, 5, 8, 9, 16, 1000, 4097, 50257, 65543):
        for ctas in (1, 2, 3, 7, 16, 132):
            aligned_most = cluster_slots(n, dtype, ctas, aligned=True)
            most = cluster_slots(n, dtype, ctas, aligned=False)
            assert grid_row_slots(n, dtype, ctas) == most
            for shift in range(pack):
                seen = 0
                for rank in range(ctas):
                    begin, end = slice_of(n, shift, dtype, ctas, rank)
                    assert begin == seen or begin == end == n
                    seen = max(seen, end)
                    if begin == end:
                        continue
                    assert (begin + shift) % pack == 0 or begin == 0
                    assert (end + shift) % pack == 0 or end == n
                    for other in range(pack):
                        first = first_of(begin, other, pack)
                        count = slot_count(begin, end, first, pack)
                        assert count <= (aligned_most if shift == other == 0 else most)
                        # the slots span the slice and no more than a pack either side
                        assert first <= begin < first + pack and first + count * pack >= end
                        assert first + count * pack - end < pack
                assert seen == n


def test_held_regions_cover_every_slot():
    """GridRowHeld in the kernel: registers, then shared memory, then the streamed rest, each
    slot in exactly one region; nothing held when the tensors' misalignments differ."""

    def regions(hold, count, reg_slots, smem_slots):
        regs = min(count, reg_slots) if hold else 0
        smem = min(count - regs, smem_slots) if hold else 0
        return regs, smem, count - regs - smem

    for count in (0, 1, 100, 6144, 6145, 20608, 20609, 60000):
        for hold in (False, True):
            regs, smem, rest = regions(hold, count, 6144, 14464)
            assert regs >= 0 and smem >= 0 and rest >= 0 and regs + smem + rest == count
            if not hold:
                assert rest == count


def test_workspace():
    assert grid_row_workspace(132, False) == 2 * 132 * 2
    assert grid_row_workspace(132, True) == 2 * 132


def test_rows_in_teams_shape():
    """A few rows that fit on chip together take the grid in teams: a count that divides the rows
    (where none does, one with few idle turns), the fewest rounds, every team's CTAs holding their
    slices in registers and shared memory (the smem slots what the slice needs past the registers);
    otherwise the whole grid's shape."""
    bf16, f32 = torch.bfloat16, torch.float32
    shape = grid_row_team_shape(4, 1 << 22, bf16, False, 132, one_per_sm(), H100_BUDGET)
    assert (shape.teams, shape.team_ctas, shape.ctas) == (4, 33, 132)
    need = grid_row_slots(1 << 22, bf16, 33)
    assert shape.smem_slots == need - shape.packs * shape.threads > 0
    assert shape.smem_bytes == 16 * shape.smem_slots and shape.chunk == cluster_chunk(1 << 22, bf16, 33)
    backward = grid_row_team_shape(4, 1 << 22, bf16, True, 132, one_per_sm(), H100_BUDGET)
    assert backward.teams == 2 and backward.smem_bytes == 2 * 16 * backward.smem_slots <= H100_BUDGET
    assert grid_row_team_shape(4, 1 << 23, bf16, False, 132, one_per_sm(), H100_BUDGET).teams == 2  # two rounds
    assert grid_row_team_shape(8, 1 << 21, bf16, False, 132, one_per_sm(), H100_BUDGET).ctas == 8 * 16
    assert grid_row_team_shape(8, 1 << 21, f32, False, 132, one_per_sm(), H100_BUDGET).teams == 4
    # three float32 rows of 16 MiB fit in two teams only, one of them idle in the second round
    assert grid_row_team_shape(3, 1 << 22, f32, False, 132, one_per_sm(), H100_BUDGET).teams == 1
    # rows no count of teams divides: few turns idle (GRID_ROW_TEAMS_IDLE_SHARE), the fewest rounds a
    # team's CTA, then the fewest rounds (191 rows: 12 teams of 11 CTAs, 16 rounds, one turn idle), where
    # each CTA moves GRID_ROW_TEAMS_UNEVEN_MIN_ROUND_BYTES a round (31 rows in 4 teams of 33 would move
    # 83-248 KiB: one team); a count that divides is kept where there is one (192 rows: 12 teams, not 13 in
    # 15 rounds)
    for rows, n, dtype, backward, teams in (
        (191, 699051, bf16, True, 12),
        (191, 699051, f32, True, 6),
        (191, 699051, f32, False, 12),
        (17, 1 << 20, f32, False, 6),
        (17, 1 << 20, bf16, True, 6),
        (17, 1 << 20, f32, True, 3),
    ):
        shape = grid_row_team_shape(rows, n, dtype, backward, 132, one_per_sm(), H100_BUDGET)
        assert (shape.teams, shape.ctas) == (teams, 132), (rows, n, dtype, backward, shape)
    assert GRID_ROW_TEAMS_IDLE_SHARE == 1 / 16 and GRID_ROW_TEAMS_UNEVEN_MIN_ROUND_BYTES == 256 * 1024
    for dtype in (bf16, f32):
        for backward in (False, True):
            shape = grid_row_team_shape(31, 699051, dtype, backward, 132, one_per_sm(), H100_BUDGET)
            assert shape.teams == 1, (dtype, backward)
    assert grid_row_team_shape(191, 699051, bf16, False, 132, one_per_sm(), H100_BUDGET).teams == 1  # 248 KiB
    assert grid_row_team_shape(192, 699051, bf16, True, 132, one_per_sm(), H100_BUDGET).teams == 12
    assert grid_row_team_shape(13, 1 << 20, f32, False, 132, one_per_sm(), H100_BUDGET).teams == 1  # 7 do not fit
    for rows, n in ((1, 1 << 20), (2, 1 << 24), (5, 1 << 24)):  # one row; rows no team holds
        assert grid_row_team_shape(rows, n, bf16, False, 132, one_per_sm(), H100_BUDGET) == grid_row_shape(
            n, bf16, False, 132, one_per_sm(), H100_BUDGET
        )
    assert grid_row_team_workspace(5, 33, False) == (8, 5 * 33 * 2)
    assert grid_row_team_workspace(4, 66, True) == (4, 4 * 66)


def test_rows_in_teams_chosen():
    """Tier choice takes grid_row for rows it would run in teams, up to GRID_ROW_TEAMS_MAX_ROWS of them
    (cluster_stream's rows too) and GRID_ROW_TEAMS_MAX_ROWS_BACKWARD in the backward (past 32 rows in
    GRID_ROW_TEAMS_MANY_ROWS_MIN_TEAMS teams or more), from GRID_ROW_TEAMS_MIN_BYTES in all."""
    h100 = tiers.H100_LIMITS
    for rows, n, dtype, backward in (
        (8, 1 << 21, torch.bfloat16, False),
        (8, 1 << 21, torch.float32, True),
        (16, 1 << 20, torch.bfloat16, False),
        (24, 699051, torch.float32, True),
        (2, 1 << 21, torch.bfloat16, False),  # 8 MiB, rows split_row took for their length
        # the backward of more rows (GRID_ROW_TEAMS_MAX_ROWS_BACKWARD), past the SMs' count too
        (64, 1 << 20, torch.bfloat16, True),
        (128, 1 << 20, torch.float32, True),
        (192, 699051, torch.float32, True),
        (256, 1 << 19, torch.float32, True),
        (191, 699051, torch.bfloat16, True),  # prime: 12 teams, one turn of 192 idle
        (17, 1 << 20, torch.float32, False),  # 6 teams, one turn of 18 idle
    ):
        assert tiers.choose_tier(rows, n, 1, dtype, backward, h100) == "grid_row", (rows, n)
        assert tiers.grid_row_in_teams(rows, n, dtype, backward, h100)
    assert tiers.choose_tier(3, 1 << 20, 1, torch.bfloat16, False, h100) == "split_row"  # 6 MiB
    assert tiers.choose_tier(48, 1 << 20, 1, torch.bfloat16, False, h100) == "cluster_stream"  # not on chip
    for dtype in (torch.bfloat16, torch.float32):  # uneven teams whose CTAs move too little a round
        for backward in (False, True):
            assert tiers.choose_tier(31, 699051, 1, dtype, backward, h100) == "cluster_stream", (dtype, backward)
    for rows, n, dtype in ((64, 1 << 20, torch.bfloat16), (192, 699051, torch.float32)):
        assert tiers.choose_tier(rows, n, 1, dtype, False, h100) == "cluster_stream"  # forward: 32 at most
    # 512 rows are past the most measured; 62 rows of 2^20 take two teams at most (fewer than
    # GRID_ROW_TEAMS_MANY_ROWS_MIN_TEAMS past 32 rows)
    assert tiers.choose_tier(512, 1 << 20, 1, torch.float32, True, h100) == "cluster_stream"
    assert tiers.choose_tier(62, 1 << 20, 1, torch.float32, True, h100) == "cluster_stream"
    assert not tiers.grid_row_in_teams(62, 1 << 20, torch.float32, True, h100)
    no_cooperation = dataclasses.replace(tiers.H100_LIMITS, cooperative=False)
    assert tiers.choose_tier(8, 1 << 21, 1, torch.bfloat16, False, no_cooperation) != "grid_row"


# ---- instances ---------------------------------------------------------------------------------


def test_instances_are_compiled():
    """Two instances per dtype, direction and function (the whole grid on each row, and the grid in
    teams), in the set CI compiles, each a cooperative launch target with one CTA per SM of
    GRID_ROW_THREADS threads."""
    found = [i for i in all_instances() if i.tier == "grid_row"]
    assert len(found) == len(DTYPES) * 4 * 2
    for inst in found:
        teams = inst.storage == "teams"
        assert inst == grid_row_instance(inst.dtype, inst.backward, inst.log, teams=teams)
        assert inst.name.endswith("_teams") == teams
        assert ("RowGridTeams{ws, rows, (unsigned)team_ctas}" in inst.wrapper()) == teams
        assert inst.pack * CXX_TYPES[inst.dtype][2] == 16
        assert inst.header == "grid_row_tier.cuh"
        assert inst.name.startswith("fs_grid_row_")
        text = source_for([inst])
        assert f"__launch_bounds__({GRID_ROW_THREADS}, 1)" in text
        assert ("grid_row_backward" if inst.backward else "grid_row_forward") in text
    assert len({i.name for i in found}) == len(found)


# ---- supports and choice -----------------------------------------------------------------------

LIMITS = [tiers.H100_LIMITS, tiers.Limits(163 * 1024, 164 * 1024, 108, cooperative=True)]


@pytest.mark.parametrize("limits", LIMITS, ids=["h100", "a100"])
def test_supports(limits):
    for dtype in DTYPES:
        for backward in (False, True):
            for n in (1, 1000, 1 << 20, (1 << 24) + 7, 1 << 27):
                for outer in (1, 3, 64):
                    assert tiers.supports("grid_row", outer, n, 1, dtype, backward, limits)
            assert not tiers.supports("grid_row", 1, 1 << 20, 4, dtype, backward, limits)
    assert not tiers.supports("grid_row", 1, 1 << 20, 1, torch.float64, False, tiers.H100_LIMITS)
    assert "grid_row" in tiers.ROW_TIERS and "grid_row" in tiers.TIERS


@pytest.mark.parametrize("limits", LIMITS, ids=["h100", "a100"])
def test_chosen_where_measured_faster(limits):
    """grid_row takes a few long rows where it measured faster than split_row (backward of 4 MiB
    to 64 MiB rows, 16-bit forward of 8 MiB to 128 MiB, float32 forward of 16 MiB to 128 MiB), and
    rows that fit on chip together in teams of the grid, as many and as large as measured
    (GRID_ROW_TEAMS_MAX_ROWS, GRID_ROW_TEAMS_MAX_ROWS_BACKWARD, GRID_ROW_TEAMS_MIN_BYTES); only with
    cooperative launches and no cluster tier that holds the row."""
    for dtype in DTYPES:
        size = CXX_TYPES[dtype][2]
        for backward in (False, True):
            for outer in (1, 2, 3, 4, 5, 8, 64, 131, 132, 4096):
                for n in (1, 1024, 16384, 1 << 17, 1 << 20, 1 << 21, 1 << 22, 1 << 24, (1 << 24) + 7, 1 << 26):
                    if outer * n > 1 << 31:
                        continue
                    chosen = tiers.choose_tier(outer, n, 1, dtype, backward, limits)
                    on_boundaries = n * size % 16 == 0  # every row, with choose_tier's aligned pointers
                    held_by_cluster = limits.clusters and n <= cluster_preferred_max_cols(
                        dtype, backward, outer, on_boundaries
                    )
                    most = tiers.GRID_ROW_TEAMS_MAX_ROWS_BACKWARD if backward else tiers.GRID_ROW_TEAMS_MAX_ROWS
                    teams = (
                        2 <= outer <= most
                        and (outer < limits.sm_count or limits.clusters)  # past the SMs: beside cluster_stream
                        and outer * n * size >= tiers.GRID_ROW_TEAMS_MIN_BYTES
                        and n >= tiers.SPLIT_ROW_MIN_COLS
                        and tiers.grid_row_in_teams(outer, n, dtype, backward, limits)
                    )
                    want = (
                        limits.cooperative
                        and not held_by_cluster
                        and (
                            teams
                            or outer <= 4
                            and (
                                (backward and 4 << 20 <= n * size <= 64 << 20)
                                or (not backward and size == 2 and 8 << 20 <= n * size <= 128 << 20)
                                or (not backward and size == 4 and 16 << 20 <= n * size <= 128 << 20)
                            )
                        )
                    )
                    assert (chosen == "grid_row") == want, (outer, n, dtype, backward, chosen)
    h100 = tiers.H100_LIMITS
    assert tiers.choose_tier(1, 1 << 24, 1, torch.bfloat16, False, h100) == "grid_row"
    assert tiers.choose_tier(1, 1 << 26, 1, torch.bfloat16, False, h100) == "grid_row"
    assert tiers.choose_tier(1, (1 << 26) + 1, 1, torch.bfloat16, False, h100) == "split_row"
    assert tiers.choose_tier(1, 1 << 26, 1, torch.float32, False, h100) == "split_row"
    assert tiers.choose_tier(1, 1 << 24, 1, torch.bfloat16, True, h100) == "grid_row"
    assert tiers.choose_tier(1, 1 << 24, 1, torch.float32, False, h100) == "grid_row"
    assert tiers.choose_tier(1, 1 << 26, 1, torch.bfloat16, True, h100) == "split_row"
    no_cooperative = dataclasses.replace(h100, cooperative=False)
    assert tiers.choose_tier(1, 1 << 24, 1, torch.float32, False, no_cooperative) == "split_row"


# ---- the plan ----------------------------------------------------------------------------------


class _Facts:
    sm_count = 132
    smem_per_block = 227 * 1024
    smem_per_sm = 228 * 1024
    cooperative_launch = True
    cluster_ctas = 16
    cluster_launch = launch.DeviceFacts.cluster_launch  # the real rule, over cluster_ctas
    arch = "sm_90"
    dram_gbps = 3352.3
    high_bandwidth_per_sm = launch.DeviceFacts.high_bandwidth_per_sm  # the real rule, over the fields above


class _Kernel:
    """Records what plans.py asks of a kernel, in place of launch.Kernel."""

    launches: list = []
    attributes: list = []

    def __init__(self, function, name, device, nargs, block_x, block_y=1, smem=0, cluster=1, cooperative=False):
        self.name, self.device, self.nargs, self.block_x, self.smem = name, device, nargs, block_x, smem
        self.block_y = block_y
        self.cluster, self.cooperative = cluster, cooperative

    def set_attribute(self, name, value):
        _Kernel.attributes.append((name, value))

    def get_attribute(self, name):
        assert name == "SHARED_SIZE_BYTES", name
        return 1024  # the static slots grid_row's kernels declare, about

    allow_dynamic_smem = launch.Kernel.allow_dynamic_smem  # the real rule, over set_attribute above

    def blocks_per_sm(self, threads=None, smem=None):
        return 1 if (smem or 0) <= 227 * 1024 - 1024 else 0

    def resident_clusters(self):
        return 132 // self.cluster

    def launch(self, grid, stream, args):
        _Kernel.launches.append((self, grid, stream, tuple(args)))

    def bound(self, grid, tail):
        return lambda pointers, stream: self.launch(grid, stream, tuple(pointers) + tuple(tail))


class _Workspaces:
    """Stands in for launch.stream_workspace: one CPU buffer a (device, stream), what was asked."""

    def __init__(self):
        self.buffers, self.asked = {}, []

    def __call__(self, dev, stream, counter_words, scratch_words):
        self.asked.append((dev, stream, counter_words, scratch_words))
        buffer = self.buffers.setdefault((dev, stream), torch.zeros(counter_words + scratch_words))
        return buffer, buffer.data_ptr()


@pytest.fixture
def fake_device(monkeypatch):
    monkeypatch.setattr(plans, "device_facts", lambda dev: _Facts())
    monkeypatch.setattr(launch, "device_facts", lambda dev: _Facts())
    monkeypatch.setattr(plans, "Kernel", _Kernel)
    monkeypatch.setattr(plans, "torch_device", lambda dev: torch.device("cpu"))
    monkeypatch.setattr(plans, "stream_workspace", _Workspaces())
    _Kernel.launches, _Kernel.attributes = [], []
    loaded = []
    return lambda inst, dev: loaded.append(inst) or f"function of {inst.name}"


@pytest.mark.parametrize("backward", [False, True])
def test_plan_launches_one_cooperative_grid(fake_device, backward):
    n, outer = (1 << 24) + 7, 3
    strides = ((n + 5,), (n,), (n + 1,)) if backward else ((n + 5,), (n,))
    key = ("grid_row", torch.bfloat16, outer, n, 1, strides, True, backward, 2, 0, tiers.DEFAULT_TUNING)
    run = plans.build(fake_device, key)
    pointers = (0x1000, 0x2002, 0x3000) if backward else (0x1000, 0x2002)
    run(pointers, 7)
    run(pointers, 7)
    shape = grid_row_shape(n, torch.bfloat16, backward, 132, one_per_sm(227 * 1024 - 1024), 227 * 1024 - 1024)
    assert len(_Kernel.launches) == 2
    first, second = _Kernel.launches
    kernel, grid, stream, args = first
    assert kernel.cooperative and kernel.cluster == 1
    assert grid == shape.ctas and stream == 7
    assert kernel.block_x == GRID_ROW_THREADS and kernel.smem == shape.smem_bytes
    assert kernel.name == grid_row_instance(torch.bfloat16, backward, True).name
    inputs = len(pointers)
    assert args[:inputs] == pointers
    assert args[inputs + 1 :] == (outer, n) + tuple(s[0] for s in strides) + (shape.smem_slots,)
    assert len(args) == kernel.nargs == (10 if backward else 8)
    assert second[3][inputs] == args[inputs] != 0  # the stream's workspace, call after call
    assert ("MAX_DYNAMIC_SHARED_SIZE_BYTES", 227 * 1024 - 1024) in _Kernel.attributes


def test_plan_takes_the_streams_workspace(fake_device, monkeypatch):
    """The workspace is the stream's (launch.stream_workspace: one launch a call, so calls on one
    stream take turns in it), of grid_row_workspace's size with no counters, and its buffer is
    still referenced when the launch is made (a buffer outgrown and freed before could be handed to
    other work)."""
    n = 1 << 20
    key = ("grid_row", torch.float32, 1, n, 1, ((n,), (n,)), False, False, 0, 0, tiers.DEFAULT_TUNING)
    run = plans.build(fake_device, key)
    workspaces = plans.stream_workspace
    alive_at_launch = []
    original = _Kernel.launch

    def launch(self, grid, stream, args):
        alive_at_launch.append(any(b.data_ptr() == args[2] for b in workspaces.buffers.values()))
        original(self, grid, stream, args)

    monkeypatch.setattr(_Kernel, "launch", launch)
    run((0x1000, 0x2000), 5)
    run((0x1000, 0x2000), 6)
    assert alive_at_launch == [True, True]
    assert workspaces.asked == [(0, 5, 0, grid_row_workspace(132, False)), (0, 6, 0, grid_row_workspace(132, False))]
    assert _Kernel.launches[0][3][2] != _Kernel.launches[1][3][2]  # another stream, another workspace


@pytest.mark.parametrize("dtype,align", [(torch.bfloat16, 1), (torch.float32, 2), (torch.float32, 1)])
def test_plan_refuses_pointers_off_their_element_size(fake_device, dtype, align):
    """A tensor whose address is no multiple of its element size (memory from outside torch) gets
    a ValueError that names the problem, for rows and strided problems alike, never a kernel."""
    for inner, strides in ((1, ((4096,), (4096,))), (8, ((4096 * 8, 8), (4096 * 8, 8)))):
        key = ("warp", dtype, 4, 4096, inner, strides, False, False, align, 0, tiers.DEFAULT_TUNING)
        with pytest.raises(ValueError, match="not a multiple of its element size"):
            plans.build(fake_device, key)
    assert _Kernel.launches == []


def test_plan_refuses_without_cooperative_launch(fake_device, monkeypatch):
    class NoCoop(_Facts):
        cooperative_launch = False

    monkeypatch.setattr(plans, "device_facts", lambda dev: NoCoop())
    key = ("grid_row", torch.float32, 1, 1 << 20, 1, ((1 << 20,), (1 << 20,)), False, False, 0, 0, tiers.DEFAULT_TUNING)
    with pytest.raises(ValueError, match="cooperative"):
        plans.build(fake_device, key)


# ---- cluster_stream: the same kernels, a cluster for the team -------------------------------------


def test_cluster_stream_shape():
    """The smallest cluster whose CTAs hold their slices in registers and shared memory, 16 when none
    does (the rest re-read); shared memory only for what the registers do not hold."""
    from fastsoftmax.backends.cuda.instances import CLUSTER_STREAM_SIZES, cluster_stream_shape

    for dtype in DTYPES:
        for backward in (False, True):
            tensors = 2 if backward else 1
            for n in LENGTHS:
                shape = cluster_stream_shape(n, dtype, backward, H100_BUDGET)
                assert shape.ctas in CLUSTER_STREAM_SIZES and shape.threads == GRID_ROW_THREADS
                assert shape.packs == GRID_ROW_HELD_PACKS[backward] and shape.pack == cluster_pack(dtype)
                assert shape.smem_bytes == shape.smem_slots * 16 * tensors <= H100_BUDGET
                on_chip = shape.packs * shape.threads + shape.smem_slots
                slots = grid_row_slots(n, dtype, shape.ctas)
                fits = slots <= shape.packs * shape.threads + H100_BUDGET // (16 * tensors)
                assert fits or shape.ctas == 16, (n, dtype, backward, shape)
                if fits:
                    assert on_chip >= slots and (shape.smem_slots == 0 or on_chip == slots)
                smaller = [c for c in CLUSTER_STREAM_SIZES if c < shape.ctas]
                for c in smaller:  # none of them held it
                    assert grid_row_slots(n, dtype, c) > shape.packs * shape.threads + H100_BUDGET // (16 * tensors)
                forced = cluster_stream_shape(n, dtype, backward, H100_BUDGET, ctas=4)
                assert forced.ctas == 4 and forced.chunk == cluster_chunk(n, dtype, 4)
    with pytest.raises(ValueError, match="cluster size 3"):
        cluster_stream_shape(1 << 20, torch.float32, False, H100_BUDGET, ctas=3)


def test_cluster_stream_instances_are_compiled():
    found = [i for i in all_instances() if i.tier == "cluster_stream"]
    # rows at one and two CTAs an SM, runs of columns at one
    assert len(found) == len(DTYPES) * 4 * 3
    for inst in found:
        per_sm = inst.per_sm or 1
        assert inst == grid_row_instance(inst.dtype, inst.backward, inst.log, "cluster_stream", per_sm, inst.columns)
        assert inst.header == "grid_row_tier.cuh" and inst.name.startswith("fs_cluster_stream_")
        text = source_for([inst])
        body = ("cluster_stream_backward" if inst.backward else "cluster_stream_forward") + (
            "_columns<" if inst.columns else "<"
        )
        assert body in text and ("_columns" in inst.name) == inst.columns
        assert ("i64 inner)" in text) == inst.columns and ("i64 stagger)" in text) != inst.columns
        assert inst.pack == (4 if inst.columns else cluster_pack(inst.dtype))
        assert "GridTeam" not in text and "float* ws" not in text
        assert f"__launch_bounds__({GRID_ROW_THREADS // per_sm}, {per_sm})" in text
    assert len({i.name for i in found}) == len(found)
    with pytest.raises(ValueError, match="CTAs an SM"):
        grid_row_instance(torch.float32, False, False, "grid_row", 2)


def test_cluster_stream_pair_takes_the_cluster_holding_its_share():
    """Two CTAs an SM take the smallest cluster whose CTAs hold CLUSTER_STREAM_PAIR_HELD_SHARE of
    their slices (one CTA an SM, and runs of columns, the smallest that holds them whole)."""
    from fastsoftmax.backends.cuda.instances import CLUSTER_STREAM_PAIR_HELD_SHARE, cluster_stream_shape

    pair_budget = 228 * 1024 // 2 - 2 * 1024
    for dtype in DTYPES:
        for backward in (False, True):
            share = CLUSTER_STREAM_PAIR_HELD_SHARE[backward]
            for n in LENGTHS:
                shape = cluster_stream_shape(n, dtype, backward, pair_budget, per_sm=2)
                held = shape.packs * shape.threads + shape.smem_slots
                if shape.ctas < 16:
                    assert grid_row_slots(n, dtype, shape.ctas) * share <= held
                if shape.ctas > 2:
                    smaller = cluster_stream_shape(n, dtype, backward, pair_budget, shape.ctas // 2, per_sm=2)
                    assert grid_row_slots(n, dtype, smaller.ctas) * share > held
    # as measured (results 2026-12-03_h200_s48): bf16 forward 699051 over 8 CTAs (93% held), 2^20
    # over 16; backward 458752 over 8 (64%), 2^19 (56%) over 16
    assert cluster_stream_shape(699051, torch.bfloat16, False, pair_budget, per_sm=2).ctas == 8
    assert cluster_stream_shape(1 << 20, torch.bfloat16, False, pair_budget, per_sm=2).ctas == 16
    assert cluster_stream_shape(458752, torch.bfloat16, True, pair_budget, per_sm=2).ctas == 8
    assert cluster_stream_shape(1 << 19, torch.bfloat16, True, pair_budget, per_sm=2).ctas == 16
    assert cluster_stream_shape(699051, torch.bfloat16, False, pair_budget * 2, per_sm=1).ctas == 8


def test_cluster_stream_stagger():
    """The first wave is staggered (the resident clusters' count passed) only where every resident
    cluster takes CLUSTER_STREAM_STAGGER_MIN_ROUNDS rows or more."""
    from fastsoftmax.backends.cuda.instances import CLUSTER_STREAM_STAGGER_MIN_ROUNDS, cluster_stream_stagger

    for resident in (7, 14, 30):
        assert cluster_stream_stagger(CLUSTER_STREAM_STAGGER_MIN_ROUNDS * resident, resident) == resident
        assert cluster_stream_stagger(CLUSTER_STREAM_STAGGER_MIN_ROUNDS * resident - 1, resident) == 0
        assert cluster_stream_stagger(1, resident) == 0


def test_cluster_stagger():
    """The cluster tier's backward staggers its first wave (the resident clusters' count passed) on
    launches of more rows than clusters resident at once only; the tuning forces it either way."""
    from fastsoftmax.backends.cuda.instances import cluster_stagger

    assert cluster_stagger(100, 40) == 40
    assert cluster_stagger(40, 40) == 0
    assert cluster_stagger(1, 40) == 0
    assert cluster_stagger(1, 40, True) == 40
    assert cluster_stagger(100, 40, False) == 0


def test_cluster_stream_two_per_sm():
    """Two CTAs an SM: half the threads and each its share of shared memory; taken where they still
    hold CLUSTER_STREAM_PAIR_MIN_HELD of their slices on GPUs of much DRAM bandwidth an SM,
    CLUSTER_STREAM_PAIR_MIN_HELD_LOW_BANDWIDTH on others (and, backward, with enough rows), but for
    the float32 forward of long rows."""
    from fastsoftmax.backends.cuda.instances import (
        CLUSTER_STREAM_FLOAT32_SINGLE_MIN_COLS,
        CLUSTER_STREAM_PAIR_MIN_HELD,
        CLUSTER_STREAM_PAIR_MIN_HELD_LOW_BANDWIDTH,
        CLUSTER_STREAM_PAIR_MIN_ROWS_BACKWARD,
        cluster_stream_per_sm,
        cluster_stream_shape,
    )

    pair_budget = 228 * 1024 // 2 - 2 * 1024
    for dtype in DTYPES:
        for backward in (False, True):
            for n in LENGTHS[:-2]:
                shape = cluster_stream_shape(n, dtype, backward, pair_budget, per_sm=2)
                assert shape.threads == GRID_ROW_THREADS // 2 and shape.smem_bytes <= pair_budget
                held = (shape.packs * shape.threads + shape.smem_slots) / grid_row_slots(n, dtype, shape.ctas)
                single = dtype == torch.float32 and not backward and n >= CLUSTER_STREAM_FLOAT32_SINGLE_MIN_COLS
                for high, least in (
                    (True, CLUSTER_STREAM_PAIR_MIN_HELD),
                    (False, CLUSTER_STREAM_PAIR_MIN_HELD_LOW_BANDWIDTH),
                ):
                    for rows in (16, 128):
                        want = (
                            not single
                            and held >= least[backward]
                            and (not backward or rows >= CLUSTER_STREAM_PAIR_MIN_ROWS_BACKWARD)
                        )
                        assert cluster_stream_per_sm(n, dtype, backward, rows, pair_budget, high) == (2 if want else 1)
    # as measured on an H100 (results 2026-12-06_h100_s70/c4/, c6/)
    assert cluster_stream_per_sm(699051, torch.bfloat16, False, 191, pair_budget) == 1
    assert cluster_stream_per_sm(786432, torch.bfloat16, False, 160, pair_budget) == 2
    assert cluster_stream_per_sm(1 << 20, torch.bfloat16, False, 128, pair_budget) == 2
    assert cluster_stream_per_sm(1 << 20, torch.bfloat16, True, 128, pair_budget) == 1
    assert cluster_stream_per_sm(786432, torch.bfloat16, True, 160, pair_budget) == 2
    assert cluster_stream_per_sm(699051, torch.bfloat16, True, 191, pair_budget) == 2
    assert cluster_stream_per_sm(1 << 19, torch.float32, True, 256, pair_budget) == 1
    assert cluster_stream_per_sm(1 << 20, torch.bfloat16, True, 16, pair_budget) == 1
    # GPUs of much DRAM bandwidth an SM keep the pair rule as first measured (2026-11-27_h100_s24)
    assert cluster_stream_per_sm(1 << 20, torch.bfloat16, True, 128, pair_budget, True) == 2
    assert cluster_stream_per_sm(699051, torch.float32, True, 192, pair_budget, True) == 1
    with pytest.raises(ValueError, match="CTAs an SM"):
        cluster_stream_shape(1 << 20, torch.float32, False, pair_budget, per_sm=3)


def test_float32_forward_of_long_rows_keeps_one_cta_an_sm():
    """The float32 forward of rows of at least CLUSTER_STREAM_FLOAT32_SINGLE_MIN_COLS runs one CTA an
    SM on any GPU; shorter rows keep the pair rule (H200, results 2026-12-03_h200_s51/d5/stream_per_sm.txt;
    H100, 2026-12-06_h100_s70/c4/, c6/)."""
    from fastsoftmax.backends.cuda.instances import cluster_stream_per_sm

    pair_budget = 228 * 1024 // 2 - 2 * 1024
    for high in (True, False):
        assert cluster_stream_per_sm(300007, torch.float32, False, 512, pair_budget, high) == 2
        for n in (393216, 1 << 19, 699051, 786432, 1 << 20):
            assert cluster_stream_per_sm(n, torch.float32, False, 128, pair_budget, high) == 1
    assert cluster_stream_per_sm(1 << 19, torch.bfloat16, False, 256, pair_budget, True) == 2


@pytest.mark.parametrize("limits", LIMITS, ids=["h100", "a100"])
def test_cluster_stream_chosen_for_many_long_rows(limits):
    """Where the cluster tier does not take a row (or not at its best) and there are
    CLUSTER_STREAM_MIN_ROWS rows or more, on GPUs with clusters only, but for the rows grid_row runs in
    teams (tiers.grid_row_in_teams); grid_row keeps its few rows."""
    for dtype in DTYPES:
        for backward in (False, True):
            for outer in (1, 4, 8, 15, 16, 64, 131, 132, 512):
                for n in (1 << 17, 300007, 1 << 19, (1 << 19) + 1, 699051, 1 << 20, 1 << 22):
                    chosen = tiers.choose_tier(outer, n, 1, dtype, backward, limits)
                    assert tiers.supports("cluster_stream", outer, n, 1, dtype, backward, limits) == limits.clusters
                    many = outer >= tiers.CLUSTER_STREAM_MIN_ROWS
                    on_boundaries = n * CXX_TYPES[dtype][2] % 16 == 0
                    held = limits.clusters and n <= cluster_preferred_max_cols(dtype, backward, outer, on_boundaries)
                    if many and not backward:  # measured: past 2^19 (float32 2^18), streamed
                        held = held and n <= cluster_preferred_max_cols(dtype, backward)
                    teams = limits.cooperative and tiers.grid_row_in_teams(outer, n, dtype, backward, limits)
                    want = limits.clusters and not held and many and not teams
                    assert (chosen == "cluster_stream") == want, (outer, n, dtype, backward, chosen)
    if limits.clusters:
        # rows the cluster tier holds in registers only on 16-byte boundaries (float32 backward 2^18,
        # H100 0.98 of copy against cluster_stream's 0.80 on 512 rows): off them, cluster_stream
        for dtype, backward, n in ((torch.float32, True, 1 << 18), (torch.bfloat16, True, 1 << 19)):
            assert tiers.choose_tier(512, n, 1, dtype, backward, limits) == "cluster"
            assert tiers.choose_tier(512, n, 1, dtype, backward, limits, aligned=False) == "cluster_stream"
            assert tiers.supports("cluster", 512, n, 1, dtype, backward, limits)
            assert not tiers.supports("cluster", 512, n + 1, 1, dtype, backward, limits)


@pytest.mark.parametrize("backward", [False, True])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_cluster_stream_plan(fake_device, dtype, backward):
    """A grid of the clusters resident at once where there are more rows (else one cluster a row),
    the cluster dimension set, no workspace argument, the shape and CTAs an SM the instances' rules
    give, and the non-portable size allowed past 8."""
    from fastsoftmax.backends.cuda.instances import cluster_stream_per_sm, cluster_stream_shape, cluster_stream_stagger

    n, outer = (1 << 20) + 3, 40
    strides = ((n + 5,), (n,), (n + 1,)) if backward else ((n + 5,), (n,))
    off = dtype.itemsize  # the second tensor one element past a 16-byte boundary
    key = ("cluster_stream", dtype, outer, n, 1, strides, False, backward, off, 0, tiers.DEFAULT_TUNING)
    run = plans.build(fake_device, key)
    pointers = (0x1000, 0x2000 + off, 0x3000) if backward else (0x1000, 0x2000 + off)
    run(pointers, 3)
    facts = _Facts()
    budget = grid_row_dynamic_smem(facts, 2)
    per_sm = cluster_stream_per_sm(n, dtype, backward, outer, budget, facts.high_bandwidth_per_sm)
    shape = cluster_stream_shape(n, dtype, backward, grid_row_dynamic_smem(facts, per_sm), per_sm=per_sm)
    ((kernel, grid, stream, args),) = _Kernel.launches
    assert kernel.cluster == shape.ctas and not kernel.cooperative and stream == 3
    assert grid == min(outer, kernel.resident_clusters()) * shape.ctas
    assert kernel.block_x == shape.threads == GRID_ROW_THREADS // per_sm and kernel.smem == shape.smem_bytes
    assert kernel.name == grid_row_instance(dtype, backward, False, "cluster_stream", per_sm).name
    stagger = cluster_stream_stagger(outer, kernel.resident_clusters())
    assert args == pointers + (outer, n) + tuple(s[0] for s in strides) + (shape.smem_slots, stagger)
    assert len(args) == kernel.nargs == (10 if backward else 8)
    assert (("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1) in _Kernel.attributes) == (shape.ctas > 8)
    assert plans.stream_workspace.asked == []


def test_dynamic_shared_memory_opt_in_counts_the_static_memory(fake_device):
    """A launch gets 48 KiB of static and dynamic shared memory together without the opt-in: 48 KiB
    of dynamic memory beside the kernel's static memory needs it (16-bit block_regs rows at 384
    threads were refused at launch), and the opt-in leaves room for the static memory."""
    kernel = _Kernel("function", "k", 0, 6, 256)  # 1024 bytes of static shared memory (get_attribute)
    for smem in (0, 1024, 47 * 1024):
        kernel.allow_dynamic_smem(smem)
        assert _Kernel.attributes == [], smem
    kernel.allow_dynamic_smem(48 * 1024)
    assert _Kernel.attributes == [("MAX_DYNAMIC_SHARED_SIZE_BYTES", 227 * 1024 - 1024)]
    kernel.allow_dynamic_smem(100 * 1024, 8 * 1024)  # a larger reserve than the static memory
    assert _Kernel.attributes[-1] == ("MAX_DYNAMIC_SHARED_SIZE_BYTES", 219 * 1024)


def test_cluster_rows_off_their_boundaries_past_what_registers_hold(fake_device):
    """Tier "cluster" on float32 backward rows of 2^18, which it holds in registers only on 16-byte
    boundaries: with a row stride off them the plan is cluster_stream's (no error, no overrun)."""
    n, outer = 1 << 18, 64
    for pitch, align, streamed in ((n, 0, False), (n + 1, 4, True)):
        _Kernel.launches = []
        strides = ((pitch,), (n,), (n,))
        key = ("cluster", torch.float32, outer, n, 1, strides, False, True, align, 0, tiers.DEFAULT_TUNING)
        plans.build(fake_device, key)((0x1000, 0x2000, 0x3000), 0)
        ((kernel, grid, _, args),) = _Kernel.launches
        assert kernel.name.startswith("fs_cluster_stream_" if streamed else "fs_cluster_softmax_bwd"), kernel.name
        # streamed at two CTAs an SM (8 CTAs would hold 56% of their slices: short of
        # CLUSTER_STREAM_PAIR_HELD_SHARE)
        assert kernel.cluster == 16 and kernel.block_x == (256 if streamed else kernel.block_x)
    # past what the tier holds at any alignment, a forced "cluster" is refused, not streamed
    n = (1 << 18) + 3
    key = ("cluster", torch.float32, 2, n, 1, ((n,), (n,), (n,)), False, True, 4, 0, tiers.DEFAULT_TUNING)
    with pytest.raises(ValueError, match="too long"):
        plans.build(fake_device, key)


def test_cluster_stream_plan_follows_the_tuning(fake_device):
    n = 1 << 20
    tuning = tiers.Tuning(cluster_ctas=4, cluster_stream_per_sm=1)
    key = ("cluster_stream", torch.bfloat16, 64, n, 1, ((n,), (n,)), False, False, 0, 0, tuning)
    plans.build(fake_device, key)((0x1000, 0x2000), 0)
    ((kernel, grid, _, args),) = _Kernel.launches
    # 64 rows over 33 resident clusters of 4: a grid of those 33, walking the rows
    assert kernel.cluster == 4 and grid == 33 * 4 and kernel.block_x == GRID_ROW_THREADS
    assert ("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1) not in _Kernel.attributes
    with pytest.raises(ValueError, match="cluster_stream_per_sm=3"):
        tiers.Tuning(cluster_stream_per_sm=3)
    # the stagger: by the rule (64 rows over 33 resident clusters of 4: none), forced on or off
    for forced, want in ((None, 0), (True, 132 // 4), (False, 0)):
        _Kernel.launches = []
        tuning = tiers.Tuning(cluster_ctas=4, cluster_stream_per_sm=1, cluster_stream_stagger=forced)
        key = ("cluster_stream", torch.bfloat16, 64, n, 1, ((n,), (n,)), False, False, 0, 0, tuning)
        plans.build(fake_device, key)((0x1000, 0x2000), 0)
        ((kernel, grid, _, args),) = _Kernel.launches
        assert args[-1] == want, forced
    key = ("cluster_stream", torch.bfloat16, 512, n, 1, ((n,), (n,)), False, False, 0, 0, tiers.Tuning(cluster_ctas=4))
    _Kernel.launches = []
    plans.build(fake_device, key)((0x1000, 0x2000), 0)
    assert _Kernel.launches[0][3][-1] == 132 // 4  # 512 rows: four or more a resident cluster
    # one cluster a row where forced, or where the rows are no more than the resident clusters
    for rows, forced, clusters in ((64, False, 64), (64, True, 33), (20, None, 20), (20, True, 20)):
        _Kernel.launches = []
        tuning = tiers.Tuning(cluster_ctas=4, cluster_stream_persistent=forced)
        key = ("cluster_stream", torch.bfloat16, rows, n, 1, ((n,), (n,)), False, False, 0, 0, tuning)
        plans.build(fake_device, key)((0x1000, 0x2000), 0)
        assert _Kernel.launches[0][1] == clusters * 4, (rows, forced)


def test_cluster_stream_persistent():
    """A grid of the resident clusters wherever there are more rows than they are; the tuning turns it
    off, and forced on it still never launches more clusters than rows."""
    from fastsoftmax.backends.cuda.instances import cluster_stream_persistent

    assert cluster_stream_persistent(100, 8)
    assert not cluster_stream_persistent(8, 8)
    assert not cluster_stream_persistent(1, 8)
    assert not cluster_stream_persistent(100, 8, False)
    assert cluster_stream_persistent(100, 8, True)
    assert not cluster_stream_persistent(8, 8, True)


def test_cluster_stream_shape_over_runs_of_columns():
    """Runs of interleaved columns: slices of whole runs of max(inner, pack) elements and shared-memory
    slots in whole rounds of the CTA's threads (every slot of a thread then holds the same columns),
    within the budget less the column exchange's static memory."""
    from fastsoftmax.backends.cuda.instances import COLUMN_STREAM_STATIC_SMEM, cluster_stream_shape

    budget = H100_BUDGET + 1024 - COLUMN_STREAM_STATIC_SMEM
    with pytest.raises(ValueError, match="one CTA an SM"):
        cluster_stream_shape(1 << 20, torch.bfloat16, False, budget, per_sm=2, columns=8)
    for dtype in DTYPES:
        pack = 4
        for backward in (False, True):
            tensors = 2 if backward else 1
            for inner in (2, 4, 8, 16, 32):
                for n in (1000, 65536, 1048576, 4194304):
                    run = n * inner
                    for ctas in (0, 2, 16):
                        shape = cluster_stream_shape(run, dtype, backward, budget, ctas, columns=inner)
                        unit = max(inner, pack)
                        assert (
                            shape.pack == pack
                            and shape.packs * pack * CXX_TYPES[dtype][2] == 16 * (GRID_ROW_HELD_PACKS[backward])
                        )
                        assert shape.chunk % unit == 0 and shape.chunk * shape.ctas >= run
                        assert shape.chunk - unit < -(-run // shape.ctas)  # the least such multiple
                        assert shape.smem_slots % shape.threads == 0
                        slot_bytes = pack * CXX_TYPES[dtype][2]
                        assert shape.smem_bytes == shape.smem_slots * slot_bytes * tensors <= budget
                        slots = shape.chunk // pack
                        on_chip = shape.packs * shape.threads + shape.smem_slots
                        assert shape.smem_slots == 0 or on_chip - shape.threads < slots, (dtype, inner, n, shape)


def test_column_stream_plan(fake_device, monkeypatch):
    """Runs too long for the cluster tier's column kernels, 8 or more of them: one cluster a run,
    cluster_stream's column kernel, the run's length and inner as its arguments; calls off 16-byte
    boundaries build the staged tiles instead; the tuning turns it off or forces it where it fits."""
    import dataclasses

    from fastsoftmax.backends.cuda import strided
    from fastsoftmax.backends.cuda.instances import COLUMN_STREAM_STATIC_SMEM, cluster_stream_shape

    monkeypatch.setattr(strided, "device_facts", lambda dev: _Facts())
    monkeypatch.setattr(strided, "Kernel", _Kernel)
    monkeypatch.setattr(strided, "stream_workspace", _Workspaces())
    for dtype, backward, (outer, n, inner) in (
        (torch.float32, False, (64, 65536, 16)),
        (torch.float32, True, (128, 16384, 32)),
        (torch.bfloat16, True, (128, 65536, 8)),
    ):
        _Kernel.launches = []
        strides = ((n * inner, inner, 1),) * (3 if backward else 2)
        key = ("strided_staged", dtype, outer, n, inner, strides, False, backward, 0, 0, tiers.DEFAULT_TUNING)
        pointers = (0x1000, 0x2000, 0x3000)[: len(strides)]
        plans.build(fake_device, key)(pointers, 5)
        ((kernel, grid, stream, args),) = _Kernel.launches
        budget = grid_row_dynamic_smem(_Facts(), 1, COLUMN_STREAM_STATIC_SMEM)
        shape = cluster_stream_shape(n * inner, dtype, backward, budget, columns=inner)
        assert kernel.name == grid_row_instance(dtype, backward, False, "cluster_stream", 1, True).name
        assert kernel.cluster == shape.ctas and grid == outer * shape.ctas and stream == 5
        assert kernel.block_x == shape.threads and kernel.smem == shape.smem_bytes
        assert args == pointers + (outer, n * inner) + (n * inner,) * len(strides) + (shape.smem_slots, inner)
        assert len(args) == kernel.nargs
    # fewer runs than COLUMN_STREAM_MIN_RUNS, the tuning's False, the 16-bit forward, runs held less
    # than COLUMN_STREAM_MIN_HELD on chip: the staged tiles (or the cluster tier's column kernels)
    for dtype, backward, (outer, n, inner), column_stream in (
        (torch.float32, False, (4, 65536, 16), None),
        (torch.float32, False, (64, 65536, 16), False),
        (torch.bfloat16, False, (64, 65536, 16), None),
        (torch.float32, True, (8, 1048576, 4), None),
    ):
        _Kernel.launches = []
        tuning = dataclasses.replace(tiers.DEFAULT_TUNING, column_stream=column_stream)
        strides = ((n * inner, inner, 1),) * (3 if backward else 2)
        key = ("strided_staged", dtype, outer, n, inner, strides, False, backward, 0, 0, tuning)
        plans.build(fake_device, key)((0x1000, 0x2000, 0x3000)[: len(strides)], 0)
        assert _Kernel.launches and all(not k.name.startswith("fs_cluster_stream") for k, *_ in _Kernel.launches)
    # forced on a run the cluster tier would hold
    tuning = dataclasses.replace(tiers.DEFAULT_TUNING, column_stream=True, cluster_ctas=2)
    n, inner = 3000, 8
    key = ("strided_staged", torch.float32, 4, n, inner, ((n * inner, inner, 1),) * 2, True, False, 0, 0, tuning)
    _Kernel.launches = []
    plans.build(fake_device, key)((0x1000, 0x2000), 0)
    ((kernel, grid, _, args),) = _Kernel.launches
    assert kernel.name == grid_row_instance(torch.float32, False, True, "cluster_stream", 1, True).name
    assert kernel.cluster == 2 and grid == 8 and args[-1] == inner
    # a call off its 16-byte boundaries: the staged tiles
    _Kernel.launches = []
    n, inner = 65536, 16
    key = ("strided_staged", torch.float32, 64, n, inner, ((n * inner, inner, 1),) * 2, False, False, 0, 0)
    plans.build(fake_device, key + (tiers.DEFAULT_TUNING,))((0x1004, 0x2000), 0)
    assert _Kernel.launches and all(not k.name.startswith("fs_cluster_stream") for k, *_ in _Kernel.launches)


def test_backend_says_where_it_streams_runs_of_columns(monkeypatch):
    """CudaBackend.streams_columns (the dispatcher keeps those backwards off Triton's relay tier)."""
    from fastsoftmax.backends.cuda import backend

    monkeypatch.setattr(backend, "device_facts", lambda dev: _Facts())
    streams = backend.BACKEND.streams_columns
    assert streams(64, 65536, 16, torch.bfloat16, True, 0)
    assert streams(128, 65536, 8, torch.float32, True, 0)
    assert streams(64, 65536, 16, torch.float32, False, 0)  # the float32 forward of runs of 2^19 or more
    assert not streams(64, 65536, 16, torch.bfloat16, False, 0)  # the 16-bit forward
    assert not streams(16, 1 << 20, 2, torch.bfloat16, True, 0)  # runs held half on chip
    assert not streams(64, 65536, 12, torch.bfloat16, True, 0)  # inner no power of two
    assert not streams(4, 65536, 16, torch.bfloat16, True, 0)  # few runs

    class _Ampere(_Facts):
        cluster_ctas = 0

    monkeypatch.setattr(backend, "device_facts", lambda dev: _Ampere())
    assert not streams(64, 65536, 16, torch.bfloat16, True, 0)


def test_cluster_stream_plan_refuses_without_clusters(fake_device, monkeypatch):
    class _Ampere(_Facts):
        cluster_ctas = 0
        arch = "sm_80"

    monkeypatch.setattr(plans, "device_facts", lambda dev: _Ampere())
    n = 1 << 20
    key = ("cluster_stream", torch.float32, 64, n, 1, ((n,), (n,)), False, False, 0, 0, tiers.DEFAULT_TUNING)
    with pytest.raises(ValueError, match="needs thread-block clusters"):
        plans.build(fake_device, key)


# ---- block_regs on a GPU of small blocks ------------------------------------------------------------


class _T4(_Facts):
    """A T4's facts: 64 KiB of shared memory a block and an SM, 40 SMs, no clusters."""

    sm_count = 40
    smem_per_block = smem_per_sm = 64 * 1024
    cluster_ctas = 0
    arch = "sm_75"
    dram_gbps = 320.0


T4_LIMITS = tiers.Limits.of(_T4)


def _block_regs_key(n: int, align: int, dtype=torch.bfloat16, backward=False):
    strides = ((n,),) * (3 if backward else 2)
    return ("block_regs", dtype, 64, n, 1, strides, False, backward, align, 0, tiers.DEFAULT_TUNING)


@pytest.mark.parametrize("n", [8192, 8193, 16384, 30720, 30721, 30727, 30728, 32768])
@pytest.mark.parametrize("align", [0, 2])
def test_block_regs_shared_memory_bounds_its_plan(fake_device, n, align):
    # what tier choice weighs against a GPU's block (tiers.block_regs_smem_bytes) bounds what the
    # plan asks for, and is it on rows that start and end on 16-byte boundaries
    plans.build(fake_device, _block_regs_key(n, align))((0x1000 + align, 0x2000), 0)
    kernel = _Kernel.launches[-1][0]
    rows_aligned = align == 0 and n % 8 == 0
    most = tiers.block_regs_smem_bytes(n, torch.bfloat16, False, rows_aligned)
    assert kernel.smem + tiers.STATIC_SMEM_RESERVE <= most
    if rows_aligned:
        assert kernel.smem + tiers.STATIC_SMEM_RESERVE == most


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.bfloat16])
@pytest.mark.parametrize("backward", [False, True])
def test_a_small_gpu_gets_no_block_regs_launch_it_cannot_make(fake_device, monkeypatch, dtype, backward):
    # a T4's block holds 64 KiB: 16-bit forward rows block_regs would stage in all of it take another tier
    # there, and every row it keeps plans within the block
    monkeypatch.setattr(plans, "device_facts", lambda dev: _T4())
    itemsize = dtype.itemsize
    for n in [*range(8193, 32769, 509), 30713, 30714, 30720, 30721, 30728, 32768]:
        for aligned in (True, False):
            tier = tiers.choose_tier(64, n, 1, dtype, backward, T4_LIMITS, aligned=aligned)
            if tier == "block_regs":
                plans.build(fake_device, _block_regs_key(n, 0 if aligned else itemsize, dtype, backward))
    staged = itemsize == 2 and not backward
    longest = 16384 if backward else 32768  # block_regs' longest rows (instances.block_regs_max_cols)
    assert (tiers.choose_tier(64, longest, 1, dtype, backward, T4_LIMITS) == "block_regs") != staged
    assert tiers.choose_tier(64, longest - 2048, 1, dtype, backward, T4_LIMITS) == "block_regs"
    if staged:
        with pytest.raises(ValueError, match="tier 'block_regs' stages rows of 32768"):
            plans.build(fake_device, _block_regs_key(32768, 0, dtype))


# ---- the cluster tier on a GPU whose clusters hold 8 CTAs ------------------------------------------


class _EightCTAs(_Facts):
    """A GPU with clusters of the portable 8 CTAs at most (launch.DeviceFacts: cluster_ctas 8, and no
    cluster_launch, which the tiers of clusters of 16 need)."""

    cluster_ctas = 8


EIGHT_LIMITS = dataclasses.replace(tiers.H100_LIMITS, cluster_ctas=8)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16])
@pytest.mark.parametrize("backward", [False, True])
def test_clusters_of_8_where_the_gpu_holds_no_more(fake_device, monkeypatch, dtype, backward):
    # the cluster tier alone, its clusters capped at 8 (decode rows too), every row it is chosen for
    # planned within them; longer rows, and every other tier of clusters, elsewhere
    monkeypatch.setattr(plans, "device_facts", lambda dev: _EightCTAs())
    longest = instances.cluster_max_cols(dtype, backward, aligned=True, most=8)
    assert longest == instances.cluster_max_cols(dtype, backward, aligned=True) // 2
    chosen = set()
    for n in (9217, 16385, 32768, 50257, 65536, 128256, 131072, 151936, 262144, 524288, 1 << 20):
        for rows in (1, 8, 64, 1024):
            tier = tiers.choose_tier(rows, n, 1, dtype, backward, EIGHT_LIMITS)
            assert tier != "cluster_stream" and (tier != "cluster" or n <= longest), (n, rows, tier)
            assert tiers.supports("cluster", rows, n, 1, dtype, backward, EIGHT_LIMITS) == (n <= longest)
            if tier != "cluster":
                continue
            chosen.add((rows, n))
            strides = ((n,),) * (3 if backward else 2)
            key = ("cluster", dtype, rows, n, 1, strides, False, backward, 0, 0, tiers.DEFAULT_TUNING)
            _Kernel.launches, _Kernel.attributes = [], []
            plans.build(fake_device, key)((0x1000,) * len(strides), 0)
            kernel = _Kernel.launches[-1][0]
            assert 2 <= kernel.cluster <= 8 and ("NON_PORTABLE_CLUSTER_SIZE_ALLOWED", 1) not in _Kernel.attributes
    assert (1, 128256) in chosen and (8, 128256) in chosen  # decode rows, in clusters of 8
    # a row the tier holds on 16-byte boundaries only, planned off them (the tensors' rows at different
    # offsets): split_row, where no cluster_stream runs
    strides = ((longest + 1,), (longest + 3,), (longest + 5,))[: 3 if backward else 2]
    key = ("cluster", dtype, 4, longest, 1, strides, False, backward, dtype.itemsize, 0, tiers.DEFAULT_TUNING)
    _Kernel.launches = []
    plans.build(fake_device, key)((0x1000 + dtype.itemsize,) * len(strides), 0)
    assert _Kernel.launches and all("split" in k.name and k.cluster == 1 for k, *_ in _Kernel.launches)
    assert tiers.choose_tier(1, 128256, 1, dtype, backward, tiers.H100_LIMITS) == "cluster"
    assert instances.cluster_shape(128256, dtype, backward, rows=1, sm_count=132, most=8).ctas == 8
    with pytest.raises(ValueError, match="more than this GPU holds"):  # a tuning's 16 there
        instances.cluster_shape(128256, dtype, backward, ctas=16, most=8)


# ---- strided_staged: flat runs folded into whole packs ---------------------------------------------
@pytest.mark.parametrize("backward", [False, True])
def test_staged_plan_folds_flat_runs(fake_device, monkeypatch, backward):
    """A flat (4096, 4096, 3) bf16 block runs as rows of 24 columns (whole packs of 8), the true
    inner in the geometry's fold bits, for calls on 16-byte boundaries (by default in the backward,
    forced by the tuning in either direction); off them, or unfolded, as rows of 3 in packs of one."""
    from fastsoftmax.backends.cuda import strided

    monkeypatch.setattr(strided, "device_facts", lambda dev: _Facts())
    monkeypatch.setattr(strided, "Kernel", _Kernel)
    outer, n, inner = 4096, 4096, 3
    strides = ((n * inner, inner, 1),) * (3 if backward else 2)
    aligned = (0x1000, 0x2000, 0x3000)[: len(strides)]
    off = (0x1002,) + aligned[1:]
    # folded by default in the 16-bit backward only (strided.folds_by_default)
    cases = ((None, aligned, backward), (None, off, False), (True, aligned, True), (False, aligned, False))
    for fold, pointers, folded in cases:
        tuning = dataclasses.replace(tiers.DEFAULT_TUNING, staged_fold=fold)
        key = ("strided_staged", torch.bfloat16, outer, n, inner, strides, False, backward, 6, 0, tuning)
        _Kernel.launches = []
        plans.build(fake_device, key)(pointers, 0)
        ((kernel, _, _, args),) = _Kernel.launches
        middle = args[len(pointers) + 1 :]
        geometry = middle[-3]
        if folded:
            assert kernel.name.endswith("_p8_fold"), kernel.name
            assert middle[:3] == (outer, n * inner // 24, 24)
            assert middle[3:-3] == (n * inner, 24) * len(pointers)
            assert geometry & 0xFFFF == 24 and (geometry >> 21) & 0x1FF == inner
        else:
            assert kernel.name.endswith("_p1"), kernel.name
            assert middle[:3] == (outer, n, inner) and (geometry >> 21) & 0x1FF == 0
    tuning = dataclasses.replace(tiers.DEFAULT_TUNING, staged_fold=True)
    key = ("strided_staged", torch.bfloat16, 2, 1001, 3, strides, False, backward, 6, 0, tuning)
    with pytest.raises(ValueError, match="no flat run to fold"):
        plans.build(fake_device, key)


def test_fold_width():
    from fastsoftmax.backends.cuda.strided import fold_width

    def dense(inner, tensors=2):
        return ((4096 * inner, inner, 1),) * tensors

    assert fold_width(8, 4096, 3, dense(3), torch.bfloat16) == 24
    assert fold_width(8, 4096, 3, dense(3), torch.float32) == 12
    assert fold_width(8, 4096, 7, dense(7), torch.float16) == 56
    assert fold_width(8, 4096, 2, dense(2), torch.bfloat16) == 8
    assert fold_width(8, 4096, 8, dense(8), torch.bfloat16) == 0  # whole packs already
    assert fold_width(8, 4096, 12, dense(12), torch.bfloat16) == 0  # wider than a pack
    assert fold_width(8, 4096, 5, dense(5), torch.float32) == 0
    assert fold_width(8, 1001, 3, dense(3), torch.bfloat16) == 0  # 3003 elements: no whole rows of 24
    assert fold_width(8, 4096, 3, ((4097 * 3, 3, 1),) * 2, torch.bfloat16) == 0  # runs off 16-byte boundaries
    assert fold_width(1, 4096, 3, ((4097 * 3, 3, 1),) * 2, torch.bfloat16) == 24  # one run
    assert fold_width(8, 4096, 3, ((8192 * 3, 6, 2),) * 2, torch.bfloat16) == 0  # a step along inner
    assert fold_width(8, 4096, 3, ((12288, 3, 1), (3, 4096 * 8, 1)), torch.bfloat16) == 0  # not one run


def test_folds_by_default():
    from fastsoftmax.backends.cuda.strided import folds_by_default

    facts = _Facts()
    assert folds_by_default(4096, 4096, 3, 24, torch.bfloat16, True, facts)
    assert folds_by_default(1024, 2048, 7, 56, torch.float16, True, facts)
    assert not folds_by_default(4096, 4096, 3, 24, torch.bfloat16, False, facts)  # the forward
    assert not folds_by_default(4096, 4096, 3, 12, torch.float32, True, facts)
    assert not folds_by_default(2048, 2048, 4, 8, torch.bfloat16, True, facts)  # 4 divides the pack
    assert not folds_by_default(2, 1000008, 3, 24, torch.bfloat16, True, facts)  # a team splits each run


@pytest.mark.parametrize("backward", [False, True])
def test_strided_plan_merges_split_pairs_in_a_kernel_between(fake_device, monkeypatch, backward):
    """bf16 (65536, 2048) over dim 0 on the fake H100: 8 tiles of 256 columns, n split 33 ways; the
    partials, strided_merge (blocks of 8 columns x 8 slices, 32 a tile: 256 blocks) and the finish, in
    that order over one workspace; a tuned merge block taken as given, and refused where nothing is
    merged in a kernel of its own."""
    from fastsoftmax.backends.cuda import strided

    monkeypatch.setattr(strided, "device_facts", lambda dev: _Facts())
    monkeypatch.setattr(strided, "Kernel", _Kernel)
    monkeypatch.setattr(strided, "torch_device", lambda dev: torch.device("cpu"))
    n, inner = 65536, 2048
    strides = ((n * inner, inner, 1),) * (3 if backward else 2)
    pointers = (0x1000, 0x2000, 0x3000)[: len(strides)]

    def launches(**fields):
        tuning = dataclasses.replace(tiers.DEFAULT_TUNING, **fields)
        key = ("strided", torch.bfloat16, 1, n, inner, strides, False, backward, 0, 0, tuning)
        _Kernel.launches = []
        plans.build(fake_device, key)(pointers, 0)
        return list(_Kernel.launches)

    (partials, _, _, p_args), (merge, m_grid, _, m_args), (finish, _, _, f_args) = launches()
    assert partials is finish and partials.name.startswith("fs_strided_softmax_"), partials.name
    assert merge.name == f"fs_strided_merge_{'sums' if backward else 'pairs'}"
    assert (merge.block_x, merge.block_y, m_grid) == (8, 8, 8 * 32)
    workspace = p_args[len(pointers)]
    assert m_args == (workspace, 33, 256) and f_args[len(pointers)] == workspace
    assert p_args[-1] & 3 == strided.STRIDED_PARTIALS and f_args[-1] & strided.STRIDED_MODE_MERGED
    _, (merge, m_grid, _, _), _ = launches(strided_merge_columns=32, strided_merge_slices=4)
    assert (merge.block_x, merge.block_y, m_grid) == (32, 4, 8 * 8)
    with pytest.raises(ValueError, match="finishing blocks merge"):
        launches(strided_merge=False, strided_merge_slices=4)
    with pytest.raises(ValueError, match="does not divide"):
        launches(strided_merge_columns=512)


class _HighBandwidthFacts(_Facts):
    dram_gbps = 4814.4  # an H200's: more than backends.base.HIGH_DRAM_GBPS_PER_SM an SM


@pytest.mark.parametrize("facts", [_Facts, _HighBandwidthFacts])
def test_block_regs_short_16bit_rows_held_raw(fake_device, monkeypatch, facts):
    """16-bit forward block_regs rows of 8-32 elements a thread are held raw on every GPU, float32 when
    tuned; held raw in their window they take 32 elements a thread where that fills the last warp
    about as well as 16; the backward, float32 and a tuned storage alike on both."""
    monkeypatch.setattr(plans, "device_facts", lambda dev: facts())

    def planned(dtype, n, align, backward=False, tuning=tiers.DEFAULT_TUNING):
        strides = ((n,),) * (3 if backward else 2)
        key = ("block_regs", dtype, 64, n, 1, strides, False, backward, align, 0, tuning)
        plans.build(fake_device, key)((0x1000,) * len(strides), 0)
        kernel, grid, _, _ = _Kernel.launches.pop()
        assert grid == 64  # a block a row
        return kernel.name.removeprefix("fs_block_regs_softmax_"), kernel.block_x

    assert planned(torch.bfloat16, 3000, 0) == ("fwd_bf16_p8_c32_raw", 96)
    assert planned(torch.float16, 4096, 0) == ("fwd_f16_p8_c32_raw", 128)
    # off 16-byte boundaries (rows of 6002 bytes): held in their window
    assert planned(torch.bfloat16, 3001, 2) == ("fwd_bf16_p8_c32_raw_window", 96)
    assert planned(torch.bfloat16, 2500, 4) == ("fwd_bf16_p8_c16_raw_window", 160)
    assert planned(torch.bfloat16, 3000, 0, backward=True)[0].endswith("_raw")
    assert planned(torch.float32, 3000, 0) == ("fwd_f32_p4_c16", 192)
    as_float = tiers.Tuning(short_row_storage_16bit="float")
    assert planned(torch.bfloat16, 3000, 0, tuning=as_float) == ("fwd_bf16_p8_c32", 96)
    assert planned(torch.bfloat16, 3001, 2, tuning=as_float) == ("fwd_bf16_p8_c16_window", 192)
    staged = tiers.Tuning(short_row_storage_16bit="staged")
    assert planned(torch.bfloat16, 3000, 0, tuning=staged) == ("fwd_bf16_p8_c32_staged", 96)
    with pytest.raises(ValueError, match="16-byte packs"):
        planned(torch.bfloat16, 3001, 2, tuning=tiers.Tuning(short_row_storage_16bit="staged", row_window=False))


def test_cluster_capped_forms():
    """The cluster instances with a "capped" form (the same kernel under a lower register cap): the
    float32 backward of 32 elements a thread alone, in both functions, under __maxnreg__ of its cap;
    other kinds refuse the form."""
    import torch

    from fastsoftmax.backends.cuda.instances import CLUSTER_CAPPED_MAX_REGISTERS, Instance, all_instances

    capped = sorted(inst.name for inst in all_instances() if getattr(inst, "storage", "") == "capped")
    assert capped == ["fs_cluster_logsoftmax_bwd_f32_p4_c32_capped", "fs_cluster_softmax_bwd_f32_p4_c32_capped"]
    inst = Instance("cluster", torch.float32, True, False, 4, cols=32, storage="capped")
    assert f"__maxnreg__({CLUSTER_CAPPED_MAX_REGISTERS[4, True, 32]})" in inst._cluster_wrapper("float", "false")
    with pytest.raises(ValueError, match="no cluster form"):
        Instance("cluster", torch.bfloat16, True, False, 8, cols=32, storage="capped")._cluster_wrapper("bf16", "false")
