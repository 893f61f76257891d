"""The host path's Python work, on a machine without a GPU: the public calls on CPU tensors with the
Triton backend (TRITON_INTERPRET=1), each kernel launch replaced by a no-op, so that what is timed
is the checks, the choices, the plans and the allocations, not the kernels.

    TRITON_INTERPRET=1 PYTHONPATH=$PWD python3 benchmarks/host_cpu_probe.py [--out FILE]

Each figure is the median over 7 rounds of the wall time a call of 3000 back-to-back calls; the
rounds take the cases in a new order each time. ``torch.empty_like`` of the result is timed beside
them (in the same autocast context, and after the same cast, where the call has them): what a call
costs beyond that is the library's own work. Figures of this
machine's CPU only; a GPU host's differ (its launch, its allocator), so compare cases, not machines.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import time

os.environ.setdefault("TRITON_INTERPRET", "1")

import torch  # noqa: E402

import fastsoftmax  # noqa: E402
from fastsoftmax.backends import triton as triton_backend  # noqa: E402

ROUNDS, CALLS = 7, 3000


def _per_call_us(fn) -> float:
    start = time.perf_counter()
    for _ in range(CALLS):
        fn()
    return (time.perf_counter() - start) / CALLS * 1e6


def cases():
    """(name, call, the result's allocation alone)."""
    rows = torch.randn(64, 1024).to(torch.bfloat16)
    long_rows = torch.randn(4, 65536).to(torch.bfloat16)  # the split tier: two launches
    columns = torch.randn(64, 1024).to(torch.bfloat16).t()
    f32 = torch.float32
    triton = {"backend": "triton"}
    autocast_on = ("cpu",)

    def under_autocast(fn):
        def call():
            with torch.autocast("cpu", dtype=torch.bfloat16):
                return fn()

        return call

    yield "bf16 64 x 1024, plain", lambda: fastsoftmax.softmax(rows, -1, **triton), lambda: torch.empty_like(rows)
    yield (
        "bf16 64 x 1024, dtype=float32 (one pass)",
        lambda: fastsoftmax.softmax(rows, -1, dtype=f32, **triton),
        lambda: torch.empty_like(rows, dtype=f32),
    )
    yield (
        "bf16 64 x 1024, dtype=float32 (cast first, auto)",
        lambda: fastsoftmax.softmax(rows, -1, dtype=f32),
        lambda: (rows.to(f32), torch.empty_like(rows, dtype=f32)),
    )
    yield (
        "bf16 4 x 65536, dtype=float32 (one pass, split)",
        lambda: fastsoftmax.softmax(long_rows, -1, dtype=f32, **triton),
        lambda: torch.empty_like(long_rows, dtype=f32),
    )
    yield (
        "bf16 1024 x 64 over dim 0, dtype=float32 (one pass)",
        lambda: fastsoftmax.softmax(columns, 0, dtype=f32, **triton),
        lambda: torch.empty_like(columns, dtype=f32),
    )
    if fastsoftmax.functional.AUTOCAST_TO_FLOAT32 == autocast_on:
        yield (
            "bf16 64 x 1024 under autocast (one pass)",
            under_autocast(lambda: fastsoftmax.softmax(rows, -1, **triton)),
            under_autocast(lambda: torch.empty_like(rows, dtype=f32)),
        )
    out = torch.empty_like(rows)
    yield "bf16 64 x 1024, out=", lambda: fastsoftmax.softmax(rows, -1, out=out, **triton), lambda: None
    leaf, gradient = rows.clone().requires_grad_(True), torch.randn(rows.shape)

    def with_graph():  # forward and backward
        return torch.autograd.grad(fastsoftmax.softmax(leaf, -1, dtype=f32, **triton), leaf, gradient)

    def allocations():  # the result's and the gradient's
        return torch.empty_like(rows, dtype=f32), torch.empty_like(rows)

    yield "bf16 64 x 1024, dtype=float32 (one pass), autograd", with_graph, allocations
    leaf32 = rows.float().requires_grad_(True)

    def float32_with_graph():  # beside it: a float32 input's, whose plans both ways predate this case
        return torch.autograd.grad(fastsoftmax.softmax(leaf32, -1, **triton), leaf32, gradient)

    def float32_allocations():
        return torch.empty_like(leaf32), torch.empty_like(leaf32)

    yield "f32 64 x 1024, autograd", float32_with_graph, float32_allocations
    y32, dy32 = fastsoftmax.softmax(rows.float(), -1, **triton), torch.randn(rows.shape)
    yield (
        "f32 64 x 1024, softmax_backward",
        lambda: fastsoftmax.softmax_backward(dy32, y32, -1, backend="triton"),
        lambda: torch.empty_like(y32),
    )


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--autocast-cpu", action="store_true", help="count CPU autocast as CUDA's (float32 result)")
    args = parser.parse_args()
    if args.autocast_cpu:
        fastsoftmax.functional.AUTOCAST_TO_FLOAT32 = ("cpu",)
    triton_backend.launch = lambda *args: None  # the launches themselves: not timed
    found = list(cases())
    timings = {name: ([], []) for name, _, _ in found}
    for _ in range(ROUNDS):
        random.shuffle(found)
        for name, call, allocation in found:
            call(), allocation()
            timings[name][0].append(_per_call_us(call))
            timings[name][1].append(_per_call_us(allocation))
    lines = [f"torch {torch.__version__}, this machine's CPU; launches not made; median of {ROUNDS} rounds"]
    for name, (call, allocation) in sorted(timings.items()):
        whole, alone = statistics.median(call), statistics.median(allocation)
        lines.append(f"{name:55s} {whole:6.2f} us a call, {whole - alone:6.2f} beyond the allocation")
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as handle:
            handle.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
