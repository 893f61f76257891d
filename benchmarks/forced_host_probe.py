"""Host time a call of a forced tier costs (``dispatch.forced``: a forced call looks no remembered
plan up, so it builds its plan every call) beside "auto"'s, and each one's wall-clock time a call
back to back (``layouts.time_ms``), on cases of the layouts regime. Where a forced call's host time
passes its GPU time, a wall-clock A/B between forced tiers times the host; the profiler's kernel
times (``benchmarks/kernel_breakdown.py``) do not.

    PYTHONPATH=$PWD python3 benchmarks/forced_host_probe.py --cases "(8192,8192)[:, ::2] d0" \\
        --tiers strided,strided_staged [--dtypes bfloat16] [--directions forward,backward]
"""

from __future__ import annotations

import argparse

import torch

from fastsoftmax import dispatch
from fastsoftmax.benchmark import layouts
from fastsoftmax.benchmark.timing import host_us_per_call


def forced(fn, tier: str):
    def call(*args):
        with dispatch.forced("cuda", tier):
            return fn(*args)

    return call


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", required=True, help="';'-separated labels of layouts.layout_cases()")
    parser.add_argument("--tiers", default="strided,strided_staged", help="CUDA tiers to force (comma-separated)")
    parser.add_argument("--dtypes", default="bfloat16")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--calls", type=int, default=20, help="back-to-back calls the host time is taken over")
    args = parser.parse_args(argv)
    known = {c.label: c for c in layouts.layout_cases()}
    for label in args.cases.split(";"):
        case = known[label.strip()]
        for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
            for backward in (d == "backward" for d in args.directions.split(",")):
                inputs = layouts.input_sets(case, dtype, backward)
                base = layouts.public_call(case.dim, backward)
                impls = {"auto": base} | {f"forced {tier}": forced(base, tier) for tier in args.tiers.split(",")}
                for name, fn in impls.items():
                    try:
                        wall = layouts.time_ms(fn, inputs) * 1e3
                        host = host_us_per_call(lambda fn=fn, first=inputs[0]: fn(*first), calls=args.calls)
                    except Exception as exc:  # noqa: BLE001 - a tier that cannot take the case: say so
                        print(f"{case.label} {str(dtype)[6:]} {name}: {type(exc).__name__}: {exc}"[:200], flush=True)
                        continue
                    direction = "backward" if backward else "forward"
                    print(
                        f"{case.label:30} {str(dtype)[6:]:8} {direction:8} {name:24} host {host:7.1f} us a call, "
                        f"wall {wall:7.1f} us a call back to back",
                        flush=True,
                    )
                del inputs
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
