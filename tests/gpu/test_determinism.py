"""The same input gives the same bits, call after call, as torch's softmax does: every reduction
that spans threads, CTAs, clusters or the grid merges its pieces in a fixed order, whatever order
the hardware ran them in. Each problem is computed three times, the third while a side stream keeps
the GPU busy (CTAs start in another order), and each result is also checked against float64."""

from __future__ import annotations

import pytest
import torch
from reference import check_backward, check_forward

import fastsoftmax
from fastsoftmax import dispatch

pytestmark = pytest.mark.gpu

#: (shape, dim, step along the last dim): a regime each, from short rows to one row of 2^24 + 7
#: (grid_row) and a few rows in teams of the grid (grid_row), vocabulary rows (cluster), rows past a
#: cluster (cluster_stream, split tiers), a long strided axis (split over CTAs), a long axis of 2
#: columns (the backward's relay), an odd channel head (spread columns) and a stepped view
PROBLEMS = [
    ((4096, 100), -1, 1),
    ((64, 5000), -1, 1),
    ((16, 128256), -1, 1),
    ((64, 524288), -1, 1),
    ((1, 2**24 + 7), -1, 1),
    ((8, 2**21), -1, 1),
    ((16384, 2048), 0, 1),
    ((16, 1048576, 2), 1, 1),
    ((8, 150, 127, 127), 1, 1),
    ((4096, 8192), 0, 2),
]
BACKENDS = ("auto", "cuda", "triton")


def _busy_side_stream():
    side = torch.cuda.Stream()
    a = torch.randn(8192, 8192, device="cuda")
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(4):
            a = a @ a.t() / 8192
    return side, a


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32], ids=str)
@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: f"{p[0]}-d{p[1]}-s{p[2]}")
def test_same_bits_every_call(problem, dtype, backend):
    if backend != "auto" and backend not in dispatch.available_backends("cuda"):
        pytest.skip(f"backend {backend!r} is not available")
    shape, dim, step = problem
    full = (*shape[:-1], shape[-1] * step)
    x = (torch.randn(full, device="cuda") * 4).to(dtype)[..., ::step]
    dy = torch.randn(x.shape, device="cuda").to(dtype)
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        y = op(x, dim, backend=backend)
        dx = fastsoftmax.softmax_backward(dy, y, dim, log=log, backend=backend)
        check_forward(y, x, dim, log)
        check_backward(dx, x, dy, dim, log)
        for busy in (False, True):
            side = _busy_side_stream() if busy else None
            again = op(x, dim, backend=backend)
            dx_again = fastsoftmax.softmax_backward(dy, y, dim, log=log, backend=backend)
            if side is not None:
                torch.cuda.current_stream().wait_stream(side[0])
            assert torch.equal(again, y), f"forward bits moved between calls ({'busy' if busy else 'idle'} GPU)"
            assert torch.equal(dx_again, dx), f"backward bits moved between calls ({'busy' if busy else 'idle'} GPU)"
