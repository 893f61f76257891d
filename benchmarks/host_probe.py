"""Where the host time of a small softmax goes, on a GPU: whole calls beside their parts, and the
kernel launch made several ways, all in one process on a 4x1024 bf16 tensor.

    PYTHONPATH=$PWD python3 benchmarks/host_probe.py [--out FILE]

Each figure is the median over 7 rounds of the wall time per call of 2000 back-to-back calls (no
synchronisation inside the loop), the measure of BENCHMARK.md; the rounds interleave the cases, so
a slow spell of the host touches them all alike.
"""

from __future__ import annotations

import argparse
import statistics

import torch

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.cuda import backend as cuda_backend
from fastsoftmax.benchmark.timing import host_us_per_call

ROUNDS = 7
EMPTY = 'extern "C" __global__ void fs_empty(long long a, long long b, long long c, long long d, long long e, long long f) {}\n'


def launches(x, y):
    """A _Launch of the 4x1024 warp kernel through each launch path, checked for a right result."""
    out = {}
    for mode in cuda_backend.LAUNCH_MODES:
        cuda_backend._DRIVER_STATE["driver"] = None if mode == "core" else cuda_backend._Driver(mode)
        cuda_backend.BACKEND._plans.clear()
        run = cuda_backend.BACKEND.prepare_forward("warp", (4, 1024, 1), (1024, 1024, 1), (1024, 1024, 1),
                                                   torch.bfloat16, 0)
        y.fill_(float("nan"))
        run(x, y, False)
        torch.cuda.synchronize()
        ok = torch.allclose(y.float(), torch.softmax(x.float(), -1), atol=1e-2)
        plan = next(p for k, p in cuda_backend.BACKEND._plans.items() if k[0] == "warp" and k[2] == 1024)
        out[mode] = (plan.launch, ok)
    cuda_backend._DRIVER_STATE.pop("driver")
    cuda_backend.BACKEND._plans.clear()
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    lines = []

    def say(line):
        lines.append(line)
        print(line, flush=True)

    x = (torch.randn(4, 1024, device="cuda") * 3).to(torch.bfloat16)
    y = torch.empty_like(x)
    args6 = (x.data_ptr(), y.data_ptr(), 4, 1024, 1024, 1024)
    by_mode = launches(x, y)
    say("launch paths give the right result: " + ", ".join(f"{m} {ok}" for m, (_, ok) in by_mode.items()))

    fastsoftmax.softmax(x, backend="cuda")
    fastsoftmax.softmax(x)
    fastsoftmax.softmax(x, backend="triton")
    key = (x.shape, x.stride(), x.dtype, x.device, 1, "cuda")
    plan = dispatch.PLANS[key]
    run = cuda_backend.BACKEND.prepare_forward("warp", (4, 1024, 1), (1024, 1024, 1), (1024, 1024, 1),
                                               torch.bfloat16, 0)
    auto_tier = dispatch.resolve("auto", x.device, x.dtype, 4, 1024, 1, False)
    say(f"auto resolves 4x1024 bf16 to {type(auto_tier[0]).__name__} {auto_tier[1]}")

    from cuda.bindings import driver

    bindings_launch = by_mode["bindings"][0]
    function, params = bindings_launch.function, bindings_launch.params
    cu_launch = driver.cuLaunchKernel

    stream0 = driver.CUstream(0)

    def bare_bindings():
        return cu_launch(function, 1, 1, 1, 128, 1, 1, 0, 0, params, 0)

    def bare_bindings_stream_object():
        return cu_launch(function, 1, 1, 1, 128, 1, 1, 0, stream0, params, 0)

    cases = {
        "torch.softmax": lambda: torch.softmax(x, -1),
        "fastsoftmax.softmax (auto)": lambda: fastsoftmax.softmax(x),
        "fastsoftmax.softmax (cuda)": lambda: fastsoftmax.softmax(x, backend="cuda"),
        "fastsoftmax.softmax (triton)": lambda: fastsoftmax.softmax(x, backend="triton"),
        "  remembered plan(x)": lambda: plan(x, False),
        "  prepared run(x, y)": lambda: run(x, y, False),
        "  torch.empty_like(x)": lambda: torch.empty_like(x),
        "  plan key": lambda: (x.shape, x.stride(), x.dtype, x.device, 1, "cuda"),
        "  raw stream": lambda: cuda_backend._raw_stream(0),
        "  launch: bindings": lambda: by_mode["bindings"][0](1, 0, args6),
        "  launch: ctypes": lambda: by_mode["ctypes"][0](1, 0, args6),
        "  launch: cuda.core": lambda: by_mode["core"][0](1, 0, args6),
        "  cuLaunchKernel (bindings, bare)": bare_bindings,
        "  cuLaunchKernel (bindings, bare, CUstream)": bare_bindings_stream_object,
        "torch x.add_(0)": lambda: x.add_(0),
    }
    try:
        import cupy

        kernel = cupy.RawKernel(EMPTY, "fs_empty")
        cases["cupy RawKernel, empty kernel"] = lambda: kernel((1,), (128,), (1, 2, 3, 4, 5, 6))
        fn_ptr = int(function)
        from cupy.cuda import driver as cupy_driver

        cases["cupy driver.launchKernel (typed args)"] = lambda: cupy_driver.launchKernel(
            fn_ptr, 1, 1, 1, 128, 1, 1, 0, 0, params, 0)
    except Exception as exc:  # noqa: BLE001
        say(f"cupy cases skipped: {exc}")
    timings = {name: [] for name in cases}
    for _ in range(ROUNDS):
        for name, fn in cases.items():
            try:
                timings[name].append(host_us_per_call(fn))
            except Exception as exc:  # noqa: BLE001
                timings[name].append(float("nan"))
                say(f"{name} FAILED {exc}")
    for name, values in timings.items():
        say(f"{name:40s} {statistics.median(values):6.2f} us  (min {min(values):6.2f}, max {max(values):6.2f})")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
