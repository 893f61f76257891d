"""Forward-mode AD and torch.func's transforms (vmap, grad, jvp, jacrev, jacfwd, hessian) through the
public API, against float64."""

import pytest
import torch
import torch.autograd.forward_ad as fwAD
from reference import DEVICE, check_backward, check_forward, check_jvp

import fastsoftmax
from fastsoftmax import functional

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LOG = pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
CASES = [((5, 70), -1), ((4, 33, 6), 1), ((40, 3), 0)]


def _op(log):
    return fastsoftmax.log_softmax if log else fastsoftmax.softmax


def _ref_op(log):
    return torch.log_softmax if log else torch.softmax


def _inputs(shape, dtype):
    x = (torch.randn(shape, device=DEVICE) * 3).to(dtype)
    return x, torch.randn(shape, device=DEVICE).to(dtype)


@LOG
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_forward_ad_carries_the_tangent(dtype, log):
    op = _op(log)
    for shape, dim in CASES:
        x, t = _inputs(shape, dtype)
        op(x, dim)  # a plain call first: the plan it leaves must not take a dual input past its tangent
        with fwAD.dual_level():
            y, y_t = fwAD.unpack_dual(op(fwAD.make_dual(x, t), dim))
        assert y_t is not None, "the output lost the input's tangent"
        check_forward(y, x, dim, log)
        check_jvp(y_t, x, t, dim, log)


@LOG
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_func_jvp(dtype, log):
    x, t = _inputs((6, 129), dtype)
    y, y_t = torch.func.jvp(lambda a: _op(log)(a, 1), (x,), (t,))
    check_forward(y, x, 1, log)
    check_jvp(y_t, x, t, 1, log)


@LOG
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_vmap_batches_one_call(dtype, log, monkeypatch):
    x = (torch.randn(7, 5, 90, device=DEVICE) * 3).to(dtype)
    shapes = []
    forward_impl = functional.forward_impl

    def counted(x, *args, **kwargs):
        shapes.append(tuple(x.shape))
        return forward_impl(x, *args, **kwargs)

    monkeypatch.setattr(functional, "forward_impl", counted)
    # the batch dim in the middle, the softmax over each sample's dim 1 (the tensor's dim 2)
    y = torch.func.vmap(lambda s: _op(log)(s, 1), in_dims=1, out_dims=1)(x)
    assert shapes == [(5, 7, 90)], f"vmap reached the kernels as {shapes}, not one call over the batch"
    check_forward(y, x, 2, log)


@LOG
def test_nested_vmap(log):
    x = torch.randn(3, 4, 50, device=DEVICE) * 3
    y = torch.func.vmap(torch.func.vmap(lambda s: _op(log)(s, -1)))(x)
    check_forward(y, x, -1, log)


@LOG
def test_vmap_of_softmax_backward(log):
    x = torch.randn(6, 80, device=DEVICE) * 3
    y = _op(log)(x, -1)
    dys = torch.randn(4, 6, 80, device=DEVICE)
    dxs = torch.func.vmap(lambda dy: fastsoftmax.softmax_backward(dy, y, -1, log=log), in_dims=(0,))(dys)
    for dx, dy in zip(dxs, dys):
        check_backward(dx, x, dy, -1, log)


@LOG
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_func_grad(dtype, log):
    x, dy = _inputs((5, 70), dtype)
    dx = torch.func.grad(lambda a: (_op(log)(a, -1) * dy).sum())(x)
    check_backward(dx, x, dy, -1, log)


def _close64(out, reference, scale=1e-5):
    torch.testing.assert_close(out.double(), reference, rtol=scale, atol=scale * reference.abs().max().item())


@LOG
def test_jacobians_and_hessian(log):
    x = torch.randn(3, 12, device=DEVICE) * 3
    x64 = x.double()
    op, ref = (lambda a: _op(log)(a, -1)), (lambda a: _ref_op(log)(a, -1))
    _close64(torch.func.jacrev(op)(x), torch.func.jacrev(ref)(x64))
    _close64(torch.func.jacfwd(op)(x), torch.func.jacfwd(ref)(x64))
    weights = torch.randn(3, 12, device=DEVICE)

    def loss(f, w):
        return lambda a: (f(a) * w).sum()

    _close64(torch.func.hessian(loss(op, weights))(x), torch.func.hessian(loss(ref, weights.double()))(x64), 1e-4)


@LOG
def test_forward_over_reverse(log):
    # a Hessian-vector product: the jvp of the gradient
    x, v = torch.randn(4, 40, device=DEVICE) * 3, torch.randn(4, 40, device=DEVICE)
    w = torch.randn(4, 40, device=DEVICE)

    def grad_of(f, w):
        return torch.func.grad(lambda a: (f(a) ** 2 * w).sum())

    _, hvp = torch.func.jvp(grad_of(lambda a: _op(log)(a, -1), w), (x,), (v,))
    _, hvp64 = torch.func.jvp(grad_of(lambda a: _ref_op(log)(a, -1), w.double()), (x.double(),), (v.double(),))
    _close64(hvp, hvp64, 1e-4)


@LOG
def test_softmax_backward_is_differentiable(log):
    x = torch.randn(5, 60, device=DEVICE) * 3
    y = _op(log)(x, -1).requires_grad_(True)
    dy = torch.randn(5, 60, device=DEVICE, requires_grad=True)
    w = torch.randn(5, 60, device=DEVICE)
    dx = fastsoftmax.softmax_backward(dy, y, -1, log=log)
    assert dx.requires_grad, "the backward's result left the autograd graph"
    grads = torch.autograd.grad((dx * w).sum(), (dy, y))
    y64, dy64 = y.detach().double().requires_grad_(True), dy.detach().double().requires_grad_(True)
    dx64 = (torch._log_softmax_backward_data if log else torch._softmax_backward_data)(dy64, y64, -1, torch.float64)
    refs = torch.autograd.grad((dx64 * w.double()).sum(), (dy64, y64))
    for got, want in zip(grads, refs):
        _close64(got, want)


def test_module_under_functional_call():
    layer = fastsoftmax.nn.LogSoftmax(dim=1)
    x, dy = _inputs((4, 21, 9), torch.float32)
    dx = torch.func.grad(lambda a: (torch.func.functional_call(layer, {}, (a,)) * dy).sum())(x)
    check_backward(dx, x, dy, 1, True)


@LOG
def test_custom_ops_vmap_as_one_call(log, monkeypatch):
    # the ops torch.compile traces: one call over the batch (torch's fallback calls them per sample)
    from fastsoftmax.functional import softmax_backward_op, softmax_forward

    calls = {"forward": [], "backward": []}
    forward_impl, backward_impl = functional.forward_impl, functional.backward_impl

    def counted_forward(x, *args, **kwargs):
        calls["forward"].append(tuple(x.shape))
        return forward_impl(x, *args, **kwargs)

    def counted_backward(dy, y, *args, **kwargs):
        calls["backward"].append((tuple(dy.shape), tuple(y.shape)))
        return backward_impl(dy, y, *args, **kwargs)

    monkeypatch.setattr(functional, "forward_impl", counted_forward)
    monkeypatch.setattr(functional, "backward_impl", counted_backward)
    x = torch.randn(30, 4, 6, device=DEVICE) * 3
    # the ops take dims as written (a scripted module passes -2): a sample's dim, not the batch's
    y = torch.func.vmap(lambda s: softmax_forward(s, -2, log, "auto"), in_dims=2, out_dims=2)(x)
    check_forward(y, x, 0, log)
    dys = torch.randn(5, 30, 4, 6, device=DEVICE)
    dxs = torch.func.vmap(lambda dy: softmax_backward_op(dy, y, -3, log, "auto"))(dys)
    for dx, dy in zip(dxs, dys):
        check_backward(dx, x, dy, 0, log)
    assert calls == {"forward": [(6, 30, 4)], "backward": [((5, 30, 4, 6), (5, 30, 4, 6))]}, calls


@pytest.mark.parametrize("transform", ["vmap", "jvp", "grad"])
def test_transforms_inside_torch_compile(transform):
    # torch's custom ops have no forward-mode formula and no functorch grad rule: a compiled
    # transform must still be right (a compiled jvp through the op alone returns a zero tangent)
    x, t = torch.randn(3, 8, 40, device=DEVICE) * 3, torch.randn(3, 8, 40, device=DEVICE)
    op = lambda a: fastsoftmax.log_softmax(a, -1)  # noqa: E731
    calls = {
        "vmap": lambda a: torch.func.vmap(op)(a),
        "jvp": lambda a: torch.func.jvp(op, (a,), (t,))[1],
        "grad": lambda a: torch.func.grad(lambda b: (op(b) * t).sum())(a),
    }
    out = torch.compile(calls[transform], fullgraph=True, backend="aot_eager")(x)
    if transform == "vmap":
        check_forward(out, x, -1, True)
    elif transform == "jvp":
        check_jvp(out, x, t, -1, True)
    else:
        check_backward(out, x, t, -1, True)
