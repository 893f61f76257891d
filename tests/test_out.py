"""``out=``: the result written into a given tensor, as torch.softmax(..., out=) and
torch.log_softmax(..., out=) do, against float64 on fresh data with the out tensor poisoned."""

import warnings

import pytest
import torch
from reference import DEVICE, check_forward

import fastsoftmax
from fastsoftmax import functional

DTYPES = [torch.float32, torch.float16, torch.bfloat16]
LOGS = pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])


def _op(log):
    return fastsoftmax.log_softmax if log else fastsoftmax.softmax


def _input(shape, dtype=torch.float32):
    return (torch.randn(shape, device=DEVICE) * 3).to(dtype)


def _poisoned(shape, dtype, device=DEVICE):
    return torch.full(shape, float("nan"), dtype=dtype, device=device)


def _refuse_the_copy(monkeypatch):
    """Fail a call that computes into a new tensor (to copy it into out) instead of writing out."""

    def computed_elsewhere(*args, **kwargs):
        raise AssertionError("the result was computed into a new tensor and copied")

    monkeypatch.setattr(functional, "forward_impl", computed_elsewhere)


def _channels_last(t):
    return t.contiguous(memory_format=torch.channels_last)


def _transposed(t):
    return t.t().contiguous().t()


# (name, input shape, dim, out made from a poisoned tensor): the layouts an out tensor comes in
OUT_LAYOUTS = [
    ("rows", (6, 300), 1, lambda t: t),
    ("rows_dim0", (37, 8), 0, lambda t: t),
    ("strided_axis", (3, 50, 7), 1, lambda t: t),
    ("transposed", (40, 24), 1, _transposed),
    ("channels_last", (2, 5, 6, 7), 1, _channels_last),
    ("stepped", (5, 33), 1, lambda t: torch.cat([t, t], 1)[:, ::2] if t.dim() == 2 else t),
    ("offset_by_one", (4, 65), 1, lambda t: torch.cat([t.new_zeros(1), t.flatten()])[1:].view(t.shape)),
    ("scalar", (), 0, lambda t: t),
    ("empty", (0, 9), 1, lambda t: t),
]


@pytest.mark.parametrize("name,shape,dim,make_out", OUT_LAYOUTS, ids=[case[0] for case in OUT_LAYOUTS])
@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@LOGS
def test_out_in_every_layout(name, shape, dim, make_out, dtype, log):
    x = _input(shape, dtype)
    for call in range(2):  # the second call takes the remembered plan
        out = make_out(_poisoned(shape, dtype))
        strides = out.stride()
        returned = _op(log)(x, dim, out=out)
        assert returned is out and out.stride() == strides
        check_forward(out, x, dim, log)


# (name, shape, dim, input layout, out layout): pairs that fold into the same (outer, n, inner) axes
FOLDING_PAIRS = [
    ("rows", (6, 300), 1, lambda t: t, lambda t: t),
    ("strided_axis", (3, 50, 7), 1, lambda t: t, lambda t: t),
    ("transposed_out", (40, 24), 1, lambda t: t, _transposed),
    ("transposed_both", (40, 24), 0, _transposed, _transposed),
    ("channels_last_both", (2, 5, 6, 7), 1, _channels_last, _channels_last),
]


@pytest.mark.parametrize("name,shape,dim,make_x,make_out", FOLDING_PAIRS, ids=[case[0] for case in FOLDING_PAIRS])
@LOGS
def test_out_is_written_where_it_lies(name, shape, dim, make_x, make_out, log, monkeypatch):
    # an out that folds as the input does (in its own memory order or the input's) takes no extra pass
    x = make_x(_input(shape))
    _refuse_the_copy(monkeypatch)
    for call in range(2):
        out = make_out(_poisoned(shape, torch.float32))
        _op(log)(x, dim, out=out)
        check_forward(out, x, dim, log)


@LOGS
def test_input_as_its_own_out(log):
    x = _input((7, 129))
    original = x.clone()
    assert _op(log)(x, 1, out=x) is x
    check_forward(x, original, 1, log)


@LOGS
def test_out_overlapping_the_input(log):
    # out one row (or one column) past the input in the same storage: every element is computed from
    # the input as it was (torch's own CPU kernel reads rows it has already written here)
    base = _input((9, 40))
    x, out = base[:8], base[1:]
    original = x.clone()
    _op(log)(x, 1, out=out)
    check_forward(out, original, 1, log)
    base = _input((8, 41))
    x, out = base[:, :40], base[:, 1:]
    original = x.clone()
    _op(log)(x, 0, out=out)
    check_forward(out, original, 0, log)


@LOGS
def test_dtype_and_out(log):
    x = _input((5, 70), torch.bfloat16)
    out = _poisoned((5, 70), torch.float32)
    _op(log)(x, 1, dtype=torch.float32, out=out)
    check_forward(out, x.float(), 1, log)
    with pytest.raises(RuntimeError, match="dtype torch.float32, but got torch.bfloat16"):
        _op(log)(x, 1, dtype=torch.float32, out=_poisoned((5, 70), torch.bfloat16))


def test_out_is_resized_as_torch_resizes():
    x = _input((4, 30))
    out = torch.empty(0, device=DEVICE)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an empty out is resized silently
        fastsoftmax.softmax(x, 1, out=out)
    assert out.shape == x.shape
    check_forward(out, x, 1)
    out = torch.empty(7, device=DEVICE)
    with pytest.warns(UserWarning, match="was resized"):
        fastsoftmax.softmax(x, 1, out=out)
    check_forward(out, x, 1)


def test_out_errors_as_torch():
    x = _input((4, 30))
    with pytest.raises(RuntimeError, match="expected out tensor to have dtype torch.float32"):
        fastsoftmax.softmax(x, 1, out=torch.empty(4, 30, dtype=torch.float64, device=DEVICE))
    with pytest.raises(RuntimeError, match="expected out tensor on"):
        fastsoftmax.softmax(x, 1, out=torch.empty(4, 30, device="meta"))
    with pytest.raises(TypeError, match="argument 'out' must be a torch.Tensor, not int"):
        fastsoftmax.softmax(x, 1, out=3)
    with pytest.raises(RuntimeError, match="more than one element at a single memory location"):
        fastsoftmax.softmax(x, 1, out=torch.empty(1, 30, device=DEVICE).expand(4, 30))
    for x_grad, out_grad in ((True, False), (False, True)):
        with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
            fastsoftmax.log_softmax(
                x.clone().requires_grad_(x_grad), 1, out=torch.empty(4, 30, device=DEVICE, requires_grad=out_grad)
            )
    with torch.no_grad():  # no gradient asked for: written
        out = _poisoned((4, 30), torch.float32)
        fastsoftmax.softmax(x.clone().requires_grad_(), 1, out=out)
        check_forward(out, x, 1)
    with pytest.raises(IndexError):
        fastsoftmax.softmax(x, 2, out=torch.empty_like(x))


@LOGS
def test_lazily_negated_out(log):
    # a negated view as out stores its values unnegated: writing through it must negate them
    x = _input((6, 40))
    out = torch._neg_view(_poisoned((6, 40), torch.float32))
    _op(log)(x, 1, out=out)
    check_forward(out.resolve_neg(), x, 1, log)


@LOGS
def test_out_under_compile(log):
    op = _op(log)
    compiled = torch.compile(lambda t, o: op(t * 2, 1, out=o), fullgraph=True, backend="aot_eager")
    x = _input((4, 50))
    out = _poisoned((4, 50), torch.float32)
    compiled(x, out)
    check_forward(out, x * 2, 1, log)


def test_the_plain_call_is_unchanged_by_out():
    # a plan remembered for out= calls never serves a call without it, nor the reverse
    x = _input((3, 90))
    out = _poisoned((3, 90), torch.float32)
    fastsoftmax.softmax(x, 1, out=out)
    y = fastsoftmax.softmax(x, 1)
    assert y is not out and y.data_ptr() != out.data_ptr()
    check_forward(y, x, 1)
    out = _poisoned((3, 90), torch.float32)
    fastsoftmax.softmax(x, 1, out=out)
    check_forward(out, x, 1)


@LOGS
def test_a_remembered_out_plan_serves_only_its_own_case(log):
    # after a call leaves a plan for (input, out) of some geometry, calls of that geometry that differ
    # in what the key does not hold take the checked path: out aliasing the input, out needing a
    # gradient, a negated out, out of another dtype
    op = _op(log)
    x = _input((5, 77))
    op(x, -1, out=_poisoned((5, 77), torch.float32))  # leaves the plan (under -1 and 1)
    y = x.clone()
    op(y, -1, out=y)
    check_forward(y, x, 1, log)
    base = torch.cat([x, x[:1]])  # rows 1..5 written from rows 0..4 of the same storage
    op(base[:5], 1, out=base[1:])
    check_forward(base[1:], x, 1, log)
    with pytest.raises(RuntimeError, match="automatic differentiation"):
        op(x, -1, out=torch.empty(5, 77, device=DEVICE, requires_grad=True))
    negated = torch._neg_view(_poisoned((5, 77), torch.float32))
    op(x, -1, out=negated)
    check_forward(negated.resolve_neg(), x, 1, log)
    with pytest.raises(RuntimeError, match="dtype torch.float32, but got torch.float16"):
        op(x, -1, out=torch.empty(5, 77, dtype=torch.float16, device=DEVICE))
    out = _poisoned((5, 77), torch.float32)
    op(x, 1, out=out)
    check_forward(out, x, 1, log)


@pytest.mark.parametrize("call", ["first", "remembered"])
def test_a_written_out_is_an_in_place_write_to_autograd(call):
    # a graph that saved the out tensor must refuse its backward after the kernel wrote it, as after
    # any in-place write, rather than compute gradients from the softmax now in it
    x = _input((4, 30))
    if call == "remembered":
        fastsoftmax.softmax(x, 1, out=torch.empty(4, 30, device=DEVICE))
    w = torch.randn(4, 30, device=DEVICE, requires_grad=True)
    out = torch.randn(4, 30, device=DEVICE)
    loss = (out * w).sum()  # saves out
    version = out._version
    fastsoftmax.softmax(x, 1, out=out)
    assert out._version > version
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


def test_inference_tensors_as_out():
    x = _input((4, 30))
    with torch.inference_mode():
        out = _poisoned((4, 30), torch.float32)
        for _ in range(2):
            fastsoftmax.softmax(x, 1, out=out)
            check_forward(out, x, 1)
    for _ in range(2):  # outside inference mode, as torch: refused, also once a plan is remembered
        with pytest.raises(RuntimeError, match="inference tensor"):
            fastsoftmax.softmax(x, 1, out=out)


def test_a_plan_answers_to_the_dim_as_written(monkeypatch):
    x = _input((5, 40))
    fastsoftmax.softmax(x, 1, out=torch.empty(5, 40, device=DEVICE))
    fastsoftmax.softmax(x, -1, out=torch.empty(5, 40, device=DEVICE))

    def resolved_again(*args, **kwargs):
        raise AssertionError("a call of a remembered geometry was planned again")

    monkeypatch.setattr(functional, "_resolve", resolved_again)
    out = _poisoned((5, 40), torch.float32)
    fastsoftmax.softmax(x, -1, out=out)
    check_forward(out, x, 1)


def _jit_traced(op, x):
    traced = torch.jit.trace(lambda t, o: op(t, -1, out=o), (x, torch.empty(0, device=DEVICE)), check_trace=False)
    assert "fastsoftmax::softmax_out" in str(traced.graph)
    return traced


def _fx_traced(op, x):
    def f(t, o):
        return op(t, -1, out=o)

    graph = torch.fx.symbolic_trace(f)
    assert "fastsoftmax.softmax_out" in graph.code
    return graph


@pytest.mark.parametrize("tracer", [_jit_traced, _fx_traced], ids=["jit_trace", "fx_symbolic_trace"])
@LOGS
def test_out_under_tracing(tracer, log):
    # the trace records the out op: each run checks, resizes and writes the out it is given (torch.jit.trace
    # once held the trace-time out when it was resized; fx cast a wrong dtype silently)
    op = _op(log)
    traced = tracer(op, _input((4, 30)))
    for out in (_poisoned((4, 30), torch.float32), torch.empty(0, device=DEVICE)):
        x = _input((4, 30))
        assert traced(x, out) is out
        check_forward(out, x, 1, log)
    with pytest.raises(RuntimeError, match="dtype torch.float32, but got torch.float64"):
        traced(x, torch.empty(4, 30, dtype=torch.float64, device=DEVICE))


@LOGS
def test_a_strided_plan_meets_an_input_off_its_boundary(log):
    # a strided problem's plan serves inputs on a 16-byte boundary; the same geometry one element
    # further into its storage is chosen for afresh, and still written
    op = _op(log)
    shape = (3, 50, 7)
    x = _input(shape)
    op(x, 1, out=_poisoned(shape, torch.float32))  # leaves the plan
    shifted = _input((3 * 50 * 7 + 1,))[1:].view(shape)
    for out in (
        _poisoned(shape, torch.float32),
        torch.cat([_poisoned((1,), torch.float32), _poisoned(shape, torch.float32).flatten()])[1:].view(shape),
    ):
        op(shifted, 1, out=out)
        check_forward(out, shifted, 1, log)
