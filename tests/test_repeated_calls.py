"""Repeated calls: the second call with a geometry already seen skips every check and choice
(functional.py); it must still compute the right thing and refuse what the full path refuses."""

import pytest
import torch
from reference import DEVICE, check_backward, check_forward

import fastsoftmax
from fastsoftmax import dispatch, functional
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


@pytest.mark.parametrize("name,view,shape", LAYOUTS, ids=[case[0] for case in LAYOUTS])
def test_a_graph_call_of_a_seen_geometry_goes_straight_into_autograd(name, view, shape, monkeypatch):
    dispatch.clear_caches()
    fastsoftmax.softmax(view(_input(shape)), -1)  # the geometry's plan, under -1 and its normalised dim
    monkeypatch.setattr(functional, "_apply", lambda *args: pytest.fail("the full path was taken"))
    for dim in (-1, len(shape) - 1):
        for log in (False, True):
            x = view(_input(shape)).requires_grad_(True)
            y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim)
            assert y.grad_fn is not None
            check_forward(y, x, dim, log)
            dy = torch.randn_like(y)
            (dx,) = torch.autograd.grad(y, x, dy)
            check_backward(dx, x, dy, dim, log)
    leaf = view(_input(shape)).requires_grad_(True)
    for unseen in (
        lambda: fastsoftmax.softmax(leaf, 0),  # another dim
        lambda: fastsoftmax.softmax(leaf, -1, dtype=torch.float64),  # a result dtype
        lambda: fastsoftmax.softmax(leaf, -1, backend="torch"),  # another backend
    ):
        with pytest.raises(pytest.fail.Exception, match="the full path"):
            unseen()


def test_second_call_still_refuses_bad_arguments():
    x = _input((5, 40))
    fastsoftmax.softmax(x, 1)
    with pytest.raises(TypeError, match="dim must be an int"):
        fastsoftmax.softmax(x, True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        fastsoftmax.softmax(x, -3)
    with pytest.raises(ValueError, match="unknown backend"):
        fastsoftmax.softmax(x, 1, backend="fastest")
    with pytest.raises(ValueError, match="unknown backend"):  # an unhashable name: no key to look up
        fastsoftmax.softmax(x, 1, backend=["auto"])


def test_second_call_honours_dtype():
    x = _input((5, 40), torch.bfloat16)
    fastsoftmax.softmax(x, -1)
    y = fastsoftmax.softmax(x, -1, dtype=torch.float32)
    assert y.dtype == torch.float32
    check_forward(y, x.float(), -1)


def test_forced_tier_is_not_bypassed_by_a_plan(monkeypatch):
    x = _input((5, 40))
    fastsoftmax.softmax(x, -1, backend="triton")
    used = []  # (backend, x3, y3, log, tier) of each full-path launch
    _record_calls(monkeypatch, TritonBackend, ("forward",), used)
    plans = dict(dispatch.PLANS)
    for tier in ("online", "split"):
        with dispatch.forced("triton", tier):
            check_forward(fastsoftmax.softmax(x, -1, backend="triton"), x, -1)
            check_forward(fastsoftmax.softmax(x, 1, backend="triton"), x, -1)
        assert [call[4] for call in used[-2:]] == [tier, tier]
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


# The Triton backend's prepared path (TritonBackend.prepare): full tensors straight to the kernels,
# the plan chosen once per (log, 16-byte loads or not). Each case: shape, dim, dtype, the output's
# dtype where it differs (the one pass: a 16-bit input written as float32, its gradient back in 16
# bits; each tensor's rows checked for 16-byte steps at its own element size), and a view of the input.
PREPARED = [
    ("rows", (6, 70), 1, torch.float32, None, None),
    ("columns", (4, 33, 136), 1, torch.bfloat16, None, None),  # off a 16-byte boundary: tiles of scalar loads
    ("rows at several phases", (2, 21, 11, 13), 1, torch.float32, None, None),
    ("long axis at several phases", (2, 150, 11, 13), 1, torch.bfloat16, None, None),
    ("widened, columns", (4, 33, 136), 1, torch.bfloat16, torch.float32, None),
    # the input's first 132 of 136 columns (rows 272 bytes apart); the output dense, its float32 rows
    # 528 bytes apart: on 16-byte boundaries as float32, not at the input's 2 bytes an element (264)
    ("widened, rows 272 and 528 bytes apart", (4, 33, 136), 1, torch.bfloat16, torch.float32, lambda t: t[..., :132]),
]


def _record_calls(monkeypatch, owner, names, calls):
    """Wrap the functions (or methods) ``names`` of ``owner`` so that each call appends its
    arguments to ``calls``."""
    for name in names:
        original = getattr(owner, name)

        def spy(*args, original=original):
            calls.append(args)
            return original(*args)

        monkeypatch.setattr(owner, name, spy)


def _offset_by_one(shape, dtype):
    """A contiguous tensor one element past a 16-byte boundary (same strides as a fresh one)."""
    numel = torch.Size(shape).numel()
    return _input((numel + 1,), dtype)[1:].view(shape)


@pytest.mark.parametrize("name,shape,dim,dtype,out_dtype,view", PREPARED, ids=[case[0] for case in PREPARED])
def test_triton_prepared_runs_take_the_full_paths_plan(name, shape, dim, dtype, out_dtype, view, monkeypatch):
    import fastsoftmax.backends.triton as tb
    from fastsoftmax import _layout

    if DEVICE == "cpu" and not tb.INTERPRETED:
        pytest.skip("the Triton kernels run on the CPU under TRITON_INTERPRET=1 only")
    launches = []  # each launch's (plan, tensors..., shape, strides, device)
    _record_calls(monkeypatch, tb, ("_launch_forward", "_launch_backward"), launches)
    view = view or (lambda t: t)
    result = out_dtype or dtype  # y's and dy's type; dx is x's
    x3, y3, _, _ = _layout.canonical_pair(view(_input(shape, dtype)), dim, result)
    outer, n, inner = x3.shape
    device = x3.get_device()
    tier = tb.BACKEND.choose_tier(outer, n, inner, dtype, False, device)
    forward = tb.BACKEND.prepare(tier, tuple(x3.shape), (x3.stride(), y3.stride()), dtype, device, False, result)
    backward_tier = tb.BACKEND.choose_tier(outer, n, inner, result, True, device)
    strides = (y3.stride(), y3.stride(), y3.stride())
    backward = tb.BACKEND.prepare(backward_tier, tuple(x3.shape), strides, result, device, True, dtype)
    for make in (_input, _offset_by_one):  # the pointers' alignment may differ from the first call's
        for log in (False, True):
            x = view(make(shape, dtype))
            y = torch.full(x.shape, float("nan"), dtype=result, device=DEVICE)
            forward(x, y, log)
            check_forward(y, x.to(result), dim, log)
            views = _layout.canonical_pair(x, dim)[0], _layout.canonical_pair(y, dim)[0]
            assert launches[-1][0] == tb._plan_for(views, tier, False, log)[0]
            dy = make(x.shape, result)
            dx = torch.full(x.shape, float("nan"), dtype=dtype, device=DEVICE)
            backward(y, dy, dx, log)
            check_backward(dx, x, dy, dim, log)
            views = [_layout.canonical_pair(t, dim)[0] for t in (y, dy, dx)]
            assert launches[-1][0] == tb._plan_for(tuple(views), backward_tier, True, log)[0]


def test_triton_second_call_takes_the_prepared_path(monkeypatch):
    import fastsoftmax.backends.triton as tb

    if DEVICE == "cpu" and not tb.INTERPRETED:
        pytest.skip("the Triton kernels run on the CPU under TRITON_INTERPRET=1 only")
    dispatch.clear_caches()
    shape = (2, 150, 11, 13)
    first = _input(shape, torch.bfloat16).requires_grad_()
    fastsoftmax.softmax(first, 1, backend="triton").backward(torch.ones(shape, dtype=torch.bfloat16, device=DEVICE))
    full_path = []
    _record_calls(monkeypatch, TritonBackend, ("forward", "backward"), full_path)
    x = _input(shape, torch.bfloat16).requires_grad_()
    y = fastsoftmax.softmax(x, 1, backend="triton")
    check_forward(y, x.detach(), 1)
    dy = _input(shape, torch.bfloat16)
    (dx,) = torch.autograd.grad(y, x, dy)
    check_backward(dx, x.detach(), dy, 1)
    assert full_path == [], "a repeated geometry must not build views and plans again"


def test_backward_plans_and_choices_are_kept_apart_by_function(monkeypatch):
    """The backward's tier choice is told whether the call is log-softmax's (its reduction reads dy
    alone; strided.choose_tier has rules of its own for it), so its remembered plans are kept apart
    by function too: each function's first call chooses, a repeat of either reuses its own plan."""
    import inspect

    dispatch.clear_caches()
    signature = inspect.signature(dispatch.resolve)
    real = dispatch.resolve
    asked = []  # (call, backward, log) of every choice
    call = 0

    def recording_resolve(*args, **kwargs):
        arguments = signature.bind(*args, **kwargs).arguments
        asked.append((call, arguments["backward"], arguments.get("log", False)))
        return real(*args, **kwargs)

    monkeypatch.setattr(dispatch, "resolve", recording_resolve)
    x = _input((6, 70))
    for call, log in enumerate((False, True, False, True)):
        y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, -1)
        dy = torch.randn_like(y)
        check_backward(fastsoftmax.softmax_backward(dy, y, -1, log=log), x, dy, -1, log)
    # one forward plan serves both functions; one backward choice a function (rows of 70 float32 lie off
    # 16-byte boundaries: a choice is asked again as for rows on them, _plan_reach)
    assert set(asked) == {(0, False, False), (0, True, False), (1, True, True)}


@pytest.mark.parametrize("name,view,shape", LAYOUTS, ids=[case[0] for case in LAYOUTS])
def test_a_repeated_backward_call_takes_its_plan_and_is_right(name, view, shape, monkeypatch):
    """softmax_backward called directly: a geometry seen before (per function) goes from the entry to
    its plan, under the dim as written and as normalised, and is right on fresh data."""
    dispatch.clear_caches()
    last = len(shape) - 1

    def output(log):  # laid out as the forward lays it out
        return (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(view(_input(shape)), -1)

    for log in (False, True):  # each function's plan
        fastsoftmax.softmax_backward(view(_input(shape)), output(log), last, log=log)
    monkeypatch.setattr(functional, "backward_impl", lambda *args: pytest.fail("the full path was taken"))
    for dim in (-1, last):
        for log in (False, True):
            x = view(_input(shape))
            y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim)
            dy = view(_input(shape))
            check_backward(fastsoftmax.softmax_backward(dy, y, dim, log=log), x, dy, dim, log)
    y, dy = output(False), view(_input(shape))
    for unseen in (
        lambda: fastsoftmax.softmax_backward(dy, y, 0),  # another dim
        lambda: fastsoftmax.softmax_backward(dy, y, -1, backend="triton"),  # another backend
        lambda: fastsoftmax.softmax_backward(dy.contiguous(), y.mT.contiguous().mT, -1),  # other strides
    ):
        with pytest.raises(pytest.fail.Exception, match="the full path"):
            unseen()


def test_a_repeated_backward_call_still_refuses_what_the_first_refuses():
    """What the plan's key does not hold is checked before it: dy's shape, type and device against
    y's, the dim's type; a backward that must itself be differentiable takes torch's formula."""
    dispatch.clear_caches()
    y, dy = fastsoftmax.softmax(_input((5, 40)), -1), _input((5, 40))
    fastsoftmax.softmax_backward(dy, y, -1)
    with pytest.raises(TypeError, match="must share dtype and device"):
        fastsoftmax.softmax_backward(dy.double(), y, -1)
    with pytest.raises(ValueError, match="grad_output has shape"):
        fastsoftmax.softmax_backward(_input((5, 40))[:, :20], y, -1)  # y's strides, another shape
    with pytest.raises(TypeError, match="dim must be an int"):
        fastsoftmax.softmax_backward(dy, y, True)
    with pytest.raises(IndexError, match="Dimension out of range"):
        fastsoftmax.softmax_backward(dy, y, -3)
    with pytest.raises(TypeError, match="must share dtype and device"):
        fastsoftmax.softmax_backward(dy.to("meta"), y, -1)
    with pytest.raises(ValueError, match="unknown backend"):  # an unhashable name: no key to look up
        fastsoftmax.softmax_backward(dy, y, -1, backend=["auto"])
    x = _input((5, 40)).requires_grad_()
    y = torch.softmax(x, -1)  # y leads back to x: the backward is differentiable
    dx = fastsoftmax.softmax_backward(dy, y, -1)
    assert dx.requires_grad
    check_backward(dx.detach(), x.detach(), dy, -1)
    (second,) = torch.autograd.grad((dx * dx).sum(), x, retain_graph=True)
    formula = y * (dy - (dy * y).sum(-1, keepdim=True))
    (expected,) = torch.autograd.grad((formula * formula).sum(), x)
    torch.testing.assert_close(second, expected)


# A call with dtype (given, or float32 by autocast) remembers a plan under a key of its own: a 16-bit
# input's one pass, or the cast followed by the cast tensor's plan. Each: input and result dtypes,
# backend.
DTYPE_ROUTES = [
    ("one pass", torch.bfloat16, torch.float32, "triton"),
    ("cast first", torch.bfloat16, torch.float32, "auto"),
    ("narrowed", torch.float32, torch.float16, "auto"),
    ("same type", torch.float16, torch.float16, "triton"),
]


@pytest.mark.parametrize("name,view,shape", LAYOUTS, ids=[case[0] for case in LAYOUTS])
@pytest.mark.parametrize("route,source,result,backend", DTYPE_ROUTES, ids=[case[0] for case in DTYPE_ROUTES])
def test_second_call_with_dtype_takes_its_own_plan(route, source, result, backend, name, view, shape, monkeypatch):
    dispatch.clear_caches()
    full_path, cast_computed = [], []
    _record_calls(monkeypatch, functional, ("_computed",), full_path)
    forward_impl = functional.forward_impl

    def recorded_forward_impl(x, *args, **kwargs):
        cast_computed.append(x.dtype)
        return forward_impl(x, *args, **kwargs)

    first = view(_input(shape, source))
    fastsoftmax.softmax(first, -1, dtype=result, backend=backend)
    monkeypatch.setattr(functional, "forward_impl", recorded_forward_impl)
    repeats = 0
    for make in (_input, _offset_by_one):  # the pointers' alignment may differ from the first call's
        for dim in (-1, first.dim() - 1):
            for op, log in ((fastsoftmax.softmax, False), (fastsoftmax.log_softmax, True)):
                x = view(make(shape, source))
                y = op(x, dim, dtype=result, backend=backend)
                repeats += 1
                assert y.dtype == result
                check_forward(y, x.to(result), dim, log)
    assert len(full_path) == 1, "a repeated call with dtype must take the first call's plan"
    # the route the first call took, kept: the one pass launches at once; a cast is computed afresh as
    # the cast tensor (through forward_impl, which finds its plan)
    if route == "one pass":
        assert cast_computed == []
    elif source != result:
        assert cast_computed == [result] * repeats


def test_second_call_under_autocast_takes_its_own_plan(monkeypatch):
    monkeypatch.setattr(functional, "AUTOCAST_TO_FLOAT32", (torch.device(DEVICE).type,))
    dispatch.clear_caches()
    full_path = []
    _record_calls(monkeypatch, functional, ("_computed",), full_path)
    for backend in ("auto", "triton"):
        for op, log in ((fastsoftmax.softmax, False), (fastsoftmax.log_softmax, True)):
            x = _input((6, 70), torch.bfloat16)
            with torch.autocast(torch.device(DEVICE).type, dtype=torch.bfloat16):
                y = op(x, -1, backend=backend)
            assert y.dtype == torch.float32
            check_forward(y, x.float(), -1, log)
            y = op(x, -1, backend=backend)  # outside autocast: the 16-bit result, a plan of its own
            assert y.dtype == torch.bfloat16
            check_forward(y, x, -1, log)
            y = op(x, -1, dtype=torch.float32, backend=backend)  # the same plan as under autocast
            check_forward(y, x.float(), -1, log)
    assert len(full_path) == 4, "each backend's first call in and out of autocast, then their plans"


def test_efficient_zero_tensors_take_no_plan():
    """An efficient zero tensor (a gradient with no storage) has no memory for a plan's kernel to
    read: every call computes it as zeros, and one given as out= is refused as torch refuses it."""
    shape = (4, 40)
    for source, result in ((torch.float32, None), (torch.bfloat16, torch.float32)):
        zeros = torch.zeros(shape, dtype=source, device=DEVICE)
        zero = torch._efficientzerotensor(shape, dtype=source, device=DEVICE)
        for backend in ("auto", "triton"):
            for x in (_input(shape, source), zero, zero):  # the plan of the geometry first
                check_forward(fastsoftmax.softmax(x, -1, dtype=result, backend=backend), x.to(result or source), -1)
            out = torch.empty(shape, dtype=source, device=DEVICE)
            for x in (_input(shape, source), zero, zero):
                fastsoftmax.softmax(x, -1, backend=backend, out=out)
                check_forward(out, zeros if x is zero else x, -1)
            with pytest.raises(RuntimeError, match="ZeroTensors are immutable"):
                fastsoftmax.softmax(zeros, -1, backend=backend, out=zero)
            with pytest.raises(RuntimeError, match="ZeroTensors are immutable"):  # before any resize
                fastsoftmax.softmax(
                    zeros, -1, backend=backend, out=torch._efficientzerotensor((2, 3), dtype=source, device=DEVICE)
                )


@pytest.mark.parametrize("offset_first", [False, True], ids=["aligned_first", "offset_first"])
@pytest.mark.parametrize("dim", [-1, 1])
def test_a_row_plan_serves_calls_off_16_byte_boundaries_only_on_a_tier_that_realigns(monkeypatch, dim, offset_first):
    """A row problem's plan serves a view of its geometry one element off a 16-byte boundary only where
    the backend's tier reads rows wherever they start (``Backend.realigns``; the CUDA warp tier's long
    rows do not). Here the Triton backend's "tile" tier stands for such a tier, chosen for calls on
    16-byte boundaries, "online" for the others: an offset view takes "online", chosen afresh on every
    call and leaving no plan behind (though "online" realigns: the aligned calls after it must not take
    it), and aligned calls keep "tile", with the dim as written or normalised (as autograd and ``out=``
    hand it on), whichever alignment comes first. Forward, ``out=``, autograd; every result right."""
    import fastsoftmax.backends.triton as tb

    if DEVICE == "cpu" and not tb.INTERPRETED:
        pytest.skip("the Triton kernels run on the CPU under TRITON_INTERPRET=1 only")
    dispatch.clear_caches()
    monkeypatch.setattr(TritonBackend, "realigns", lambda self, tier, n, dtype, backward: tier != "tile")
    choose = TritonBackend.choose_tier

    def by_alignment(self, outer, n, inner, dtype, backward, index=None, aligned=True, *rest):
        if backward:
            return choose(self, outer, n, inner, dtype, backward, index)
        return "tile" if aligned else "online"

    monkeypatch.setattr(TritonBackend, "choose_tier", by_alignment)
    ran = []  # the tier of every forward run, by a fresh choice (forward) or a remembered plan (prepare)
    forward, prepare = TritonBackend.forward, TritonBackend.prepare

    def recording_forward(self, x, y, log, tier):
        ran.append(tier)
        return forward(self, x, y, log, tier)

    def recording_prepare(self, tier, shape, strides, dtype, device_index, backward, **options):
        run = prepare(self, tier, shape, strides, dtype, device_index, backward, **options)
        return run if backward else lambda *tensors: (ran.append(tier), run(*tensors))[1]

    monkeypatch.setattr(TritonBackend, "forward", recording_forward)
    monkeypatch.setattr(TritonBackend, "prepare", recording_prepare)
    flat = _input((6 * 40 + 4,))
    aligned, offset = flat[:240].view(6, 40), flat[1:241].view(6, 40)
    calls = (aligned, offset, aligned, offset, aligned)
    for x in calls[1:] + calls[:1] if offset_first else calls:
        tier = "tile" if x.data_ptr() % 16 == 0 else "online"
        del ran[:]
        check_forward(fastsoftmax.softmax(x, dim, backend="triton"), x, dim)
        out = torch.empty_like(x)
        check_forward(fastsoftmax.softmax(x, dim, backend="triton", out=out), x, dim)
        leaf = x.detach().requires_grad_()
        dy = _input(x.shape)
        (dx,) = torch.autograd.grad(fastsoftmax.softmax(leaf, dim, backend="triton"), leaf, dy)
        check_backward(dx, x, dy, dim)
        assert ran == [tier] * 3, (x.data_ptr() % 16, ran)
    # rows whose steps lie off 16-byte boundaries (a row of 41 float32 a row): no call of this geometry
    # is on them, so "online" is every call's tier and its plan is kept; the second call takes it
    padded = _input((6, 41))[:, :40]
    resolve, chosen = dispatch.resolve, []
    monkeypatch.setattr(dispatch, "resolve", lambda *args, **kwargs: (chosen.append(args), resolve(*args, **kwargs))[1])
    for call in range(2):
        del ran[:], chosen[:]
        check_forward(fastsoftmax.softmax(padded, dim, backend="triton"), padded, dim)
        assert ran == ["online"] and (call == 0) == bool(chosen), (call, ran, chosen)
    dispatch.clear_caches()
