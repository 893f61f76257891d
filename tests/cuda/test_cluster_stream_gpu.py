"""The cluster_stream tier (grid_row_tier.cuh with a thread-block cluster for the team) on a GPU,
forced, against a float64 reference.

Lengths are taken around the boundaries of each cluster size's launch (plans.cluster_stream_launch):
a pack a CTA and less (empty slices), the last slot the registers hold, the last one shared memory
holds, and rows long enough that the rest is re-read. Outputs are poisoned with NaN before every
launch. Skips without a GPU or without clusters (sm_90+).
"""

from __future__ import annotations

import pytest
import torch
from inputs import (
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
TIER = "cluster_stream"


@pytest.fixture
def clusters(backend):
    if not backend.limits(torch.cuda.current_device()).clusters:
        pytest.skip("tier 'cluster_stream' needs thread-block clusters (sm_90+)")
    return backend


def rand(shape, dtype, scale=3.0):
    return (torch.randn(shape, device="cuda", dtype=torch.float32) * scale).to(dtype)


def launch_of(backend, dtype, backward, n, ctas=0, per_sm=1):
    from fastsoftmax.backends.cuda import plans

    dev = torch.cuda.current_device()
    return plans.cluster_stream_launch(backend.kernel, dtype, n, backward, False, dev, ctas, per_sm)


def forward(backend, x, log, ctas=0, out=None, per_sm=None):
    from fastsoftmax.backends.cuda import tiers

    with tiers.tuned(cluster_ctas=ctas or None, cluster_stream_per_sm=per_sm):
        return forced_forward(backend, TIER, x, log, out)


def backward(backend, y, dy, log, ctas=0, out=None, per_sm=None):
    from fastsoftmax.backends.cuda import tiers

    with tiers.tuned(cluster_ctas=ctas or None, cluster_stream_per_sm=per_sm):
        return forced_backward(backend, TIER, y, dy, log, out)


def boundaries(backend, dtype, backward_, ctas, per_sm):
    """Row lengths at the edges of a cluster of ``ctas`` at ``per_sm`` CTAs an SM: empty slices, the
    registers' last slot, shared memory's last slot and a few elements past it (re-read)."""
    full = launch_of(backend, dtype, backward_, 1 << 28, ctas, per_sm)[1]  # shared memory at its budget
    pack = full.pack
    regs = ctas * (full.packs * full.threads - 1) * pack
    chip = ctas * (full.packs * full.threads + full.smem_slots - 1) * pack
    return [1, 7, pack * ctas - 1, pack * ctas + 1, regs, regs + 1, chip, chip + pack + 3]


@pytest.mark.parametrize("per_sm", [1, 2])
@pytest.mark.parametrize("ctas", [2, 4, 8, 16])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_boundaries(clusters, dtype_name, ctas, per_sm):
    dtype = DTYPES[dtype_name]
    for n in boundaries(clusters, dtype, False, ctas, per_sm):
        x = rand((3, n), dtype)
        for log in (False, True):
            check_forward(forward(clusters, x, log, ctas, per_sm=per_sm), x, 1, log)
    for n in boundaries(clusters, dtype, True, ctas, per_sm):
        x, dy = rand((3, n), dtype), rand((3, n), dtype)
        for log in (False, True):
            dx = backward(clusters, forward_output(x, log), dy, log, ctas, per_sm=per_sm)
            check_backward(dx, x, dy, 1, log)


def test_cluster_size_follows_the_row(clusters):
    """The smallest cluster whose registers and shared memory hold the row, 16 past that."""
    sizes = [launch_of(clusters, torch.bfloat16, False, n)[1].ctas for n in (300007, 1 << 20, 1 << 21, 1 << 23)]
    assert sizes == sorted(sizes) and sizes[-1] == 16 and sizes[0] < 16, sizes


@pytest.mark.parametrize("per_sm", [1, 2])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_clusters_take_several_rows(clusters, dtype_name, per_sm):
    """A grid of fewer clusters than rows (the kernel's own loop over rows, which the backend's
    launches of one cluster a row never take): the posts' two buffers alternate over 7 rows; the
    second cluster waits its turn before its first row (``stagger`` 2)."""
    from fastsoftmax.backends.cuda import launch

    dtype = DTYPES[dtype_name]
    rows, n = 7, 700001
    dev = torch.cuda.current_device()
    for backward_ in (False, True):
        kernel, shape, _ = launch_of(clusters, dtype, backward_, n, per_sm=per_sm)
        x, dy = rand((rows, n), dtype), rand((rows, n), dtype)
        y = forward_output(x, False)
        out = torch.full_like(x, float("nan"))
        if backward_:
            args = (y.data_ptr(), dy.data_ptr(), out.data_ptr(), rows, n, n, n, n, shape.smem_slots, 2)
        else:
            args = (x.data_ptr(), out.data_ptr(), rows, n, n, n, shape.smem_slots, 2)
        pushed = launch.enter(dev)
        try:
            kernel.launch(2 * shape.ctas, launch.raw_stream(dev), args)
        finally:
            if pushed:
                launch.leave()
        torch.cuda.synchronize()
        if backward_:
            check_backward(out, x, dy, 1, False)
        else:
            check_forward(out, x, 1, False)


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_staggered_launch_of_many_rows(clusters, dtype_name):
    """Rows enough for every resident cluster to take several in turn: the launch staggers its first
    wave (half the resident clusters wait before their first row), and every row is right."""
    from fastsoftmax.backends.cuda import instances

    dtype = DTYPES[dtype_name]
    n = 65537
    for backward_ in (False, True):
        kernel = launch_of(clusters, dtype, backward_, n, per_sm=2)[0]
        rows = instances.CLUSTER_STREAM_STAGGER_MIN_ROUNDS * kernel.resident_clusters() + 3
        assert instances.cluster_stream_stagger(rows, kernel.resident_clusters()) > 0
        x = rand((rows, n), dtype)
        if backward_:
            dy = rand((rows, n), dtype)
            check_backward(backward(clusters, forward_output(x, False), dy, False, per_sm=2), x, dy, 1, False)
        else:
            check_forward(forward(clusters, x, True, per_sm=2), x, 1, True)


def _laid_out_like(layout, values):
    """``values`` copied into rows laid out as rows_laid_out's x: "pitch+3" rows of an odd pitch,
    "x+1" one element into their storage, else dense."""
    rows, n = values.shape
    if layout == "pitch+3":
        out = torch.empty((rows, n + 3), device="cuda", dtype=values.dtype)[:, :n]
    elif layout == "x+1":
        out = torch.empty((rows, n + 1), device="cuda", dtype=values.dtype)[:, 1:]
    else:
        return values.contiguous()
    return out.copy_(values)


@pytest.mark.parametrize("layout", ["dense", "pitch+3", "x+1"])
@pytest.mark.parametrize("dtype_name", DTYPES)
def test_persistent_clusters_copy_the_next_row_ahead(clusters, dtype_name, layout):
    """A grid of the clusters resident at once walking more rows than it holds (tuning
    cluster_stream_persistent): each row's shared-memory slots are copied while the row before writes
    its registers. Rows held whole and re-read in part; odd pitches, whose misalignment changes row by
    row (forward: x and y of different pitches, so rows held and rows not alternate); x one element
    in with a fresh output (nothing held); backward with y, dy and dx laid out alike (held) and with
    a fresh dx (nothing held); softmax and log-softmax, one and two CTAs an SM, against float64 with
    poisoned outputs."""
    from fastsoftmax.backends.cuda import tiers

    dtype = DTYPES[dtype_name]
    for n, per_sm in ((600011, 1), (600011, 2), ((1 << 21) + 5, 1)):
        kernel = launch_of(clusters, dtype, False, n, per_sm=per_sm)[0]
        rows = 2 * kernel.resident_clusters() + 3
        x, out = rows_laid_out(layout, rows, n, dtype)
        dy = _laid_out_like(layout, rand((rows, n), dtype))
        with tiers.tuned(cluster_stream_persistent=True):
            for log in (False, True):
                check_forward(forward(clusters, x, log, out=out, per_sm=per_sm), x, 1, log)
                y = _laid_out_like(layout, forward_output(x, log))
                for dx_out in (_laid_out_like(layout, torch.empty_like(dy)), None):
                    dx = backward(clusters, y, dy, log, out=dx_out, per_sm=per_sm)
                    check_backward(dx, x, dy, 1, log)


@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("layout", ["x+1", "both+1", "pitch+3", "in-place"])
def test_alignment_and_layouts(clusters, dtype_name, layout):
    """Rows off a 16-byte boundary: x alone (re-read at y's packs), x and y alike (held), odd
    pitches (the misalignment changes row by row), in place."""
    dtype = DTYPES[dtype_name]
    x, out = rows_laid_out(layout, 3, 600011, dtype)
    for log in (False, True):
        if layout == "in-place":
            y = x.clone()
            clusters.forward(y.unsqueeze(2), y.unsqueeze(2), log, TIER)
            torch.cuda.synchronize()
        else:
            y = forward(clusters, x, log, out=out)
        check_forward(y, x, 1, log)
    y, dy, dx_out = gradients_laid_out(layout, forward_output(x, False), dtype)
    dx = backward(clusters, y, dy, False, out=dx_out)
    check_backward(dx, x, dy, 1, False)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("dtype_name", DTYPES)
@pytest.mark.parametrize("n", [600011, (1 << 22) + 3])
def test_infinities_and_nan(clusters, n, dtype_name, log):
    """rows_of_special_values: some -inf, all -inf (NaN, as torch), one NaN, +inf, -inf everywhere
    but one CTA's slice, ordinary; held, and (4M + 3) partly re-read."""
    x = rows_of_special_values(n, DTYPES[dtype_name])
    y = forward(clusters, x, log)
    check_forward(y, x, 1, log)
    torch_out = (torch.log_softmax if log else torch.softmax)(x.float(), dim=1)
    assert torch.equal(torch.isnan(y.float()), torch.isnan(torch_out)), "NaN pattern differs from torch.softmax"


@pytest.mark.parametrize("dtype_name", DTYPES)
def test_large_magnitudes(clusters, dtype_name):
    dtype = DTYPES[dtype_name]
    n = 600011
    scale = 2e4 if dtype == torch.float16 else 1e30
    x = (torch.rand((2, n), device="cuda") * 2 - 1) * scale
    x[:, 0] = scale
    x[:, n - 1] = scale * 0.9999
    for log in (False, True):
        check_forward(forward(clusters, x.to(dtype), log), x.to(dtype), 1, log)


def test_chosen_automatically_through_the_public_api(clusters):
    """Many rows longer than the cluster tier holds take cluster_stream under "auto", forward and
    through autograd's backward, and the results are right; few rows do not (up to
    tiers.GRID_ROW_TEAMS_MAX_ROWS, grid_row's teams take those whose slices they hold, and in the
    backward up to GRID_ROW_TEAMS_MAX_ROWS_BACKWARD)."""
    from fastsoftmax.backends.cuda import tiers

    n = (1 << 20) + 5
    rows = tiers.GRID_ROW_TEAMS_MAX_ROWS_BACKWARD + 1
    assert clusters.choose_tier(48, n, 1, torch.float32, False) == TIER
    assert clusters.choose_tier(rows, n, 1, torch.float32, True) == TIER
    assert clusters.choose_tier(rows, n, 1, torch.bfloat16, True) == TIER
    assert clusters.choose_tier(48, n, 1, torch.bfloat16, True) == "grid_row"
    assert clusters.choose_tier(16, n, 1, torch.float32, False) == "grid_row"
    assert clusters.choose_tier(2, n, 1, torch.float32, False) != TIER
    x = rand((rows, n), torch.float32)
    leaf = x.clone().requires_grad_()
    y = fastsoftmax.softmax(leaf, -1, backend="cuda")
    check_forward(y.detach(), x, 1, False)
    dy = rand((rows, n), torch.float32)
    (grad,) = torch.autograd.grad(y, leaf, dy)
    check_backward(grad, x, dy, 1, False)


def test_graph_replay(clusters):
    graph_replays_right(rand((2, (1 << 20) + 9), torch.bfloat16), 1, TIER)


def test_forced_through_the_functional_layer(clusters):
    x = rand((3, 700001), torch.float16)[:, 1:]
    for log in (False, True):
        with dispatch.forced("cuda", TIER):
            y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, 1)
        torch.cuda.synchronize()
        check_forward(y, x, 1, log)
