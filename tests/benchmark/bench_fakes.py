"""CPU stand-ins for the GPU parts of the benchmark: implementations with known behaviour, fake
timers, and a fabricated result document."""

import torch

from fastsoftmax.benchmark.peers import Impl, Refused
from fastsoftmax.benchmark.runner import Runner
from fastsoftmax.benchmark.shapes import Case


def correct_impl(name="fastsoftmax", kind="fastsoftmax"):
    def make(case):
        if case.direction == "backward":
            return lambda dy, y: torch._softmax_backward_data(dy, y, case.dim, y.dtype)
        return lambda x: torch.softmax(x, case.dim)

    return Impl(name, kind, make)


def wrong_impl(name="broken", kind="fastsoftmax"):
    def make(case):
        if case.direction == "backward":
            return lambda dy, y: dy.clone()
        return lambda x: x.clone()

    return Impl(name, kind, make)


def raising_impl(name, kind, declines_by_raising=False):
    def make(case):
        def fn(*inputs):
            raise RuntimeError("cols must be a multiple of 8")

        return fn

    return Impl(name, kind, make, declines_by_raising=declines_by_raising)


def refusing_impl(name="picky"):
    def make(case):
        raise Refused("last dim only")

    return Impl(name, "peer", make)


def cpu_runner(impls, ms=0.5, **kwargs):
    """A Runner on the CPU whose timer calls ``fn`` once and reports ``ms``."""

    def timer(fn):
        fn()
        return ms

    return Runner(impls, copy_gbps=1000.0, device="cpu", timer=timer, host_timer=lambda fn: 5.0, **kwargs)


def fabricated_document(quick=False):
    """A complete result document as a run on a fictional GPU would write it."""
    from fastsoftmax.benchmark.report import summarize
    from fastsoftmax.benchmark.runner import base_row
    from fastsoftmax.benchmark.shapes import GOALS, quick_cases

    copy = 3000.0
    rows = []
    fractions = {"fastsoftmax": 0.95, "fastsoftmax[triton]": 0.93, "torch": 0.6, "quack": 0.99}
    for case in quick_cases():
        for name, frac in fractions.items():
            kind = "fastsoftmax" if name.startswith("fastsoftmax") else "peer"
            impl = Impl(name, kind, lambda c: None)
            row = base_row(case, impl)
            if name == "quack" and not case.is_last_dim:
                row.update(status="refused", message="quack computes softmax over the last dim of a 2-D tensor only")
                rows.append(row)
                continue
            if case.regime == "non_last_dim" and name == "fastsoftmax":
                frac = 0.5  # below its goal of 0.80
            gbps = frac * copy
            ms = case.bytes_moved / (gbps * 1e9) * 1e3
            row.update(max_abs_err=1e-3, err_ratio=0.1, ms=ms, gpu_us=ms * 1e3, gbps=gbps, frac_copy=frac)
            rows.append(row)
    for name, us in (("fastsoftmax", 6.0), ("torch", 9.5), ("quack", 10.0)):
        rows.append(
            {
                "regime": "host",
                "impl": name,
                "kind": "fastsoftmax" if name == "fastsoftmax" else "peer",
                "status": "ok",
                "host_us": us,
                "shape": [4, 1024],
                "dtype": "bfloat16",
                "calls": 2000,
                "message": "",
            }
        )
    document = {
        "schema": 1,
        "suite": "main",
        "quick": quick,
        "complete": True,
        "device": "NVIDIA Fictional 80GB",
        "date": "2026-05-09T12:00:00+00:00",
        "versions": {
            "torch": "2.11.0",
            "triton": "3.6.0",
            "torch_cuda": "13.0",
            "driver": "13.0",
            "cuda_core": "0.4.0",
        },
        "environment": {},
        "copy_gbps": copy,
        "peers": {"torch": "2.11.0", "quack": "0.2"},
        "goals": [{"name": g.name, "min_fraction": g.min_fraction} for g in GOALS],
        "rows": rows,
    }
    document["summary"] = summarize(document)
    return document


def small_case(direction="forward", dtype="float32", shape=(8, 100), dim=-1, regime=None):
    regime = regime or ("backward" if direction == "backward" else "bulk")
    return Case(regime, shape, dim, dtype, direction)


def _fabricated_rows(cases, fraction_of, copy, refuse=lambda impl, case: None):
    """Rows as a run would record them, with ``fraction_of(impl, case)`` as each one's fraction of copy."""
    from fastsoftmax.benchmark.runner import base_row

    rows = []
    for case in cases:
        for name in fraction_of.__defaults__[0]:
            kind = "fastsoftmax" if name.startswith("fastsoftmax") else "peer"
            row = base_row(case, Impl(name, kind, lambda c: None))
            reason = refuse(name, case)
            if reason:
                row.update(status="refused", message=reason)
            else:
                frac = fraction_of(name, case)
                gbps = frac * copy
                ms = case.bytes_moved / (gbps * 1e9) * 1e3
                row.update(max_abs_err=1e-6, err_ratio=0.1, ms=ms, gpu_us=ms * 1e3, gbps=gbps, frac_copy=frac)
            rows.append(row)
    return rows


def fabricated_figure_document(kind, quick=True):
    """A seeds figure's result document (suite ``sweep``, ``vector_matrix`` or ``attention``) as a
    run on a fictional GPU would write it, with the shapes each figure measures."""
    from fastsoftmax.benchmark import shapes
    from fastsoftmax.benchmark.report import summarize

    copy = 3000.0
    if kind == "sweep":
        cases = shapes.sweep_cases(quick)

        def fraction(name, case, names=("fastsoftmax", "torch", "triton-tutorial")):
            padded = 1 << (case.n - 1).bit_length()
            if name == "triton-tutorial":
                return 0.95 * (case.n / padded) ** 0.5
            if name == "torch":
                return 0.8 if case.n <= 32768 else 0.5
            return 0.97 if case.n <= 32768 else 0.68

        def refuse(name, case):
            return "holds a whole row in registers" if name == "triton-tutorial" and case.n > 65536 else None
    elif kind == "vector_matrix":
        cases = shapes.vector_matrix_cases(quick)

        def fraction(
            name, case, names=("torch-unfused", "fastsoftmax", "torch", "torch.compile", "cudnn", "cudnn[fast]")
        ):
            slow_cudnn = case.shape[case.dim] > 60000 and name.startswith("cudnn")
            return {"torch-unfused": 0.18, "fastsoftmax": 0.7, "torch": 0.05, "torch.compile": 0.45}.get(
                name, 0.001 if slow_cudnn else 0.4
            )

        def refuse(name, case):
            return None
    else:
        cases = shapes.attention_cases(quick)

        def fraction(name, case, names=("fastsoftmax", "torch", "cudnn", "cudnn[fast]")):
            base = {"fastsoftmax": 0.96, "torch": 0.7, "cudnn": 0.45, "cudnn[fast]": 0.5}[name]
            # small rows are latency-bound for everyone; quack-like peers would win there
            return base * min(1.0, 0.4 + case.n / 2048) * (0.9 if case.direction == "backward" else 1.0)

        def refuse(name, case):
            return None

    rows = _fabricated_rows(cases, fraction, copy, refuse)
    document = {
        "schema": 1,
        "suite": kind,
        "quick": quick,
        "complete": True,
        "device": "NVIDIA Fictional 80GB",
        "date": "2026-05-09T12:30:00+00:00",
        "versions": {"torch": "2.11.0", "triton": "3.6.0"},
        "environment": {},
        "copy_gbps": copy,
        "peers": {"torch": "2.11.0"},
        "goals": [],
        "rows": rows,
        "figure": kind,
    }
    document["summary"] = summarize(document)
    return document


def fabricated_ladder_document():
    results = []
    copy = 3000.0
    for n in (1024, 4096):
        for step, fraction in enumerate((0.004, 0.45, 0.55, 0.66, 0.9, 0.99, 0.88), start=1):
            gbps = fraction * copy
            results.append(
                {
                    "step": step,
                    "name": f"{step}_step",
                    "n": n,
                    "rows": 4096,
                    "ms": 1.0,
                    "gflops": gbps * 5 / 8,
                    "gbps": gbps,
                    "fraction_of_copy": fraction,
                }
            )
        results.append(
            {
                "step": 0,
                "name": "torch.softmax",
                "n": n,
                "rows": 4096,
                "ms": 1.0,
                "gflops": 0.8 * copy * 5 / 8,
                "gbps": 0.8 * copy,
                "fraction_of_copy": 0.8,
            }
        )
    return {
        "benchmark": "ladder",
        "date": "2026-05-09T12:40:00",
        "device": "NVIDIA Fictional 80GB",
        "versions": {"torch": "2.11.0"},
        "copy_gbps": copy,
        "total_elements": 1 << 24,
        "flops_per_element": 5,
        "results": results,
    }
