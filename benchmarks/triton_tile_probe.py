"""The Triton tile kernels (reduced axis in registers) on strided problems, over a grid of block
shapes, against torch.compile, in one process.

    PYTHONPATH=. python3 benchmarks/triton_tile_probe.py [--cases "16,21,513,513:1;..."]
        [--dtypes bfloat16,float32] [--blocks 32,64,128,256] [--warps 2,4,8]

Each (case, dtype, direction) prints the fraction of copy bandwidth of the tile kernel as the
backend plans it ("plan"), of every (BLOCK_I, num_warps) in the grid, and of
torch.compile(torch.softmax), and, as far as Inductor exposes it, the block shape that Inductor's
autotuner kept. Every variant's output is checked against float64 first.
"""

from __future__ import annotations

import argparse
import gc
import math

import torch

import fastsoftmax
from fastsoftmax.backends import triton as tb
from fastsoftmax.backends.triton import kernels
from fastsoftmax.benchmark.layouts import copy_gbps
from fastsoftmax.benchmark.timing import median_ms


def _launch(backward, tensors, block_i, warps):
    """One launch of the tile kernel on canonical (outer, n, inner) views."""
    first = tensors[0]
    outer, n, inner = first.shape
    grid = (outer * triton_cdiv(inner, block_i),)
    blocks = dict(
        LOG=False,
        BLOCK_O=1,
        BLOCK_N=tb._pow2(n),
        BLOCK_I=block_i,
        WIDE=tb._wide_offsets(outer, n, inner, *(t.stride() for t in tensors)),
    )
    blocks["num_warps"] = warps
    if backward:
        y, dy, dx = tensors
        strides = (*y.stride(), *dy.stride(), dx.stride(0), dx.stride(1))
        kernels.softmax_bwd_tile[grid](y, dy, dx, outer, n, inner, *strides, **blocks)
    else:
        x, y = tensors
        strides = (*x.stride(), y.stride(0), y.stride(1))
        kernels.softmax_fwd_tile[grid](x, y, outer, n, inner, *strides, **blocks)


def triton_cdiv(a, b):
    return -(-a // b)


def _inductor_blocks() -> list[str]:
    """The configs Inductor's autotuners kept (best effort: Inductor's internals change)."""
    kept = []
    try:
        from torch._inductor.runtime.triton_heuristics import CachingAutotuner
    except Exception:
        return kept
    for obj in gc.get_objects():
        try:
            tuner = isinstance(obj, CachingAutotuner)
        except ReferenceError:
            continue
        if tuner:
            for launcher in getattr(obj, "launchers", []):
                kept.append(f"{getattr(obj.fn, '__name__', '?')}: {getattr(launcher, 'config', '?')}")
    return kept


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="16,21,513,513:1;16,21,512,512:1;8,150,127,127:1")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--blocks", default="16,32,64,128,256,512")
    parser.add_argument("--warps", default="1,2,4,8,16")
    parser.add_argument("--min-per-thread", type=int, default=8)
    parser.add_argument("--max-per-thread", type=int, default=64, help="forward; half of it backward")
    args = parser.parse_args(argv)
    blocks = [int(b) for b in args.blocks.split(",")]
    warps = [int(w) for w in args.warps.split(",")]
    for case in args.cases.split(";"):
        shape_text, dim_text = case.split(":")
        shape, dim = tuple(int(v) for v in shape_text.split(",")), int(dim_text)
        for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
            copy = copy_gbps(dtype)
            x = torch.randn(shape, device="cuda").mul(3).to(dtype)
            y = torch.softmax(x.float(), dim).to(dtype)
            dy = torch.randn(shape, device="cuda").to(dtype)
            for backward in (False, True):
                size = x.numel() * x.element_size() * (3 if backward else 2)
                if backward:
                    ref = torch._softmax_backward_data(dy.double(), y.double(), dim, torch.float64).to(dtype)
                    eager = lambda: torch._softmax_backward_data(dy, y, dim, dtype)  # noqa: E731
                else:
                    ref = torch.softmax(x.double(), dim).to(dtype)
                    eager = lambda: torch.softmax(x, dim)  # noqa: E731
                out = torch.empty_like(x)
                outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
                views = [t.view(outer, shape[dim], inner) for t in ((y, dy, out) if backward else (x, out))]
                tag = f"{shape_text} d{dim} {str(dtype)[6:]} {'backward' if backward else 'forward'}"
                rows = []

                def timed(name, fn, returns=False):
                    out.fill_(float("nan"))
                    fn()
                    torch.cuda.synchronize()
                    got = fn() if returns else out
                    err = (got.double() - ref.double()).abs().max().item()
                    if not err <= 2e-2:
                        rows.append(f"{tag} {name}: WRONG (max error {err})")
                        return
                    ms = median_ms(fn)
                    rows.append(f"{tag} {name}: {ms * 1e3:8.1f} us {size / ms / 1e6 / copy:.3f} of copy")

                def current():
                    if backward:
                        return fastsoftmax.softmax_backward(dy, y, dim, backend="triton")
                    return fastsoftmax.softmax(x, dim, backend="triton")

                timed("backend=triton", current, returns=True)
                block_n = tb._pow2(shape[dim])
                for block_i in blocks:
                    for w in warps:
                        per_thread = block_n * block_i // (32 * w)
                        if not args.min_per_thread <= per_thread <= args.max_per_thread // (2 if backward else 1):
                            continue
                        timed(
                            f"BLOCK_I {block_i:4d} warps {w:2d} ({per_thread:3d} a thread)",
                            lambda b=block_i, w=w: _launch(backward, views, b, w),
                        )
                compiled = torch.compile(eager, dynamic=False)
                timed("torch.compile", compiled, returns=True)
                print("\n".join(rows), flush=True)
            torch._dynamo.reset()
    for line in _inductor_blocks():
        print("inductor kept", line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
