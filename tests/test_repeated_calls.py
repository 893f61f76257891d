"""Repeated calls: the second call with a geometry already seen skips every check and choice
(functional.py); it must still compute the right thing and refuse what the full path refuses."""

import pytest
import torch
from reference import DEVICE, check_backward, check_forward

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.triton import TritonBackend

LAYOUTS = [
    ("contiguous", lambda t: t, (6, 70)),
    ("transposed", lambda t: t.t(), (70, 6)),
    ("column slice", lambda t: t[:, 3:60], (6, 70)),
    ("permuted 3d", lambda t: t.permute(2, 0, 1), (4, 6, 10)),
]


def _input(shape, dtype=torch.float32):
    return (torch.randn(shape, device=DEVICE) * 3).to(dtype)


@pytest.mark.parametrize("name,view,shape", LAYOUTS, ids=[case[0] for case in LAYOUTS])
def test_second_call_is_right_for_fresh_data(name, view, shape):
    dispatch.clear_caches()
    first = view(_input(shape))
    fastsoftmax.softmax(first, -1)
    remembered = len(dispatch.PLANS)
    assert remembered == 2  # one plan, under the dim as written (-1) and as normalised
    for dim in (-1, first.dim() - 1):
        x = view(_input(shape))
        check_forward(fastsoftmax.softmax(x, dim), x, dim)
        check_forward(fastsoftmax.log_softmax(x, dim), x, dim, True)
        assert fastsoftmax.softmax(x, dim).stride() == torch.empty_like(x).stride()
    assert len(dispatch.PLANS) == remembered


def test_second_call_with_autograd_records_the_graph():
    x = _input((5, 40))
    fastsoftmax.softmax(x, -1)
    x = _input((5, 40)).requires_grad_()
    y = fastsoftmax.softmax(x, -1)
    assert y.grad_fn is not None
    dy = torch.randn_like(y)
    y.backward(dy)
    check_backward(x.grad, x.detach(), dy, -1)


def test_second_call_still_refuses_bad_arguments():
    x = _input((5, 40))
    fastsoftmax.softmax(x, 1)
    with pytest.raises(TypeError, match="dim must be an int"):
        fastsoftmax.softmax(x, True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        fastsoftmax.softmax(x, -3)
    with pytest.raises(ValueError, match="unknown backend"):
        fastsoftmax.softmax(x, 1, backend="fastest")


def test_second_call_honours_dtype():
    x = _input((5, 40), torch.bfloat16)
    fastsoftmax.softmax(x, -1)
    y = fastsoftmax.softmax(x, -1, dtype=torch.float32)
    assert y.dtype == torch.float32
    check_forward(y, x.float(), -1)


def test_forced_tier_is_not_bypassed_by_a_plan(monkeypatch):
    x = _input((5, 40))
    fastsoftmax.softmax(x, -1, backend="triton")
    used = []
    original = TritonBackend.forward

    def spy(self, x3, y3, log, tier=None):
        used.append(tier)
        return original(self, x3, y3, log, tier)

    monkeypatch.setattr(TritonBackend, "forward", spy)
    plans = dict(dispatch.PLANS)
    for tier in ("online", "split"):
        with dispatch.forced("triton", tier):
            check_forward(fastsoftmax.softmax(x, -1, backend="triton"), x, -1)
            check_forward(fastsoftmax.softmax(x, 1, backend="triton"), x, -1)
        assert used[-2:] == [tier, tier]
    assert dispatch.PLANS == plans, "a forced call must not leave a plan behind"


def test_triton_launch_keys_are_cheap_and_tell_specialisations_apart():
    """The Triton launch path keys its compiled kernels by what Triton specialises on; building
    the key must cost nothing for any argument (a float once walked a 2^32-long range)."""
    import time

    from fastsoftmax.backends.triton.launch import _spec

    start = time.perf_counter()
    keys = [_spec(value) for value in (0.3 / 37, 1.0, 0.0, -1e30, True, None)]
    assert time.perf_counter() - start < 0.01
    assert keys == [float, float, float, float, bool, type(None)]
    assert _spec(1) != _spec(2) != _spec(32)
    assert _spec(1 << 31) != _spec((1 << 31) - 16)
    assert _spec(-(1 << 31))[3] and not _spec(-(1 << 31) - 1)[3]
    with pytest.raises(TypeError, match="not supported"):
        _spec("text")
