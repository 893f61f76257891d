"""Device probe for rows off 16-byte boundaries: the row tiers that hold them, forced (flat_rows;
warp and block_regs with their rows in the 16-byte packs of their aligned window, and with
":narrow" packs as wide as the rows' alignment), against "auto", the Triton backend, torch.softmax
and torch.compile(torch.softmax), on channels-last images softmaxed over channels and on dense rows
of odd lengths. Each forced variant is first checked against float64 with poisoned outputs,
forward and backward. The variants of a case are timed in turn, round after round, in one process.

    PYTHONPATH=$PWD python benchmarks/flat_rows_probe.py [--dtypes bfloat16,float32] [--backward]
        [--cases "(1048576,100);(524288,255)"] [--variants warp,warp:narrow,block_regs@block_regs_elems=8,auto]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys

import torch

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.cuda import BACKEND, tiers
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
    ("(8388608,8) d1", (1 << 23, 8), 1, False),
    ("(16777216,4) d1", (1 << 24, 4), 1, False),
    ("(4194304,16) d1", (1 << 22, 16), 1, False),
    ("(1048576,64) d1", (1 << 20, 64), 1, False),
    # past 64 columns: lanes of 32 slots, a row over 4-32 lanes
    ("(8,150,128,128) d1 cl", (8, 150, 128, 128), 1, True),
    ("(1048576,100) d1", (1 << 20, 100), 1, False),
    ("(524288,255) d1", (1 << 19, 255), 1, False),
    ("(262144,501) d1", (1 << 18, 501), 1, False),
    ("(131072,999) d1", (1 << 17, 999), 1, False),
    # router-like and odd widths (MoE: 60 or 160 experts), and odd rows past the warp tier
    ("(4194304,9) d1", (1 << 22, 9), 1, False),
    ("(4194304,5) d1", (1 << 22, 5), 1, False),
    ("(4194304,13) d1", (1 << 22, 13), 1, False),
    ("(1048576,72) d1", (1 << 20, 72), 1, False),
    ("(2097152,37) d1", (1 << 21, 37), 1, False),
    ("(2097152,45) d1", (1 << 21, 45), 1, False),
    ("(1048576,60) d1", (1 << 20, 60), 1, False),
    ("(1048576,74) d1", (1 << 20, 74), 1, False),
    ("(1048576,122) d1", (1 << 20, 122), 1, False),
    ("(1048576,150) d1", (1 << 20, 150), 1, False),
    ("(524288,200) d1", (1 << 19, 200), 1, False),
    ("(524288,254) d1", (1 << 19, 254), 1, False),
    ("(1048576,127) d1", (1 << 20, 127), 1, False),
    ("(524288,160) d1", (1 << 19, 160), 1, False),
    ("(262144,300) d1", (1 << 18, 300), 1, False),
    ("(131072,700) d1", (1 << 17, 700), 1, False),
    ("(65536,2047) d1", (1 << 16, 2047), 1, False),
    ("(32768,3001) d1", (1 << 15, 3001), 1, False),
    ("(16384,5001) d1", (1 << 14, 5001), 1, False),
    ("(8192,16383) d1", (1 << 13, 16383), 1, False),
]
#: what is timed: forced tiers ("tier" holds rows in their window where the tier has one,
#: "tier:narrow" in packs as wide as their alignment), then the public paths and torch
VARIANTS = "warp,warp:narrow,flat_rows,block_regs,block_regs:narrow,auto,triton,torch,compile"
TOL = {torch.float32: 1e-5, torch.bfloat16: 1e-2, torch.float16: 2e-3}


def make(shape, channels_last, dtype):
    x = (torch.randn(shape, device="cuda") * 3).to(dtype)
    return x.to(memory_format=torch.channels_last) if channels_last else x


def check(x, dim, variant) -> float:
    """Worst relative error of a forced variant (forward, then backward) against float64, its
    outputs poisoned with NaN so that an element a kernel forgot shows."""
    fastsoftmax._layout.new_empty_like = lambda t, **kw: torch.empty_like(t, **kw).fill_(float("nan"))
    try:
        return _worst_error(x, dim, variant)
    finally:
        fastsoftmax._layout.new_empty_like = torch.empty_like


@contextlib.contextmanager
def _forcing(variant):
    """``tier[:narrow][@field=value]``: the tier forced, rows in their window's packs (or narrow
    ones), and an integer field of the backend's tuning set (e.g. block_regs@block_regs_elems=8)."""
    spec, _, tuned = variant.partition("@")
    tier, _, form = spec.partition(":")
    fields = {key: int(value) for key, _, value in (item.partition("=") for item in tuned.split("+") if item)}
    with dispatch.forced("cuda", tier), tiers.tuned(row_window=form != "narrow", **fields):
        yield


def _supported(variant, x, dim) -> bool:
    n = x.shape[dim]
    outer = x.numel() // n
    tier = variant.partition("@")[0].partition(":")[0]
    return all(BACKEND.supports(tier, outer, n, 1, x.dtype, backward) for backward in (False, True))


def _worst_error(x, dim, variant) -> float:
    worst = 0.0
    for log in (False, True):
        op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
        ref_op = torch.log_softmax if log else torch.softmax
        with _forcing(variant):
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
    parser.add_argument("--cases", help="run only the cases whose label holds one of these (';'-separated)")
    parser.add_argument("--variants", default=VARIANTS, help=f"what is timed (default {VARIANTS})")
    args = parser.parse_args()
    torch._dynamo.config.recompile_limit = 1 << 20
    torch._dynamo.config.cache_size_limit = 1 << 20
    rows, failures = [], 0
    names = args.variants.split(",")
    public = {"auto", "triton", "torch", "compile"}
    for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
        copy = layouts.copy_gbps(dtype)
        print(f"copy {dtype}: {copy:.0f} GB/s", flush=True)
        for label, shape, dim, cl in CASES:
            if args.cases and not any(part in label for part in args.cases.split(";")):
                continue
            x = make(shape, cl, dtype)
            forced = [v for v in names if v not in public and _supported(v, x, dim)]
            for variant in forced:
                err = check(x, dim, variant)
                ok = err <= TOL[dtype]
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {label} {dtype} {variant}: {err:.2e}", flush=True)
            for backward in (False, True) if args.backward else (False,):
                inputs = [(make(shape, cl, dtype),) for _ in range(2)]
                if backward:
                    inputs = [(torch.softmax(a.float(), dim).to(dtype), torch.randn_like(a)) for (a,) in inputs]
                    if cl:
                        inputs = [tuple(t.contiguous(memory_format=torch.channels_last) for t in i) for i in inputs]
                floor = (3 if backward else 2) * x.numel() * x.element_size()
                fns = {v: _forced(v, dim, backward) for v in forced}
                for name in ("auto", "triton"):
                    if name in names:
                        fns[name] = _public(dim, backward, name)
                if not backward and "torch" in names:
                    fns["torch"] = lambda a: torch.softmax(a, dim)
                if not backward and "compile" in names:
                    fns["compile"] = torch.compile(lambda a: torch.softmax(a, dim))
                row = {"case": label, "dtype": str(dtype)[6:], "direction": "backward" if backward else "forward"}
                for name, ms in _time_in_turn(fns, inputs, row).items():
                    row[name] = round(floor / ms / 1e6 / copy, 3)
                rows.append(row)
                cells = " ".join(f"{row[n]:9.2f}" if row.get(n) is not None else f"{'-':>9}" for n in names)
                print(f"{label:26} {row['dtype']:9} {row['direction'][:3]} {cells}", flush=True)
    print(f"{'case':26} {'dtype':9} dir " + " ".join(f"{n:>9}" for n in names))
    with open(os.path.join(args.out, "flat_rows_probe.json"), "w") as out:
        json.dump(rows, out, indent=1)
    print(f"checks: {failures} failures")
    return 1 if failures else 0


def _time_in_turn(fns, inputs, row, rounds: int = 5) -> dict:
    """Median milliseconds of each function, timed one after another in each of ``rounds`` rounds
    (so that a clock or thermal drift reaches every variant alike); a failure is noted in ``row``."""
    times = {name: [] for name in fns}
    for _ in range(rounds):
        for name, fn in fns.items():
            if name + "_error" in row:
                continue
            try:
                times[name].append(layouts.time_ms(fn, inputs, reps=1))
            except Exception as exc:
                row[name + "_error"] = f"{type(exc).__name__}: {exc}"[:200]
    return {name: sorted(t)[len(t) // 2] for name, t in times.items() if t and name + "_error" not in row}


def _forced(variant, dim, backward):
    if backward:

        def run(y, dy):
            with _forcing(variant):
                return fastsoftmax.softmax_backward(dy, y, dim)

        return run

    def run(x):
        with _forcing(variant):
            return fastsoftmax.softmax(x, dim)

    return run


def _public(dim, backward, backend):
    if backward:
        return lambda y, dy: fastsoftmax.softmax_backward(dy, y, dim, backend=backend)
    return lambda x: fastsoftmax.softmax(x, dim, backend=backend)


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    sys.exit(main())
