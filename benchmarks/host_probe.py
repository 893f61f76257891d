"""Where the host time of a small softmax goes, on a GPU: whole calls beside their parts, all in
one process on a 4x1024 bf16 tensor.

    PYTHONPATH=$PWD python3 benchmarks/host_probe.py [--out FILE]

Each figure is the median over 7 rounds of the wall time per call of 2000 back-to-back calls (no
synchronisation inside the loop); the rounds interleave the cases in a new order each round, so a
slow spell of the host, or the case run just before, touches them all alike. The last lines
compare fastsoftmax with torch.softmax measured in the same rounds (the goal: at most 1.15x torch's host time).
"""

from __future__ import annotations

import argparse
import random
import statistics

import torch
from probe_report import Report  # benchmarks/ is the script's folder

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.cuda import BACKEND, launch, plans, tiers
from fastsoftmax.benchmark.timing import host_us_per_call

ROUNDS = 7


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    report = Report()
    say = report.say

    x = (torch.randn(4, 1024, device="cuda") * 3).to(torch.bfloat16)
    y = torch.empty_like(x)
    xg = x.clone().requires_grad_(True)
    dy = torch.randn_like(x)
    for backend in ("auto", "cuda", "triton"):
        out = fastsoftmax.softmax(x, backend=backend)
        torch.cuda.synchronize()
        ok = torch.allclose(out.float(), torch.softmax(x.float(), -1), atol=1e-2)
        say(f"fastsoftmax.softmax (backend={backend}) gives the right result: {ok}")
    yg = fastsoftmax.softmax(x, backend="cuda")
    fastsoftmax.softmax_backward(dy, yg, -1, backend="cuda")
    key = (x.shape, x.stride(), x.dtype, x.device, 1, "cuda")
    plan = dispatch.PLANS[key]
    run = fastsoftmax.dispatch.kernel_backend("cuda").prepare(
        "warp", (4, 1024, 1), [(1024, 1024, 1)] * 2, torch.bfloat16, 0, False
    )
    # the bare launch of a bound kernel (arguments packed, no tensor work)
    kernel, grid = plans._row_kernel(
        BACKEND.kernel, "block_regs", torch.bfloat16, 4, 1024, False, False, 16, 0, tiers.DEFAULT_TUNING
    )
    go = kernel.bound(grid, (4, 1024, 1024, 1024))
    pointers, stream = (x.data_ptr(), y.data_ptr()), launch.raw_stream(0)
    say(f"auto resolves 4x1024 bf16 to {dispatch.resolve('auto', x.device, x.dtype, 4, 1024, 1, False)}")

    cases = {
        "torch.softmax": lambda: torch.softmax(x, -1),
        "fastsoftmax.softmax (auto)": lambda: fastsoftmax.softmax(x),
        "fastsoftmax.softmax (cuda)": lambda: fastsoftmax.softmax(x, backend="cuda"),
        "fastsoftmax.softmax (triton)": lambda: fastsoftmax.softmax(x, backend="triton"),
        "torch._softmax_backward_data": lambda: torch._softmax_backward_data(dy, yg, -1, yg.dtype),
        "fastsoftmax.softmax_backward (cuda)": lambda: fastsoftmax.softmax_backward(dy, yg, -1, backend="cuda"),
        "  remembered plan(x)": lambda: plan(x, False),
        "  prepared run(x, y)": lambda: run(x, y, False),
        "  bound go(pointers, stream)": lambda: go(pointers, stream),
        "  torch.empty_like(x)": lambda: torch.empty_like(x),
        "  plan key": lambda: (x.shape, x.stride(), x.dtype, x.device, 1, "cuda"),
        "  launch.enter(0)": lambda: launch.enter(0),
        "  raw stream": lambda: launch.raw_stream(0),
        "torch x.add_(0)": lambda: x.add_(0),
        "autograd forward+backward, torch": lambda: torch.autograd.grad(torch.softmax(xg, -1), xg, dy),
        "autograd forward+backward, fastsoftmax": lambda: torch.autograd.grad(fastsoftmax.softmax(xg, -1), xg, dy),
    }
    timings = {name: [] for name in cases}
    order = list(cases)
    shuffler = random.Random(0)
    for _ in range(ROUNDS):
        # a new order each round: a case that always follows another (a GPU queue it left full, a
        # cache it warmed) would carry that neighbour's effect into every round
        shuffler.shuffle(order)
        for name in order:
            fn = cases[name]
            try:
                timings[name].append(host_us_per_call(fn))
            except Exception as exc:  # noqa: BLE001 - a failing case is reported, the others still run
                timings[name].append(float("nan"))
                say(f"{name} FAILED {exc}")
    medians = {name: statistics.median(values) for name, values in timings.items()}
    for name, values in timings.items():
        say(f"{name:42s} {medians[name]:6.2f} us  (min {min(values):6.2f}, max {max(values):6.2f})")
    base = medians["torch.softmax"]
    for name in ("fastsoftmax.softmax (auto)", "fastsoftmax.softmax (cuda)"):
        say(f"{name} / torch.softmax = {medians[name] / base:.3f} (goal <= 1.15)")
    say(
        f"autograd forward+backward: fastsoftmax / torch = "
        f"{medians['autograd forward+backward, fastsoftmax'] / medians['autograd forward+backward, torch']:.3f}"
    )
    say(
        f"softmax_backward (cuda) / torch._softmax_backward_data = "
        f"{medians['fastsoftmax.softmax_backward (cuda)'] / medians['torch._softmax_backward_data']:.3f}"
    )
    report.write(args.out)


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
