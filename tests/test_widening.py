"""16-bit inputs with a float32 result (dtype=torch.float32, or autocast) in one pass of the Triton
kernels, which convert at the store: forward and backward, every layout the canonical views take,
against float64, with the kernels' calls counted (one launch each way, no cast)."""

import pytest
import torch
from reference import DEVICE, check_forward, check_widened_backward

import fastsoftmax
from fastsoftmax import _layout, dispatch, functional

LOG = pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
HALF = pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=str)


def _views(dtype):
    """(name, x, dim): rows, a transposed and a stepped view, an NCHW tensor in channels-last
    memory over its channels, a 3-dim tensor over its middle dim."""
    base = torch.randn(12, 130, device=DEVICE) * 4
    image = (torch.randn(2, 21, 5, 7, device=DEVICE) * 4).to(memory_format=torch.channels_last)
    return [
        ("rows", base.to(dtype), -1),
        ("transposed", base.to(dtype).t(), 0),
        ("stepped", base.to(dtype)[:, ::2], 1),
        ("channels_last", image.to(dtype), 1),
        ("middle", (torch.randn(3, 40, 6, device=DEVICE) * 4).to(dtype), 1),
    ]


@pytest.fixture
def fresh_plans():
    """No plan remembered before the test (the rules it changes decide what a plan does) or left
    after it."""
    dispatch.PLANS.clear()
    yield
    dispatch.PLANS.clear()


@pytest.fixture
def counted(monkeypatch, fresh_plans):
    """The Triton backend's launches (the dtypes of their canonical views), by the full path or by
    a remembered plan's prepared run, and no call of the 16-bit path's forward_impl / backward_impl
    (a cast first would go through them)."""
    calls = []
    # the class's methods, not the instance's: undoing an instance attribute would leave the
    # original bound method on the instance, in front of any later patch of the class
    backend_class = type(dispatch.kernel_backend("triton"))
    forward, backward, prepare = backend_class.forward, backend_class.backward, backend_class.prepare

    def counted_forward(self, x, y, log, tier=None):
        calls.append(("forward", x.dtype, y.dtype))
        return forward(self, x, y, log, tier)

    def counted_backward(self, y, dy, dx, log, tier=None):
        calls.append(("backward", y.dtype, dy.dtype, dx.dtype))
        return backward(self, y, dy, dx, log, tier)

    def counted_prepare(self, *args, **kwargs):
        run = prepare(self, *args, **kwargs)

        def counted_run(*tensors_and_log):
            calls.append(("prepared", *(t.dtype for t in tensors_and_log[:-1])))
            return run(*tensors_and_log)

        return counted_run

    def refused(*args, **kwargs):
        raise AssertionError("the input was cast and computed as float32")

    monkeypatch.setattr(backend_class, "forward", counted_forward)
    monkeypatch.setattr(backend_class, "backward", counted_backward)
    monkeypatch.setattr(backend_class, "prepare", counted_prepare)
    monkeypatch.setattr(functional, "forward_impl", refused)
    monkeypatch.setattr(functional, "backward_impl", refused)
    return calls


@LOG
@HALF
def test_one_pass_each_way(dtype, log, counted):
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    for name, x, dim in _views(dtype):
        counted.clear()
        x = x.detach().requires_grad_(True)
        y = op(x, dim, dtype=torch.float32, backend="triton")
        assert y.dtype == torch.float32, name
        check_forward(y, x.float(), dim, log)
        dy = torch.randn(y.shape, device=DEVICE)
        (dx,) = torch.autograd.grad(y, x, dy)
        check_widened_backward(dx, x, dy, dim, log)
        assert counted == [("forward", dtype, torch.float32), ("backward", torch.float32, torch.float32, dtype)], (
            name,
            counted,
        )


@LOG
@HALF
def test_repeated_autograd_calls_take_the_prepared_runs(dtype, log, counted):
    """A call that records a graph leaves the forward's and the backward's prepared runs behind, and
    the next calls of the geometry take them both ways; the forward's is the same plan a call
    without a graph leaves (and takes)."""
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    for name, x, dim in _views(dtype):
        # a view the kernels cannot read where it lies (the stepped rows) is copied on every call
        copied = _layout.canonical_pair(x, dim % x.dim(), torch.float32)[3]
        forward = ("forward", dtype, torch.float32) if copied else ("prepared", dtype, torch.float32)
        for call in range(3):
            counted.clear()
            x = x.detach().requires_grad_(call < 2)
            y = op(x, dim, dtype=torch.float32, backend="triton")
            check_forward(y, x.detach().float(), dim, log)
            if call == 2:  # no graph: the forward's plan all the same
                assert counted == [forward], (name, counted)
                continue
            dy = torch.randn_like(y)
            (dx,) = torch.autograd.grad(y, x, dy)
            check_widened_backward(dx, x, dy, dim, log)
            if call == 0:
                assert counted == [("forward", dtype, torch.float32), ("backward", torch.float32, torch.float32, dtype)]
            else:
                assert counted == [forward, ("prepared", torch.float32, torch.float32, dtype)], (name, counted)


def test_a_graph_call_takes_the_plan_of_a_call_without_one(counted):
    x = (torch.randn(12, 130, device=DEVICE) * 4).to(torch.bfloat16)
    check_forward(fastsoftmax.softmax(x, -1, dtype=torch.float32, backend="triton"), x.float(), -1)
    counted.clear()
    x = x.clone().requires_grad_(True)
    y = fastsoftmax.softmax(x, 1, dtype=torch.float32, backend="triton")  # the dim as written, another way
    check_forward(y, x.detach().float(), -1)
    dy = torch.randn_like(y)
    (dx,) = torch.autograd.grad(y, x, dy)
    check_widened_backward(dx, x, dy, -1)
    assert counted == [("prepared", torch.bfloat16, torch.float32), ("backward", torch.float32, torch.float32, x.dtype)]


@LOG
def test_auto_takes_it_where_enabled(log, counted, monkeypatch):
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    monkeypatch.setattr(functional, "FUSED_WIDENING", True)
    monkeypatch.setattr(functional, "FUSED_WIDENING_MIN_NUMEL", 9 * 130)  # the rule's sizes, scaled down
    monkeypatch.setattr(functional, "AUTOCAST_TO_FLOAT32", (torch.device(DEVICE).type,))
    x = (torch.randn(9, 130, device=DEVICE) * 4).to(torch.bfloat16)
    check_forward(op(x, -1, dtype=torch.float32), x.float(), -1, log)
    with torch.autocast(torch.device(DEVICE).type, dtype=torch.bfloat16):
        y = op(x, -1)
    assert y.dtype == torch.float32
    check_forward(y, x.float(), -1, log)
    # the second call, under autocast, took the first's plan
    assert counted == [("forward", torch.bfloat16, torch.float32), ("prepared", torch.bfloat16, torch.float32)]


def test_auto_casts_first_while_off(monkeypatch, fresh_plans):
    monkeypatch.setattr(functional, "FUSED_WIDENING", False)
    monkeypatch.setattr(functional, "FUSED_WIDENING_MIN_NUMEL", 1)  # any size would take it if on
    seen = []
    forward_impl = functional.forward_impl

    def recorded(x, *args, **kwargs):
        seen.append(x.dtype)
        return forward_impl(x, *args, **kwargs)

    monkeypatch.setattr(functional, "forward_impl", recorded)
    x = (torch.randn(5, 40, device=DEVICE) * 4).to(torch.float16)
    y = fastsoftmax.softmax(x, -1, dtype=torch.float32)
    assert seen == [torch.float32] and y.dtype == torch.float32
    check_forward(y, x.float(), -1)


@LOG
def test_auto_hands_many_contiguous_float16_rows_to_torchs_fused_kernel(log, monkeypatch, fresh_plans):
    # where the one pass does not pay (here: small): 64 float16 rows or more, contiguous along the last
    # dim, go to torch's half-to-float kernel (one pass); bfloat16 (which torch casts first), fewer
    # rows, other dims and other backends cast first
    monkeypatch.setattr(functional, "TORCH_WIDENS_ON", (torch.device(DEVICE).type,))
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    handed = []
    torch_widened = functional._torch_widened

    def recorded(x, dim, log):
        handed.append((tuple(x.shape), dim))
        return torch_widened(x, dim, log)

    monkeypatch.setattr(functional, "_torch_widened", recorded)
    many = (torch.randn(64, 50, device=DEVICE) * 4).to(torch.float16).requires_grad_()
    y = op(many, -1, dtype=torch.float32)
    assert handed == [((64, 50), 1)] and y.dtype == torch.float32
    check_forward(y, many.float(), -1, log)
    (dx,) = torch.autograd.grad(y, many, torch.randn_like(y))  # torch's own backward, to float16
    assert dx.dtype == torch.float16
    monkeypatch.setattr(functional, "AUTOCAST_TO_FLOAT32", (torch.device(DEVICE).type,))
    with torch.autocast(torch.device(DEVICE).type, dtype=torch.float16):
        y = op(many.detach(), -1)
    assert handed[1:] == [((64, 50), 1)] and y.dtype == torch.float32
    check_forward(y, many.float(), -1, log)
    handed.clear()
    for x, dim, kwargs in [
        ((torch.randn(64, 50, device=DEVICE) * 4).to(torch.bfloat16), -1, {}),  # torch casts bfloat16 first
        ((torch.randn(63, 50, device=DEVICE) * 4).to(torch.float16), -1, {}),  # few rows
        ((torch.randn(64, 50, device=DEVICE) * 4).to(torch.float16), 0, {}),  # another dim
        ((torch.randn(50, 64, device=DEVICE) * 4).to(torch.float16).t(), 1, {}),  # not contiguous
        ((torch.randn(64, 50, device=DEVICE) * 4).to(torch.float16), -1, {"backend": "triton"}),
    ]:
        check_forward(op(x, dim, dtype=torch.float32, **kwargs), x.float(), dim, log)
    assert handed == []


def _sized(shape, dtype=torch.bfloat16):
    """A tensor of ``shape`` that holds one element (an expanded view): the rule reads sizes only."""
    return torch.empty(1, dtype=dtype, device=DEVICE).expand(shape)


@pytest.mark.skipif(
    dispatch.unavailable_reason("triton", torch.device(DEVICE).type, None) is not None,
    reason="the one pass runs on the Triton kernels",
)
def test_auto_takes_the_one_pass_from_its_size():
    # H200 (results 2026-12-05_h200_s63/c9/): ahead in GPU time at every size, behind in host time
    # (the Triton launch) at every size too, which the GPU time saved outweighs from 2^24 elements
    cases = [
        ((4194304, 32), True),
        ((1046, 128256), True),
        ((65536, 2048), True),
        ((16, 21, 512, 512), True),
        ((4096, 4096), True),  # FUSED_WIDENING_MIN_NUMEL
        ((1, 1 << 24), True),
        ((4095, 4096), False),
        ((128, 128256), False),
        ((8, 128256), False),
        ((64, 50), False),
        # rows Triton reads an element at a time (dispatch.triton_reads_rows_slowly): the cast first
        ((262144, 65), False),
        ((262144, 127), False),
        ((262144, 64), True),
        ((262144, 129), True),
    ]
    for dtype in (torch.bfloat16, torch.float16):
        for shape, expected in cases:
            x = _sized(shape, dtype)
            assert functional._widens_in_kernel(x, x.dim() - 1, "auto") is expected, (shape, dtype)
            assert functional._widens_in_kernel(x, x.dim() - 1, "cuda") is False
            assert functional._widens_in_kernel(x, x.dim() - 1, "triton") is True
    # the same length over a dim with columns after it is no row
    assert functional._widens_in_kernel(_sized((65, 262144)), 0, "auto") is True
    with dispatch.forced("cuda"):
        assert functional._widens_in_kernel(_sized((4194304, 32)), 1, "auto") is False
    with dispatch.forced("triton"):
        assert functional._widens_in_kernel(_sized((262144, 65)), 1, "auto") is True


@pytest.mark.skipif(
    dispatch.unavailable_reason("triton", torch.device(DEVICE).type, None) is not None,
    reason="the one pass runs on the Triton kernels",
)
def test_auto_off_takes_no_one_pass_whatever_the_size(monkeypatch):
    monkeypatch.setattr(functional, "FUSED_WIDENING", False)
    assert functional._widens_in_kernel(_sized((4194304, 32)), 1, "auto") is False


@pytest.mark.parametrize("tier", ["tile", "row", "online", "split", "relay"])
@HALF
def test_one_pass_on_every_triton_tier(tier, dtype, counted):
    # "auto" takes the one pass from 2^24 elements, where the long-row tiers run: each tier's widened
    # forms, forced onto small problems it holds, both directions, against float64
    shape, dim = ((6, 3000), -1) if tier != "relay" else ((3, 700, 4), 1)
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        x = (torch.randn(shape, device=DEVICE) * 4).to(dtype).requires_grad_(True)
        counted.clear()
        with dispatch.forced("triton", tier):
            y = op(x, dim, dtype=torch.float32)
            assert y.dtype == torch.float32
            check_forward(y, x.detach().float(), dim, log)
            dy = torch.randn(y.shape, device=DEVICE)
            (dx,) = torch.autograd.grad(y, x, dy)
        check_widened_backward(dx, x, dy, dim, log)
        assert counted == [("forward", dtype, torch.float32), ("backward", torch.float32, torch.float32, dtype)]
