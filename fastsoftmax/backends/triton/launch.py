"""Launch compiled Triton kernels with a fraction of ``JITFunction.run``'s host work.

``kernel[grid](...)`` binds every argument, computes a specialisation key in a generic way and
looks the compiled kernel up on each call; for a softmax over a small tensor that host work takes
longer than the kernel. Here the first launch of a configuration goes through Triton as usual and
returns the compiled kernel; later launches look it up under a key this module computes from the
same facts Triton specialises on (each integer's ==1, %16 and 32-bit range; each pointer's
16-byte alignment and dtype) and call the compiled launcher directly. What such a launch still
does on the host: read the tensors' pointers, look the scalars' specialisation up (a repeated call
passes the same ones), and hand the launcher the pointers as integers (given a tensor, it would call
``data_ptr()`` and ask the driver about the pointer again) and no launch hooks unless some are
registered.

The direct call is the one ``JITFunction.run`` itself makes (Triton 3.4 and later); if the
installed Triton's ``run`` does not contain it, every launch takes the ordinary path.
"""

from __future__ import annotations

import inspect
import operator
import threading

import torch

try:
    from triton import knobs
    from triton.runtime.jit import JITFunction

    _DIRECT = (
        "kernel.run(grid_0, grid_1, grid_2, stream, kernel.function, kernel.packed_metadata, launch_metadata"
        in inspect.getsource(JITFunction.run)
    ) and "*bound_args.values()" in inspect.getsource(JITFunction.run)
except Exception:  # any other Triton: the ordinary path is always correct
    _DIRECT = False
try:
    from triton.knobs import HookChain as _HookChain  # launch hooks as chains: Triton 3.5 and later
except ImportError:
    _HookChain = None

_INT32_MIN, _INT32_MAX = -(1 << 31), (1 << 31) - 1
#: Triton's first call of a configuration (compiling it, building and importing its C launcher,
#: loading the module) is not safe when threads make it at once: seen on an H100 with Triton 3.6,
#: eight threads left a kernel bound to another kernel's launcher ("function takes exactly 26
#: arguments (31 given)") for the rest of the process. First calls are made one at a time; later
#: calls take no lock.
_FIRST_CALL = threading.Lock()
#: compiled kernels by specialisation key and device; entries are never changed once written, so
#: threads may share the dict
_compiled: dict = {}

try:
    _current_device = torch._C._cuda_getDevice
    _current_stream = torch._C._cuda_getCurrentRawStream
except AttributeError:  # pragma: no cover - CPU-only builds of torch

    def _current_device():
        return -1

    def _current_stream(device_index):
        raise RuntimeError("fastsoftmax: this build of torch has no CUDA")


def _spec(arg):
    """What Triton specialises a compiled kernel on, for one scalar argument: an integer's being 1,
    its divisibility by 16 and whether it fits int32; a float's and a bool's type only. (A range
    test such as ``x in range(...)`` would walk the range for a float: minutes per call.) The
    tensors' part, their dtypes and 16-byte alignment, is worked out in ``_launch``."""
    kind = type(arg)
    if kind is int:
        return int, arg == 1, arg % 16 == 0, _INT32_MIN <= arg <= _INT32_MAX
    if kind is float or kind is bool or arg is None:
        return kind
    raise TypeError(f"fastsoftmax: a Triton kernel argument of type {kind.__name__} is not supported")


#: the specialisations of the scalar arguments of recent launches, by their values and types (1,
#: 1.0 and True are equal keys otherwise); a repeated call's scalars are the same, and looking
#: them up costs a tenth of working each one out. Cleared when full; threads may share it (a miss
#: only costs the work)
_scalar_specs: dict = {}
_SCALAR_SPECS_KEPT = 4096


def _scalars_spec(scalars: tuple) -> tuple:
    key = (scalars, tuple(map(type, scalars)))
    spec = _scalar_specs.get(key)
    if spec is None:
        spec = tuple(map(_spec, scalars))
        if len(_scalar_specs) >= _SCALAR_SPECS_KEPT:
            _scalar_specs.clear()
        _scalar_specs[key] = spec
    return spec


def _hook(chain):
    """The launch hook to hand Triton's launcher: None where none is registered (an empty chain),
    so that the launch neither builds its metadata nor calls into Python twice for nothing; the
    hook itself where one is (a profiler's)."""
    if chain is None or (_HookChain is not None and isinstance(chain, _HookChain) and not chain.calls):
        return None
    return chain


_data_ptr = torch.Tensor.data_ptr
_dtype = operator.attrgetter("dtype")


def launch(
    kernel, programs: int, tensors: tuple, scalars: tuple, config: tuple, device_index: int | None, interpreted: bool
) -> None:
    """Launch ``kernel`` over ``programs`` programs on the tensors' device ``device_index``, its
    leading parameters ``tensors`` (the pointers) and then ``scalars``, in order. ``config`` holds
    the constexpr parameters (its trailing ones) and the compile options as hashable ``(name,
    value)`` pairs."""
    if interpreted:
        kernel[(programs,)](*tensors, *scalars, **dict(config))
        return
    if _current_device() != device_index:
        # Triton compiles for, loads into and launches on the current device: make it the
        # tensors' for this launch, and give the caller's back
        with torch.cuda.device(device_index):
            _launch(kernel, programs, tensors, scalars, config, device_index)
        return
    _launch(kernel, programs, tensors, scalars, config, device_index)


def _launch(kernel, programs: int, tensors: tuple, scalars: tuple, config: tuple, device_index: int) -> None:
    if not _DIRECT:
        # no way to tell a first call from a later one: every call is made one at a time
        with _FIRST_CALL:
            kernel[(programs,)](*tensors, *scalars, **dict(config))
        return
    pointers = tuple(map(_data_ptr, tensors))
    key = (
        kernel,
        config,
        device_index,
        _scalars_spec(scalars),
        tuple(map(_dtype, tensors)),
        tuple([pointer % 16 == 0 for pointer in pointers]),
    )
    entry = _compiled.get(key)
    if entry is None:
        with _FIRST_CALL:
            entry = _compiled.get(key)
            if entry is None:
                compiled = kernel[(programs,)](*tensors, *scalars, **dict(config))
                if hasattr(compiled, "result"):
                    compiled = compiled.result()
                named = dict(config)
                constexprs = tuple(named[name] for name in kernel.arg_names[len(tensors) + len(scalars) :])
                _compiled[key] = (compiled, constexprs)
                return
    compiled, constexprs = entry
    stream = _current_stream(device_index)
    enter, leave = _hook(knobs.runtime.launch_enter_hook), _hook(knobs.runtime.launch_exit_hook)
    metadata = None
    if enter is not None or leave is not None:
        metadata = compiled.launch_metadata((programs, 1, 1), stream, *tensors, *scalars, *constexprs)
    # the pointers as integers, which Triton's launchers (3.4 to 3.9) take as they are: given a
    # tensor, they call data_ptr() and ask the driver about the pointer (cuPointerGetAttribute,
    # which would also refuse a CPU tensor's; the backend hands only its device's CUDA tensors)
    compiled.run(
        programs,
        1,
        1,
        stream,
        compiled.function,
        compiled.packed_metadata,
        metadata,
        enter,
        leave,
        *pointers,
        *scalars,
        *constexprs,
    )
