"""Backward through autograd and through softmax_backward, every Triton tier, against float64."""

import pytest
import torch
from reference import DEVICE, check_backward

import fastsoftmax
from fastsoftmax.backends.triton import TritonBackend

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
CASES = [((5, 33), -1), ((3, 1000), 1), ((6, 64), 0), ((2, 3, 40), 1), ((3, 5, 4, 6), 2), ((9,), 0)]


@pytest.mark.parametrize("tier", TritonBackend.tiers)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_autograd_every_tier(tier, dtype, log):
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    for shape, dim in CASES:
        x = (torch.randn(shape, device=DEVICE) * 3).to(dtype).requires_grad_(True)
        dy = torch.randn(shape, device=DEVICE).to(dtype)
        with fastsoftmax.dispatch.forced("triton", tier):
            y = op(x, dim)
            (dx,) = torch.autograd.grad(y, x, dy)
        check_backward(dx, x, dy, dim, log)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_softmax_backward_function(log):
    x = torch.randn(7, 300, device=DEVICE) * 3
    dy = torch.randn(7, 300, device=DEVICE)
    y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, 1)
    dx = fastsoftmax.softmax_backward(dy, y, 1, log=log, backend="triton")
    check_backward(dx, x, dy, 1, log)


def test_gradient_of_a_non_contiguous_grad_output():
    x = (torch.randn(12, 40, device=DEVICE) * 3).requires_grad_(True)
    y = fastsoftmax.softmax(x.t(), 1)  # strided layout
    dy = torch.randn(40, 24, device=DEVICE)[:, ::2]  # gradient with its own odd strides
    (dx,) = torch.autograd.grad(y, x, dy)
    check_backward(dx.t(), x.t(), dy, 1)


def test_backward_of_a_sum_has_expanded_gradient():
    # y.sum().backward() hands the kernel a zero-stride gradient: the result must still be exact.
    x = (torch.randn(4, 50, device=DEVICE) * 3).requires_grad_(True)
    fastsoftmax.log_softmax(x, -1).sum().backward()
    check_backward(x.grad, x, torch.ones(4, 50, device=DEVICE), -1, True)


def test_modules_train():
    layer = fastsoftmax.nn.LogSoftmax(dim=-1)
    x = (torch.randn(3, 77, device=DEVICE) * 3).requires_grad_(True)
    dy = torch.randn(3, 77, device=DEVICE)
    layer(x).backward(dy)
    check_backward(x.grad, x, dy, -1, True)


def test_dtype_argument_differentiates_through_the_cast():
    x = (torch.randn(4, 30, device=DEVICE) * 3).to(torch.bfloat16).requires_grad_(True)
    y = fastsoftmax.softmax(x, -1, dtype=torch.float32)
    dy = torch.randn(4, 30, device=DEVICE)
    (dx,) = torch.autograd.grad(y, x, dy)
    assert dx.dtype == torch.bfloat16
    x64 = x.detach().double().requires_grad_(True)
    (ref,) = torch.autograd.grad(torch.softmax(x64, -1), x64, dy.double())
    # one bf16 rounding of the gradient on top of float32 arithmetic
    torch.testing.assert_close(dx.double(), ref, rtol=2**-7, atol=1e-4 * ref.abs().max().item())


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_second_order_gradient(log):
    # create_graph=True: the gradient of the gradient (a gradient penalty, say) must be right too
    op, ref_op = (fastsoftmax.log_softmax, torch.log_softmax) if log else (fastsoftmax.softmax, torch.softmax)
    x = (torch.randn(5, 70, device=DEVICE) * 3).requires_grad_(True)
    dy = torch.randn(5, 70, device=DEVICE)
    (dx,) = torch.autograd.grad(op(x, -1, backend="triton"), x, dy, create_graph=True)
    (ddx,) = torch.autograd.grad((dx * dx).sum(), x)
    x64 = x.detach().double().requires_grad_(True)
    (dx64,) = torch.autograd.grad(ref_op(x64, -1), x64, dy.double(), create_graph=True)
    (ddx64,) = torch.autograd.grad((dx64 * dx64).sum(), x64)
    torch.testing.assert_close(dx.double(), dx64, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(ddx.double(), ddx64, rtol=1e-3, atol=1e-4 * ddx64.abs().max().item())


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_custom_op_autograd(log):
    # the custom op carries autograd under torch.compile; called directly it must agree as well
    from fastsoftmax.functional import softmax_forward

    x = (torch.randn(6, 129, device=DEVICE) * 3).requires_grad_(True)
    dy = torch.randn(6, 129, device=DEVICE)
    y = softmax_forward(x, 1, log, "triton")
    (dx,) = torch.autograd.grad(y, x, dy)
    check_backward(dx, x, dy, 1, log)


def test_autograd_calls_bind_no_signature(monkeypatch):
    """torch's Function.apply binds the arguments to forward's signature through ``inspect`` on every
    call of a Function with setup_context (tens of microseconds); an eager autograd call goes through
    a Function without it, forward and backward, whatever the backend, and stays right."""
    import inspect

    x = (torch.randn(6, 70, device=DEVICE) * 3).requires_grad_(True)
    dy = torch.randn(6, 70, device=DEVICE)
    signature = inspect.signature

    def refused(function, *args, **kwargs):  # (Triton's interpreter binds its kernels' arguments)
        assert getattr(function, "__module__", None) != "fastsoftmax.functional", f"{function} was bound"
        return signature(function, *args, **kwargs)

    monkeypatch.setattr(inspect, "signature", refused)
    for backend in ("auto", "triton", "torch"):
        for log in (False, True):
            for _ in range(2):  # the first call of a geometry, and a call that finds its plan
                y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, -1, backend=backend)
                (dx,) = torch.autograd.grad(y, x, dy)
                check_backward(dx, x, dy, -1, log)
            y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, -1, dtype=torch.float32, backend=backend)
            (dx,) = torch.autograd.grad(y, x, dy)
            check_backward(dx, x, dy, -1, log)


def test_a_tensor_left_over_from_a_torch_func_transform():
    # a wrapper that escaped torch.func.grad is dead once the transform exits: computed as the tensor
    # it wraps, as torch computes it, with or without a graph (it has no storage a plan could read)
    leaked = []

    def loss(t):
        leaked.append(t)
        return fastsoftmax.softmax(t, -1).sum()

    x = torch.randn(4, 7, device=DEVICE) * 3
    torch.func.grad(loss)(x)
    (dead,) = leaked
    assert torch._C._functorch.is_functorch_wrapped_tensor(dead) and dead.requires_grad
    fastsoftmax.softmax(x.clone(), -1)  # the geometry's plan, remembered: a wrapper must not take it
    for grad_mode in (torch.enable_grad, torch.no_grad):  # the autograd path, and the one without
        with grad_mode():
            for _ in range(2):
                y = fastsoftmax.softmax(dead, -1)
                assert not torch._C._functorch.is_functorch_wrapped_tensor(y)
                torch.testing.assert_close(y, torch.softmax(x, -1))


@pytest.mark.parametrize("backend", ["auto", "triton"])
def test_an_out_or_gradient_left_over_from_a_torch_func_transform(backend, monkeypatch):
    # wrappers that escaped torch.func.grad as out= or as softmax_backward's tensors: the tensors they
    # wrap, as torch takes them (a result written into the wrapped tensor, which is returned), and
    # by the kernels: torch's formula is for live wrappers only
    if backend == "triton":
        monkeypatch.setattr(fastsoftmax.functional, "_torch_backward", None)
    leaked = []

    def loss(t):
        leaked.append(torch.empty_like(t))
        leaked.append(torch.randn_like(t))
        return t.sum()

    x = torch.randn(4, 7, device=DEVICE) * 3
    torch.func.grad(loss)(x)
    dead_out, dead_dy = leaked
    out = torch._C._functorch.unwrap_if_dead(dead_out)
    dy = torch._C._functorch.unwrap_if_dead(dead_dy)
    assert torch._C._functorch.is_functorch_wrapped_tensor(dead_out)
    for _ in range(2):  # the first call of a geometry, and a call that finds its plan
        out.fill_(float("nan"))
        y = fastsoftmax.softmax(x, -1, out=dead_out, backend=backend)
        assert y is out
        torch.testing.assert_close(out, torch.softmax(x.double(), -1).float())
        dx = fastsoftmax.softmax_backward(dead_dy, y, -1, backend=backend)
        assert not torch._C._functorch.is_functorch_wrapped_tensor(dx)
        check_backward(dx, x, dy, -1, False)
        dx = fastsoftmax.softmax_backward(dy, dead_out, -1, backend=backend)
        check_backward(dx, x, dy, -1, False)
