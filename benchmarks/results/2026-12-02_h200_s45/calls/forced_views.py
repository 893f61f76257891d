"""The layouts regime's view cases on forced backends and tiers, alternated in rounds in one
process (fraction of copy, logical bytes): python3 forced_views.py "LABEL:dtype:fwd|bwd;..." """

import sys

import torch

from fastsoftmax import dispatch
from fastsoftmax.benchmark.layouts import copy_gbps, input_sets, layout_cases, public_call, time_ms

VARIANTS = (("triton", None), ("cuda", "strided_staged"), ("cuda", "strided"), ("cuda", None))

cases = {c.label: c for c in layout_cases()}
copies = {}
for job in sys.argv[1].split(";"):
    label, dtype_name, direction = job.rsplit(":", 2)
    case, dtype, backward = cases[label], getattr(torch, dtype_name), direction == "bwd"
    sets = input_sets(case, dtype, backward)
    if dtype not in copies:
        copies[dtype] = copy_gbps(dtype)
    fn = public_call(case.dim, backward)
    nbytes = case.bytes_moved(dtype.itemsize, backward)
    best = {}
    for _ in range(3):
        for backend, tier in VARIANTS:
            try:
                with dispatch.forced(backend, tier):
                    ms = time_ms(fn, sets)
            except Exception as error:  # noqa: BLE001 - a variant that cannot take the case
                best[(backend, tier)] = f"- ({type(error).__name__})"
                continue
            frac = nbytes / (ms * 1e-3) / 1e9 / copies[dtype]
            old = best.get((backend, tier))
            best[(backend, tier)] = max(frac, old) if isinstance(old, float) else frac
    cells = " | ".join(
        f"{b}:{t or 'auto'} {v:.3f}" if isinstance(v, float) else f"{b}:{t} {v}" for (b, t), v in best.items()
    )
    print(f"{label:<28} {dtype_name:<9} {direction} {cells}", flush=True)
