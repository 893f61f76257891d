"""A few calls of one fastsoftmax problem, for a profiler to attach to (Nsight Compute): the first
call compiles and warms up, the rest are the ones to profile.

    ncu --kernel-name regex:fs_ --launch-skip 2 --launch-count 2 --section SpeedOfLight \\
        python3 benchmarks/ncu_target.py --shape 65536x2048 --dim 0 --dtype bf16 [--backward]

``--tier`` forces a tier of the CUDA backend (``dispatch.forced``); without it "auto" chooses.
``--tuned KEY=VALUE`` (repeatable) sets a field of the backend's tuning (``tiers.Tuning``), e.g.
``--tuned cluster_ctas=8``.
"""

from __future__ import annotations

import argparse

import torch

import fastsoftmax
from fastsoftmax import dispatch

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", required=True, help="e.g. 65536x2048")
    parser.add_argument("--dim", type=int, default=-1)
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--backward", action="store_true")
    parser.add_argument("--log", action="store_true", help="log-softmax")
    parser.add_argument("--tier", help="force a tier of the CUDA backend")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument("--tuned", action="append", default=[], help="KEY=VALUE of tiers.Tuning (an integer)")
    args = parser.parse_args()
    from fastsoftmax.backends.cuda import tiers

    tuning = {key: int(value) for key, _, value in (item.partition("=") for item in args.tuned)}
    shape = tuple(int(v) for v in args.shape.split("x"))
    x = torch.randn(shape, device="cuda").to(DTYPES[args.dtype])
    fn = fastsoftmax.log_softmax if args.log else fastsoftmax.softmax
    forced = dispatch.forced("cuda", args.tier) if args.tier else dispatch.forced("cuda")
    with forced, tiers.tuned(**tuning):
        for _ in range(args.calls):
            if args.backward:
                y = fn(x.detach().requires_grad_(), args.dim)
                y.backward(torch.randn_like(y))
            else:
                fn(x, args.dim)
    torch.cuda.synchronize()
    print(f"ncu target: {args.calls} calls of {'log_softmax' if args.log else 'softmax'} {shape} dim {args.dim}")


if __name__ == "__main__":
    main()
