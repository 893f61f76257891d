"""Inputs with a step along their innermost axis (``x[..., ::2]``), softmaxed over another dim: read
where they lie against copied dense first, in one process.

Variants, each timed on the same input sets (``fastsoftmax.benchmark.layouts.run_case``):

* ``packs``: read in place, 16-byte packs of each pack's span where every input steps by 2 (auto);
* ``elements``: read in place, element by element (``strided_stepped_packs=False``);
* ``copy``: copied to a dense tensor first (``_layout.READ_STEPS_IN_PLACE = False``, the old path);
* ``triton``: read in place by the Triton backend (auto gives stepped calls to the CUDA backend);
* torch.softmax and torch.compile(torch.softmax).

Fractions count the view's own elements once (read and write, backward y and dy read, dx
written), as the layouts regime does; a step of 2 makes every sector of the input hold view
elements, so any kernel reads twice those bytes of its inputs: forward at most 2/3 of copy, backward
3/5.

Run on a GPU: ``python benchmarks/step_inner_probe.py [--backward] [--dtypes bfloat16,float32]
[--json PATH]``.
"""

from __future__ import annotations

import argparse
import json
import sys

import torch

from fastsoftmax import _layout
from fastsoftmax.backends.cuda import tiers
from fastsoftmax.benchmark.layouts import LayoutCase, copy_gbps, format_rows, layout_cases, run_case

CASES = [c for c in layout_cases() if c.view == "step_inner"] + [
    LayoutCase("view", "(128,1024,1024)[..., ::2] d1", (128, 1024, 512), 1, "step_inner"),
    LayoutCase("view", "(1024,16384,8)[..., ::2] d1", (1024, 16384, 4), 1, "step_inner"),
]


def inner_sweep() -> list[LayoutCase]:
    """Stepped inputs over dim 1 of (outer, 16384, inner) for inner from 2 to 256 (2^26 elements):
    where the Triton backend's tiles and the CUDA strided tier part ways."""
    return [
        LayoutCase(
            "view",
            f"({(1 << 26) // (16384 * k)},16384,{2 * k})[..., ::2] d1",
            ((1 << 26) // (16384 * k), 16384, k),
            1,
            "step_inner",
        )
        for k in (2, 4, 8, 16, 32, 64, 128, 256)
    ]


def variants(case: LayoutCase, backward: bool) -> dict:
    import fastsoftmax

    dim = case.dim

    def call(*tensors, backend="auto"):
        if backward:
            dy, y = tensors
            return fastsoftmax.softmax_backward(dy, y, dim, backend=backend)
        return fastsoftmax.softmax(tensors[0], dim, backend=backend)

    def triton(*tensors):
        return call(*tensors, backend="triton")

    def elements(*tensors):
        with tiers.tuned(strided_stepped_packs=False):
            return call(*tensors)

    def copy(*tensors):
        _layout.READ_STEPS_IN_PLACE = False
        try:
            return call(*tensors)
        finally:
            _layout.READ_STEPS_IN_PLACE = True

    return {"elements": elements, "copy": copy, "triton": triton}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backward", action="store_true", help="time the backward too")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--json", default=None)
    parser.add_argument("--inner-sweep", action="store_true", help="inner sizes 2-256 instead, no peers")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        print("needs a CUDA GPU", file=sys.stderr)
        return 2
    names = ["fastsoftmax", "elements", "copy", "triton"] + ([] if args.inner_sweep else ["torch", "compile"])
    print("fastsoftmax = packs (auto)")
    rows = []
    for dtype_name in args.dtypes.split(","):
        dtype = getattr(torch, dtype_name)
        copy_bw = copy_gbps(dtype)
        for case in inner_sweep() if args.inner_sweep else CASES:
            for backward in (False, True) if args.backward else (False,):
                extra = variants(case, backward)
                rows.append(run_case(case, dtype, backward, copy_bw, extra, peers=not args.inner_sweep))
                print(format_rows(rows[-1:], names).splitlines()[-1], flush=True)
    print(format_rows(rows, names))
    for row in rows:
        for name in names:
            if row.get(name + "_error"):
                print(f"{row['case']} {row['dtype']} {row['direction']} {name}: {row[name + '_error']}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump(rows, out, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
