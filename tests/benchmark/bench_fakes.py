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
        rows.append({"regime": "host", "impl": name, "kind": "fastsoftmax" if name == "fastsoftmax" else "peer",
                     "status": "ok", "host_us": us, "shape": [4, 1024], "dtype": "bfloat16", "calls": 2000,
                     "message": ""})
    document = {
        "schema": 1, "suite": "main", "quick": quick, "complete": True, "device": "NVIDIA Fictional 80GB",
        "date": "2026-05-09T12:00:00+00:00",
        "versions": {"torch": "2.11.0", "triton": "3.6.0", "torch_cuda": "13.0", "driver": "13.0",
                     "cuda_core": "0.4.0"},
        "environment": {}, "copy_gbps": copy, "peers": {"torch": "2.11.0", "quack": "0.2"},
        "goals": [{"name": g.name, "min_fraction": g.min_fraction} for g in GOALS], "rows": rows,
    }
    document["summary"] = summarize(document)
    return document


def small_case(direction="forward", dtype="float32", shape=(8, 100), dim=-1, regime=None):
    regime = regime or ("backward" if direction == "backward" else "bulk")
    return Case(regime, shape, dim, dtype, direction)
