"""A few calls of one fastsoftmax problem, for a profiler to attach to (Nsight Compute): the first
call compiles and warms up, the rest are the ones to profile.

    ncu --kernel-name regex:fs_ --launch-skip 2 --launch-count 2 --section SpeedOfLight \\
        python3 benchmarks/ncu_target.py --shape 65536x2048 --dim 0 --dtype bf16 [--backward]

``--step-inner`` softmaxes x[..., ::2] of a tensor twice as wide as ``--shape`` along its last dim.
``--tier`` forces a tier of the CUDA backend (``dispatch.forced``); without it "auto" chooses.
``--tuned KEY=VALUE`` (repeatable) sets a field of the backend's tuning (``tiers.Tuning``), e.g.
``--tuned cluster_ctas=8``. ``--impl quack`` calls Quack's softmax instead (forward and backward of
2-D rows; the peer bundle's folder in FASTSOFTMAX_PEER_SITE), for profiling it beside ours with
``NCU_KERNEL`` set to a pattern of its kernel names in ``device_run.sh``.
"""

from __future__ import annotations

import argparse
import ast

import torch

import fastsoftmax
from fastsoftmax import dispatch

DTYPES = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}


def tuning_value(text: str):
    """A tuning field's value from the command line: an integer, True or False, else the word."""
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shape", required=True, help="e.g. 65536x2048")
    parser.add_argument("--dim", type=int, default=-1)
    parser.add_argument("--dtype", default="bf16", choices=sorted(DTYPES))
    parser.add_argument("--backward", action="store_true")
    parser.add_argument("--log", action="store_true", help="log-softmax")
    parser.add_argument("--step-inner", action="store_true", help="x[..., ::2] of a tensor twice as wide")
    parser.add_argument("--tier", help="force a tier of the CUDA backend")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument(
        "--tuned", action="append", default=[], help="KEY=VALUE of tiers.Tuning (a number, True, False or a word)"
    )
    parser.add_argument("--impl", default="fastsoftmax", choices=("fastsoftmax", "quack"))
    args = parser.parse_args()
    from fastsoftmax.backends.cuda import tiers

    tuning = {key: tuning_value(value) for key, _, value in (item.partition("=") for item in args.tuned)}
    shape = tuple(int(v) for v in args.shape.split("x"))
    if args.step_inner:
        x = torch.randn(shape[:-1] + (2 * shape[-1],), device="cuda").to(DTYPES[args.dtype])[..., ::2]
    else:
        x = torch.randn(shape, device="cuda").to(DTYPES[args.dtype])
    if args.impl == "quack":
        run_quack(x, args.backward, args.calls)
        return
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


def run_quack(x: torch.Tensor, backward: bool, calls: int) -> None:
    from fastsoftmax.benchmark.peers import add_peer_site

    add_peer_site()
    from quack.softmax import softmax_bwd, softmax_fwd

    dy = torch.randn_like(x)
    for _ in range(calls):
        if backward:
            softmax_bwd(dy, softmax_fwd(x))
        else:
            softmax_fwd(x)
    torch.cuda.synchronize()
    print(f"ncu target: {calls} calls of quack softmax {tuple(x.shape)}{' backward' if backward else ''}")


if __name__ == "__main__":
    main()
