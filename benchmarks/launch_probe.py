"""Where the host time of one kernel launch goes, on a GPU: the same work launched several ways.

    PYTHONPATH=$PWD python3 benchmarks/launch_probe.py [--out FILE]

Each figure is wall time per call over 2000 back-to-back calls (no synchronisation inside the
loop), the measure of BENCHMARK.md; "synced" figures synchronise after every call (latency).
"""

from __future__ import annotations

import argparse
import ctypes
import time

import torch

from fastsoftmax.backends.cuda import backend as cuda_backend
from fastsoftmax.backends.cuda import compiler
from fastsoftmax.benchmark.timing import host_us_per_call

EMPTY = 'extern "C" __global__ void fs_empty(long long a, long long b, long long c, long long d, long long e, long long f) {}\n'


def synced_us(fn, calls: int = 500) -> float:
    for _ in range(20):
        fn()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(calls):
        fn()
        torch.cuda.synchronize()
    return (time.perf_counter() - start) / calls * 1e6


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    lines = []
    CUDA = cuda_backend.BACKEND
    x = torch.randn(4, 1024, device="cuda").to(torch.bfloat16)
    y = torch.empty_like(x)
    run = CUDA.prepare_forward("warp", (4, 1024, 1), (1024, 1024, 1), (1024, 1024, 1), torch.bfloat16, 0)
    run(x, y, False)
    plan = next(p for k, p in CUDA._plans.items() if k[0] == "warp" and k[2] == 1024)
    softmax_launch = plan.launch

    from cuda.core import ObjectCode

    info = CUDA._device(0)
    cubin = compiler.compile_cubin(EMPTY, info.arch, "empty.cu")
    empty_kernel = ObjectCode.from_cubin(cubin, name="fs_empty").get_kernel("fs_empty")
    empty_launch = cuda_backend._Launch(empty_kernel, info.core_device, 6, 128)
    args6 = (x.data_ptr(), y.data_ptr(), 4, 1024, 1024, 1024)
    side = torch.cuda.Stream()
    side_handle = side.cuda_stream

    from cuda.bindings import driver

    fn_handle = driver.CUfunction(softmax_launch.function)
    params = softmax_launch.params

    def bindings_launch():
        softmax_launch.slots[:] = args6
        driver.cuLaunchKernel(fn_handle, 1, 1, 1, 128, 1, 1, 0, 0, ctypes.addressof(params), 0)

    cases = {
        "torch.softmax": lambda: torch.softmax(x, -1),
        "torch x.add_(1)": lambda: x.add_(0),
        "ctypes empty kernel, stream 0": lambda: empty_launch(1, 0, args6),
        "ctypes empty kernel, side stream": lambda: empty_launch(1, side_handle, args6),
        "ctypes softmax kernel, stream 0": lambda: softmax_launch(1, 0, args6),
        "ctypes softmax kernel, side stream": lambda: softmax_launch(1, side_handle, args6),
        "cuda.bindings softmax kernel, stream 0": bindings_launch,
        "prepared run": lambda: run(x, y, False),
    }
    try:
        import cupy

        raw = cupy.RawKernel(EMPTY, "fs_empty")
        cases["cupy empty kernel"] = lambda: raw((1,), (128,), (1, 2, 3, 4, 5, 6))
    except Exception as exc:  # noqa: BLE001
        lines.append(f"cupy unavailable: {exc}")
    for name, fn in cases.items():
        try:
            lines.append(f"{name:40s} back-to-back {host_us_per_call(fn):6.2f} us | synced {synced_us(fn):6.2f} us")
        except Exception as exc:  # noqa: BLE001
            lines.append(f"{name:40s} FAILED {exc}")
        print(lines[-1], flush=True)
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
