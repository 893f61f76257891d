"""GPU probe of the strided_warp tier (kernels/strided_warp.cuh) against what serves the same
problems otherwise: fastsoftmax "auto", the CUDA staged tiles, and Triton, each through the public
API (forward and backward), alternated call by call in one process on the same tensors, each call's
GPU time behind a spin kernel that covers its host time (grid_row_probe.gpu_time_us: a forced tier's
context costs host time that back-to-back timing would count), as fractions of device-to-device copy
bandwidth.

    PYTHONPATH=$PWD python3 benchmarks/warp_columns_probe.py [--shapes '8x150x128x128:1,64x32x2048:1']
        [--dtypes bfloat16,float32] [--impls auto,warp,staged,triton] [--iters 30] [--out DIR]

A shape is SIZESxSIZES...:DIM; a variant of the tier may carry tuning fields, e.g.
warp:strided_warp_row_warps=4. Every implementation's result is checked against float64 before it
is timed (poisoned output; a wrong one is reported and not timed).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics

import torch
from grid_row_probe import error, gpu_time_us, tolerance

from fastsoftmax import dispatch
from fastsoftmax.backends.cuda import tiers
from fastsoftmax.benchmark import layouts

SHAPES = (
    "16x21x512x512:1,8x150x128x128:1,2x19x1024x2048:1,4096x64x512:1,64x32x2048:1,32x64x4096:1,"
    "4x96x65536:1,8x300x4096:1,32x512x1024:1,1024x8x2048:1"
)
FORCED = {"warp": ("cuda", "strided_warp"), "staged": ("cuda", "strided_staged"), "triton": ("triton", None)}


def implementation(spec: str, dim: int, backward: bool):
    name, _, fields = spec.partition(":")
    tuning = {key: int(value) for key, _, value in (item.partition("=") for item in fields.split(";") if item)}
    call = layouts.public_call(dim, backward)
    if name == "auto":
        return call
    backend, tier = FORCED[name]

    def forced(*args):
        with dispatch.forced(backend, tier), tiers.tuned(**tuning):
            return call(*args)

    return forced


def checked(fn, case, dtype, backward) -> str:
    x = case.make(dtype, "cuda")
    x64 = x.double()
    if backward:
        y = case.laid_out(torch.softmax(x.float(), case.dim).to(dtype))
        dy = case.make(dtype, "cuda")
        y64, dy64 = y.double(), dy.double()
        reference = y64 * (dy64 - (dy64 * y64).sum(case.dim, keepdim=True))
        out = fn(dy, y)
    else:
        reference = torch.softmax(x64, case.dim)
        out = fn(x)
    err = error(out, reference)
    return "" if err <= tolerance(dtype) else f"error {err:.3g}"


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default=SHAPES)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--impls", default="auto,warp,staged,triton")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    names = args.impls.split(",")
    rows = []
    log = open(os.path.join(args.out, "warp_columns_probe.txt"), "w")  # noqa: SIM115 - closed at exit
    line = f"{torch.cuda.get_device_name()}; " + " | ".join(names)
    print(line, flush=True)
    log.write(line + "\n")
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        copy = layouts.copy_gbps(dtype)
        for item in args.shapes.split(","):
            sizes, _, dim = item.partition(":")
            shape = tuple(int(v) for v in sizes.split("x"))
            case = layouts.LayoutCase("probe", f"{shape} d{dim}", shape, int(dim))
            for backward in (d == "backward" for d in args.directions.split(",")):
                impls = {name: implementation(name, case.dim, backward) for name in names}
                problems = {}
                for name, fn in impls.items():
                    try:
                        problems[name] = checked(fn, case, dtype, backward)
                    except Exception as exc:  # noqa: BLE001 - a tier that refuses the shape
                        problems[name] = f"{type(exc).__name__}: {str(exc)[:120]}"
                inputs = layouts.input_sets(case, dtype, backward)
                timed = [name for name in names if not problems[name]]
                times = {name: [] for name in timed}
                for i in range(args.iters):
                    for name in timed if i % 2 == 0 else reversed(timed):
                        args_i = inputs[i % len(inputs)]
                        times[name].append(gpu_time_us(lambda fn=impls[name], a=args_i: fn(*a)))
                floor = case.bytes_moved(dtype.itemsize, backward)
                row = {"case": case.label, "dtype": dtype_name, "direction": "backward" if backward else "forward"}
                for name in timed:
                    us = statistics.median(times[name])
                    row[name] = round(floor / us / 1e3 / copy, 3)
                    row[name + "_us"] = round(us, 1)
                row.update({f"{name}_problem": problem for name, problem in problems.items() if problem})
                rows.append(row)
                del inputs
                torch.cuda.empty_cache()
                cells = [f"{name} {row[name]:.3f}" if name in row else f"{name} -" for name in names]
                line = f"{dtype_name:<8} {'bwd' if backward else 'fwd'} {case.label:<24} " + " | ".join(cells)
                print(line, flush=True)
                log.write(line + "\n")
                for name, problem in problems.items():
                    if problem:
                        log.write(f"    {name}: {problem}\n")
    with open(os.path.join(args.out, "warp_columns_probe.json"), "w") as out:
        json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    raise SystemExit(main())
