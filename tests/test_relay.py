"""The Triton relay tier: the split tier's two kernels in one launch, work items taken by ticket
(fastsoftmax/backends/triton/kernels.py), and where "auto" sends problems to it."""

from __future__ import annotations

import pytest
import torch
from reference import DEVICE, check_backward, check_forward, softmax64

import fastsoftmax
from fastsoftmax import dispatch

tb = pytest.importorskip("fastsoftmax.backends.triton")
if tb.triton is None:  # pragma: no cover - the package without its triton extra
    pytest.skip("triton is not installed", allow_module_level=True)

# (shape, dim): contiguous blocks of narrow inner sizes (taken as pseudo-columns), inner sizes the
# pseudo-columns cannot take (3, 12; an odd n * inner), rows, and a reduced axis cut unevenly
SHAPES = [
    ((3, 4096, 2), 1),
    ((2, 3000, 8), 1),
    ((4, 1500, 16), 1),
    ((2, 777, 12), 1),
    ((3, 2001, 4), 1),
    ((5000, 3), 0),
    ((3, 9000), 1),
]


def _launch(tensors, backward, log, **tunables):
    """One relay launch of the given tunables on canonical (outer, n, inner) views, output poisoned."""
    outer, n, inner = tensors[0].shape
    p = tb.relay_plan(outer, n, inner, tensors[0].element_size(), backward, 132, log, **tunables)
    out = tensors[-1].fill_(float("nan"))
    device_index = out.device.index if out.is_cuda else -1
    if backward:
        y, dy, dx = tensors
        strides = (*y.stride(), *dy.stride(), dx.stride(0), dx.stride(1))
        tb._launch_backward(*tb._resolved(p, (outer, n, inner), strides, True), y, dy, dx, device_index)
    else:
        x, y = tensors
        strides = (*x.stride(), y.stride(0), y.stride(1))
        tb._launch_forward(*tb._resolved(p, (outer, n, inner), strides, False), x, y, device_index)
    return p, out


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
@pytest.mark.parametrize("shape,dim", SHAPES)
def test_public_calls_match_float64(shape, dim, dtype):
    for log in (False, True):
        x = (torch.randn(shape, device=DEVICE) * 3).to(dtype)
        dy = torch.randn(shape, device=DEVICE).to(dtype)
        y = softmax64(x, dim, log).to(dtype)
        with dispatch.forced("triton", "relay"):
            out = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim)
            dx = fastsoftmax.softmax_backward(dy, y, dim, log=log)
        check_forward(out, x, dim, log)
        check_backward(dx, x, dy, dim, log)


@pytest.mark.parametrize("lag,programs", [(1, 1), (1, 3), (64, 2), (2, 100)])
def test_every_ticket_order_and_grid_size(lag, programs):
    # LAG from one item to more than the whole launch (every finish item after every gather item),
    # persistent grids of one program to more programs than items: the tickets' order decides which
    # item a program takes, so every piece is gathered and finished exactly once whatever the grid
    x = torch.randn(3, 300, 8, device=DEVICE) * 3
    dy = torch.randn_like(x)
    tunables = dict(tile_elems=128, chunk_elems=512, lag_items_per_sm=lag, programs_per_sm=programs)
    for log in (False, True):
        p, y = _launch((x, torch.empty_like(x)), False, log, **tunables)
        assert p["SPLITS"] > 1 and p["UNITS"] > 1
        check_forward(y, x, 1, log)
        y = softmax64(x, 1, log).float()
        _, dx = _launch((y, dy, torch.empty_like(x)), True, log, **tunables)
        check_backward(dx, x, dy, 1, log)


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=str)
def test_pseudo_columns_only_where_blocks_are_contiguous(dtype):
    # a contiguous (n, inner) block of 4 columns runs as rows of 16-byte pseudo-columns; the same
    # problem whose blocks have gaps (a slice of a wider inner axis) or whose inner axis is not
    # the fastest (a transposed view) runs on its own columns, and both are right
    p = tb.relay_plan(3, 4096, 4, dtype.itemsize, False, 132)
    width, folded = p["folded"]
    assert width * dtype.itemsize >= 32 and dict(folded["configs"][0])["FOLD"] == 4
    shape = (3, 4096, 4)
    resolved = tb._resolved(p, shape, (4096 * 4, 4, 1, 4096 * 4, 4), False)  # x's strides, then y's
    assert resolved[0] is folded and resolved[2] == (3, 4096 * 4 // width, width)
    assert tb._resolved(p, shape, (4096 * 8, 8, 1, 4096 * 4, 4), False)[0] is p  # gaps between rows
    assert tb._resolved(p, shape, (4096 * 8, 8, 2, 4096 * 4, 4), False)[0] is p  # a step along inner
    base = (torch.randn(3, 4096, 8, device=DEVICE) * 3).to(dtype)
    for x in (base[..., :4].contiguous(), base[..., :4], base[..., :4].transpose(0, 2).contiguous().transpose(0, 2)):
        with dispatch.forced("triton", "relay"):
            check_forward(fastsoftmax.softmax(x, 1), x, 1, False)
    # widths the pseudo-columns cannot take
    assert "folded" not in tb.relay_plan(3, 4096, 3, dtype.itemsize, False, 132)
    assert "folded" not in tb.relay_plan(3, 4097, 4, dtype.itemsize, False, 132)
    assert "folded" not in tb.relay_plan(3, 4096, 64, dtype.itemsize, False, 132)


def test_special_values():
    # -inf prefixes, one-hot columns, +inf and NaN, along a long axis cut into many pieces
    x = torch.randn(2, 6000, 4, device=DEVICE) * 3
    x[0, :5000, 0] = float("-inf")
    x[0, :, 1] = float("-inf")
    x[0, 17, 1] = 2.0
    x[1, 3000, 2] = float("inf")
    x[1, 10, 3] = float("nan")
    with dispatch.forced("triton", "relay"):
        y = fastsoftmax.softmax(x, 1)
        z = fastsoftmax.log_softmax(x, 1)
    check_forward(y, x, 1, False)
    check_forward(z, x, 1, True)
    assert torch.equal(torch.isnan(y), torch.isnan(torch.softmax(x, 1)))


def test_the_backend_takes_it_for_long_narrow_backwards():
    from fastsoftmax.backends.triton import _choose_tier

    assert tb.relay_takes(64, 65536, 16, True)
    assert tb.relay_takes(16, 1 << 20, 2, True)
    assert tb.relay_takes(128, 16384, 32, True)
    assert not tb.relay_takes(64, 65536, 16, False)  # the forward: slower than the CUDA tiers
    assert not tb.relay_takes(512, 8192, 16, True)  # units the CUDA tiers hold on chip
    assert not tb.relay_takes(64, 65536, 64, True)  # wider inner sizes: not measured
    assert not tb.relay_takes(4, 1 << 21, 16, True)  # few outer indices
    assert not tb.relay_takes(16, 1 << 20, 1, True)  # rows
    assert _choose_tier(64, 65536, 16, 2, True, 132) == "relay"
    # its tickets are int32: a launch of 2^31 work items or more is refused, not wrapped around
    assert tb.BACKEND.supports("relay", 1 << 20, 1 << 20, 1, torch.float32, True)
    assert not tb.BACKEND.supports("relay", 1 << 30, 2, 1, torch.float32, True)
    assert _choose_tier(64, 65536, 16, 2, False, 132) != "relay"


class _CudaStreaming:
    """Stands in for the CUDA backend: whether it holds the runs on chip (streams_columns)."""

    def __init__(self, streams: bool):
        self.streams, self.asked = streams, []

    def streams_columns(self, *problem):
        self.asked.append(problem)
        return self.streams

    def sweeps_outer_flat(self, outer, n, inner, dtype, device_index=None):
        # as the CUDA backend on a GPU of much DRAM bandwidth an SM (where its strided tier takes these)
        from fastsoftmax.backends.cuda import strided

        return strided.flat_outer_log_backward(outer, n, inner, dtype.itemsize)


@pytest.mark.parametrize("streams", [False, True])
def test_auto_sends_long_narrow_backwards_to_it(monkeypatch, streams):
    """Unless the CUDA backend holds those runs on chip (its cluster_stream column kernels)."""
    dispatch.clear_caches()
    cuda = _CudaStreaming(streams)
    monkeypatch.setattr(dispatch, "unavailable_reason", lambda name, device_type, index: None)
    monkeypatch.setattr(dispatch, "_table_choice", lambda *args, **where: "cuda")
    monkeypatch.setattr(dispatch, "kernel_backend", lambda name: cuda if name == "cuda" else tb.BACKEND)
    try:
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            args = ("auto", "cuda", 0, dtype, 64, 65536, 16)
            relay = "cuda" if streams else "triton"
            assert dispatch._choose_backend(*args, True, True, False, True) == relay
            assert cuda.asked[-1] == (64, 65536, 16, dtype, True, 0)
            assert dispatch._choose_backend(*args, False, True, False, True) == "cuda"  # forward
            assert dispatch._choose_backend(*args, True, False, False, True) == "cuda"  # off a boundary
            assert dispatch._choose_backend(*args, True, True, False, False) == "cuda"  # rows in several phases
        assert dispatch._choose_backend("auto", "cuda", 0, torch.bfloat16, 512, 8192, 16, True) == "cuda"
        # float32 over 8 columns or fewer: the relay, whatever the CUDA backend holds
        args = ("auto", "cuda", 0, torch.float32, 128, 65536, 8)
        assert dispatch._choose_backend(*args, True, True, False, True) == "triton"
        # blocks that are not single runs (a slice of wider rows): the relay, which reads them where
        # they lie, where the CUDA backend would stage them in tiles
        args = ("auto", "cuda", 0, torch.bfloat16, 64, 65536, 16)
        assert dispatch._choose_backend(*args, True, True, False, True, False) == "triton"
        assert dispatch._choose_backend("auto", "cuda", 0, torch.bfloat16, 128, 65536, 8, True) == relay
        # the log-softmax backward (a first read of dy alone): the relay, whatever the CUDA backend holds,
        # but for float32 blocks of 16-32 columns, which the CUDA strided tier sweeps flat
        for dtype, shape, log_backend, softmax_backend in (
            (torch.bfloat16, (128, 16384, 32), "triton", relay),
            (torch.float32, (128, 16384, 32), "cuda", relay),
            (torch.float32, (64, 65536, 16), "cuda", relay),
            (torch.float32, (128, 65536, 8), "triton", "triton"),
        ):
            args = ("auto", "cuda", 0, dtype, *shape, True, True, False, True, True)
            assert dispatch._choose_backend(*args, True) == log_backend
            assert dispatch._choose_backend(*args, False) == softmax_backend
    finally:
        monkeypatch.undo()
        dispatch.clear_caches()
