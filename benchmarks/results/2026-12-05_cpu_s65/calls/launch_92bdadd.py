"""Launch compiled Triton kernels with a fraction of ``JITFunction.run``'s host work.

``kernel[grid](...)`` binds every argument, computes a specialisation key in a generic way and
looks the compiled kernel up on each call; for a softmax over a small tensor that host work takes
longer than the kernel. Here the first launch of a configuration goes through Triton as usual and
returns the compiled kernel; later launches look it up under a key this module computes from the
same facts Triton specialises on (each integer's ==1, %16 and 32-bit range; each pointer's
16-byte alignment and dtype) and call the compiled launcher directly.

The direct call is the one ``JITFunction.run`` itself makes (Triton 3.3 and later); if the
installed Triton's ``run`` does not contain it, every launch takes the ordinary path.
"""

from __future__ import annotations

import inspect
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
except AttributeError:  # pragma: no cover - CPU-only builds of torch

    def _current_device():
        return -1


def _spec(arg):
    """What Triton specialises a compiled kernel on, for one runtime argument: a tensor's dtype and
    16-byte alignment; an integer's being 1, its divisibility by 16 and whether it fits int32; a
    float's and a bool's type only. (A range test such as ``x in range(...)`` would walk the range
    for a float: minutes per call.)"""
    kind = type(arg)
    if kind is int:
        return int, arg == 1, arg % 16 == 0, _INT32_MIN <= arg <= _INT32_MAX
    if isinstance(arg, torch.Tensor):
        return arg.dtype, arg.data_ptr() % 16 == 0
    if kind is float or kind is bool or arg is None:
        return kind
    raise TypeError(f"fastsoftmax: a Triton kernel argument of type {kind.__name__} is not supported")


def launch(kernel, programs: int, args: tuple, config: tuple, device_index: int | None, interpreted: bool) -> None:
    """Launch ``kernel`` over ``programs`` programs with the runtime ``args`` (its leading
    parameters, in order) on the tensors' device ``device_index``. ``config`` holds the constexpr
    parameters (its trailing ones) and the compile options as hashable ``(name, value)`` pairs."""
    if interpreted:
        kernel[(programs,)](*args, **dict(config))
        return
    if _current_device() != device_index:
        # Triton compiles for, loads into and launches on the current device: make it the
        # tensors' for this launch, and give the caller's back
        with torch.cuda.device(device_index):
            _launch(kernel, programs, args, config, device_index)
        return
    _launch(kernel, programs, args, config, device_index)


def _launch(kernel, programs: int, args: tuple, config: tuple, device_index: int) -> None:
    if not _DIRECT:
        # no way to tell a first call from a later one: every call is made one at a time
        with _FIRST_CALL:
            kernel[(programs,)](*args, **dict(config))
        return
    key = (kernel, config, device_index, tuple(map(_spec, args)))
    entry = _compiled.get(key)
    if entry is None:
        with _FIRST_CALL:
            entry = _compiled.get(key)
            if entry is None:
                compiled = kernel[(programs,)](*args, **dict(config))
                if hasattr(compiled, "result"):
                    compiled = compiled.result()
                named = dict(config)
                constexprs = tuple(named[name] for name in kernel.arg_names[len(args) :])
                _compiled[key] = (compiled, constexprs)
                return
    compiled, constexprs = entry
    stream = torch._C._cuda_getCurrentRawStream(device_index)
    enter_hook = knobs.runtime.launch_enter_hook
    values = args + constexprs
    metadata = compiled.launch_metadata((programs, 1, 1), stream, *values) if enter_hook is not None else None
    compiled.run(
        programs,
        1,
        1,
        stream,
        compiled.function,
        compiled.packed_metadata,
        metadata,
        enter_hook,
        knobs.runtime.launch_exit_hook,
        *values,
    )
