"""Inputs that step by 2 along inner (x[..., ::2]) over a non-last dim: the CUDA backend's staged
tiles reading each tile row's span once (strided_staged) against the strided tier, strided_warp
(the spans read into registers), the Triton backend's tiles, auto and torch.compile, alternated in
one process, forward and backward (y and dy both stepped, as the layouts regime lays them out).
Fractions of the copy bandwidth measured in the same process, of the logical bytes (the elements
of the view read once, the output written once).

    python benchmarks/step_span_probe.py [--dtypes bfloat16,float32] [--rounds 2] [--log] [--out FILE]
        [--cases "LABEL PART;.."] [--impls staged,strided,auto,compile]

``--sweep`` times the staged spans under each of TUNINGS instead (CTAs an SM, teams as clusters or
persistent), beside auto.
"""

from __future__ import annotations

import argparse

import torch
from kernel_breakdown import tuned

import fastsoftmax
from fastsoftmax.benchmark.layouts import LayoutCase, copy_gbps, input_sets, time_ms

CASES = [
    LayoutCase("view", "(8192,8192)[:, ::2] d0", (8192, 4096), 0, "step_inner"),
    LayoutCase("view", "(32,4096,2048)[..., ::2] d1", (32, 4096, 1024), 1, "step_inner"),
    LayoutCase("view", "(128,1024,2048)[..., ::2] d1", (128, 1024, 1024), 1, "step_inner"),
    LayoutCase("view", "(4096,64,1024)[..., ::2] d1", (4096, 64, 512), 1, "step_inner"),
    LayoutCase("view", "(1024,16384,32)[..., ::2] d1", (1024, 16384, 16), 1, "step_inner"),
]
#: short reduced axes, which the strided tier's second walk finds in L2 (--short)
SHORT_CASES = [
    LayoutCase("view", "(8192,32,2048)[..., ::2] d1", (8192, 32, 1024), 1, "step_inner"),
    LayoutCase("view", "(2048,128,2048)[..., ::2] d1", (2048, 128, 1024), 1, "step_inner"),
    LayoutCase("view", "(1024,256,2048)[..., ::2] d1", (1024, 256, 1024), 1, "step_inner"),
    LayoutCase("view", "(512,512,2048)[..., ::2] d1", (512, 512, 1024), 1, "step_inner"),
    LayoutCase("view", "(64,150,128,256)[..., ::2] d1", (64, 150, 128, 128), 1, "step_inner"),
    LayoutCase("view", "(16384,16,1024)[..., ::2] d1", (16384, 16, 512), 1, "step_inner"),
]


#: --sweep: strided_staged's launch shapes to time the spans under
TUNINGS = {
    "default": {},
    "1/sm": {"staged_ctas_per_sm": 1},
    "2/sm": {"staged_ctas_per_sm": 2},
    "3/sm": {"staged_ctas_per_sm": 3},
    "4/sm": {"staged_ctas_per_sm": 4},
    "persistent": {"staged_cluster": False},
    "1/sm persistent": {"staged_ctas_per_sm": 1, "staged_cluster": False},
}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--out")
    parser.add_argument("--short", action="store_true", help="the short reduced axes as well")
    parser.add_argument("--sweep", action="store_true", help="the staged spans under each of TUNINGS")
    parser.add_argument("--log", action="store_true", help="log-softmax (torch.compile: torch.log_softmax)")
    parser.add_argument("--cases", help="only the cases whose labels contain one of these (';'-separated)")
    parser.add_argument("--impls", help="only these implementations (comma-separated names)")
    args = parser.parse_args()
    cases = CASES + (SHORT_CASES if args.short else [])
    if args.cases:
        cases = [c for c in cases if any(part in c.label for part in args.cases.split(";"))]
    lines = []
    for dtype in [getattr(torch, d) for d in args.dtypes.split(",")]:
        copy = copy_gbps(dtype)
        for case in cases:
            for backward in (False, True):
                dim = case.dim
                torch._dynamo.reset()  # (past its recompile limit torch.compile would run eagerly)
                log = args.log
                if backward:
                    base = lambda dy, y: fastsoftmax.softmax_backward(dy, y, dim, log=log)  # noqa: E731
                    reference = torch._log_softmax_backward_data if log else torch._softmax_backward_data
                    comp = torch.compile(lambda dy, y: reference(dy, y, dim, y.dtype))
                else:
                    base = lambda x: (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim)  # noqa: E731
                    comp = torch.compile(lambda x: (torch.log_softmax if log else torch.softmax)(x, dim))
                if args.sweep:
                    staged = {"tier": "strided_staged"}
                    impls = {name: tuned(base, {**staged, **tuning}) for name, tuning in TUNINGS.items()}
                    impls["auto"] = base
                else:
                    impls = {
                        "staged": tuned(base, {"tier": "strided_staged"}),
                        "strided": tuned(base, {"tier": "strided"}),
                        "warp": tuned(base, {"tier": "strided_warp"}),
                        "triton": tuned(base, {"backend": "triton"}),
                        "auto": base,
                        "compile": comp,
                    }
                if args.impls:
                    impls = {name: fn for name, fn in impls.items() if name in args.impls.split(",")}
                inputs = input_sets(case, dtype, backward, log=log)
                floor = case.bytes_moved(dtype.itemsize, backward)
                best = {name: 0.0 for name in impls}
                for _ in range(args.rounds):
                    for name, fn in impls.items():
                        try:
                            ms = time_ms(fn, inputs)
                            best[name] = max(best[name], floor / ms / 1e6 / copy)
                        except Exception as exc:  # a tier that cannot take the case
                            best[name] = float("nan")
                            print(name, type(exc).__name__, str(exc)[:120])
                del inputs
                torch.cuda.empty_cache()
                cells = "  ".join(f"{name} {value:.3f}" for name, value in best.items())
                function = "log" if log else "exp"
                line = f"{case.label:34} {str(dtype)[6:]:9} {function} {'bwd' if backward else 'fwd'}  {cells}"
                print(line, flush=True)
                lines.append(line)
    if args.out:
        with open(args.out, "w") as f:
            f.write(f"{torch.cuda.get_device_name()}  torch {torch.__version__}\n" + "\n".join(lines) + "\n")


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
