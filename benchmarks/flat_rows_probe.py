"""Device probe for short rows off 16-byte boundaries: the flat_rows tier against the warp tier
(both forced), "auto", the Triton backend, torch.softmax and torch.compile(torch.softmax), on
channels-last images softmaxed over channels and on dense rows of odd lengths. Each case is first
checked against float64 with poisoned outputs, for both tiers, forward and backward.

    PYTHONPATH=$PWD python benchmarks/flat_rows_probe.py [--dtypes bfloat16,float32] [--backward]
"""

from __future__ import annotations

import argparse
import json
import os
import sys

import torch

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.benchmark import layouts

#: (label, logical shape, dim, channels-last): NCHW heads over C, and (rows, n) over n
CASES = [
    ("(16,21,512,512) d1 cl", (16, 21, 512, 512), 1, True),
    ("(8,19,256,512) d1 cl", (8, 19, 256, 512), 1, True),
    ("(32,3,512,512) d1 cl", (32, 3, 512, 512), 1, True),
    ("(4194304,21) d1", (1 << 22, 21), 1, False),
    ("(4194304,3) d1", (1 << 22, 3), 1, False),
    ("(2097152,33) d1", (1 << 21, 33), 1, False),
    ("(1048576,63) d1", (1 << 20, 63), 1, False),
    ("(2097152,50) d1", (1 << 21, 50), 1, False),
    ("(4194304,8) d1", (1 << 22, 8), 1, False),
    ("(1048576,64) d1", (1 << 20, 64), 1, False),
    # past 64 columns: lanes of 32 slots, a row over 4-32 lanes
    ("(8,150,128,128) d1 cl", (8, 150, 128, 128), 1, True),
    ("(1048576,100) d1", (1 << 20, 100), 1, False),
    ("(524288,255) d1", (1 << 19, 255), 1, False),
    ("(262144,501) d1", (1 << 18, 501), 1, False),
    ("(131072,999) d1", (1 << 17, 999), 1, False),
]
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def make(shape, channels_last, dtype):
    x = (torch.randn(shape, device="cuda") * 3).to(dtype)
    return x.to(memory_format=torch.channels_last) if channels_last else x


def check(x, dim, tier) -> float:
    """Worst relative error of the tier (forward, then backward) against float64, its outputs
    poisoned with NaN so that an element a kernel forgot shows."""
    fastsoftmax._layout.new_empty_like = lambda t, **kw: torch.empty_like(t, **kw).fill_(float("nan"))
    try:
        return _worst_error(x, dim, tier)
    finally:
        fastsoftmax._layout.new_empty_like = torch.empty_like


def _worst_error(x, dim, tier) -> float:
    worst = 0.0
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        ref_op = torch.log_softmax if log else torch.softmax
        with dispatch.forced("cuda", tier):
            y = op(x, dim)
            leaf = x.detach().requires_grad_()
            dy = torch.randn_like(x)
            (dx,) = torch.autograd.grad(op(leaf, dim), leaf, dy)
        x64 = x.double().requires_grad_()
        ref = ref_op(x64, dim)
        (ref_dx,) = torch.autograd.grad(ref, x64, dy.double())
        for ours, theirs in ((y, ref), (dx, ref_dx)):
            err = (ours.double() - theirs).norm() / theirs.norm().clamp_min(1e-30)
            worst = max(worst, float(err) if not ours.isnan().any() else float("inf"))
    return worst


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--backward", action="store_true")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    parser.add_argument("--cases", help="run only the cases whose label holds one of these (comma-separated)")
    args = parser.parse_args()
    torch._dynamo.config.recompile_limit = 1 << 20
    torch._dynamo.config.cache_size_limit = 1 << 20
    rows, failures = [], 0
    names = ["warp", "flat_rows", "auto", "triton", "torch", "compile"]
    for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
        copy = layouts.copy_gbps(dtype)
        print(f"copy {dtype}: {copy:.0f} GB/s", flush=True)
        for label, shape, dim, cl in CASES:
            if args.cases and not any(part in label for part in args.cases.split(",")):
                continue
            x = make(shape, cl, dtype)
            for tier in ("warp", "flat_rows"):
                err = check(x, dim, tier)
                ok = err <= TOL[dtype]
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {label} {dtype} {tier}: {err:.2e}", flush=True)
            for backward in (False, True) if args.backward else (False,):
                inputs = [(make(shape, cl, dtype),) for _ in range(2)]
                if backward:
                    inputs = [(torch.softmax(a.float(), dim).to(dtype), torch.randn_like(a)) for (a,) in inputs]
                    if cl:
                        inputs = [tuple(t.contiguous(memory_format=torch.channels_last) for t in i) for i in inputs]
                floor = (3 if backward else 2) * x.numel() * x.element_size()
                fns = {}
                for tier in ("warp", "flat_rows"):
                    fns[tier] = _forced(tier, dim, backward)
                fns["auto"] = _public(dim, backward, "auto")
                fns["triton"] = _public(dim, backward, "triton")
                if not backward:
                    fns["torch"] = lambda a: torch.softmax(a, dim)
                    fns["compile"] = torch.compile(lambda a: torch.softmax(a, dim))
                row = {"case": label, "dtype": str(dtype)[6:], "direction": "backward" if backward else "forward"}
                for name, fn in fns.items():
                    try:
                        ms = layouts.time_ms(fn, inputs)
                        row[name] = round(floor / ms / 1e6 / copy, 3)
                    except Exception as exc:
                        row[name] = None
                        row[name + "_error"] = f"{type(exc).__name__}: {exc}"[:200]
                rows.append(row)
                cells = " ".join(f"{row[n]:9.2f}" if row.get(n) is not None else f"{'-':>9}" for n in names)
                print(f"{label:26} {row['dtype']:9} {row['direction'][:3]} {cells}", flush=True)
    print(f"{'case':26} {'dtype':9} dir " + " ".join(f"{n:>9}" for n in names))
    with open(os.path.join(args.out, "flat_rows_probe.json"), "w") as out:
        json.dump(rows, out, indent=1)
    print(f"checks: {failures} failures")
    return 1 if failures else 0


def _forced(tier, dim, backward):
    if backward:

        def run(y, dy):
            with dispatch.forced("cuda", tier):
                return fastsoftmax.softmax_backward(dy, y, dim)

        return run

    def run(x):
        with dispatch.forced("cuda", tier):
            return fastsoftmax.softmax(x, dim)

    return run


def _public(dim, backward, backend):
    if backward:
        return lambda y, dy: fastsoftmax.softmax_backward(dy, y, dim, backend=backend)
    return lambda x: fastsoftmax.softmax(x, dim, backend=backend)


if __name__ == "__main__":
    sys.exit(main())
