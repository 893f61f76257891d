"""Device probe: a long strided axis over a tensor larger than L2, computed in bands of columns
small enough that the second read of each band (the finish after the partial reductions) finds it
in L2, against the whole tensor at once (whose second read comes mostly from device memory).

Each variant is captured in a CUDA graph (so host time between the bands does not count) and the
variants are replayed in turn, round after round, in one process. Bands are launched here through
the backend's canonical-view entry on column slices of the tensor; outputs are checked against
float64.

    PYTHONPATH=$PWD python benchmarks/band_probe.py [--dtypes bfloat16,float32] [--bands 8,16,32]
"""

from __future__ import annotations

import argparse

import torch
from kernel_breakdown import breakdown, parse_tunings, tuned

from fastsoftmax.backends.cuda.backend import BACKEND
from fastsoftmax.benchmark.layouts import copy_gbps

CASES = {
    "(65536,2048) d0": (65536, 2048),
    "(8192,16384) d0": (8192, 16384),
    "(1048576,128) d0": (1048576, 128),
}


def banded(tier: str, band_cols: int, backward: bool):
    def run(*tensors):
        views = [t.unsqueeze(0) for t in tensors]  # (1, n, inner): softmax over dim 0
        inner = views[0].shape[2]
        for c0 in range(0, inner, band_cols):
            pieces = [v[:, :, c0 : c0 + band_cols] for v in views]
            if backward:
                BACKEND.backward(*pieces, False, tier)
            else:
                BACKEND.forward(*pieces, False, tier)

    return run


def graphed(fn, tensors):
    fn(*tensors)
    torch.cuda.synchronize()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn(*tensors)
    return graph


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--cases", default=";".join(CASES))
    parser.add_argument("--bands", default="8,16,32", help="band sizes in MiB of one tensor")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--tiers", default="strided,strided_staged")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--iters", type=int, default=10)
    parser.add_argument("--tunings", default="", help="';'-separated tiers.Tuning settings for the banded variants")
    parser.add_argument("--profile", action="store_true", help="list each variant's launches of one call")
    args = parser.parse_args(argv)
    for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
        copy = copy_gbps(dtype)
        itemsize = torch.empty((), dtype=dtype).element_size()
        for label in args.cases.split(";"):
            n, inner = CASES[label]
            for direction in args.directions.split(","):
                backward = direction == "backward"
                x = torch.randn(n, inner, device="cuda").to(dtype)
                if backward:
                    y = torch.softmax(x.float(), 0).to(dtype)
                    dy = torch.randn(n, inner, device="cuda").to(dtype)
                    ref = (y.double() * (dy.double() - (dy.double() * y.double()).sum(0, keepdim=True))).float()
                    ins = (y, dy)
                else:
                    ref = torch.softmax(x.double(), 0).float()
                    ins = (x,)
                out = torch.empty_like(x)
                tensors = ins + (out,)
                variants = {}
                for tier in args.tiers.split(","):
                    for mib in [0] + [int(b) for b in args.bands.split(",")]:
                        cols = max(1, (mib << 20) // (n * itemsize)) if mib else inner
                        cols = 1 << (cols.bit_length() - 1) if mib else inner
                        if mib and cols >= inner:
                            continue
                        if not BACKEND.supports(tier, 1, n, cols, dtype, backward):
                            continue
                        name = f"{tier}/" + (f"{cols} cols ({n * cols * itemsize >> 20} MiB)" if mib else "whole")
                        variants[name] = banded(tier, cols, backward)
                        for fields in parse_tunings(args.tunings) if mib else ():
                            tag = ",".join(f"{k}={v}" for k, v in fields.items())
                            variants[f"{name} [{tag}]"] = tuned(banded(tier, cols, backward), fields)
                graphs = {}
                for name, fn in list(variants.items()):
                    out.fill_(float("nan"))
                    try:
                        fn(*tensors)
                        torch.cuda.synchronize()
                    except Exception as exc:  # a tier that refuses a band: say so, time the rest
                        print(f"{label} {dtype} {direction} {name}: refused: {exc}", flush=True)
                        continue
                    err = ((out.float() - ref).abs().max() / ref.abs().max()).item()
                    if not err < 1e-2:
                        print(f"{label} {dtype} {direction} {name}: WRONG, max rel err {err}", flush=True)
                    graphs[name] = graphed(fn, tensors)
                times = {name: [] for name in graphs}
                for _ in range(args.rounds):
                    for name, graph in graphs.items():
                        graph.replay()
                        torch.cuda.synchronize()
                        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                        start.record()
                        for _ in range(args.iters):
                            graph.replay()
                        end.record()
                        end.synchronize()
                        times[name].append(start.elapsed_time(end) / args.iters * 1e3)
                if args.profile:
                    for name, graph in graphs.items():
                        fn = variants[name]
                        _, last = breakdown(fn, [tensors], 1)
                        launches = ", ".join(f"{us:.1f}" for _, us in last[:12])
                        print(f"    {name}: {len(last)} launches, {sum(us for _, us in last):.1f} us: {launches}")
                moved = n * inner * itemsize * (3 if backward else 2)
                for name, ts in times.items():
                    us = sorted(ts)[len(ts) // 2]
                    frac = moved / us / 1e3 / copy
                    print(f"{label} {str(dtype)[6:]} {direction} {name}: {us:.1f} us, {frac:.3f} of copy", flush=True)
                del graphs, x, ins, out, tensors, ref
                torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    raise SystemExit(main())
