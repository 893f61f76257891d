"""Device probe: host time against GPU time a call, for layout cases of
fastsoftmax/benchmark/layouts.py through the public API. A call whose host path takes longer than
its kernels runs host-bound in back-to-back use, which the layouts regime's wall-clock figure
shows and the profiler's kernel sum (benchmarks/kernel_breakdown.py) does not.

    PYTHONPATH=$PWD python benchmarks/host_vs_gpu_probe.py --cases "(4194304,4) d0;(16,1048576,2) d1"

Per case, dtype and direction: the fraction of copy and the GPU time a call of back-to-back calls
(layouts.time_ms), the host time a call of ``--calls`` calls issued without synchronising, and the
same calls' time with the final synchronisation.
"""

from __future__ import annotations

import argparse
import time

import torch

from fastsoftmax.benchmark.layouts import copy_gbps, input_sets, layout_cases, public_call, time_ms


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", required=True, help="';'-separated case labels of the layouts regime")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--calls", type=int, default=50)
    args = parser.parse_args(argv)
    known = {c.label: c for c in layout_cases()}
    for label in (label.strip() for label in args.cases.split(";")):
        case = known[label]
        for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
            copy = copy_gbps(dtype)
            for backward in (False, True):
                sets = input_sets(case, dtype, backward)
                fn = public_call(case.dim, backward)
                ms = time_ms(fn, sets)
                torch.cuda.synchronize()
                start = time.perf_counter()
                for i in range(args.calls):
                    fn(*sets[i % len(sets)])
                issued = time.perf_counter()
                torch.cuda.synchronize()
                done = time.perf_counter()
                floor = case.bytes_moved(sets[0][0].element_size(), backward)
                print(
                    f"{label:20s} {str(dtype)[6:]:9s} {'bwd' if backward else 'fwd'} "
                    f"{floor / ms / 1e6 / copy:.3f} of copy, {ms * 1e3:7.1f} us/call events; "
                    f"host {(issued - start) / args.calls * 1e6:7.1f} us/call launch, "
                    f"{(done - start) / args.calls * 1e6:7.1f} us/call total",
                    flush=True,
                )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
