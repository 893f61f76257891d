"""Device probe for softmax over strided axes (inner > 1): correctness against float64 with
poisoned outputs, then the layouts regime (fastsoftmax/benchmark/layouts.py) with the CUDA tiers,
Triton, torch and torch.compile side by side, and A/B variants of the staged tier.

    PYTHONPATH=$PWD python benchmarks/strided_probe.py [--check] [--time] [--sanitize] [--out DIR]

--sanitize runs a few small problems once per kernel path (for compute-sanitizer).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import torch

import fastsoftmax
from fastsoftmax import _layout, dispatch
from fastsoftmax.backends.cuda import tiers
from fastsoftmax.backends.cuda.backend import BACKEND
from fastsoftmax.benchmark import layouts

TOL = {torch.float32: 1e-5, torch.float16: 3e-3, torch.bfloat16: 1e-2}


def _poisoned(tensor, **kwargs):
    return torch.empty_like(tensor, **kwargs).fill_(float("nan"))


def make(shape, view, dtype):
    return layouts.LayoutCase("check", "", tuple(shape), 0, view).make(dtype, "cuda")


def rel(out, ref) -> float:
    out, ref = out.double(), ref.double()
    if out.isnan().any() != ref.isnan().any() or (out.isnan() != ref.isnan()).any():
        return float("inf")
    out, ref = torch.nan_to_num(out), torch.nan_to_num(ref)
    return float((out - ref).norm() / ref.norm().clamp_min(1e-30))


CHECKS = [
    # (shape, dim, view): held, split teams, streamed, flat small inner, per-row, odd sizes, views
    ((1, 70000, 64), 1, "contiguous"),
    ((1 << 20, 16), 0, "contiguous"),
    ((8, 777, 24), 1, "offset"),
    ((3, 37, 5), 1, "contiguous"),
    ((2, 1000, 3), 1, "contiguous"),
    ((4, 64, 16), 1, "contiguous"),
    ((7, 9, 130), 1, "contiguous"),
    ((2, 300, 200), 1, "contiguous"),
    ((65536, 2048), 0, "contiguous"),
    ((1 << 20, 128), 0, "contiguous"),
    ((3, 200003, 2), 1, "contiguous"),
    ((8, 21, 64, 64), 1, "contiguous"),
    ((8, 21, 64, 64), 1, "channels_last"),
    ((2, 150, 33, 17), 1, "contiguous"),
    ((64, 4096), 0, "transpose"),
    ((4096, 50), 0, "step"),
    ((16, 300, 40), 1, "expand"),
    ((5, 4096, 1000), 1, "offset"),
    ((1000, 12), 0, "step_inner"),
    # runs of interleaved columns held across a cluster (staged_columns): cluster sizes 2 to 16,
    # ragged last CTAs, one outer index, columns of up to two and four lanes
    ((5, 3000, 8), 1, "contiguous"),
    ((2, 70001, 4), 1, "contiguous"),
    ((3, 4099, 32), 1, "contiguous"),
    ((1, 65536, 16), 1, "contiguous"),
    ((7, 1000, 2), 1, "contiguous"),
    ((2, 30000, 16), 1, "contiguous"),
    ((3, 12345, 8), 1, "offset"),
]


def check(
    tier_names=("strided_staged",), dtypes=(torch.float32, torch.bfloat16, torch.float16), limit=None, tunings=({},)
) -> list[str]:
    _layout.new_empty_like = _poisoned
    failures, lines = [], []
    for shape, dim, view in CHECKS[:limit]:
        for dtype in dtypes:
            for tier, tuning in ((t, u) for t in tier_names for u in tunings):
                probe = make(shape, view, dtype)
                if view == "expand" or _layout.canonical_pair(probe, dim)[0].shape[2] == 1:
                    tier = None  # rows (or a copied view): whatever the backend picks
                worst = 0.0
                for log in (False, True):
                    fn = fastsoftmax.log_softmax if log else fastsoftmax.softmax
                    ref_fn = torch.log_softmax if log else torch.softmax
                    x = make(shape, view, dtype)
                    if view == "expand":
                        before = x.clone()
                    if view != "expand":  # one -inf in some columns: numerics as torch's
                        x[..., :1].select(dim, 0).fill_(float("-inf"))
                    try:
                        BACKEND.clear_plans()
                        with dispatch.forced("cuda", tier), tiers.tuned(**tuning):
                            base = rel(ref_fn(x, dim), ref_fn(x.double(), dim))
                            leaf = x.detach().requires_grad_(view != "expand")
                            y = fn(leaf, dim)
                            err = rel(y, ref_fn(x.double(), dim))
                            if view != "expand":
                                dy = torch.randn_like(y)
                                y.backward(dy)
                                xd = x.double().requires_grad_()
                                ref_fn(xd, dim).backward(dy.double())
                                err = max(err, rel(leaf.grad, xd.grad))
                            else:
                                err = max(err, 0.0 if torch.equal(x, before) else float("inf"))
                    except Exception as exc:
                        err = float("inf")
                        lines.append(f"  error {shape} d{dim} {view} {dtype} {tier} log={log}: {exc!r}"[:300])
                    # torch's own rounding (fp16 outputs far below 1 are subnormal) bounds the error too
                    worst = max(worst, err / max(1.0, 2 * base / TOL[dtype]))
                ok = worst <= TOL[dtype]
                tag = "ok  " if ok else "FAIL"
                name = (tier or "auto") + "".join(f" {k}={v}" for k, v in tuning.items())
                lines.append(f"{tag} {str(shape):22} d{dim} {view:13} {str(dtype)[6:]:9} {name:15} {worst:.2e}")
                print(lines[-1], flush=True)
                if not ok:
                    failures.append(lines[-1])
    _layout.new_empty_like = lambda tensor, **kw: torch.empty_like(tensor, **kw)
    return failures


def _views(case, dtype, backward):
    """Canonical views of fresh tensors, for launches through the backend alone (little host time)."""
    x = case.make(dtype, "cuda")
    if backward:
        # y laid out as x (torch.softmax may return another layout: a transposed x's y comes out
        # row-major, which made the tiers' backward here a row problem)
        y = torch.empty_like(x).copy_(torch.softmax(x.float(), case.dim))
        y3, dy3, dx3, _, _ = _layout.canonical_backward(y, torch.randn_like(y), case.dim)
        return (y3, dy3, dx3)
    x3, y3, _, _ = _layout.canonical_pair(x, case.dim)
    return (x3, y3)


#: variants of the strided tier: block order and row width
STRIDED_VARIANTS = {
    "str_chunk": {"strided_chunk_major": True},
    "str_wide": {"strided_row_bytes": 512},
    "str_ch_wide": {"strided_chunk_major": True, "strided_row_bytes": 512},
}
#: variants of the staged tier: CTAs per SM that share the shared memory
STAGED_VARIANTS = {
    "staged_c1": {"staged_ctas_per_sm": 1},
    "staged_c3": {"staged_ctas_per_sm": 3},
    "columns": {"staged_columns": True},
    "tiles": {"staged_columns": False},
}
VARIANTS = {
    **{k: ("strided_staged", v) for k, v in STAGED_VARIANTS.items()},
    **{k: ("strided", v) for k, v in STRIDED_VARIANTS.items()},
}


def backend_impl(tier, **tuning):
    """Times a CUDA tier through the backend on canonical views, under ``tuning`` when given (part
    of the plan key); the first call of a variant starts from no cached plans."""
    fresh = {"done": False}

    def fn(*views):
        if not fresh["done"]:
            BACKEND.clear_plans()
            fresh["done"] = True
        if not tuning:
            run(views)
        else:
            with tiers.tuned(**tuning):
                run(views)

    def run(views):
        if len(views) == 3:
            BACKEND.backward(*views, False, tier)
        else:
            BACKEND.forward(*views, False, tier)

    return fn


def timing(
    quick: bool, backward: bool, dtypes, variants: list[str], budget: float, peers: bool = True, labels=None
) -> list[dict]:
    torch._dynamo.config.recompile_limit = 1 << 20
    torch._dynamo.config.cache_size_limit = 1 << 20
    start = time.time()
    rows = []
    names = ["fastsoftmax", "staged", *variants, "strided", "triton"] + (["torch", "compile"] if peers else [])
    for dtype in dtypes:
        copy = layouts.copy_gbps(dtype)
        print(f"copy {dtype}: {copy:.0f} GB/s", flush=True)
        cases = [(c, False) for c in layouts.layout_cases(quick)]
        if backward:
            # the quick cases' backward, or every named case's
            cases[6:6] = [(c, True) for c in layouts.layout_cases(not labels)]
        if labels:
            cases = [(c, bwd) for c, bwd in cases if c.label in labels]
        for case, bwd in cases:
            if time.time() - start > budget:
                print(f"out of time: {case.label} {'bwd' if bwd else 'fwd'} not timed", flush=True)
                continue
            itemsize = torch.empty((), dtype=dtype).element_size()
            floor = case.bytes_moved(itemsize, bwd)
            views = [_views(case, dtype, bwd) for _ in range(max(1, min(3, (1 << 28) // floor)))]
            row = layouts.run_case(case, dtype, bwd, copy, peers=peers)
            extra = {"staged": backend_impl("strided_staged")}
            for name in variants:
                tier, tuning = VARIANTS[name]
                extra[name] = backend_impl(tier, **tuning)
            extra["strided"] = backend_impl("strided")
            tr = dispatch.kernel_backend("triton")
            extra["triton"] = (lambda *v: tr.backward(*v, False)) if bwd else (lambda *v: tr.forward(*v, False))
            for name, fn in extra.items():
                try:
                    ms = layouts.time_ms(fn, views)
                    row[name] = round(floor / ms / 1e6 / copy, 3)
                    row[name + "_us"] = round(ms * 1e3, 1)
                except Exception as exc:
                    row[name] = None
                    row[name + "_error"] = f"{type(exc).__name__}: {str(exc)[:200]}"
            BACKEND.clear_plans()
            del views
            torch.cuda.empty_cache()
            rows.append(row)
            print(layouts.format_rows([row], names).splitlines()[-1], flush=True)
    print()
    print(layouts.format_rows(rows, names))
    best = [dict(r, best=max((r.get(k) or 0) for k in ("staged", "strided", "triton"))) for r in rows]
    print("\nlosses (fastsoftmax auto):\n" + ("\n".join(layouts.losses(rows)) or "none"))
    print("\nlosses (best of the kernels):\n" + ("\n".join(layouts.losses(best, "best")) or "none"))
    return rows


def sanitize() -> None:
    """Each staged path once on small problems: held, team-split, streamed, flat, per-row, narrow
    copies, backward."""
    # the last two have more tiles than resident CTAs (8 a SM: teams walk several tiles)
    problems = [
        ((3, 37, 5), 1),
        ((4, 64, 16), 1),
        ((2, 300, 200), 1),
        ((3, 4000, 2), 1),
        ((600, 64, 16), 1),
        ((300, 300, 64), 1),
    ]
    tunings = ({}, {"staged_ctas_per_sm": 8})
    for tuning in tunings:
        for shape, dim in problems:
            for dtype in (torch.float32, torch.bfloat16):
                for view in ("contiguous", "offset"):
                    for fn in (fastsoftmax.softmax, fastsoftmax.log_softmax):
                        x = make(shape, view, dtype).requires_grad_()
                        with dispatch.forced("cuda", "strided_staged"), tiers.tuned(**tuning):
                            BACKEND.clear_plans()
                            y = fn(x, dim)
                            y.backward(torch.randn_like(y))
    torch.cuda.synchronize()
    print("sanitize run done")


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--time", action="store_true")
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--backward", action="store_true")
    parser.add_argument(
        "--variants", default="", help=f"comma list of variants to time beside the tiers: {', '.join(VARIANTS)}"
    )
    parser.add_argument("--sanitize", action="store_true")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--check-dtypes", action="store_true", help="check only --dtypes")
    parser.add_argument("--limit", type=int, default=None, help="check only the first LIMIT problems")
    parser.add_argument("--check-tiers", default="strided_staged", help="comma list of tiers --check forces")
    parser.add_argument("--cases", help="';'-separated case labels to time, e.g. '(65536,2048) d0'")
    parser.add_argument("--no-peers", action="store_true", help="time no torch.softmax or torch.compile")
    parser.add_argument("--budget", type=float, default=1e9, help="seconds for the timing section")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    status = 0
    if args.sanitize:
        sanitize()
        return 0
    if args.check:
        start = time.time()
        dts = tuple(dtypes) if args.check_dtypes else (torch.float32, torch.bfloat16, torch.float16)
        tier_names = tuple(args.check_tiers.split(","))
        variants = [v for v in args.variants.split(",") if v]
        tunings = ({},) + tuple(VARIANTS[v][1] for v in variants if VARIANTS[v][0] in tier_names)
        failures = check(tier_names, dts, args.limit, tunings)
        print(f"checks: {len(failures)} failures ({time.time() - start:.0f} s)", flush=True)
        status = 1 if failures else 0
    if args.time:
        labels = set(args.cases.split(";")) if args.cases else None
        variants = [v for v in args.variants.split(",") if v]
        unknown = [v for v in variants if v not in VARIANTS]
        if unknown:
            parser.error(f"unknown variants {unknown}; known: {list(VARIANTS)}")
        rows = timing(args.quick, args.backward, dtypes, variants, args.budget, not args.no_peers, labels)
        with open(os.path.join(args.out, "strided_probe.json"), "w") as out:
            json.dump(rows, out, indent=1)
    return status


if __name__ == "__main__":
    sys.exit(main())
