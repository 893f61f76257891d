"""The Triton relay tier (the split tier's two kernels in one launch, ordered by tickets) over a grid
of its tunables, against the calls of both backends as planned, the Triton split tier and
torch.compile, alternated in one process.

    PYTHONPATH=. python3 benchmarks/relay_probe.py [--cases "64,65536,16:1;..."] [--dtypes bfloat16,float32]
        [--chunks 4096,8192,16384] [--tiles 4096] [--warps 8] [--lags 1,2,4] [--programs 2,4] [--stages 0]
        [--rounds 3]
        [--check-only]

Each (case, dtype, direction) prints the fraction of copy bandwidth of every variant ("auto", the
CUDA backend, the Triton split and relay tiers as planned, the relay over the grid, torch.compile), the best of
``--rounds`` rounds in which every variant is timed once. Every variant's output is checked against
float64 first; ``--check-only`` runs the checks alone (on a CPU too,
under ``TRITON_INTERPRET=1`` and with small ``--cases``: the default ones are GPU-sized, tens of millions of elements).
A relay variant is named by its elements a work item (chunk), elements a tile step (tile), warps,
work items per SM between a piece's two reads (lag) and programs per SM (programs).
"""

from __future__ import annotations

import argparse
import itertools
import math

import torch
from triton_tile_probe import compiled_peer, probe_cases  # benchmarks/ is the script's folder

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends import triton as tb

DEFAULT_CASES = "64,65536,16:1;128,65536,8:1;16,1048576,2:1;128,16384,32:1;1024,16384,4:1;16777216,8:0;16,1048576:1"


def _relay(views, backward, itemsize, sm_count, tunables):
    outer, n, inner = views[0].shape
    p = tb.relay_plan(outer, n, inner, itemsize, backward, sm_count, **tunables)
    device_index = views[0].device.index if views[0].is_cuda else -1
    shape = (outer, n, inner)
    if backward:
        y, dy, dx = views
        strides = (*y.stride(), *dy.stride(), dx.stride(0), dx.stride(1))
        resolved = tb._resolved(p, shape, strides, True)
        return lambda: tb._launch_backward(*resolved, y, dy, dx, device_index) or dx
    x, y = views
    strides = (*x.stride(), y.stride(0), y.stride(1))
    resolved = tb._resolved(p, shape, strides, False)
    return lambda: tb._launch_forward(*resolved, x, y, device_index) or y


def _variants(args, x, y, dy, out, dim, backward) -> dict:
    shape = x.shape
    if backward:
        call = lambda **kw: fastsoftmax.softmax_backward(dy, y, dim, **kw)  # noqa: E731
    else:
        call = lambda **kw: fastsoftmax.softmax(x, dim, **kw)  # noqa: E731
    found = {"auto": call}
    if x.is_cuda:
        found["cuda"] = lambda: call(backend="cuda")

    def split():
        with dispatch.forced("triton", "split"):
            return call()

    def relay():
        with dispatch.forced("triton", "relay"):
            return call()

    found["triton split"] = split
    found["triton relay"] = relay
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
    views = [t.view(outer, shape[dim], inner) for t in ((y, dy, out) if backward else (x, out))]
    sm_count = torch.cuda.get_device_properties(x.device).multi_processor_count if x.is_cuda else 132
    for chunk in (int(v) for v in args.chunks.split(",") if v):  # --chunks "": the planned relay only
        for tile in (int(v) for v in args.tiles.split(",")):
            for warps in (int(v) for v in args.warps.split(",")):
                for lag in (int(v) for v in args.lags.split(",")):
                    for programs, stages in itertools.product(
                        (int(v) for v in args.programs.split(",")), (int(v) for v in args.stages.split(","))
                    ):
                        tunables = dict(
                            chunk_elems=chunk,
                            tile_elems=tile,
                            warps=warps,
                            lag_items_per_sm=lag,
                            programs_per_sm=programs,
                            stages=stages,
                        )
                        name = f"relay chunk {chunk:6d} tile {tile:5d} warps {warps:2d} lag {lag:2d}"
                        name += f" programs {programs}" + (f" stages {stages}" if stages else "")
                        found[name] = _relay(views, backward, x.element_size(), sm_count, tunables)
    if not args.check_only:
        found["torch.compile"] = compiled_peer(x, y, dy, dim, backward)
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default=DEFAULT_CASES)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--chunks", default="4096,8192,16384")
    parser.add_argument("--tiles", default="4096")
    parser.add_argument("--warps", default="8")
    parser.add_argument("--lags", default="1,2,4")
    parser.add_argument("--programs", default="2,4")
    parser.add_argument("--stages", default="0", help="num_stages of the relay kernels (0: Triton's default)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check-only", action="store_true")
    args = parser.parse_args(argv)
    return 1 if probe_cases(args, _variants) else 0


if __name__ == "__main__":
    raise SystemExit(main())
