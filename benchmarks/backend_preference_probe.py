"""Device probe: the dispatcher's backend preference on layout cases of
fastsoftmax/benchmark/layouts.py, or on rows (ROWSxCOLS, softmax over the last dim), each variant
through the public API's plan path.

    PYTHONPATH=$PWD python benchmarks/backend_preference_probe.py "(4194304,4) d0:float32:fwd;65536x2048:bfloat16:bwd"

Variants: ``table`` (dispatch_table.json's choice, as shipped), ``cuda`` and ``triton`` (the
table's choice replaced; the dispatcher's other rules still apply, e.g. views off 16-byte
boundaries stay on the CUDA backend). With ``--explicit``: ``auto`` (every rule, as shipped) against
the public API's ``backend="triton"`` and ``backend="cuda"``, which no rule overrides. A label may
also be ``(a,b,c) dK``, a contiguous tensor over dim K. Every variant's first output is checked
against float64 before it is timed. Each cell names the backend and tier that served the variant
(``served`` below), so that a variant the rules overrode shows as such. The caches and plans are
cleared between variants, which alternate over three rounds in one process, so that every
variant runs its own plan with the host cost of an ordinary call: ``dispatch.forced`` bypasses
the plans, and on problems of tens of microseconds its calls run host-bound.
"""

from __future__ import annotations

import argparse

import torch

from fastsoftmax import dispatch
from fastsoftmax.benchmark.layouts import LayoutCase, copy_gbps, input_sets, layout_cases, public_call, time_ms

SHIPPED = dispatch._table_choice


SHIPPED_RESOLVE = dispatch.resolve


def prefer(name: str) -> None:
    dispatch._table_choice = SHIPPED if name == "table" else (lambda *args, **kwargs: name)
    dispatch.clear_caches()


def served(fn, args) -> str:
    """The backends and tiers that serve ``fn(*args)`` when planned afresh (dispatch.resolve's
    answers during the call), e.g. "cuda:strided"."""
    seen = set()

    def spy(*resolve_args, **resolve_kwargs):
        backend, tier = SHIPPED_RESOLVE(*resolve_args, **resolve_kwargs)
        seen.add(f"{backend.name}:{tier}" if backend is not None else "torch")
        return backend, tier

    dispatch.resolve = spy
    try:
        fn(*args)
    finally:
        dispatch.resolve = SHIPPED_RESOLVE
    return "+".join(sorted(seen)) or "torch"  # decided before any resolve: float64, CPU without Triton


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "jobs",
        metavar="JOBS",
        help="LABEL:DTYPE:DIRECTION jobs joined by ';': a layout case's label or ROWSxCOLS, a torch dtype, fwd "
        'or bwd, e.g. "(4194304,4) d0:float32:fwd;65536x2048:bfloat16:bwd"',
    )
    parser.add_argument(
        "--explicit", action="store_true", help='auto against backend="triton" and backend="cuda" (see above)'
    )
    return parser.parse_args(argv)


def _checked(fn, args, dim: int, backward: bool, name: str) -> None:
    """``fn(*args)`` against float64 (softmax's forward, or its backward from y and dy)."""
    if backward:
        dy, y = (t.double() for t in args)
        expected = y * (dy - (dy * y).sum(dim, keepdim=True))
    else:
        expected = torch.softmax(args[0].double(), dim)
    error = float((fn(*args).double() - expected).abs().max())
    if not error < 1e-2:
        raise SystemExit(f"backend_preference_probe.py: {name} is off by {error} against float64")


def main(args: argparse.Namespace) -> int:
    from kernel_breakdown import cases_of  # this folder's; it reads "(a,b,c) dK" labels

    cases = {c.label: c for c in layout_cases()}
    for job in args.jobs.split(";"):
        label, dtype_name, direction = job.rsplit(":", 2)  # labels may hold colons: x[:, ::2]
        if label not in cases and label.startswith("("):  # a contiguous tensor: (a,b,c) dK
            cases[label] = cases_of(label)[0]
        elif label not in cases:  # rows: ROWSxCOLS
            shape = tuple(int(size) for size in label.split("x"))
            cases[label] = LayoutCase("rows", label, shape, len(shape) - 1)
        case, dtype, backward = cases[label], getattr(torch, dtype_name), direction == "bwd"
        copy = copy_gbps(dtype)
        sets = input_sets(case, dtype, backward)
        floor = case.bytes_moved(sets[0][0].element_size(), backward)
        # variant -> (the table's preference, the backend the public call names)
        if args.explicit:
            variants = {name: ("table", name) for name in ("auto", "triton", "cuda")}
        else:
            variants = {name: (name, "auto") for name in ("table", "cuda", "triton")}
        calls = {name: public_call(case.dim, backward, backend=backend) for name, (_, backend) in variants.items()}
        results = {name: [] for name in variants}
        how = {}
        try:
            for name, fn in calls.items():
                prefer(variants[name][0])
                _checked(fn, sets[0], case.dim, backward, name)
            for _ in range(3):
                for name, fractions in results.items():
                    prefer(variants[name][0])
                    how[name] = served(calls[name], sets[0])
                    fractions.append(floor / time_ms(calls[name], sets) / 1e6 / copy)
        finally:
            prefer("table")
        cells = " | ".join(f"{k} [{how[k]}] {max(v):.3f} ({min(v):.3f})" for k, v in results.items())
        print(f"{label:26s} {dtype_name:9s} {direction} {cells}", flush=True)
    return 0


if __name__ == "__main__":
    ARGS = parse_args()  # --help before the GPU check: it needs none
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    raise SystemExit(main(ARGS))
