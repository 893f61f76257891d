"""Tiles in the inputs' 16-byte window (strided_staged.cuh, WINDOW kernels) against the aligned
tiles and the "strided" tier, in one process, through the CUDA backend on canonical views whose
pointers are placed at will: the input and the output each ``lead`` elements past a 16-byte
boundary (rows of whole 16-byte pieces).

Variants per (shape, dtype, direction):

* ``aligned``: every pointer on its boundary, the aligned tiles (the default there);
* ``aligned window``: the same tensors, window tiles forced (``staged_window=True``);
* ``in+1 out+0``: inputs one element in, the output on its boundary (stores shifted by shuffles);
* ``in+1 out+1``: inputs and output one element in (stores unshifted);
* ``in+1 out+0 strided``: the first case on the "strided" tier;
* ``in+1 out+0 narrow``: the first case on the staged tiles in copies as wide as the pointers allow
  (``staged_window=False``: 4 bytes in float32, 2 in 16-bit types, the output through shared memory).

Run on a GPU: ``python benchmarks/window_probe.py [--shapes "32,4096,1024;..."] [--dtypes ...]``.
"""

from __future__ import annotations

import argparse
import contextlib

import torch

from fastsoftmax.backends.cuda import tiers
from fastsoftmax.backends.cuda.backend import BACKEND
from fastsoftmax.benchmark.layouts import copy_gbps
from fastsoftmax.benchmark.timing import median_ms


def placed(shape, dtype, lead: int, ragged: bool = False) -> torch.Tensor:
    """A tensor of ``shape`` ``lead`` elements past a 16-byte boundary; ``ragged``: x[..., :-1] of
    rows one element longer (inner of no whole number of 16-byte pieces, rows that are)."""
    if ragged:
        return torch.randn(tuple(shape[:-1]) + (shape[-1] + 1,), device="cuda").to(dtype)[..., :-1]
    numel = torch.Size(shape).numel()
    return torch.randn(numel + 16, device="cuda").to(dtype)[lead : lead + numel].view(shape)


VARIANTS = {
    "aligned": (0, 0, "strided_staged", {}),
    "aligned window": (0, 0, "strided_staged", {"staged_window": True}),
    "in+1 out+0": (1, 0, "strided_staged", {}),
    "in+1 out+1": (1, 1, "strided_staged", {}),
    "in+1 out+0 strided": (1, 0, "strided", {}),
    "in+1 out+0 narrow": (1, 0, "strided_staged", {"staged_window": False}),
}
#: --ragged: inputs x[..., :-1] on their boundaries (inner = shape[-1] - 1), dense outputs
RAGGED_VARIANTS = {
    "ragged window": (0, 0, "strided_staged", {}),
    "ragged narrow": (0, 0, "strided_staged", {"staged_window": False}),
    "ragged strided": (0, 0, "strided", {}),
}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="32,4096,1024;128,1024,1024")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--ragged", action="store_true", help="inputs x[..., :-1] (RAGGED_VARIANTS)")
    args = parser.parse_args(argv)
    variants = RAGGED_VARIANTS if args.ragged else VARIANTS
    for shape in (tuple(int(v) for v in s.split(",")) for s in args.shapes.split(";")):
        if args.ragged:
            shape = shape[:-1] + (shape[-1] - 1,)
        for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
            copy = copy_gbps(dtype)
            size = torch.empty((), dtype=dtype).element_size()
            numel = torch.Size(shape).numel()
            for backward in (False, True):
                for name, (lead, out_lead, tier, tuning) in variants.items():
                    sets = []
                    for _ in range(3):
                        ins = [placed(shape, dtype, lead, args.ragged) for _ in range(2 if backward else 1)]
                        sets.append((*ins, placed(shape, dtype, out_lead)))
                    state = {"i": 0}

                    def call():
                        tensors = sets[state["i"] % len(sets)]
                        state["i"] += 1
                        with tiers.tuned(**tuning) if tuning else contextlib.nullcontext():
                            if backward:
                                BACKEND.backward(*tensors, False, tier)
                            else:
                                BACKEND.forward(*tensors, False, tier)

                    BACKEND.clear_plans()
                    ms = median_ms(call)
                    moved = (3 if backward else 2) * numel * size
                    print(
                        f"{shape} {str(dtype)[6:]} {'backward' if backward else 'forward'} {name:20s} "
                        f"{ms * 1e3:8.1f} us {moved / ms / 1e6 / copy:.3f} of copy",
                        flush=True,
                    )
    return 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    raise SystemExit(main())
