"""Device probe: host time against GPU time a call, for layout cases of
fastsoftmax/benchmark/layouts.py through the public API. A call whose host path takes longer than
its kernels runs host-bound in back-to-back use, which the layouts regime's wall-clock figure
shows and the profiler's kernel sum (benchmarks/kernel_breakdown.py) does not.

    PYTHONPATH=$PWD python benchmarks/host_vs_gpu_probe.py --cases "(4194304,4) d0;(16,1048576,2) d1" \\
        [--tiers strided,strided_staged] [--directions forward,backward]

Per case, dtype and direction: the fraction of copy and the GPU time a call of back-to-back calls
(layouts.time_ms), the host time a call of ``--calls`` calls issued without synchronising, and the
same calls' time with the final synchronisation. ``--tiers``: the same for those CUDA tiers forced
(``dispatch.forced``), beside "auto". A forced call looks no remembered plan up, so it plans every
call: 85-205 us of host time against auto's 20-47 on the H200's host (results
2026-12-03_h200_s53/c3/forced_host.txt), which a wall-clock A/B between forced tiers over short
kernels times with them.
"""

from __future__ import annotations

import argparse
import time

import torch
from kernel_breakdown import tuned

from fastsoftmax.benchmark.layouts import copy_gbps, input_sets, layout_cases, public_call, time_ms


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", required=True, help="';'-separated case labels of the layouts regime")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--tiers", default="", help="CUDA tiers to force beside auto (comma-separated)")
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    known = {c.label: c for c in layout_cases()}
    for label in (label.strip() for label in args.cases.split(";")):
        case = known[label]
        for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
            copy = copy_gbps(dtype)
            for backward in (d == "backward" for d in args.directions.split(",")):
                sets = input_sets(case, dtype, backward)
                base = public_call(case.dim, backward)
                forced = {tier: tuned(base, {"tier": tier}) for tier in filter(None, args.tiers.split(","))}
                impls = {"auto": base} | forced
                floor = case.bytes_moved(sets[0][0].element_size(), backward)
                for name, fn in impls.items():
                    try:
                        ms = time_ms(fn, sets)
                    except ValueError as exc:  # a forced tier that cannot take the case: say so
                        print(f"{label:20s} {str(dtype)[6:]:9s} {name}: {exc}"[:200], flush=True)
                        continue
                    torch.cuda.synchronize()
                    start = time.perf_counter()
                    for i in range(args.calls):
                        fn(*sets[i % len(sets)])
                    issued = time.perf_counter()
                    torch.cuda.synchronize()
                    done = time.perf_counter()
                    print(
                        f"{label:20s} {str(dtype)[6:]:9s} {'bwd' if backward else 'fwd'} {name:16s} "
                        f"{floor / ms / 1e6 / copy:.3f} of copy, {ms * 1e3:7.1f} us/call events; "
                        f"host {(issued - start) / args.calls * 1e6:7.1f} us/call launch, "
                        f"{(done - start) / args.calls * 1e6:7.1f} us/call total",
                        flush=True,
                    )
                del sets
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
