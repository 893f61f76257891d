"""The grid_row tier (kernels/grid_row_tier.cuh) on a GPU, forced, against a float64 reference.

Lengths are taken around the boundaries of the launch the backend makes on this device
(plans.grid_row_launch): a pack per CTA and less (empty slices), the last slot a thread holds in
registers, the last one shared memory holds, and rows long enough that the rest is re-read from
device memory. Outputs are poisoned with NaN before every launch. Skips without a GPU.
"""

from __future__ import annotations

import pytest
import torch
from inputs import (
    around_the_fused_shift_limit,
    forced_backward,
    forced_forward,
    forward_output,
    gradients_laid_out,
    graph_replays_right,
    rows_laid_out,
    rows_of_special_values,
)
from reference import check_backward, check_forward

import fastsoftmax
from fastsoftmax import dispatch

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device"),
]

DTYPES = {"fp32": torch.float32, "fp16": torch.float16, "bf16": torch.bfloat16}
TIER = "grid_row"


def rand(shape, dtype, scale=3.0):
    return (torch.randn(shape, device="cuda", dtype=torch.float32) * scale).to(dtype)


def shape_of(backend, dtype, backward, n):
    from fastsoftmax.backends.cuda import plans

    return plans.grid_row_launch(backend.kernel, dtype, n, backward, False, torch.cuda.current_device())[1]


def forward(backend, x, log, out=None):
    return forced_forward(backend, TIER, x, log, out)


def backward(backend, y, dy, log, out=None):
    return forced_backward(backend, TIER, y, dy, log, out)


def boundaries(backend, dtype, backward_):
    """Row lengths at the edges of this device's launch geometry."""
    small = shape_of(backend, dtype, backward_, 1)
    ctas, pack = small.ctas, small.pack
    regs = ctas * (small.packs * small.threads - 1) * pack  # every slice held in registers
    out = [1, 7, pack * ctas - 1, pack * ctas, pack * ctas + 1, 3 * pack * ctas + 5, regs, regs + 1]
    full = shape_of(backend, dtype, backward_, 1 << 28)  # shared memory at its budget
    if full.smem_slots:
        # every slice held in registers and shared memory; then a few elements re-read
        chip = full.ctas * (full.packs * full.threads + full.smem_slots - 1) * pack
        out += [chip, chip + pack + 3]
    return out


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_forward_boundaries(backend, dtype_name):
    dtype = DTYPES[dtype_name]
    for n in boundaries(backend, dtype, False):
        for log in (False, True):
            x = rand((1, n), dtype)
            y = forward(backend, x, log)
            check_forward(y, x, 1, log)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_backward_boundaries(backend, dtype_name):
    dtype = DTYPES[dtype_name]
    for n in boundaries(backend, dtype, True):
        for log in (False, True):
            x = rand((1, n), dtype)
            dy = rand((1, n), dtype)
            dx = backward(backend, forward_output(x, log), dy, log)
            check_backward(dx, x, dy, 1, log)


@pytest.mark.parametrize("rows", [1, 3])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_long_rows(backend, dtype_name, rows):
    """2^24 + 7: held in registers and shared memory, and (float32, backward) partly re-read."""
    dtype = DTYPES[dtype_name]
    n = (1 << 24) + 7 if rows == 1 else (1 << 22) + 3
    x = rand((rows, n), dtype)
    for log in (False, True):
        check_forward(forward(backend, x, log), x, 1, log)
    dy = rand((rows, n), dtype)
    dx = backward(backend, forward_output(x, False), dy, False)
    check_backward(dx, x, dy, 1, False)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_many_rows(backend, dtype_name):
    """Rows one after another over the whole grid: the workspace halves alternate 64 times, and
    most CTAs of a 4099-column row have an empty slice."""
    dtype = DTYPES[dtype_name]
    for n in (4099, 70001):
        x = rand((64, n), dtype)
        for log in (False, True):
            check_forward(forward(backend, x, log), x, 1, log)
        dy = rand((64, n), dtype)
        check_backward(backward(backend, forward_output(x, True), dy, True), x, dy, 1, True)


def test_rest_reread_16bit(backend):
    """A 16-bit row longer than registers and shared memory hold forward: the rest is re-read."""
    n = 3 * (1 << 23) + 5
    x = rand((1, n), torch.bfloat16)
    check_forward(forward(backend, x, False), x, 1, False)


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("n", [300007, 1000003])
@pytest.mark.parametrize(
    "layout", ["x+1", "both+1", "x+1,y+3", "pitch+3", "in-place", "functional-forced", "functional-view"]
)
def test_alignment_and_layouts(backend, n, dtype_name, layout):
    """Rows off a 16-byte boundary: x alone (not held: re-read at y's packs), x and y alike (held),
    each differently, odd pitches (the misalignment changes row by row), in place, and through the
    functional layer (its outputs poisoned by the conftest)."""
    dtype = DTYPES[dtype_name]
    x, out = rows_laid_out("x+1" if layout == "functional-view" else layout, 3, n, dtype)
    for log in (False, True):
        if layout == "in-place":
            y = x.clone()
            backend.forward(y.unsqueeze(2), y.unsqueeze(2), log, TIER)
            torch.cuda.synchronize()
        elif layout.startswith("functional"):
            with dispatch.forced("cuda", TIER):
                y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, 1)
            torch.cuda.synchronize()
        else:
            y = forward(backend, x, log, out)
        check_forward(y, x, 1, log)
    # backward: y, dy and dx misaligned alike (held), or each its own way (re-read)
    y, dy, dx_out = gradients_laid_out(layout, forward_output(x, False), dtype)
    dx = backward(backend, y, dy, False, dx_out)
    check_backward(dx, x, dy, 1, False)
    if layout == "functional-forced":
        leaf = x.detach().requires_grad_()
        with dispatch.forced("cuda", TIER):
            (grad,) = torch.autograd.grad(fastsoftmax.softmax(leaf, 1), leaf, dy)
        check_backward(grad, x, dy, 1, False)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_large_magnitudes(backend, dtype_name):
    """Inputs near the top of the type's range, and maxima around 2^20 (where the kernel's
    exponent changes form, kernels/common.cuh ExpShift), in registers, shared memory and the re-read
    rest of a slice."""
    dtype = DTYPES[dtype_name]
    n = (1 << 22) + 3
    scale = 2e4 if dtype == torch.float16 else 1e30
    x = (torch.rand((2, n), device="cuda") * 2 - 1) * scale
    x[:, 0] = scale
    x[:, n - 1] = scale * 0.9999
    for inputs in (x.to(dtype), around_the_fused_shift_limit(8, 300007, dtype)):
        for log in (False, True):
            check_forward(forward(backend, inputs, log), inputs, 1, log)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_outputs_in_the_subnormal_range(backend, dtype_name, log):
    """Probabilities near 1e-39 (subnormal in float32 and bfloat16) come out as torch gives them,
    not flushed to zero."""
    n = 300007
    x = (torch.rand((2, n), device="cuda") * 4 - 92).to(DTYPES[dtype_name])
    x[:, n // 3] = 0
    x[1, ::7] = -60
    check_forward(forward(backend, x, log), x, 1, log)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("n", [300007, (1 << 22) + 3])
def test_infinities_and_nan(backend, n, dtype_name, log):
    """Row 0: some -inf; row 1: all -inf (NaN, as torch); row 2: one NaN (the row NaN); row 3: +inf
    (NaN, as torch); row 4: -inf everywhere but one CTA's slice; row 5: ordinary."""
    x = rows_of_special_values(n, DTYPES[dtype_name])
    y = forward(backend, x, log)
    check_forward(y, x, 1, log)
    torch_out = (torch.log_softmax if log else torch.softmax)(x.float(), dim=1)
    assert torch.equal(torch.isnan(y.float()), torch.isnan(torch_out)), "NaN pattern differs from torch.softmax"


def test_repeated_calls_and_graph_replay(backend):
    """The grid barrier resets itself: many launches in a row, and a captured CUDA graph replayed,
    give the same results."""
    n = (1 << 21) + 9
    x = rand((2, n), torch.bfloat16)
    first = forward(backend, x, False)
    for _ in range(20):
        backend.forward(x.unsqueeze(2), first.unsqueeze(2), False, TIER)
    torch.cuda.synchronize()
    check_forward(first, x, 1, False)
    y = torch.full_like(x, float("nan"))
    backend.forward(x.unsqueeze(2), y.unsqueeze(2), False, TIER)  # the plan is built outside capture
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        with torch.cuda.graph(graph, stream=stream):
            backend.forward(x.unsqueeze(2), y.unsqueeze(2), False, TIER)
    torch.cuda.current_stream().wait_stream(stream)
    for _ in range(3):
        y.fill_(float("nan"))
        x.copy_(rand((2, n), torch.bfloat16))
        graph.replay()
        torch.cuda.synchronize()
        check_forward(y, x, 1, False)


def test_oversized_grid_is_refused(backend):
    """A cooperative grid of more CTAs than the device holds at once fails to launch with the
    driver's error name; it must never start and deadlock in the grid barrier."""
    from fastsoftmax.backends.cuda import launch, plans

    dev = torch.cuda.current_device()
    kernel, shape = plans.grid_row_launch(backend.kernel, torch.float32, 1 << 20, False, False, dev)
    too_many = kernel.blocks_per_sm() * launch.device_facts(dev).sm_count + 1
    x = rand((1, 1 << 20), torch.float32)
    y = torch.empty_like(x)
    ws = torch.empty(4 * too_many, device="cuda")
    pushed = launch.enter(dev)
    try:
        with pytest.raises(launch.DriverError, match="COOPERATIVE_LAUNCH_TOO_LARGE"):
            kernel.launch(
                too_many,
                launch.raw_stream(dev),
                (x.data_ptr(), y.data_ptr(), ws.data_ptr(), 1, 1 << 20, 1 << 20, 1 << 20, shape.smem_slots),
            )
    finally:
        if pushed:
            launch.leave()
    torch.cuda.synchronize()  # the context is still usable
    check_forward(forward(backend, x, False), x, 1, False)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_rows_in_teams(backend, dtype_name):
    """A few rows at once, each over a team of the grid (instances.grid_row_team_shape): rows the
    teams hold in registers alone and in shared memory too, odd lengths, rows one element into their
    storage (re-read at the output's packs), softmax and log-softmax both ways, each launch twice (the
    teams' counters must be back at zero after every launch), and replays of a captured graph."""
    from fastsoftmax.backends.cuda import plans, tiers

    dtype = DTYPES[dtype_name]
    dev = torch.cuda.current_device()
    for rows, n in ((2, 300007), (3, 4099), (4, 1 << 20), (4, 2_000_003)):
        for backward_ in (False, True):
            shape = plans.grid_row_launch(backend.kernel, dtype, n, backward_, False, dev, rows)[1]
            assert shape.teams > 1 and rows % shape.teams == 0, (rows, n, backward_, shape)
        for layout in ("plain", "x+1"):
            x, _ = rows_laid_out(layout, rows, n, dtype)
            for log in (False, True):
                for _ in range(2):
                    with tiers.tuned(grid_row_teams=True):  # teams below the size tier choice takes them at
                        check_forward(forward(backend, x, log), x, 1, log)
                        y = forward_output(x.contiguous(), log)
                        dy = rand((rows, n), dtype)
                        check_backward(backward(backend, y, dy, log), x.contiguous(), dy, 1, log)
    with tiers.tuned(grid_row_teams=True):
        graph_replays_right(rand((4, 2_000_003), dtype), 1, TIER)


@pytest.mark.parametrize("dtype_name", ["fp32", "bf16"])
def test_backward_of_many_rows_in_teams(backend, dtype_name):
    """The backward of more rows than the SMs' count (and fewer), each team on rows of its own, as
    tier choice takes it on GPUs with clusters (tiers.GRID_ROW_TEAMS_MAX_ROWS_BACKWARD), through the
    public function; 191 rows, which no count of teams divides (some teams idle in the last round);
    softmax and log-softmax, an odd length."""
    from fastsoftmax.backends.cuda import plans, tiers

    dtype = DTYPES[dtype_name]
    dev = torch.cuda.current_device()
    limits = backend.limits(dev)
    n = (1 << 19) + 5
    for rows in (48, 191):
        if limits.clusters and limits.cooperative and tiers.grid_row_in_teams(rows, n, dtype, True, limits):
            assert backend.choose_tier(rows, n, 1, dtype, True) == TIER
            shape = plans.grid_row_launch(backend.kernel, dtype, n, True, False, dev, rows)[1]
            assert shape.teams > 1 and (rows % shape.teams != 0) == (rows == 191), (rows, shape)
        x = rand((rows, n), dtype)
        dy = rand((rows, n), dtype)
        for log in (False, True):
            y = forward_output(x, log)
            dx = fastsoftmax.softmax_backward(dy, y, -1, log=log, backend="cuda")
            check_backward(dx, x, dy, 1, log)


def test_chosen_automatically_through_the_public_api(backend):
    """Where tier choice takes grid_row on this device (tiers.GRID_ROW_ROW_BYTES), the public
    functions reach it with backend="cuda", forward and backward, and the results are right."""
    from fastsoftmax.backends.cuda import tiers

    limits = backend.limits(torch.cuda.current_device())
    n = 1 << 21
    chosen_fwd = backend.choose_tier(1, n, 1, torch.float32, False)
    chosen_bwd = backend.choose_tier(1, n, 1, torch.bfloat16, True)
    assert backend.choose_tier(1, 1 << 27, 1, torch.bfloat16, False) != TIER  # 256 MiB: split_row
    if not limits.cooperative:
        assert TIER not in (chosen_fwd, chosen_bwd)
        return
    assert chosen_fwd == tiers.choose_tier(1, n, 1, torch.float32, False, limits) != TIER  # 8 MiB
    assert chosen_bwd == TIER  # 4 MiB a tensor
    assert backend.choose_tier(1, 1 << 22, 1, torch.float32, False) == TIER  # 16 MiB
    x = rand((1, 1 << 22), torch.float32)
    y = fastsoftmax.softmax(x, -1, backend="cuda")
    check_forward(y, x, 1, False)
    x16 = rand((2, n), torch.bfloat16)
    dy = rand((2, n), torch.bfloat16)
    dx = fastsoftmax.softmax_backward(dy, forward_output(x16, False), -1, backend="cuda")
    check_backward(dx, x16, dy, 1, False)


def test_calls_share_the_streams_workspace(backend):
    """grid_row's per-CTA pairs live in one workspace a stream (launch.stream_workspace): calls of
    plans with different grids and rows take turns in it on one stream, on a second stream, and in a
    captured CUDA graph (a buffer of its own), each result right."""
    problems = [
        rand((3, 1 << 20), torch.bfloat16),
        rand((1, 3 << 20), torch.float32),
        rand((2, 1 << 21), torch.float16),
    ]
    for _ in range(2):
        for x in problems:
            check_forward(forward(backend, x, False), x, 1, False)
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        for x in problems:
            y = torch.full_like(x, float("nan"))
            backend.forward(x.unsqueeze(2), y.unsqueeze(2), True, TIER)
            side.synchronize()
            check_forward(y, x, 1, True)
    graph_replays_right(problems[1], 1, TIER)
