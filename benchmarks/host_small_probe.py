"""Device probe: the pace of back-to-back calls on small problems (rows and strided), with "auto"
as the dispatch table chooses, "auto" pinned to each kernel backend in turn (its plans cached, as
an ordinary call's are), and torch.softmax; forward and backward, bf16.

    PYTHONPATH=$PWD python3 benchmarks/host_small_probe.py

Each figure is the longer of the host's wall time a call (no synchronisation inside the loop) and
the GPU's span a call over 400 calls; "host" gives the former alone.
"""

from __future__ import annotations

import argparse
import time

import torch

import fastsoftmax
from fastsoftmax import dispatch

CASES = [
    ((8, 150, 8, 8), 1),
    ((2, 21, 64, 64), 1),
    ((32, 1000, 49), 1),
    ((4, 64, 32, 32), 1),
    ((16, 512, 16), 1),
    ((256, 512, 64), 1),
    ((8, 150, 32, 32), 1),
    ((2048, 8), 0),
    ((64, 1000), 1),
    ((1000, 50), 0),
    ((4, 1024), 1),
    ((8, 21, 128, 128), 1),
    ((16, 4096, 8), 1),
    ((1, 50257), 1),
    ((32, 8), 0),
]


def pace(fn, args, calls: int = 400) -> tuple[float, float]:
    """(the longer of host and GPU time a call, host time a call), in microseconds."""
    for _ in range(10):
        fn(*args)
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    began = time.perf_counter()
    start.record()
    for _ in range(calls):
        fn(*args)
    end.record()
    host = (time.perf_counter() - began) / calls * 1e6
    end.synchronize()
    return max(host, start.elapsed_time(end) / calls * 1e3), host


TABLE_CHOICE = dispatch._table_choice


def prefer(name: str | None) -> None:
    """Pin "auto" to a kernel backend (None: the table's choice again), from no cached plans."""
    dispatch._table_choice = (lambda *args, **kwargs: name) if name else TABLE_CHOICE
    dispatch.clear_caches()


def functions(dim: int, backward: bool) -> dict:
    if backward:
        return {
            "fastsoftmax": lambda dy, y: fastsoftmax.softmax_backward(dy, y, dim),
            "torch": lambda dy, y: torch._softmax_backward_data(dy, y, dim, y.dtype),
        }
    return {"fastsoftmax": lambda x: fastsoftmax.softmax(x, dim), "torch": lambda x: torch.softmax(x, dim)}


def main() -> None:
    for backward in (False, True):
        for shape, dim in CASES:
            x = torch.randn(shape, device="cuda").bfloat16()
            y = torch.softmax(x.float(), dim).bfloat16()
            args = (torch.randn_like(y), y) if backward else (x,)
            fns = functions(dim, backward)
            out = []
            for label in ("auto", "cuda", "triton", "torch"):
                prefer(label if label in ("cuda", "triton") else None)
                took, host = pace(fns["torch" if label == "torch" else "fastsoftmax"], args)
                out.append(f"{label} {took:6.1f} (host {host:5.1f})")
            prefer(None)
            print(f"{'bwd' if backward else 'fwd'} {str(shape):20} d{dim}  " + "  ".join(out), flush=True)


if __name__ == "__main__":
    # no arguments; --help before the GPU check, which it does not need
    argparse.ArgumentParser(description=__doc__.split("\n\n")[0]).parse_args()
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
