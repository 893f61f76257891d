"""A few calls of one fastsoftmax problem, for a profiler to attach to (Nsight Compute): the first
call compiles and warms up outside the profiler's range, the rest are the ones to profile.

    ncu --profile-from-start off --kernel-name regex:fs_ --launch-count 2 --section SpeedOfLight \\
        python3 benchmarks/ncu_target.py --shape 65536x2048 --dim 0 --dtype bf16 [--backward]

``--step-inner`` softmaxes x[..., ::2] of a tensor twice as wide as ``--shape`` along its last dim.
``--tier`` forces a tier of the backend (``--backend``, the CUDA one by default: ``dispatch.forced``);
without it the backend's own choice. ``--tuned KEY=VALUE`` (repeatable) sets a field of the backend's
tuning (``tiers.Tuning``), e.g. ``--tuned cluster_ctas=8``. ``--held-elems E`` gives Triton's held
realigned kernels E elements a thread on every block (``triton.REALIGNED_HELD_ELEMS_PER_THREAD``).
``--impl quack`` calls Quack's softmax instead (forward and backward of 2-D rows; the peer bundle's
folder in FASTSOFTMAX_PEER_SITE), for profiling it beside ours with ``NCU_KERNEL`` set to a pattern of
its kernel names in ``device_run.sh``; ``--impl compile`` calls torch.compile(torch.softmax) (Inductor's
kernels: ``--kernel-name regex:triton_``). The backward takes y and dy laid out as x (as the layouts
regime times it), through ``fastsoftmax.softmax_backward`` or ``torch._softmax_backward_data``.
"""

from __future__ import annotations

import argparse
import ast

import torch

from fastsoftmax import dispatch
from fastsoftmax.backends.triton import settings as triton_settings
from fastsoftmax.benchmark import layouts

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
    parser.add_argument("--tier", help="force a tier of the backend")
    parser.add_argument("--backend", default="cuda", choices=("cuda", "triton"), help="the kernel backend forced")
    parser.add_argument("--calls", type=int, default=3)
    parser.add_argument(
        "--tuned", action="append", default=[], help="KEY=VALUE of tiers.Tuning (a number, True, False or a word)"
    )
    parser.add_argument("--impl", default="fastsoftmax", choices=("fastsoftmax", "quack", "compile"))
    parser.add_argument("--held-elems", type=int, help="elements a thread of Triton's held realigned kernels")
    args = parser.parse_args()
    from fastsoftmax.backends.cuda import tiers

    tuning = {key: tuning_value(value) for key, _, value in (item.partition("=") for item in args.tuned)}
    shape = tuple(int(v) for v in args.shape.split("x"))
    # the layouts regime's case and inputs: x, or dy and y (y the softmax of x), laid out alike
    case = layouts.LayoutCase("ncu", args.shape, shape, args.dim, "step_inner" if args.step_inner else "contiguous")
    inputs = layouts.input_sets(case, DTYPES[args.dtype], args.backward, budget=1, log=args.log)[0]
    name = "log_softmax" if args.log else "softmax"
    if args.impl == "quack":
        run_quack(inputs, args.backward, args.calls)
    elif args.impl == "compile":
        compiled = layouts.implementations(case, args.backward, log=args.log)["compile"]
        profiled(args.calls, lambda: compiled(*inputs))
        print(f"ncu target: {args.calls} calls of torch.compile {name} {shape} dim {args.dim}")
    else:
        call = layouts.public_call(args.dim, args.backward, args.log)
        settings = {}
        if args.held_elems:
            from fastsoftmax.backends import triton as triton_backend

            settings["REALIGNED_HELD_ELEMS_PER_THREAD"] = triton_backend.held_everywhere(args.held_elems)
        with dispatch.forced(args.backend, args.tier), tiers.tuned(**tuning), triton_settings(settings):
            profiled(args.calls, lambda: call(*inputs))
        print(f"ncu target: {args.calls} calls of {name} {shape} dim {args.dim}")


def profiled(calls: int, call) -> None:
    """The first call outside the profiler's range (compiling, autotuning), the rest inside it: with
    ``ncu --profile-from-start off`` the first launches profiled are the warm ones."""
    call()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for _ in range(calls - 1):
        call()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()


def run_quack(inputs: tuple, backward: bool, calls: int) -> None:
    """Quack's softmax on ``inputs`` (x, or dy and y)."""
    from fastsoftmax.benchmark.peers import add_peer_site

    add_peer_site()
    from quack.softmax import softmax_bwd, softmax_fwd

    fn = softmax_bwd if backward else softmax_fwd
    profiled(calls, lambda: fn(*inputs))
    print(f"ncu target: {calls} calls of quack softmax {tuple(inputs[0].shape)}{' backward' if backward else ''}")


if __name__ == "__main__":
    main()
