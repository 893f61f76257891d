"""Forward softmax and log-softmax through the public API, every Triton tier, against float64."""

import pytest
import torch
from reference import DEVICE, check_backward, check_forward

import fastsoftmax
from fastsoftmax.backends.triton import TritonBackend

DTYPES = [torch.float32, torch.float16, torch.bfloat16]

# (shape, dim): rows short and long, odd lengths, the strided layout, ranks 1 to 4
CASES = [
    ((7,), 0),
    ((5, 33), -1),
    ((3, 1000), 1),
    ((2, 1030), -1),
    ((6, 64), 0),
    ((2, 3, 40), 1),
    ((2, 3, 40), 0),
    ((3, 5, 4, 6), 2),
    ((1, 1), -1),
]


def _input(shape, dtype, scale=3.0):
    return (torch.randn(shape, device=DEVICE) * scale).to(dtype)


@pytest.mark.parametrize("tier", TritonBackend.tiers)
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_every_tier_matches_float64(tier, dtype, log):
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    for shape, dim in CASES:
        x = _input(shape, dtype)
        with fastsoftmax.dispatch.forced("triton", tier):
            y = op(x, dim)
        check_forward(y, x, dim, log)


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
def test_auto_matches_float64(dtype):
    for shape, dim in CASES:
        x = _input(shape, dtype)
        check_forward(fastsoftmax.softmax(x, dim), x, dim)
        check_forward(fastsoftmax.log_softmax(x, dim), x, dim, True)


NON_CONTIGUOUS = [
    ("transposed", lambda t: t.t(), (40, 24)),
    ("column slice", lambda t: t[:, 3:30], (16, 40)),
    ("every other column", lambda t: t[:, ::2], (12, 40)),
    ("every other row", lambda t: t[::2], (24, 40)),
    ("permuted 3d", lambda t: t.permute(2, 0, 1), (4, 6, 10)),
    ("channels last", lambda t: t.contiguous(memory_format=torch.channels_last), (2, 6, 5, 7)),
    ("expanded", lambda t: t.expand(8, -1), (1, 30)),
    ("storage offset", lambda t: t[1:, 1:], (9, 33)),
]


@pytest.mark.parametrize("name,view,base_shape", NON_CONTIGUOUS, ids=[case[0] for case in NON_CONTIGUOUS])
@pytest.mark.parametrize("tier", [None, "online"])
def test_non_contiguous_views_every_dim(name, view, base_shape, tier):
    for dtype in (torch.float32, torch.bfloat16):
        x = view(_input(base_shape, dtype))
        before = x.clone()
        for dim in range(-x.dim(), x.dim()):
            if tier is None:
                y = fastsoftmax.softmax(x, dim, backend="triton")
            else:
                with fastsoftmax.dispatch.forced("triton", tier):
                    y = fastsoftmax.softmax(x, dim)
            check_forward(y, x, dim)
        assert torch.equal(x, before), "the input was modified"


def test_output_keeps_a_permuted_layout():
    x = _input((6, 5, 4), torch.float32).permute(2, 0, 1)
    y = fastsoftmax.softmax(x, 1, backend="triton")
    assert y.stride() == torch.empty_like(x).stride()


def test_empty_and_scalar_tensors():
    for shape, dim in [((0,), 0), ((0, 5), 1), ((5, 0), 1), ((3, 0, 2), 0)]:
        x = _input(shape, torch.float32)
        y = fastsoftmax.softmax(x, dim)
        assert y.shape == x.shape and y.dtype == x.dtype
    scalar = torch.tensor(2.5, device=DEVICE)
    assert fastsoftmax.softmax(scalar, 0).item() == 1.0
    assert fastsoftmax.log_softmax(scalar, -1).item() == 0.0


def test_dtype_argument_casts_first():
    x = _input((4, 50), torch.bfloat16)
    y = fastsoftmax.softmax(x, -1, dtype=torch.float32)
    assert y.dtype == torch.float32
    check_forward(y, x.float(), -1)
    y = fastsoftmax.log_softmax(x.float(), -1, dtype=torch.float16)
    assert y.dtype == torch.float16
    check_forward(y, x.half(), -1, True)


def test_float64_is_computed_by_torch():
    x = torch.randn(4, 9, dtype=torch.float64, device=DEVICE)
    torch.testing.assert_close(fastsoftmax.softmax(x, 0), torch.softmax(x, 0), rtol=0, atol=0)


@pytest.mark.parametrize("backend", ["auto", "triton", "torch"])
def test_every_backend_name_agrees(backend):
    x = _input((5, 70), torch.float16)
    check_forward(fastsoftmax.softmax(x, backend=backend), x, -1)


def test_modules():
    x = _input((3, 4, 20), torch.float32)
    check_forward(fastsoftmax.nn.Softmax(dim=1)(x), x, 1)
    check_forward(fastsoftmax.nn.LogSoftmax(dim=-1)(x), x, -1, True)
    assert "dim=1" in repr(fastsoftmax.nn.Softmax(dim=1))


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_modules_without_a_dim_pick_torchs(log):
    # torch.nn.Softmax() (dim=None) picks dim 0 for 0-, 1- and 3-dim inputs, else 1, with a warning
    ours, theirs = (
        (fastsoftmax.nn.LogSoftmax, torch.nn.LogSoftmax) if log else (fastsoftmax.nn.Softmax, torch.nn.Softmax)
    )
    for shape, dim in [((), 0), ((30,), 0), ((6, 30), 1), ((5, 6, 7), 0), ((2, 5, 6, 7), 1)]:
        x = _input(shape, torch.float32)
        with pytest.warns(UserWarning, match="Implicit dimension choice") as ours_warned:
            y = ours()(x)
        with pytest.warns(UserWarning, match="Implicit dimension choice") as torch_warned:
            theirs()(x)
        assert str(ours_warned[0].message) == str(torch_warned[0].message)
        check_forward(y, x, dim, log)


def test_numpy_integer_dims():
    np = pytest.importorskip("numpy")
    x = _input((6, 40), torch.float32)
    check_forward(fastsoftmax.softmax(x, np.int64(1)), x, 1)
    check_forward(fastsoftmax.log_softmax(x, np.int32(-2)), x, 0, True)
    with pytest.raises(TypeError, match="dim must be an int"):
        fastsoftmax.softmax(x, 1.0)


def test_jit_trace_records_the_kernel():
    # a launch is invisible to the tracer: it must see an op call, or the traced graph would
    # return whatever the output's allocation held
    def model(x, dy):
        y = fastsoftmax.softmax(x * 2.0, 1)
        return y, fastsoftmax.softmax_backward(dy, y, 1)

    x, dy = _input((4, 50), torch.float32), torch.randn(4, 50, device=DEVICE)
    fastsoftmax.softmax(x * 2.0, 1)  # a remembered plan must not take the traced call either
    traced = torch.jit.trace(model, (x, dy))
    graph = str(traced.graph)
    assert "fastsoftmax::softmax_forward" in graph and "fastsoftmax::softmax_backward" in graph, graph
    x, dy = _input((7, 50), torch.float32), torch.randn(7, 50, device=DEVICE)
    y, dx = traced(x, dy)
    check_forward(y, x * 2.0, 1)
    check_backward(dx, x * 2.0, dy, 1)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_autocast_computes_in_float32_as_torch_does(log, monkeypatch):
    op, ref = (fastsoftmax.log_softmax, torch.log_softmax) if log else (fastsoftmax.softmax, torch.softmax)
    device_type = torch.device(DEVICE).type
    if device_type != "cuda":  # CPU autocast keeps softmax in 16 bits; the rule itself is tested here
        monkeypatch.setattr(fastsoftmax.functional, "AUTOCAST_TO_FLOAT32", (device_type,))
    x = _input((5, 300), torch.bfloat16).requires_grad_(True)
    dy = torch.randn(5, 300, device=DEVICE)
    op(x.detach(), -1)  # a plan remembered outside autocast must not serve the call inside it
    with torch.autocast(device_type, dtype=torch.bfloat16):
        y = op(x, -1)
        if device_type == "cuda":
            assert ref(x, -1).dtype == torch.float32
        z = op(x.float(), -1)  # float32 inputs stay float32
        planned = op(x.detach(), -1)  # the remembered plan's geometry, without autograd
    assert y.dtype == torch.float32 and z.dtype == torch.float32 and planned.dtype == torch.float32
    check_forward(y, x.float(), -1, log)
    (dx,) = torch.autograd.grad(y, x, dy)
    assert dx.dtype == torch.bfloat16
    x64 = x.detach().double().requires_grad_(True)
    (dx64,) = torch.autograd.grad(ref(x64, -1), x64, dy.double())
    torch.testing.assert_close(dx.double(), dx64, rtol=2**-7, atol=2e-3 * dx64.abs().max().item())
    with torch.autocast(device_type, dtype=torch.bfloat16):
        assert op(x.detach(), -1, dtype=torch.bfloat16).dtype == torch.bfloat16  # an explicit dtype wins


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_fake_tensors_get_shapes(log):
    # a tensor subclass that computes ops itself (FakeTensor: shapes without data) is handed the op,
    # whose fake implementation answers; a kernel launch would read storage that is not there
    from torch._subclasses.fake_tensor import FakeTensorMode

    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    with FakeTensorMode():
        x = torch.empty(4, 7, 30, device=DEVICE, dtype=torch.bfloat16).transpose(0, 1).requires_grad_(True)
        y = op(x, 2)
        (dx,) = torch.autograd.grad(y.sum(), x)
        dx_direct = fastsoftmax.softmax_backward(torch.ones_like(y), y.detach(), 2, log=log)
    for out in (y, dx, dx_direct):
        assert (out.shape, out.dtype, out.stride()) == (x.shape, x.dtype, torch.empty_like(x).stride())


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_lazily_negated_views(log):
    # z.conj().imag and torch._neg_view keep the values unnegated in memory beside a flag: a kernel
    # reading memory must see the negated values, on the first call and on a remembered plan's
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    plain = _input((6, 40), torch.float32)
    negated = torch._neg_view(plain.clone())
    assert negated.is_neg()
    op(plain, 1)  # leaves a plan for this geometry
    for _ in range(2):
        check_forward(op(negated, 1), -plain, 1, log)
    imaginary = torch.randn(5, 40, dtype=torch.complex64, device=DEVICE).conj().imag
    assert imaginary.is_neg()
    check_forward(op(imaginary, 0), imaginary.resolve_neg(), 0, log)
    y = op(plain, 1)
    dy = torch._neg_view(torch.randn(6, 40, device=DEVICE))
    check_backward(fastsoftmax.softmax_backward(dy, y, 1, log=log), plain, dy.resolve_neg(), 1, log)


def test_efficient_zero_gradient():
    x = _input((4, 30), torch.float32)
    y = fastsoftmax.softmax(x, 1)
    zero = torch._efficientzerotensor(4, 30, device=DEVICE)
    for log in (False, True):
        dx = fastsoftmax.softmax_backward(zero, y, 1, log=log)
        assert torch.equal(dx, torch.zeros_like(dx))


@pytest.mark.parametrize("source", [torch.int64, torch.bool, torch.complex64], ids=str)
def test_a_floating_dtype_casts_any_input_first(source):
    x = _input((3, 20), torch.float32).to(source) if source != torch.bool else torch.rand(3, 20, device=DEVICE) > 0.5
    for op, ref in ((fastsoftmax.softmax, torch.softmax), (fastsoftmax.log_softmax, torch.log_softmax)):
        y = op(x, 1, dtype=torch.float32)
        torch.testing.assert_close(y, ref(x, 1, dtype=torch.float32))
    with pytest.raises(TypeError, match="float32, float16, bfloat16 or float64"):
        fastsoftmax.softmax(x, 1)


def test_torchs_call_forms():
    x = _input((4, 30), torch.float16)
    check_forward(fastsoftmax.softmax(input=x, dim=1), x, 1)
    y = fastsoftmax.log_softmax(x, 1, torch.float32)  # torch.softmax's third positional is dtype
    assert y.dtype == torch.float32
    check_forward(y, x.float(), 1, True)
    check_forward(fastsoftmax.softmax(x, torch.tensor(-1)), x, -1)  # a 0-dim integer tensor is a dim
    for bad in (torch.tensor([1]), torch.tensor(True), torch.tensor(1.0)):
        with pytest.raises(TypeError, match="dim must be an int"):
            fastsoftmax.softmax(x, bad)


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_scripted_modules(log):
    cls = fastsoftmax.nn.LogSoftmax if log else fastsoftmax.nn.Softmax
    x = _input((2, 5, 7), torch.float32)
    for dim, expected in ((1, 1), (-1, 2), (None, 0)):
        assert "fastsoftmax::softmax_forward" in str(torch.jit.script(cls(dim)).graph)
        scripted = torch.jit.script(torch.nn.Sequential(torch.nn.Identity(), cls(dim)))
        if dim is None:
            with pytest.warns(
                UserWarning, match="Implicit dimension choice for " + ("log_softmax" if log else "softmax")
            ):
                y = scripted(x)
        else:
            y = scripted(x)
        check_forward(y, x, expected, log)


def test_fx_symbolic_trace_records_the_ops():
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), fastsoftmax.nn.LogSoftmax(1)).to(DEVICE)

    def function(x, dy):
        y = fastsoftmax.softmax(x * 2, -1, torch.float32)
        return y, fastsoftmax.softmax_backward(dy, y, -1)

    traced_model, traced_function = torch.fx.symbolic_trace(model), torch.fx.symbolic_trace(function)
    assert "fastsoftmax.softmax_forward" in traced_model.code
    assert "fastsoftmax.softmax_backward" in traced_function.code
    x, dy = _input((5, 8), torch.float32), torch.randn(5, 8, device=DEVICE)
    check_forward(traced_model(x), model[0](x), 1, True)
    y, dx = traced_function(x.half(), dy)
    check_forward(y, (x.half() * 2).float(), -1)
    check_backward(dx, (x.half() * 2).float(), dy, -1)
