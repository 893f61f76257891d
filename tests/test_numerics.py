"""Infinities, NaN and extreme magnitudes behave as torch.softmax does, on every tier."""

import pytest
import torch
from reference import DEVICE, check_forward

import fastsoftmax
from fastsoftmax.backends.triton import TritonBackend

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
INF, NAN = float("inf"), float("nan")


def _rows(dtype, n=37):
    """A batch of rows, each a numerics case, built from fresh random data."""
    rows = torch.randn(8, n, device=DEVICE) * 3
    rows[1, 5] = -INF  # one -inf
    rows[2, :] = -INF  # all -inf: NaN, as torch
    rows[3, 7] = INF  # +inf: NaN row, as torch
    rows[4, 11] = NAN  # NaN propagates to the row
    rows[5, :-1] = -INF  # everything but one element -inf: a one-hot
    rows[6, ::2] = -INF  # half masked, like a causal row
    big = {torch.float32: 1e30, torch.float16: 65504.0, torch.bfloat16: 3e38}[dtype]
    rows[7] = torch.sign(rows[7]) * big * torch.rand(n, device=DEVICE)  # no overflow at the type's limit
    return rows.to(dtype)


@pytest.mark.parametrize("tier", TritonBackend.tiers)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_special_values_rows_and_columns(tier, dtype, log):
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    x = _rows(dtype)
    with fastsoftmax.dispatch.forced("triton", tier):
        check_forward(op(x, -1), x, -1, log)
        # the same cases along a strided dim
        check_forward(op(x.t().contiguous(), 0), x.t().contiguous(), 0, log)


@pytest.mark.parametrize("tier", ["online", "split"])
def test_minus_inf_prefix_does_not_poison_the_running_sum(tier):
    # The looping tiers meet whole chunks of -inf before any finite value.
    x = torch.randn(3, 5000, device=DEVICE) * 3
    x[:, :4500] = -INF
    with fastsoftmax.dispatch.forced("triton", tier):
        y = fastsoftmax.softmax(x, -1)
    assert not torch.isnan(y).any()
    check_forward(y, x, -1)


def test_nan_positions_match_torch():
    x = _rows(torch.float32)
    ours = fastsoftmax.softmax(x, -1, backend="triton")
    theirs = torch.softmax(x.cpu(), -1)
    assert torch.equal(torch.isnan(ours.cpu()), torch.isnan(theirs))
