"""Inputs and helpers shared by the CUDA backend's GPU tests."""

from __future__ import annotations

import contextlib

import torch


def around_the_fused_shift_limit(rows, n, dtype):
    """Rows whose maximum lies at, just below and just above 2^20, the largest magnitude the
    cluster and grid_row tiers take exp(x - max) as 2^(x log2e - k) for (kernels/common.cuh,
    ExpShift), with neighbours within a few units of it (in float32 a real distribution, in 16-bit
    types their nearest values), and the same negated."""
    limit = float(1 << 20)
    tops = [limit, limit - 0.5, limit + 1.0, -limit, -limit + 0.5, -limit - 1.0, 1000.0, -3.5]
    x = torch.empty((rows, n), device="cuda", dtype=torch.float32)
    for r in range(rows):
        top = tops[r % len(tops)]
        x[r] = top - torch.rand(n, device="cuda") * 8
        x[r, r % n] = top
    return x.to(dtype)


def rows_of_special_values(n, dtype):
    """Six rows of n: row 0 some -inf; row 1 all -inf (NaN, as torch gives); row 2 one NaN (the row
    NaN); row 3 one +inf (NaN, as torch); row 4 -inf everywhere but 100 elements from the middle
    (one CTA's slice in the tiers that split a row); row 5 ordinary."""
    x = (torch.randn((6, n), device="cuda") * 3).to(dtype)
    x[0, ::3] = float("-inf")
    x[1, :] = float("-inf")
    x[2, n // 2] = float("nan")
    x[3, n // 3] = float("inf")
    x[4, : n // 2] = float("-inf")
    x[4, n // 2 + 100 :] = float("-inf")
    return x


def rows_laid_out(layout, rows, n, dtype):
    """(x, out) for a row tier's layout tests: "x+1" x one element into its storage and a fresh
    output (None); "both+1" both so; "x+1,y+3" each its own way; "pitch+3" odd pitches, the
    misalignment changing row by row; anything else a plain x."""

    def rand(cols):
        return (torch.randn((rows, cols), device="cuda") * 3).to(dtype)

    def empty(cols):
        return torch.empty((rows, cols), device="cuda", dtype=dtype)

    if layout == "x+1":
        return rand(n + 1)[:, 1:], None
    if layout == "both+1":
        return rand(n + 1)[:, 1:], empty(n + 1)[:, 1:]
    if layout == "x+1,y+3":
        return rand(n + 1)[:, 1:], empty(n + 3)[:, 3:]
    if layout == "pitch+3":
        return rand(n + 3)[:, :n], empty(n + 5)[:, :n]
    return rand(n), None


def gradients_laid_out(layout, y, dtype):
    """(y, dy, dx out or None) for the backward of a layout test, y the forward's output copied two
    elements into its storage: y, dy and dx misaligned alike ("both+1": held) or each its own way."""
    rows, n = y.shape
    shifted = torch.empty((rows, n + 2), device="cuda", dtype=dtype)[:, 2:]
    shifted.copy_(y)
    if layout == "both+1":
        dy = (torch.randn((rows, n + 2), device="cuda") * 3).to(dtype)[:, 2:]
        return shifted, dy, torch.empty((rows, n + 2), device="cuda", dtype=dtype)[:, 2:]
    return shifted, (torch.randn((rows, n + 1), device="cuda") * 3).to(dtype)[:, 1:], None


@contextlib.contextmanager
def recording_loads(backend):
    """The instances the backend loads inside the block, from fresh plans (and fresh plans after):
    the backend's and the public functions' remembered ones, which call the kernels they hold."""
    from fastsoftmax import dispatch

    launched = []
    original_kernel = backend.kernel

    def recording_kernel(instance, device_index):
        launched.append(instance)
        return original_kernel(instance, device_index)

    backend.clear_plans()
    dispatch.PLANS.clear()
    backend.kernel = recording_kernel
    try:
        yield launched
    finally:
        del backend.kernel
        backend.clear_plans()
        dispatch.PLANS.clear()


def graph_replays_right(x, dim, tier, stream=None, replays=2):
    """Softmax of ``x`` over ``dim`` on ``tier`` of the CUDA backend, captured in a CUDA graph (on
    ``stream``, or torch's capture stream) after a call that builds the plan, then replayed on fresh
    random data copied into ``x``: every replay's output (poisoned first) right against float64."""
    from reference import check_forward

    import fastsoftmax
    from fastsoftmax import dispatch

    with dispatch.forced("cuda", tier):
        fastsoftmax.softmax(x, dim)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, stream=stream):
            y = fastsoftmax.softmax(x, dim)
    for _ in range(replays):
        y.fill_(float("nan"))
        x.copy_((torch.randn(x.shape, device=x.device) * 3).to(x.dtype))
        graph.replay()
        torch.cuda.synchronize()
        check_forward(y, x, dim, False)


def forced_forward(backend, tier, x, log, out=None):
    """Softmax (log-softmax) of 2-D x over dim 1 through a forced row tier, into a NaN-filled output."""
    y = torch.full_like(x, float("nan")) if out is None else out.fill_(float("nan"))
    backend.forward(x.unsqueeze(2), y.unsqueeze(2), log, tier)
    torch.cuda.synchronize()
    return y


def forced_backward(backend, tier, y, dy, log, out=None):
    """The input gradient of 2-D rows through a forced row tier, into a NaN-filled output."""
    dx = torch.full_like(dy, float("nan")) if out is None else out.fill_(float("nan"))
    backend.backward(y.unsqueeze(2), dy.unsqueeze(2), dx.unsqueeze(2), log, tier)
    torch.cuda.synchronize()
    return dx


def forward_output(x, log):
    """A genuine forward output of 2-D x over dim 1 in x's dtype, as backward receives it."""
    y = torch.empty_like(x)
    y.copy_((torch.log_softmax if log else torch.softmax)(x.double(), 1))
    return y
