"""`fastsoftmax bench ladder`: time every step of the kernel ladder on the seed's workload.

Float32 rows of 1024 columns (the seed's figure) and a few longer widths, 2^27 elements in all
(2^24 with --quick). For each step: GPU time, GFLOP/s counting 5 flops per element as the seed
does, GB/s counting one read and one write per element, and the fraction of the copy bandwidth
measured in the same run. Steps 6 and 7 are timed at every (block size, unroll factor) pair and
reported at the best. Every output is checked against a float64 reference before it is timed.

Writes ``ladder.json``, ``ladder.csv`` and ``ladder.png`` (each step as a fraction of copy, with
the GFLOP/s scale beside it) into ``args.out``.
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
from functools import partial

import torch

from .results import write_csv
from .timing import copy_bandwidth_gbps, median_ms

FLOPS_PER_ELEMENT = 5
BYTES_PER_ELEMENT = 8  # one float32 read, one written
WIDTHS = (1024, 4096, 16384, 65536)
QUICK_WIDTHS = (1024, 4096)
#: the naive step reads its row n times per element: keep its work near 2^32 element reads
NAIVE_READ_BUDGET = 1 << 32


def _check(y: torch.Tensor, ref: torch.Tensor, label: str) -> float:
    err = (y.double() - ref).abs().max().item()
    if not math.isfinite(err) or err > 1e-5:
        raise AssertionError(f"{label}: max abs error {err:.3g} against the float64 reference")
    return err


def run(args) -> dict:
    from .. import ladder

    quick = bool(getattr(args, "quick", False))
    out_dir = getattr(args, "out", None) or "benchmarks/results"
    os.makedirs(out_dir, exist_ok=True)
    total = 1 << (24 if quick else 27)
    widths = QUICK_WIDTHS if quick else WIDTHS
    rep_ms = 30.0 if quick else 100.0

    torch.manual_seed(0)
    copy_gbps = copy_bandwidth_gbps()
    print(f"copy bandwidth: {copy_gbps:.0f} GB/s")
    results = []
    for n in widths:
        results += _measure_width(ladder, n, total // n, copy_gbps, rep_ms)

    report = {
        "benchmark": "ladder",
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "device": torch.cuda.get_device_name(),
        "versions": {"torch": torch.__version__, "python": platform.python_version(), **_cuda_versions()},
        "copy_gbps": copy_gbps,
        "total_elements": total,
        "flops_per_element": FLOPS_PER_ELEMENT,
        "results": results,
    }
    json_path = os.path.join(out_dir, "ladder.json")
    with open(json_path, "w") as f:
        json.dump(report, f, indent=1)
    write_csv([{k: v for k, v in r.items() if k != "search"} for r in results], os.path.join(out_dir, "ladder.csv"))
    png_path = os.path.join(out_dir, "ladder.png")
    if _plot(report, png_path):
        print(f"wrote {json_path} and {png_path}")
    else:
        print(f"wrote {json_path} (no chart: matplotlib is not installed; pip install matplotlib)")
    return report


def _measure_width(ladder, n: int, rows: int, copy_gbps: float, rep_ms: float) -> list[dict]:
    """Every step at one row width, then torch.softmax. A step that fails its check or raises is
    reported in one line and left out; the other steps still run."""
    x = torch.randn(rows, n, device="cuda") * 3
    ref = torch.softmax(x.double(), dim=-1)
    y = torch.empty_like(x)
    entries = []

    def record(step, label, fn, rows_used, extra=None):
        y.fill_(float("nan"))
        fn()
        torch.cuda.synchronize()
        err = _check(y[:rows_used], ref[:rows_used], f"step {label}, n={n}")
        ms = median_ms(fn, rep_ms=rep_ms)
        numel = rows_used * n
        gbps = BYTES_PER_ELEMENT * numel / (ms * 1e-3) / 1e9
        entry = {
            "step": step,
            "name": label,
            "n": n,
            "rows": rows_used,
            "ms": ms,
            "gflops": FLOPS_PER_ELEMENT * numel / (ms * 1e-3) / 1e9,
            "gbps": gbps,
            "fraction_of_copy": gbps / copy_gbps,
            "max_abs_error": err,
            **(extra or {}),
        }
        entries.append(entry)
        return entry

    def search_best(step):
        best = None
        search = []
        for block in ladder.SEARCH_BLOCKS:
            for unroll in ladder.SEARCH_UNROLLS:

                def fn(b=block, u=unroll):
                    return ladder.softmax(x, step, block=b, unroll=u, out=y)

                y.fill_(float("nan"))
                fn()
                torch.cuda.synchronize()
                _check(y, ref, f"step {step} block {block} unroll {unroll}, n={n}")
                ms = median_ms(fn, rep_ms=rep_ms / 4)
                search.append({"block": block, "unroll": unroll, "ms": ms})
                if best is None or ms < best[2]:
                    best = (block, unroll, ms)
        return best[0], best[1], search

    for step in range(1, 8):
        name = f"{step}_{ladder.STEPS[step]}"
        try:
            if step == 1:
                naive_rows = max(1, min(rows, NAIVE_READ_BUDGET // (n * n)))
                e = record(step, name, partial(ladder.softmax, x[:naive_rows], 1, out=y[:naive_rows]), naive_rows)
            elif step in (6, 7):
                block, unroll, search = search_best(step)
                e = record(
                    step,
                    name,
                    partial(ladder.softmax, x, step, block=block, unroll=unroll, out=y),
                    rows,
                    {"block": block, "unroll": unroll, "search": search},
                )
            else:
                e = record(step, name, partial(ladder.softmax, x, step, out=y), rows)
        except Exception as exc:  # noqa: BLE001 - one broken step must not cost the others
            print(f"n={n:>6} step {name:<16} not measured: {type(exc).__name__}: {str(exc)[:200]}")
            continue
        print(
            f"n={n:>6} step {name:<16} {e['ms'] * 1e3:10.1f} us {e['gflops']:8.1f} GFLOP/s "
            f"{e['gbps']:7.0f} GB/s {e['fraction_of_copy']:5.2f} of copy"
            + (f"  (block {e['block']}, unroll {e['unroll']})" if "block" in e else "")
        )
    torch_ms = median_ms(partial(torch.softmax, x, dim=-1), rep_ms=rep_ms)
    gbps = BYTES_PER_ELEMENT * rows * n / (torch_ms * 1e-3) / 1e9
    entries.append(
        {
            "step": 0,
            "name": "torch.softmax",
            "n": n,
            "rows": rows,
            "ms": torch_ms,
            "gflops": FLOPS_PER_ELEMENT * rows * n / (torch_ms * 1e-3) / 1e9,
            "gbps": gbps,
            "fraction_of_copy": gbps / copy_gbps,
        }
    )
    print(
        f"n={n:>6} {'torch.softmax':<21} {torch_ms * 1e3:10.1f} us {entries[-1]['gflops']:8.1f} GFLOP/s "
        f"{gbps:7.0f} GB/s {gbps / copy_gbps:5.2f} of copy"
    )
    return entries


def _cuda_versions() -> dict:
    try:
        from ..backends.cuda import compiler

        return dict(compiler.versions())
    except Exception:  # noqa: BLE001
        return {}


def _plot(report: dict, path: str) -> bool:
    from .figures import MatplotlibMissing, draw_ladder

    try:
        return draw_ladder(report, path) is not None
    except MatplotlibMissing:
        return False
