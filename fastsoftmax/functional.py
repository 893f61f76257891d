"""softmax, log_softmax and their backward: argument checks, autograd, and torch.library ops.

Three ways into the kernels, cheapest first:

* eager, no gradient needed: straight to the backend; a geometry seen before skips every check
  and choice (one dictionary lookup, the allocation and the launch), with ``dtype`` or under
  autocast too (a 16-bit input's one pass, torch's fused kernel, or the cast and the cast tensor's
  plan);
* eager with autograd: through ``torch.autograd.Function`` (``_EagerSoftmax``, in the form whose
  ``apply`` binds no signature per call), the cheapest way into autograd from Python: its backward
  runs the backward kernels (or, when a graph of the backward is asked for with
  ``create_graph=True``, torch's differentiable backward, so higher-order gradients are right);
* under ``torch.compile``: the custom op ``fastsoftmax::softmax_forward``, whose registered
  autograd formula calls ``fastsoftmax::softmax_backward``; Dynamo keeps both in the graph as
  opaque calls (with fake implementations for shape propagation), so ``fullgraph=True`` traces
  with no break.

``out=`` writes a given tensor: by the kernels where it lies when it folds as the input does (a plan
of its own remembers such calls), computed and copied in otherwise; ``fastsoftmax::softmax_out`` is
what torch.jit.trace and torch.fx record for it.

Forward-mode AD and torch.func's transforms go through ``_Softmax``, the same forward and backward
with the ``setup_context`` torch.func asks for: its ``jvp`` (softmax's tangent is its backward
applied to the tangent, the Jacobian being symmetric), its ``vmap`` (the batch dim moved in front,
one launch), and a backward that switches to torch's differentiable formula when the backward is
itself transformed (jacrev, hessian). Inside a compiled region a
torch.func transform takes torch's own op: custom ops have no forward-mode formula (a compiled jvp
would see a zero tangent) and no functorch grad rule.
"""

from __future__ import annotations

import math
import operator
import sys
import threading
import warnings

import torch
import torch.autograd.forward_ad as _fwad

from . import _layout, dispatch

SUPPORTED = (torch.float32, torch.float16, torch.bfloat16, torch.float64)

_grad_enabled = torch.is_grad_enabled
_transforms_active = torch._C._are_functorch_transforms_active
_is_wrapped = torch._C._functorch.is_functorch_wrapped_tensor
_unwrap_if_dead = getattr(torch._C._functorch, "unwrap_if_dead", None)
_tracing = torch._C._get_tracing_state
_autocasting = torch._C._is_any_autocast_enabled
_inference_mode = torch.is_inference_mode_enabled
_increment_version = torch._C._increment_version
_overlaps = torch._C._overlaps
_HALF = (torch.float16, torch.bfloat16)
#: the device types whose autocast computes softmax and log_softmax in float32, as torch's own
#: autocast lists do (CUDA's float32 list holds both; CPU's holds neither)
AUTOCAST_TO_FLOAT32 = ("cuda",)


def autocasts_to_float32(x: torch.Tensor, device_types: tuple | None = None) -> bool:
    """Whether autocast, enabled on ``x``'s device, makes an op on the 16-bit ``x`` a float32 one:
    for the device types of ``device_types`` (default AUTOCAST_TO_FLOAT32, softmax's), as torch's
    autocast lists have it."""
    device = x.device.type
    listed = AUTOCAST_TO_FLOAT32 if device_types is None else device_types
    return x.dtype in _HALF and device in listed and torch.is_autocast_enabled(device)


def _fwd_level() -> int:
    """The innermost open forward-mode AD level; -1 when none is open."""
    return _fwad._current_level


class UnsupportedDtypeError(TypeError, NotImplementedError):
    """A tensor of a type softmax does not take (integer, bool, complex, float8): NotImplementedError,
    as torch's kernels raise for those types, and TypeError, as it is one."""


class UnsupportedSubclassError(NotImplementedError, TypeError):
    """A tensor subclass that computes ops itself (``__torch_dispatch__``) but not fastsoftmax's
    (torch.masked's MaskedTensor, for one): NotImplementedError naming it, and TypeError, the error
    torch's dispatch raises for it."""


class MismatchedShapeError(ValueError, RuntimeError):
    """softmax_backward's grad_output and output of different shapes: RuntimeError, as torch's
    backward raises, and ValueError."""


class MismatchedTensorError(TypeError, RuntimeError):
    """softmax_backward's grad_output and output of different dtypes or devices: RuntimeError, as
    torch's backward raises, and TypeError."""


def _unstrided(x: torch.Tensor) -> bool:
    """Whether ``x`` has no strides to fold (nested or sparse): the fast paths' keys raise on it."""
    return x.is_nested or x.layout is not torch.strided


def _check_tensor(x, what: str) -> None:
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"fastsoftmax.{what}: expected a torch.Tensor, got {type(x).__name__}")
    if _unstrided(x):
        kind = "nested" if x.is_nested else str(x.layout)
        raise NotImplementedError(
            f"fastsoftmax.{what}: {kind} tensors are not supported, only strided ones (dense tensors and their views)"
        )
    if x.dtype not in SUPPORTED:
        raise UnsupportedDtypeError(
            f"fastsoftmax.{what}: expected a floating-point tensor (float32, float16, bfloat16 or float64), "
            f"got {x.dtype}"
        )


def _normalize_dim(dim: int, rank: int) -> int:
    if isinstance(dim, bool) or not hasattr(type(dim), "__index__"):
        raise TypeError(f"dim must be an int, got {type(dim).__name__}")
    if isinstance(dim, torch.Tensor) and (dim.dim() != 0 or dim.dtype == torch.bool or dim.is_floating_point()):
        raise TypeError(f"dim must be an int, got a tensor of shape {tuple(dim.shape)} and {dim.dtype}")
    dim = operator.index(dim)  # NumPy's integers too, as torch takes them
    rank = rank or 1  # a 0-dim tensor takes dim 0 or -1, as in torch
    if not -rank <= dim < rank:
        raise IndexError(f"Dimension out of range (expected to be in range of [{-rank}, {rank - 1}], but got {dim})")
    return dim % rank


def _torch_forward(x: torch.Tensor, dim: int, log: bool, **options) -> torch.Tensor:
    """torch's softmax (log-softmax), with its ``dtype=`` or ``out=`` among ``options``."""
    return (torch.log_softmax if log else torch.softmax)(x, dim, **options)


def _torch_backward(dy: torch.Tensor, y: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    if log:
        return torch._log_softmax_backward_data(dy, y, dim, y.dtype)
    return torch._softmax_backward_data(dy, y, dim, y.dtype)


def _goes_to_torch(requested: str, x: torch.Tensor) -> bool:
    """Cases decided without looking at the shape, so they skip the layout work: float64 (the
    kernels are written for 32- and 16-bit storage), ``backend="torch"``, and CPU tensors outside
    the Triton interpreter under "auto"."""
    if x.dtype == torch.float64 or requested == "torch" and not dispatch.is_forced():
        return True
    return (
        x.device.type == "cpu"
        and requested == "auto"
        and not dispatch.is_forced()
        and dispatch.unavailable_reason("triton", "cpu", None) is not None
    )


def _runner(kernel_backend, tier: str, views: tuple, backward: bool, out_dtype: torch.dtype | None = None):
    """``run(x, y, log)`` (``run(y, dy, dx, log)`` backward) for later calls with the same
    geometry, on full tensors laid out as ``views`` were: the backend's prepared path
    (``Backend.prepare``), which builds no views per call. ``out_dtype``: the output's type, where
    it is not the inputs' (the Triton backend's one pass)."""
    first, widened = views[0], {} if out_dtype is None else {"out_dtype": out_dtype}
    shape, strides = tuple(first.shape), tuple(v.stride() for v in views)
    return kernel_backend.prepare(tier, shape, strides, first.dtype, first.get_device(), backward, **widened)


def _plan(run, contiguous: bool, dtype: torch.dtype | None = None):
    """``plan(x, log) -> y`` for a repeated call: allocate the output as the first call did (a
    bare ``empty_like`` is torch's cheapest allocation; of ``dtype`` where given, else of x's) and
    launch. The allocator is looked up per call (``_layout.new_empty_like``), so that tests can
    poison every output."""
    if contiguous or dtype is not None:
        memory_format = torch.contiguous_format if contiguous else torch.preserve_format

        def plan(x, log):
            y = _layout.new_empty_like(x, memory_format=memory_format, dtype=dtype)
            run(x, y, log)
            return y
    else:

        def plan(x, log):
            y = _layout.new_empty_like(x)
            run(x, y, log)
            return y

    return plan


def _backward_plan(run, contiguous: bool, dtype: torch.dtype | None = None):
    """``plan(dy, y, log) -> dx`` for a repeated backward, as ``_plan`` is for the forward (``dx`` of
    ``dtype`` where given, else of y's)."""
    memory_format = torch.contiguous_format if contiguous else torch.preserve_format

    def plan(dy, y, log):
        dx = _layout.new_empty_like(y, memory_format=memory_format, dtype=dtype)
        run(y, dy, dx, log)
        return dx

    return plan


def _torch_plan(dim: int, widened: bool = False):
    """torch's own forward as a plan; ``widened``: a 16-bit x to a float32 result in torch's one pass."""
    forward = _torch_widened if widened else _torch_forward

    def plan(x, log):
        return forward(x, dim, log)

    return plan


def _torch_out_plan(dim: int):
    def plan(x, out, log):
        _torch_forward(x, dim, log, out=out)

    return plan


def _aligned(*views: torch.Tensor) -> bool:
    """Whether every tensor of a call starts on a 16-byte boundary."""
    bits = 0
    for view in views:
        bits |= view.data_ptr()
    return bits & 15 == 0


def _packable(*views: torch.Tensor) -> bool:
    """Whether a call's canonical views can all be read in 16-byte packs: on 16-byte boundaries,
    and none with a step along inner. Tier choice takes this as ``aligned``."""
    return _aligned(*views) and _layout.unit_inner(*views)


def _window_aligned(inputs: tuple, output: torch.Tensor) -> bool:
    """Whether every row of a call's canonical inputs is off its 16-byte boundary by as much as
    every other: the inputs' pointers by one amount, their row strides whole 16-byte pieces, and unit
    steps along inner (the CUDA staged tiles' window layout; the output's rows may be off by any
    amount). Short rows in one contiguous run per outer index count as such (``_layout.flat_run``:
    staged as whole runs, their rows' own phases do not matter)."""
    if not _layout.unit_inner(*inputs, output) or len({v.data_ptr() & 15 for v in inputs}) != 1:
        return False
    outer, n, inner = output.shape
    size = output.element_size()
    return all(_layout.rows_on_boundaries(v.stride(0), v.stride(1), size, outer, n) for v in inputs) or all(
        _layout.flat_run(v.stride(0), v.stride(1), inner, size, outer) for v in (*inputs, output)
    )


def _spans_aligned(inputs: tuple, output: torch.Tensor) -> bool:
    """Whether a call whose inputs step along inner reads their spans in 16-byte pieces: every input
    steps by 2 and the output by 1, every pointer and row stride on a 16-byte boundary (the CUDA
    staged tiles' stepped layout)."""
    if any(v.stride(2) != 2 for v in inputs) or output.stride(2) != 1 or not _aligned(*inputs, output):
        return False
    outer, n, _ = output.shape
    size = output.element_size()
    return all(_layout.rows_on_boundaries(v.stride(0), v.stride(1), size, outer, n) for v in (*inputs, output))


def _resolve(
    backend: str, backward: bool, inputs: tuple, output: torch.Tensor, log: bool = False, as_aligned: bool = False
):
    """``(kernel backend or None, tier, aligned)`` for a call's canonical views: ``aligned`` as
    ``_packable`` (rows: every row of every tensor on its 16-byte boundary); an input with a step
    along inner is chosen for as such (``stepped``), and so are inputs whose rows start at one
    16-byte phase (``window``, ``_window_aligned``) or, stepped, whose spans lie on 16-byte
    boundaries (``_spans_aligned``: then ``aligned`` is returned True, so that the call's plan is
    remembered for calls on 16-byte boundaries); ``runs``: every tensor's (n, inner) blocks are
    single runs (the CUDA column kernels' layout); ``log``: a log-softmax backward (tier choice may
    depend on it; forward calls are chosen for without it, so that one plan serves both functions);
    ``as_aligned``: rows chosen for as if their tensors started on 16-byte boundaries (``_plan_reach``)."""
    first = inputs[0]
    aligned, stepped = _packable(*inputs, output), not _layout.unit_inner(*inputs)
    # (row problems, inner == 1, are chosen for without it: not worked out)
    if stepped:
        window = _spans_aligned(inputs, output)
    else:
        window = first.shape[2] == 1 or _window_aligned(inputs, output)
    outer, _, inner = output.shape
    if inner == 1:
        # rows: every row of every tensor on its 16-byte boundary, not only the first (most row tiers
        # realign within themselves, Backend.realigns, but tier choice measured some rules on rows on
        # their boundaries)
        size = output.element_size()
        # (as_aligned: the pointers as if on their boundaries; row steps off them keep every call off them)
        aligned = (as_aligned or aligned) and all(
            _layout.steps_on_boundaries(v.stride(0), size, outer) for v in (*inputs, output)
        )
    n = output.shape[1]
    # only strided problems are chosen for by it: rows take no look at their size-1 inner strides
    runs = inner == 1 or all(v.stride(2) == 1 and (n == 1 or v.stride(1) == inner) for v in (*inputs, output))
    kernel_backend, tier = dispatch.resolve(
        backend, first.device, first.dtype, *first.shape, backward, aligned, stepped, window, runs, log
    )
    return kernel_backend, tier, aligned or (stepped and window)


def _plan_reach(
    may_keep: bool,
    backend: str,
    kernel_backend,
    tier: str,
    aligned: bool,
    inputs: tuple,
    output: torch.Tensor,
    log: bool = False,
) -> tuple[bool, bool]:
    """``(keep, realigned)`` for a call that ``may_keep`` a plan: whether it keeps one (on 16-byte
    boundaries, or realigned), and whether that plan serves calls of its geometry wherever their
    tensors start (``realigned``: row problems on a tier that realigns within itself,
    ``Backend.realigns``, the tier calls on 16-byte boundaries are given too; a call off them whose
    tier those calls would not get keeps no plan, since the calls that follow on boundaries would take
    it). A kept plan not realigned serves aligned calls only (``_aligned_only``). Other arguments as
    ``_resolve``'s, with its ``aligned``."""
    if not may_keep:
        return False, False
    backward = len(inputs) == 2
    realigned = (
        output.shape[2] == 1
        and kernel_backend.realigns(tier, output.shape[1], output.dtype, backward)
        and (aligned or _resolve(backend, backward, inputs, output, log, as_aligned=True)[:2] == (kernel_backend, tier))
    )
    return aligned or realigned, realigned


def _aligned_only(plan, full_path):
    """A plan kept to inputs on a 16-byte boundary, the ones its tier was chosen for (strided
    problems: ``strided.choose_tier``; rows on a tier that reads 16-byte packs only, ``_plan_reach``);
    others take ``full_path``, which chooses afresh. Both take (*tensors, log)."""

    def run(*tensors_and_log):
        return plan(*tensors_and_log) if _aligned(*tensors_and_log[:-1]) else full_path(*tensors_and_log)

    return run


def _replicated_plan(dim: int, backend: str, backward: bool, *inputs: torch.Tensor):
    """The plan of a problem whose inputs are all broadcast (stride 0) along some dims besides
    ``dim`` in a layout that does not fold into ``(outer, n, inner)``, or None.

    The output repeats along those dims. Read where it lies (a broadcast dim outermost folds into
    ``outer`` with stride 0), the kernel finds the repeats in L2; one that does not fold (a
    broadcast dim between others, or innermost) would be copied whole to a dense tensor first, so
    one slice is computed and the result copied out instead: the same two launches, the kernel's
    over one slice only. H100 (benchmarks/replicate_probe.py): where the input folds, one kernel
    won at broadcast factors of 2-4 and lost some cases at 16 (bf16 (16, 4096, 4096) over dim 1
    backward 521 against 419 us); the rule keeps it there. Not when a tier is forced (tests of a
    tier run it on the very problem)."""
    override = dispatch.current_override()
    if override is not None and override[1] is not None:
        return None
    dims = _layout.broadcast_dims(dim, *inputs)
    if not dims:
        return None
    if _layout.read_in_place(dim, *inputs):
        return None
    first = _layout.first_slice
    if backward:

        def plan(dy, y, log):
            part = backward_impl(first(dy, dims), first(y, dims), dim, log, backend)
            return _layout.copy_broadcast(_layout.new_empty_like(y), part)
    else:
        # the slice's dim order: the plan serves inputs of these very strides (its key)
        order = _layout.memory_order(first(inputs[0], dims))

        def plan(x, log):
            # the slice's softmax written straight into the output's first slice, which is then
            # copied out: no slice-sized buffer written and read back. H100, (16, 4096, 4096)
            # expanded over dim 0, softmax over dim 2, alternated in one process
            # (results 2026-11-24_h100_s10/expand_first_slice_ab.txt): float32 0.93 -> 0.98 of
            # copy (torch.compile 1.00), bf16 0.93-0.94 -> 0.97-0.99 (torch.compile 0.55). Copying
            # the written part onto as much again, doubling, measured 0.95-0.97 and 0.94: not kept.
            out = _layout.new_empty_like(x)
            part, head = first(x, dims), first(out, dims)
            if not _forward_into(part, head, dim, order, log, backend):
                head.copy_(forward_impl(part, dim, log, backend))
            return _layout.fill_from_first(out, dims)

    return plan


def _forward_into(x: torch.Tensor, y: torch.Tensor, dim: int, order: list[int], log: bool, backend: str) -> bool:
    """Softmax of ``x`` written into ``y`` (same shape) by a kernel backend, where both fold into
    ``(outer, n, inner)`` in the dim order ``order`` (``_layout.memory_order`` of ``x``) and the
    dispatcher gives the problem to one; False (nothing written) otherwise."""
    x3, y3 = _layout.input_view(x, dim, order), _layout.canonical_view(y, dim, order)
    if x3 is None or y3 is None or x3.shape != y3.shape:
        return False
    kernel_backend, tier, _ = _resolve(backend, False, (x3,), y3)
    if kernel_backend is None:
        return False
    kernel_backend.forward(x3, y3, log, tier)
    return True


def _plan_key(x: torch.Tensor, dim: int, backend: str, dtype: torch.dtype | None = None) -> tuple:
    """The key a call's plan is remembered under; a call with ``dtype`` given (or set by autocast)
    has a key of its own, one element longer."""
    if dtype is None:
        return (x.shape, x.stride(), x.dtype, x.device, dim, backend)
    return (x.shape, x.stride(), x.dtype, x.device, dim, backend, dtype)


def _remember_both(x: torch.Tensor, given_dim, dim: int, backend: str, dtype, plan) -> None:
    """Remember ``plan`` under the dim as normalised and as written (the fast path looks the latter
    up: it normalises nothing)."""
    dispatch.remember(_plan_key(x, dim, backend, dtype), plan)
    if given_dim != dim and type(given_dim) is int:
        dispatch.remember(_plan_key(x, given_dim, backend, dtype), plan)


def _readable(t: torch.Tensor) -> torch.Tensor:
    """``t`` with its lazy negation applied (a view such as ``z.conj().imag`` stores the values
    unnegated beside a flag the kernels, reading memory, would not see), and an efficient zero tensor
    (a gradient with no storage) as real zeros."""
    if t.is_neg():
        return t.resolve_neg()
    if t._is_zerotensor():
        return torch.zeros(t.shape, dtype=t.dtype, device=t.device)
    return t


def forward_impl(x: torch.Tensor, dim: int, log: bool, backend: str, use_plans: bool = True) -> torch.Tensor:
    """Softmax of a validated tensor over a normalised dim, without autograd; ``use_plans=False``
    (the fallback of a plan kept to calls on 16-byte boundaries) neither takes a remembered plan nor
    leaves one for the call's alignment."""
    x = _readable(x)
    forced = dispatch.is_forced()
    key = _plan_key(x, dim, backend)
    plan = None if forced or not use_plans else dispatch.PLANS.get(key)
    if plan is not None:
        return plan(x, log)
    if x.dim() == 0:
        return forward_impl(x.reshape(1), 0, log, backend).reshape(())
    if x.numel() == 0 or _goes_to_torch(backend, x):
        dispatch.remember(key, _torch_plan(dim))
        return _torch_forward(x, dim, log)
    replicated = _replicated_plan(dim, backend, False, x)
    if replicated is not None:
        dispatch.remember(key, replicated)
        return replicated(x, log)
    x3, y3, y, copied = _layout.canonical_pair(x, dim)
    kernel_backend, tier, aligned = _resolve(backend, False, (x3,), y3)
    if kernel_backend is None:
        dispatch.remember(key, _torch_plan(dim))
        return _torch_forward(x, dim, log)
    # Remember the plan only when a later call's output, allocated as below, gets these very strides
    # (a plan that reads 16-byte packs only from a call on a 16-byte boundary: see _aligned_only).
    may_keep = use_plans and not forced and not copied and (y.stride() == x.stride() or y.is_contiguous())
    keep, realigned = _plan_reach(may_keep, backend, kernel_backend, tier, aligned, (x3,), y3)
    if keep:
        plan = _plan(_runner(kernel_backend, tier, (x3, y3), False), y.stride() != x.stride())
        if not realigned:
            plan = _aligned_only(plan, lambda x, log: forward_impl(x, dim, log, backend, use_plans=False))
        dispatch.remember(key, plan)
    kernel_backend.forward(x3, y3, log, tier)
    return y


def backward_impl(
    dy: torch.Tensor, y: torch.Tensor, dim: int, log: bool, backend: str, use_plans: bool = True
) -> torch.Tensor:
    dy, y = _readable(dy), _readable(y)
    forced = dispatch.is_forced()
    key = ("backward", y.shape, y.stride(), dy.stride(), y.dtype, y.device, dim, backend, log)
    plan = None if forced or not use_plans else dispatch.PLANS.get(key)
    if plan is not None:
        return plan(dy, y, log)
    if y.dim() == 0:
        return backward_impl(dy.reshape(1), y.reshape(1), 0, log, backend).reshape(())
    if y.numel() == 0 or _goes_to_torch(backend, y):
        return _torch_backward(dy, y, dim, log)
    replicated = _replicated_plan(dim, backend, True, dy, y)
    if replicated is not None:
        dispatch.remember(key, replicated)
        return replicated(dy, y, log)
    y3, dy3, dx3, dx, copied = _layout.canonical_backward(y, dy, dim)
    kernel_backend, tier, aligned = _resolve(backend, True, (y3, dy3), dx3, log)
    if kernel_backend is None:
        return _torch_backward(dy, y, dim, log)
    may_keep = use_plans and not forced and not copied and (dx.stride() == y.stride() or dx.is_contiguous())
    keep, realigned = _plan_reach(may_keep, backend, kernel_backend, tier, aligned, (y3, dy3), dx3, log)
    if keep:
        plan = _backward_plan(_runner(kernel_backend, tier, (y3, dy3, dx3), True), dx.stride() != y.stride())
        if not realigned:
            plan = _aligned_only(plan, lambda dy, y, log: backward_impl(dy, y, dim, log, backend, use_plans=False))
        dispatch.remember(key, plan)
    kernel_backend.backward(y3, dy3, dx3, log, tier)
    return dx


# ---------------------------------------------------------------------------------------------
# torch.library custom ops (autograd and torch.compile)
# ---------------------------------------------------------------------------------------------


def _like_empty_like(result: torch.Tensor, reference: torch.Tensor) -> torch.Tensor:
    """The custom ops promise ``torch.empty_like(input)`` strides (what the fake kernels return)."""
    if result.stride() == reference.stride() or result.numel() <= 1:
        return result
    expected = torch.empty_like(reference)
    if result.stride() == expected.stride():
        return result
    return expected.copy_(result)


@torch.library.custom_op("fastsoftmax::softmax_forward", mutates_args=())
def softmax_forward(x: torch.Tensor, dim: int, log: bool, backend: str) -> torch.Tensor:
    # called by the public functions with their arguments checked, and by graphs (TorchScript
    # included) with whatever they hold: checked here too, cheaply
    _check_tensor(x, "softmax")
    dispatch.check_backend_name(backend)
    return _like_empty_like(forward_impl(x, _normalize_dim(dim, x.dim()), log, backend), x)


@softmax_forward.register_fake
def _softmax_forward_fake(x, dim, log, backend):
    return torch.empty_like(x)


@torch.library.custom_op("fastsoftmax::softmax_backward", mutates_args=())
def softmax_backward_op(
    grad_output: torch.Tensor, output: torch.Tensor, dim: int, log: bool, backend: str
) -> torch.Tensor:
    _check_tensor(output, "softmax_backward")
    _check_tensor(grad_output, "softmax_backward")
    dispatch.check_backend_name(backend)
    return _like_empty_like(backward_impl(grad_output, output, _normalize_dim(dim, output.dim()), log, backend), output)


@softmax_backward_op.register_fake
def _softmax_backward_fake(grad_output, output, dim, log, backend):
    return torch.empty_like(output)


def _under(override, fn, *args):
    """``fn(*args)`` under ``override``, a forced backend or tier taken with
    ``dispatch.current_override()`` (autograd runs a backward on a thread of its own, which a
    tier forced around the forward must reach explicitly); without one to set or to clear, no
    context is entered (a measurable part of a small backward's host time)."""
    if override is None and not dispatch.is_forced():
        return fn(*args)
    with dispatch.overridden(override):
        return fn(*args)


def _setup_context(ctx, inputs, output):
    _, ctx.dim, ctx.log, ctx.backend = inputs
    # autograd runs the backward on a thread of its own: a tier forced around the forward must
    # reach it explicitly
    ctx.override = dispatch.current_override()
    ctx.save_for_backward(output)


def _backward(ctx, grad_output):
    (output,) = ctx.saved_tensors
    grad_input = _under(ctx.override, softmax_backward_op, grad_output, output, ctx.dim, ctx.log, ctx.backend)
    return grad_input, None, None, None


softmax_forward.register_autograd(_backward, setup_context=_setup_context)


def _batch_in_front(t: torch.Tensor, batch_dim: int | None, batch_size: int) -> torch.Tensor:
    if batch_dim is None:  # the same tensor for every sample: broadcast, read where it lies
        return t.unsqueeze(0).expand(batch_size, *t.shape)
    return t.movedim(batch_dim, 0)


def _batched_dim(dim: int, batched: torch.Tensor) -> int:
    """A sample's ``dim`` (negative too: the ops take dims as written) in a tensor batched in front."""
    return _normalize_dim(dim, batched.dim() - 1) + 1


def _forward_vmap(info, in_dims, x, dim, log, backend):
    x = _batch_in_front(x, in_dims[0], info.batch_size)
    return softmax_forward(x, _batched_dim(dim, x), log, backend), 0


def _backward_vmap(info, in_dims, grad_output, output, dim, log, backend):
    grad_output = _batch_in_front(grad_output, in_dims[0], info.batch_size)
    output = _batch_in_front(output, in_dims[1], info.batch_size)
    return softmax_backward_op(grad_output, output, _batched_dim(dim, output), log, backend), 0


# one launch over the whole batch under torch.func.vmap (torch's fallback calls the op per sample)
softmax_forward.register_vmap(_forward_vmap)
softmax_backward_op.register_vmap(_backward_vmap)


_DTENSOR_RULES = threading.Lock()
_dtensor_rules_registered = False


def _register_dtensor_rules() -> None:
    """DTensor's sharding of the custom ops, registered once DTensor is in use: replicated, or
    sharded along any dim but the softmax's (a tensor sharded along it is redistributed first), so
    that each rank runs the kernels on its local shard."""
    global _dtensor_rules_registered
    with _DTENSOR_RULES:
        if _dtensor_rules_registered:
            return
        from torch.distributed.tensor import Replicate, Shard
        from torch.distributed.tensor.experimental import register_sharding

        def rules(spec, dim: int, tensors: int):
            ndim = spec.ndim
            placements = [Replicate(), *(Shard(d) for d in range(ndim) if d != dim % max(ndim, 1))]
            return [([p], [p] * tensors + [None, None, None]) for p in placements]

        register_sharding(torch.ops.fastsoftmax.softmax_forward.default)(lambda x, dim, log, backend: rules(x, dim, 1))
        register_sharding(torch.ops.fastsoftmax.softmax_backward.default)(
            lambda grad_output, output, dim, log, backend: rules(output, dim, 2)
        )
        _dtensor_rules_registered = True


def _dispatch_subclass(x: torch.Tensor) -> bool:
    """A tensor subclass that computes ops itself (``__torch_dispatch__``: DTensor, FakeTensor, ...):
    its storage is not its data, so it must be handed an op call, not a kernel launch."""
    if type(x) is torch.Tensor or not torch._C._dispatch_keys(x).has(torch._C.DispatchKey.Python):
        return False
    if not _dtensor_rules_registered and "torch.distributed.tensor" in sys.modules:
        _register_dtensor_rules()
    return True


def _subclass_op(op, what: str, x: torch.Tensor, *args) -> torch.Tensor:
    """``op(*args)``, a custom op call on ``x``, a tensor subclass that computes ops itself: where
    the subclass does not compute fastsoftmax's ops, torch's dispatch raises a TypeError that names
    only the op; this names the subclass (the call under torch.compile is the op call alone)."""
    if torch.compiler.is_compiling():
        return op(*args)
    try:
        return op(*args)
    except TypeError as error:
        if "__torch_dispatch__" not in str(error):
            raise
        raise UnsupportedSubclassError(
            f"fastsoftmax.{what}: {type(x).__name__} tensors compute their ops themselves, and not "
            "fastsoftmax's custom ops"
        ) from error


def _takes_the_op(x: torch.Tensor) -> bool:
    """Whether a call is recorded (torch.compile, torch.jit.trace) or made on a tensor subclass that
    computes ops itself: the kernel must reach it as a custom op call, not as a launch."""
    return torch.compiler.is_compiling() or _tracing() is not None or _dispatch_subclass(x)


def _graph_or_transform(x: torch.Tensor) -> bool:
    """Whether a call takes the custom ops (``_takes_the_op``) or is transformed (torch.func,
    forward-mode AD): the cases that take the ops or the autograd function's rules, not a bare launch."""
    return _takes_the_op(x) or _transforms_active() or _fwd_level() >= 0


def _needs_torch_formula(dy: torch.Tensor, y: torch.Tensor) -> bool:
    """Whether a backward (or a tangent: ``dy`` the tangent) must take torch's formula, not the
    kernel: its result must itself be differentiable (a gradient of it is asked for, or a forward
    gradient rides on an input), or a tensor is one of torch.func's wrappers (vmap's batched
    tensors, grad's and jvp's tracking tensors), whose storage no kernel can read. Written out for
    the two tensors: every eager backward asks."""
    if _is_wrapped(dy) or _is_wrapped(y) or _carries_tangent(dy, y):
        return True
    return _grad_enabled() and (dy.requires_grad or y.requires_grad)


def _carries_tangent(*tensors: torch.Tensor) -> bool:
    """Whether a forward-mode AD tangent rides on one of ``tensors``."""
    return _fwd_level() >= 0 and any(_fwad.unpack_dual(t).tangent is not None for t in tensors)


def under_transform(*tensors: torch.Tensor) -> bool:
    """Whether a torch.func transform (vmap, grad, jvp, ...) is active, or a forward-mode AD
    tangent rides on one of ``tensors``."""
    return _transforms_active() or _carries_tangent(*tensors)


def _tangent(tangent: torch.Tensor, y: torch.Tensor, dim: int, log: bool, backend: str) -> torch.Tensor:
    """The forward-mode derivative of softmax (log-softmax) along ``tangent``, given its output
    ``y``. Softmax's Jacobian is symmetric, so its tangent is the backward applied to the tangent,
    y * (t - sum(t * y)); log-softmax's is t - sum(t * exp(y)), summed in float32 for half types."""
    if not log:
        if _needs_torch_formula(tangent, y):
            return _torch_backward(tangent, y, dim, False)
        return backward_impl(tangent, y, dim, False, backend)
    wide = torch.float32 if tangent.dtype in _HALF else tangent.dtype
    t = tangent.to(wide)
    return (t - (t * y.to(wide).exp()).sum(dim, keepdim=True)).to(tangent.dtype)


class _Softmax(torch.autograd.Function):
    """Eager autograd: the same kernels as the custom ops, without the dispatcher's custom-op
    machinery on every call (several times the host time of the kernels themselves). Forward-mode
    AD (``jvp``) and torch.func's transforms (``vmap``: the batch dimension moved in front, one
    launch over the whole batch) are served here too."""

    @staticmethod
    def forward(x, dim, log, backend):
        return forward_impl(x, dim, log, backend)

    @staticmethod
    def setup_context(ctx, inputs, output):
        _setup_context(ctx, inputs, output)
        if _fwd_level() >= 0:
            ctx.save_for_forward(output)

    @staticmethod
    def backward(ctx, grad_output):
        (output,) = ctx.saved_tensors
        if _needs_torch_formula(grad_output, output):
            # create_graph=True or a transform of the backward (jacrev, hessian): the backward
            # itself must be differentiable or batched (torch's formula, with the saved output
            # still leading back through this function)
            return _torch_backward(grad_output, output, ctx.dim, ctx.log), None, None, None
        grad_input = _under(ctx.override, backward_impl, grad_output, output, ctx.dim, ctx.log, ctx.backend)
        return grad_input, None, None, None

    @staticmethod
    def jvp(ctx, x_tangent, *_):
        (output,) = ctx.saved_tensors
        return _under(ctx.override, _tangent, x_tangent, output, ctx.dim, ctx.log, ctx.backend)

    @staticmethod
    def vmap(info, in_dims, x, dim, log, backend):
        x = _batch_in_front(x, in_dims[0], info.batch_size)
        return _Softmax.apply(x, _batched_dim(dim, x), log, backend), 0


class _EagerSoftmax(torch.autograd.Function):
    """``_Softmax`` for the calls that need none of torch.func's machinery (no transform around the
    call, no forward-mode AD): the same forward and backward, in the form with ``ctx`` as forward's
    first argument. torch's ``apply`` binds the arguments to forward's signature through
    ``inspect`` on every call of a Function with ``setup_context`` (25 us a call on a CPU where
    this form's apply takes 6-8, torch 2.13 and 2.14 alike); this form needs no binding."""

    @staticmethod
    def forward(ctx, x, dim, log, backend):
        y = forward_impl(x, dim, log, backend)
        _setup_context(ctx, (x, dim, log, backend), y)
        return y

    backward = staticmethod(_Softmax.backward)


# ---------------------------------------------------------------------------------------------
# 16-bit inputs with a float32 result (dtype=torch.float32, or autocast)
# ---------------------------------------------------------------------------------------------

#: Whether "auto" computes a 16-bit input with a float32 result in one pass on the Triton kernels
#: (which convert each value to the output's type at the store: 2 + 4 bytes an element) rather than
#: casting the input to float32 first (2 + 4 more), from FUSED_WIDENING_MIN_NUMEL elements, in eager
#: calls without ``out`` (out=, torch.compile, tracing and torch.func's transforms cast first), as
#: backend="triton" does at any size. H200, GPU time in one process against the cast with
#: fastsoftmax's float32 kernels, and torch (results 2026-12-05_h200_s63/c9/): bulk rows of 32 to 4096
#: columns 0.94-0.96 of copy against 0.30 (torch's fused float16 kernel 0.44-0.89), 1046 x 128256
#: and 2048 x 65536 0.66-0.73 against 0.30 (0.53-0.57 with 64-256 rows of 2^17-2^20), 1 x 2^24 0.53
#: against 0.25, (65536, 2048) over dim 0 0.34 against 0.25 and a (16, 21, 512, 512) channel head 0.36
#: against 0.30 (0.82 since Triton's wide tiles run half the warps forward, 2026-12-05_h200_s66/);
#: decode rows too (32 x 151936 15 against 30 us). The backward from its float32 y and dy to the
#: 16-bit gradient is level or ahead but over dim 0 (937 against 799 us, bf16).
FUSED_WIDENING = True
#: the fewest elements "auto" computes in one pass. The Triton launch's host time, 32-137 us a call on
#: that machine against 17-63 for the cast and fastsoftmax's kernel, outweighs the GPU time saved
#: below: 2048 x 4096 14 against 46 us of GPU time, but 67 against 29 us of host time; 4096 x 4096
#: 28 against 87, 66 against 30. Near the cut the two are close either way (128 x 128256: 44 against
#: 88 us of GPU time, 71 against 22 of host).
FUSED_WIDENING_MIN_NUMEL = 1 << 24


#: the device types where "auto" hands a float16 row softmax with a float32 result that the one pass
#: does not take to torch's fused half-to-float kernel (``torch.softmax(x, dim, dtype=torch.float32)``:
#: 2 bytes read and 4 written an element) rather than casting the input first (2 + 4 more), where
#: TORCH_WIDENS_MIN_ROWS rows or more lie contiguous along the last dim. torch fuses float16 only (a
#: bfloat16 input it casts first, then runs its float32 kernel, behind this package's), and only on
#: CUDA. H200, GPU time (results 2026-12-05_h200_s63/c9/): 1024 x 4096 16 us against the cast's 23,
#: 2048 x 4096 32 against 46, 128 x 128256 66 against 87, at 7-13 us of host time against 17-40; with
#: 32 rows of 151936 44 against 30, 8 of 128256 37 against 11, the cast ahead; over dim 0 torch's
#: kernels fall far behind.
TORCH_WIDENS_ON = ("cuda",)
TORCH_WIDENS_MIN_ROWS = 64


def _torch_widens(x: torch.Tensor, dim: int, backend: str) -> bool:
    """Whether "auto" computes a float16 ``x`` with a float32 result by torch's fused kernel."""
    if backend != "auto" or x.dtype != torch.float16 or x.device.type not in TORCH_WIDENS_ON:
        return False
    if dispatch.current_override() is not None:
        return False
    n = x.shape[dim] if x.dim() else 1
    return dim == x.dim() - 1 and n > 0 and x.numel() // n >= TORCH_WIDENS_MIN_ROWS and x.is_contiguous()


def _torch_widened(x: torch.Tensor, dim: int, log: bool) -> torch.Tensor:
    return _torch_forward(x, dim, log, dtype=torch.float32)


def _widens_in_kernel(x: torch.Tensor, dim: int, backend: str) -> bool:
    """Whether a 16-bit ``x`` whose result is float32 is computed in one pass (the Triton kernels).
    "auto" leaves it rows the one pass reads an element at a time (dispatch.triton_reads_rows_slowly;
    its two element sizes keep it off Triton's realigned kernels). The one pass there is not timed as
    such; the tile kernels it runs read those rows at a quarter to half the pace of the realigned ones
    (H100, bf16 1032444 x 65 forward 427.1 against 114.4 us, results 2026-12-07_h100_s83/r1/), which the
    cast's 2 + 4 more bytes an element do not outweigh."""
    if x.dim() == 0 or x.numel() == 0:
        return False
    forced = dispatch.current_override()
    if forced is not None:
        chosen = forced[0]
    elif backend == "triton":
        chosen = "triton"
    elif backend == "auto" and FUSED_WIDENING and x.numel() >= FUSED_WIDENING_MIN_NUMEL:
        inner = x.numel() // math.prod(x.shape[: dim + 1])
        if dispatch.triton_reads_rows_slowly(x.shape[dim], inner, False):
            return False
        chosen = "triton"
    else:
        return False
    return chosen == "triton" and dispatch.unavailable_reason("triton", x.device.type, x.device.index) is None


def _forced_tier(name: str) -> str | None:
    forced = dispatch.current_override()
    return forced[1] if forced is not None and forced[0] == name else None


def _one_pass_runner(views: tuple, backward: bool, out_dtype: torch.dtype):
    """The Triton backend's prepared run (``_runner``) for a one-pass call's canonical ``views``,
    whose output is of ``out_dtype``: the tier chosen from the sizes alone, as the full path
    chooses it (the run checks each call's alignment)."""
    triton, first = dispatch.kernel_backend("triton"), views[0]
    tier = triton.choose_tier(*first.shape, first.dtype, backward, first.get_device())
    return _runner(triton, tier, views, backward, out_dtype)


def widened_forward(x: torch.Tensor, dim: int, log: bool, call: tuple | None = None) -> torch.Tensor:
    """Softmax of a 16-bit ``x`` as float32, in one pass of the Triton kernels. ``call``: the dim as
    written and the backend asked for, of an eager call whose plan is to be remembered (as
    forward_impl remembers one: where a later call's output, allocated alike, gets these strides); such
    a call takes the plan its geometry left (the eager fast path takes it before, a call that
    records a graph here)."""
    x = _readable(x)
    forced = dispatch.is_forced()
    if call is not None and not forced:
        plan = _PLANS.get(_plan_key(x, dim, call[1], torch.float32))
        if plan is not None:
            return plan(x, log)
    x3, y3, y, copied = _layout.canonical_pair(x, dim, torch.float32)
    triton, tier = dispatch.kernel_backend("triton"), _forced_tier("triton")
    if call is not None and not forced and not copied and (y.stride() == x.stride() or y.is_contiguous()):
        run = _one_pass_runner((x3, y3), False, torch.float32)
        given_dim, backend = call
        _remember_both(x, given_dim, dim, backend, torch.float32, _plan(run, y.stride() != x.stride(), torch.float32))
    triton.forward(x3, y3, log, tier)
    return y


def widened_backward(dy: torch.Tensor, y: torch.Tensor, dim: int, log: bool, dtype: torch.dtype) -> torch.Tensor:
    """The gradient of ``widened_forward``'s input (of ``dtype``) from its float32 output ``y`` and
    the gradient ``dy`` with respect to it, in one pass of the Triton kernels. A geometry's first
    call leaves the prepared run behind, as backward_impl does, under a key of its own (the
    gradient's dtype in it)."""
    y, dy = _readable(y), _readable(dy)
    forced = dispatch.is_forced()
    key = ("widened backward", y.shape, y.stride(), dy.stride(), y.dtype, dy.dtype, y.device, dim, log, dtype)
    plan = None if forced else _PLANS.get(key)
    if plan is not None:
        return plan(dy, y, log)
    y3, dy3, dx3, dx, copied = _layout.canonical_backward(y, dy, dim, dtype)
    triton = dispatch.kernel_backend("triton")
    if not forced and not copied and (dx.stride() == y.stride() or dx.is_contiguous()):
        run = _one_pass_runner((y3, dy3, dx3), True, dtype)
        dispatch.remember(key, _backward_plan(run, dx.stride() != y.stride(), dtype))
    triton.backward(y3, dy3, dx3, log, _forced_tier("triton"))
    return dx


class _WidenedSoftmax(torch.autograd.Function):
    """Autograd of ``widened_forward``: the gradient comes back in the input's 16-bit type, as the
    backward of a cast and a float32 softmax would give it, from one pass over y and dy. ``call``:
    the dim as written and the backend, as for an eager call (whose plan the forward takes)."""

    @staticmethod
    def forward(ctx, x, dim, log, call):
        y = widened_forward(x, dim, log, call)
        ctx.dim, ctx.log, ctx.dtype = dim, log, x.dtype
        ctx.override = dispatch.current_override()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, grad_output):
        (output,) = ctx.saved_tensors
        if _needs_torch_formula(grad_output, output):
            return _torch_backward(grad_output, output, ctx.dim, ctx.log).to(ctx.dtype), None, None, None
        grad_input = _under(ctx.override, widened_backward, grad_output, output, ctx.dim, ctx.log, ctx.dtype)
        return grad_input, None, None, None


# ---------------------------------------------------------------------------------------------
# out=: the result written into a given tensor
# ---------------------------------------------------------------------------------------------


def _check_out(out, x: torch.Tensor, dtype: torch.dtype, what: str) -> None:
    """torch's rules for an ``out=`` tensor: of the result's dtype, on the input's device, and
    outside autograd (a result written into a given tensor has no gradient to give)."""
    if not isinstance(out, torch.Tensor):
        raise TypeError(f"fastsoftmax.{what}(): argument 'out' must be a torch.Tensor, not {type(out).__name__}")
    if _unstrided(out):
        raise NotImplementedError(
            f"fastsoftmax.{what}(): out must be a strided tensor, got a {'nested' if out.is_nested else out.layout} one"
        )
    if out.dtype != dtype:
        raise RuntimeError(f"fastsoftmax.{what}(): expected out tensor to have dtype {dtype}, but got {out.dtype}")
    if out.device != x.device:
        raise RuntimeError(f"fastsoftmax.{what}(): expected out tensor on {x.device}, but got one on {out.device}")
    if not _compiling() and out._is_zerotensor():  # no memory to write (nor to resize: torch crashes)
        raise RuntimeError(
            f"fastsoftmax.{what}(): ZeroTensors are immutable. Please use the materialized zero tensor "
            "obtained using .clone() if you want a mutable tensor."
        )
    if torch.is_grad_enabled() and (x.requires_grad or out.requires_grad) or _carries_tangent(x, out):
        raise RuntimeError(
            f"fastsoftmax.{what}(): functions with out=... arguments don't support automatic differentiation, "
            "but one of the arguments requires grad."
        )


def _resize_out(out: torch.Tensor, shape: torch.Size, what: str) -> None:
    """``out`` resized to the result's shape as torch resizes outputs: silently when it is empty,
    with torch's deprecation warning otherwise."""
    if out.shape == shape:
        return
    if out.numel():
        warnings.warn(
            f"fastsoftmax.{what}(): an output with one or more elements was resized since it had shape "
            f"{list(out.shape)}, which does not match the required output shape {list(shape)}. This behavior "
            "is deprecated in torch; resize it to zero elements first (out.resize_(0)) to reuse it.",
            UserWarning,
            stacklevel=4,
        )
    out.resize_(shape)


def _written_into(out, x: torch.Tensor, given_dim, dim: int, dtype, backend: str, log: bool, what: str) -> torch.Tensor:
    """A checked call with ``out=`` (``dim`` normalised, ``given_dim`` as written): the result written
    into ``out``, which is returned.

    Eagerly, the kernels write straight into ``out`` wherever it and the input fold into the same
    ``(outer, n, inner)`` axes (either one's memory order) and do not share memory; otherwise the
    result is computed as without ``out=`` and copied into it (one more pass, as an input aliasing its
    output needs: torch writes such an output while still reading it). Under torch.compile, tensor
    subclasses and torch.func transforms the result is copied in, which graphs then fuse or elide;
    torch.jit.trace records the op ``fastsoftmax::softmax_out``, whose checks and resizing run with
    the trace."""
    _check_out(out, x, x.dtype if dtype is None else dtype, what)
    if _tracing() is not None:
        softmax_out(x if dtype is None else x.to(dtype), dim, log, backend, out)
        return out
    _resize_out(out, x.shape, what)
    if _graph_or_transform(x) or _graph_or_transform(out):
        return out.copy_(_computed(x, dim, dim, dtype, backend, log))
    return _written_eagerly(out, x, given_dim, dim, dtype, backend, log, what)


def _written_eagerly(out, x: torch.Tensor, given_dim, dim: int, dtype, backend: str, log: bool, what: str):
    """``_written_into`` for plain tensors, ``out`` checked and of the result's shape."""
    if out.is_inference() and not _inference_mode():
        raise RuntimeError(
            f"fastsoftmax.{what}(): out is an inference tensor, which may be written only under torch.inference_mode()"
        )
    if torch._debug_has_internal_overlap(out) == 1:
        raise RuntimeError(
            f"fastsoftmax.{what}(): out has more than one element at a single memory location (an expanded "
            "view); clone() it first"
        )
    if dtype is not None and dtype != x.dtype:
        x = x.to(dtype)
    x = _readable(x)
    # (a lazily negated out holds its values unnegated: copy_ writes it as such, a kernel would not)
    if out.is_neg() or _overlaps(x, out) or not _write_into(x, out, dim, log, backend, given_dim):
        out.copy_(forward_impl(x, dim, log, backend))
    else:
        _written(out)  # (copy_ counts itself)
    return out


@torch.library.custom_op("fastsoftmax::softmax_out", mutates_args=("out",))
def softmax_out(x: torch.Tensor, dim: int, log: bool, backend: str, out: torch.Tensor) -> None:
    """``out=`` as torch.jit.trace and torch.fx record it: checked, resized and written when run."""
    what = "log_softmax" if log else "softmax"
    _check_tensor(x, what)
    dispatch.check_backend_name(backend)
    dim = _normalize_dim(dim, x.dim())
    _check_out(out, x, x.dtype, what)
    _resize_out(out, x.shape, what)
    _written_eagerly(out, x, dim, dim, None, backend, log, what)


@softmax_out.register_fake
def _softmax_out_fake(x, dim, log, backend, out):
    return None


def _write_into(
    x: torch.Tensor, out: torch.Tensor, dim: int, log: bool, backend: str, given_dim=None, use_plans: bool = True
) -> bool:
    """Softmax of ``x`` written by a kernel (or by torch's own ``out=`` where a call goes to torch)
    into ``out`` of the same shape and dtype, which shares no memory with it; False (nothing written)
    where the two do not fold into the same axes or the dispatcher gives the problem to no kernel.
    A plan is remembered under ``dim`` and under ``given_dim``, the dim as written. The caller tells
    autograd of the write (``_written``)."""
    forced = dispatch.is_forced()

    def remember(plan):
        if not forced:
            for d in {dim, given_dim if type(given_dim) is int else dim}:
                dispatch.remember(_out_plan_key(x, out, d, backend), plan)

    plan = None if forced or not use_plans else dispatch.PLANS.get(_out_plan_key(x, out, dim, backend))
    if plan is not None:
        plan(x, out, log)
        if given_dim != dim:
            remember(plan)
        return True
    if x.numel() == 0:
        return True
    if x.dim() == 0:
        return False
    if _goes_to_torch(backend, x):
        plan = _torch_out_plan(dim)
        remember(plan)
        plan(x, out, log)
        return True
    for order in (_layout.memory_order(x), _layout.memory_order(out)):
        x3, y3 = _layout.input_view(x, dim, order), _layout.canonical_view(out, dim, order)
        if x3 is not None and y3 is not None and x3.shape == y3.shape:
            break
    else:
        return False
    kernel_backend, tier, aligned = _resolve(backend, False, (x3,), y3)
    if kernel_backend is None:
        return False
    keep, realigned = _plan_reach(use_plans and not forced, backend, kernel_backend, tier, aligned, (x3,), y3)
    if keep:
        plan = _runner(kernel_backend, tier, (x3, y3), False)
        if not realigned:

            def full_path(x, out, log):  # (chosen afresh for this alignment; computed and copied if no kernel)
                if not _write_into(x, out, dim, log, backend, use_plans=False):
                    out.copy_(forward_impl(x, dim, log, backend))

            plan = _aligned_only(plan, full_path)
        remember(plan)
    kernel_backend.forward(x3, y3, log, tier)
    return True


def _out_plan_key(x: torch.Tensor, out: torch.Tensor, dim: int, backend: str) -> tuple:
    """The key of an ``out=`` call's plan, which the public functions' fast path builds inline: both
    dtypes and devices, so that a hit means they agree, as checked when the plan was kept."""
    return ("out", x.shape, x.stride(), out.stride(), x.dtype, out.dtype, x.device, out.device, dim, backend)


def _written(out: torch.Tensor) -> None:
    """Tell autograd that a kernel wrote ``out`` in place (its version counter), so that a graph that
    saved it refuses its backward as after any in-place write, rather than reading the new values."""
    _increment_version((out,))


# ---------------------------------------------------------------------------------------------
# Public functions
# ---------------------------------------------------------------------------------------------


def _fx_proxy(x) -> bool:
    """Whether ``x`` is a value torch.fx.symbolic_trace records calls on (then the op is recorded)."""
    if x is None or isinstance(x, torch.Tensor):  # (no import on every call without out=)
        return False
    from torch.fx import Proxy

    return isinstance(x, Proxy)


def _unwrapped_if_dead(*tensors):
    """The tensors, each torch.func wrapper that outlived its transform replaced by the tensor it
    wraps, as torch's ops take them (such a wrapper has no storage of its own; a result written
    into one is written into the tensor it wraps, and that tensor is returned)."""
    if _unwrap_if_dead is None:
        return tensors
    return tuple(_unwrap_if_dead(t) if isinstance(t, torch.Tensor) else t for t in tensors)


def _apply(x, dim, dtype, backend, log: bool, what: str, out=None) -> torch.Tensor:
    if _fx_proxy(x) or _fx_proxy(out):  # torch.fx.symbolic_trace: record the op (checked when run)
        dispatch.check_backend_name(backend)
        x = x if dtype is None else x.to(dtype)
        if out is not None:
            softmax_out(x, dim, log, backend, out)
            return out
        return softmax_forward(x, dim, log, backend)
    if dtype is not None:
        if not isinstance(dtype, torch.dtype):
            raise TypeError(f"fastsoftmax.{what}: dtype must be a floating-point torch.dtype, got {dtype}")
        if dtype not in SUPPORTED:
            raise UnsupportedDtypeError(f"fastsoftmax.{what}: dtype must be a floating-point torch.dtype, got {dtype}")
        if isinstance(x, torch.Tensor) and x.dtype not in SUPPORTED:
            x = x.to(dtype)  # as torch: an integer, bool or complex input is cast first
    _check_tensor(x, what)
    dispatch.check_backend_name(backend)
    x, out = _unwrapped_if_dead(x, out)
    given_dim = dim
    dim = _normalize_dim(dim, x.dim())
    if out is not None:
        return _written_into(out, x, given_dim, dim, dtype, backend, log, what)
    if dtype is None and autocasts_to_float32(x):
        dtype = torch.float32  # torch's autocast runs softmax and log_softmax in float32 on CUDA
    return _computed(x, given_dim, dim, dtype, backend, log)


def _computed(x: torch.Tensor, given_dim, dim: int, dtype, backend: str, log: bool) -> torch.Tensor:
    """The result of a checked call (``dim`` normalised, ``given_dim`` as written) in a new tensor.
    The call leaves the plan of its geometry behind (``_PLANS``), under its ``dtype`` too where one
    is given: a 16-bit input's one pass or the cast followed by the plan of the cast tensor (eager
    calls without autograd), torch's fused kernel (any call that takes it). The plan is what the
    module's rules (FUSED_WIDENING and the like) chose when it was made: ``dispatch.clear_caches()``
    after changing one."""
    given = x
    if dtype is not None and dtype != x.dtype:
        # (_graph_or_transform first: under torch.compile nothing after it is traced)
        if dtype == torch.float32 and x.dtype in _HALF and not _graph_or_transform(x):
            if _widens_in_kernel(x, dim, backend):
                if x.requires_grad and torch.is_grad_enabled():
                    return _WidenedSoftmax.apply(x, dim, log, (given_dim, backend))
                return widened_forward(x, dim, log, (given_dim, backend))
            if _torch_widens(x, dim, backend):
                _remember_both(x, given_dim, dim, backend, dtype, _torch_plan(dim, widened=True))
                return _torch_widened(x, dim, log)
        x = x.to(dtype)
    if _takes_the_op(x):
        if _transforms_active():
            # torch.func inside a compiled region: torch's custom ops carry no forward-mode
            # formula (a compiled jvp would see a zero tangent) and no functorch grad rule
            return _torch_forward(x, dim, log)
        return _subclass_op(softmax_forward, "log_softmax" if log else "softmax", x, x, dim, log, backend)
    if _fwd_level() >= 0 or _transforms_active():
        return _Softmax.apply(x, dim, log, backend)
    if x.requires_grad and torch.is_grad_enabled():
        y = _EagerSoftmax.apply(x, dim, log, backend)
    else:
        y = forward_impl(x, dim, log, backend)
    plan = _PLANS.get(_plan_key(x, dim, backend))
    if plan is not None:
        # the fast path answers to the dim as written, and to dtype (a call that records a graph
        # takes the plain plan's existence as its checks: the plan vouches)
        _remember_both(given, given_dim, dim, backend, dtype, plan if x is given else _cast_plan(dim, dtype, backend))
    return y


def _cast_plan(dim: int, dtype: torch.dtype, backend: str):
    """The plan of a call that casts its input to ``dtype`` first: the cast tensor's plan, looked up
    afresh (the cast's layout is torch's to choose)."""

    def cast_then_plan(x, log):
        return forward_impl(x.to(dtype), dim, log, backend)

    return cast_then_plan


_Tensor = torch.Tensor
_dtype = torch.dtype
_strided = torch.strided
_float32 = torch.float32
_compiling = torch.compiler.is_compiling
_forced = dispatch.current_override
_PLANS = dispatch.PLANS


def _public(log: bool, name: str, doc: str):
    """``softmax`` or ``log_softmax``: one body, made twice, so that neither pays a Python call
    between its entry and a remembered plan (a measurable part of a small softmax's host time).

    A call whose geometry was seen before takes the remembered plan: everything the full path
    checks is implied by the hit, since only valid problems are remembered (under the dim as
    written and as normalised, and under the result's dtype where one is given or autocast sets
    float32). A call that records a graph (an input that requires grad) and whose geometry has a
    plain plan goes straight into ``_EagerSoftmax``, whose forward takes the plan. Plain tensors only:
    subclasses, lazily negated views, efficient zero tensors and torch.func wrappers left over from a
    transform take the full path."""

    def function(
        input: torch.Tensor,
        dim: int = -1,
        dtype: torch.dtype | None = None,
        *,
        out: torch.Tensor | None = None,
        backend: str = "auto",
    ) -> torch.Tensor:
        x = input
        if (
            type(x) is _Tensor
            and type(dim) is int
            and type(backend) is str  # (a key part: an unhashable one must reach the full path's check)
            and not _compiling()  # first: Dynamo traces no further (it cannot trace ContextVar.get)
            and _forced() is None
            and _fwad._current_level < 0  # no forward-mode AD level open
            and not _transforms_active()  # no torch.func transform (vmap, grad, jvp) around the call
            and _tracing() is None  # not recorded by torch.jit.trace
            and not x.is_neg()  # a lazily negated view: its memory holds the values unnegated
            and not x._is_zerotensor()  # an efficient zero tensor: no memory at all
            and not _is_wrapped(x)  # a torch.func wrapper left over from a transform: no memory either
            and x.layout is _strided  # a sparse COO tensor's strides are (0, 0): a broadcast view's key
            and not x.is_nested  # no sizes or strides for the keys: the full path names it
        ):
            if x.requires_grad and _grad_enabled():
                # a graph to record: a geometry whose plain plan exists passed every check the full
                # path makes, so the call goes straight into autograd, whose forward takes the plan
                if (
                    out is None
                    and dtype is None
                    and not (_autocasting() and autocasts_to_float32(x))
                    and (x.shape, x.stride(), x.dtype, x.device, dim, backend) in _PLANS
                ):
                    return _EagerSoftmax.apply(x, dim if dim >= 0 else dim + max(x.dim(), 1), log, backend)
            elif out is None:
                # _plan_key, inline; a call with dtype (given, or float32 by autocast) has its own
                if dtype is None:
                    if _autocasting() and autocasts_to_float32(x):
                        plan = _PLANS.get((x.shape, x.stride(), x.dtype, x.device, dim, backend, _float32))
                    else:
                        plan = _PLANS.get((x.shape, x.stride(), x.dtype, x.device, dim, backend))
                elif type(dtype) is _dtype:
                    plan = _PLANS.get((x.shape, x.stride(), x.dtype, x.device, dim, backend, dtype))
                else:
                    plan = None
                if plan is not None:
                    return plan(x, log)
            elif (
                dtype is None
                and type(out) is _Tensor
                and out.layout is _strided
                and not out.is_nested
                and out.shape == x.shape
                and not (out.requires_grad and _grad_enabled())
                and not out.is_neg()
                and not out._is_zerotensor()
                and not _is_wrapped(out)
                and not (out.is_inference() and not _inference_mode())
                and not _overlaps(x, out)
            ):
                # _out_plan_key, inline
                key = (
                    "out",
                    x.shape,
                    x.stride(),
                    out.stride(),
                    x.dtype,
                    out.dtype,
                    x.device,
                    out.device,
                    dim,
                    backend,
                )
                plan = _PLANS.get(key)
                if plan is not None:
                    plan(x, out, log)
                    _increment_version((out,))  # as _written
                    return out
        return _apply(x, dim, dtype, backend, log, name, out)

    function.__name__ = function.__qualname__ = name
    function.__doc__ = doc
    return function


softmax = _public(
    False,
    "softmax",
    """Softmax of ``input`` along ``dim`` (default -1), as ``torch.softmax(input, dim, dtype)``.

    ``dtype``, when given, is the type computed in and returned: the input is cast first, but for a
    16-bit input with ``torch.float32`` in an eager call without ``out``, which the Triton kernels
    read as it is and write as float32 in one pass with ``backend="triton"``, and with "auto" from
    ``FUSED_WIDENING_MIN_NUMEL`` elements (below, "auto" hands float16 with 64 or more contiguous
    last-dim rows to torch's fused kernel). Under CUDA autocast a 16-bit input is computed and
    returned in float32, as torch's autocast does.
    ``out`` (keyword only), as torch's: a tensor of the result's dtype and device that the result is
    written into and returned (resized as torch resizes outputs; not differentiable; autocast does not
    apply). The kernels write it where it lies when it folds as the input does and shares no memory
    with it; otherwise the result is computed and copied in.
    ``backend`` (keyword only) is "auto" (the fastest kernel for the shape), "triton", "cuda" or
    "torch". The output keeps the input's memory layout. CPU tensors are computed by torch's CPU
    kernel unless the Triton interpreter is active (TRITON_INTERPRET=1).
    """,
)
log_softmax = _public(
    True,
    "log_softmax",
    """Log-softmax of ``input`` along ``dim``, as ``torch.log_softmax`` (same arguments as softmax).""",
)


def softmax_backward(
    grad_output: torch.Tensor, output: torch.Tensor, dim: int = -1, *, log: bool = False, backend: str = "auto"
) -> torch.Tensor:
    """The gradient with respect to the input of softmax (or of log-softmax when ``log``), given the
    forward ``output`` and the gradient of the loss with respect to it."""
    y, dy = output, grad_output
    if (
        type(y) is _Tensor
        and type(dy) is _Tensor
        and y.layout is _strided  # a sparse COO tensor's strides are (0, 0): a broadcast view's key
        and dy.layout is _strided
        and not (y.is_nested or dy.is_nested)  # no sizes or strides for the checks and the key
        and type(dim) is int
        and type(backend) is str
        and not _compiling()  # first, as in _public
        and _forced() is None
        and _fwad._current_level < 0
        and not _transforms_active()
        and _tracing() is None
        and not (_grad_enabled() and (y.requires_grad or dy.requires_grad))  # a differentiable backward
        and dy.shape == y.shape
        and dy.dtype == y.dtype
        and dy.device == y.device
        and not (y.is_neg() or dy.is_neg() or y._is_zerotensor() or dy._is_zerotensor())
        and not (_is_wrapped(y) or _is_wrapped(dy))
    ):
        # backward_impl's key, inline: a geometry seen before passed every check below (only valid
        # problems are remembered), and dy's type, device and shape are y's, checked above
        plan = _PLANS.get(
            (
                "backward",
                y.shape,
                y.stride(),
                dy.stride(),
                y.dtype,
                y.device,
                dim if dim >= 0 else dim + y.dim(),
                backend,
                log,
            )
        )
        if plan is not None:
            return plan(dy, y, log)
    if _fx_proxy(output) or _fx_proxy(grad_output):
        dispatch.check_backend_name(backend)
        return softmax_backward_op(grad_output, output, dim, log, backend)
    _check_tensor(output, "softmax_backward")
    _check_tensor(grad_output, "softmax_backward")
    dispatch.check_backend_name(backend)
    if grad_output.shape != output.shape:
        raise MismatchedShapeError(
            f"fastsoftmax.softmax_backward: grad_output has shape {tuple(grad_output.shape)} but "
            f"output has shape {tuple(output.shape)}"
        )
    if grad_output.dtype != output.dtype or grad_output.device != output.device:
        raise MismatchedTensorError(
            "fastsoftmax.softmax_backward: grad_output and output must share dtype and device, got "
            f"{grad_output.dtype} on {grad_output.device} and {output.dtype} on {output.device}"
        )
    dim = _normalize_dim(dim, output.dim())
    grad_output, output = _unwrapped_if_dead(grad_output, output)
    if _takes_the_op(output) or _dispatch_subclass(grad_output):
        if _transforms_active():
            return _torch_backward(grad_output, output, dim, log)
        subclass = output if _dispatch_subclass(output) else grad_output  # the one to name
        return _subclass_op(softmax_backward_op, "softmax_backward", subclass, grad_output, output, dim, log, backend)
    if _needs_torch_formula(grad_output, output):
        return _torch_backward(grad_output, output, dim, log)
    return backward_impl(grad_output, output, dim, log, backend)
