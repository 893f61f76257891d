"""The host work of a repeated Triton launch (fastsoftmax/backends/triton/launch.py).

Without a GPU: ``launch()`` as on a GPU after the first call, with a stand-in for the compiled
kernel whose launcher does what Triton's does in Python (call the launch hooks it is handed) and
nothing else. Not counted there: the C launcher's own work, which on a GPU also calls ``data_ptr()``
and ``cuPointerGetAttribute`` for each pointer handed as a tensor (the launch path now hands
integers). On a GPU: whole calls on the Triton backend, the wall time a call of back-to-back calls
(``host_us_per_call``, 2000 calls), with the backend's launch taken from each copy in turn.

    PYTHONPATH=$PWD python3 benchmarks/triton_launch_probe.py [--against FILE] [--out FILE]

``--against`` times another copy of launch.py beside the installed one, in the same rounds (an
earlier one: ``git show REV:path > FILE``); its ``launch`` may take the arguments as one tuple, as
launch.py did before it took tensors and scalars apart. Each figure is the median of 7 rounds, the
cases and copies in a new order each round.
"""

from __future__ import annotations

import argparse
import importlib.util
import inspect
import pathlib
import random
import statistics
import sys
import time

import torch
from probe_report import Report  # benchmarks/ is the script's folder
from triton.compiler.compiler import CompiledKernel

ROUNDS, LAUNCHES = 7, 20000


class Source:
    """A compiled kernel's source that is not an ASTSource: launch_metadata stops at its LazyDict,
    as it does for kernels without a launch_metadata function of their own (these)."""


class Compiled:
    """What the launch path uses of a CompiledKernel, with Triton's own ``launch_metadata``."""

    name, function, packed_metadata, src = "kernel", 1, (4, 1, 0), Source()
    launch_metadata = CompiledKernel.launch_metadata

    def _init_handles(self):
        pass

    def run(self, grid_x, grid_y, grid_z, stream, function, packed, metadata, enter, leave, *args):
        if enter is not None:
            enter(metadata)
        if leave is not None:
            leave(metadata)


class Kernel:
    def __init__(self, arg_names):
        self.arg_names = arg_names

    def __getitem__(self, grid):
        return lambda *args, **config: Compiled()


def _module(path: str | None):
    if path is None:
        return importlib.import_module("fastsoftmax.backends.triton.launch")
    spec = importlib.util.spec_from_file_location("launch_under_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cases():
    """(name, tensors, scalars, constexpr names): the tile forward's launch and the split forward's
    second one, as the backend makes them."""
    x, y = torch.empty(64, 1024, dtype=torch.bfloat16), torch.empty(64, 1024, dtype=torch.float32)
    maxima, sums = torch.empty(2, 64, 8, 1).unbind(0)
    yield "tile forward (2 tensors, 8 scalars)", (x, y), (64, 1024, 1, 1024, 1, 1, 1024, 1), 6
    yield "split forward (4 tensors, 10 scalars)", (x, y, maxima, sums), (64, 1024, 1, 1024, 1, 1, 1024, 1, 8, 128), 5


def _calls(module) -> list:
    """(case name, launch arguments) of each case, each case's first call made (it "compiles")."""
    module._current_device = lambda: 0
    module._current_stream = lambda device_index: 0
    if not hasattr(torch._C, "_cuda_getCurrentRawStream"):  # what earlier copies call for the stream
        torch._C._cuda_getCurrentRawStream = module._current_stream
    split_arguments = "scalars" in inspect.signature(module.launch).parameters
    found = []
    for name, tensors, scalars, constexprs in cases():
        names = [f"a{k}" for k in range(len(tensors) + len(scalars))] + [f"C{k}" for k in range(constexprs)]
        kernel, config = Kernel(names), tuple((f"C{k}", k) for k in range(constexprs)) + (("num_warps", 4),)
        if split_arguments:
            call = (kernel, 64, tensors, scalars, config, 0, False)
        else:
            call = (kernel, 64, tensors + scalars, config, 0, False)
        module.launch(*call)
        found.append((name, call))
    return found


def _adapted(module):
    """``module.launch`` as the backend calls it (tensors and scalars apart)."""
    if "scalars" in inspect.signature(module.launch).parameters:
        return module.launch
    return lambda kernel, programs, tensors, scalars, *rest: module.launch(kernel, programs, tensors + scalars, *rest)


def gpu_cases():
    """(name, call) of whole calls on the Triton backend, on a GPU."""
    from fastsoftmax import softmax, softmax_backward

    triton = {"backend": "triton"}
    rows = torch.randn(4, 1024, device="cuda").to(torch.bfloat16)
    long_rows = torch.randn(4, 65536, device="cuda").to(torch.bfloat16)
    y, dy = softmax(rows, -1, **triton), torch.randn_like(rows)
    yield "bf16 4 x 1024 forward", lambda: softmax(rows, -1, **triton)
    yield "bf16 4 x 1024 backward", lambda: softmax_backward(dy, y, -1, **triton)
    yield "bf16 4 x 1024 dtype=float32", lambda: softmax(rows, -1, dtype=torch.float32, **triton)
    yield "bf16 4 x 65536 forward (split: 2 launches)", lambda: softmax(long_rows, -1, **triton)
    yield "bf16 1024 x 4 over dim 0", lambda: softmax(rows.t(), 0, **triton)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--against", help="a copy of launch.py to time beside the installed one")
    parser.add_argument("--out")
    args = parser.parse_args()
    modules = {"installed": _module(None)}
    if args.against:
        modules[pathlib.Path(args.against).stem] = _module(args.against)
    if not all(module._DIRECT for module in modules.values()):
        sys.exit("the installed Triton's JITFunction.run has no direct launch: nothing to time")
    report = Report()
    on_gpu = torch.cuda.is_available()
    if on_gpu:
        from fastsoftmax.backends import triton as backend
        from fastsoftmax.benchmark.timing import host_us_per_call

        kept = backend.launch
        found = []
        for label, module in modules.items():
            backend.launch = _adapted(module)
            found += [(label, name, backend.launch, call) for name, call in gpu_cases()]

        def timed(launch, call):
            backend.launch = launch
            try:
                return host_us_per_call(call, LAUNCHES // 10)
            finally:
                backend.launch = kept

        unit, where = "us a call", f"{torch.cuda.get_device_name()}'s host: whole calls, wall time"
    else:
        found = [
            (label, name, module.launch, call) for label, module in modules.items() for name, call in _calls(module)
        ]

        def timed(launch, call):
            start = time.perf_counter()
            for _ in range(LAUNCHES):
                launch(*call)
            return (time.perf_counter() - start) / LAUNCHES * 1e6

        unit, where = "us a launch", "this machine's CPU, no GPU: launch() alone, a stand-in kernel"
    timings = {(label, name): [] for label, name, _, _ in found}
    for _ in range(ROUNDS):
        random.shuffle(found)
        for label, name, launch, call in found:
            timings[label, name].append(timed(launch, call))
    report.say(f"torch {torch.__version__}; {where}; median of {ROUNDS} rounds")
    for (label, name), values in sorted(timings.items(), key=lambda item: (item[0][1], item[0][0])):
        report.say(f"{name:45s} {label:24s} {statistics.median(values):6.2f} {unit}")
    report.write(args.out)


if __name__ == "__main__":
    main()
