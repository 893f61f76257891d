"""Device probe: a softmax over the channels of an (outer, n, inner) tensor whose inner size is odd (a
segmentation head's (16, 21, 513, 513) over dim 1), in the form torch.compile's reductions take there,
against the Triton backend's scalar tiles and torch.compile, alternated in one process behind an L2 flush.

    PYTHONPATH=$PWD python benchmarks/flat_columns_probe.py [--cases "(16,21,513,513) d1;(8,21,255,255) d1"]
        [--dtypes bfloat16,float32] [--directions forward,backward] [--blocks 2048x4,4096x8] [--rounds 3]
        [--fixed] [--wide]

The form timed here ("flat"): a program takes XBLOCK consecutive columns of the flattened (outer x inner)
axis, so that its columns run on across outer indices and no tile is cut short at an outer index's
end, and holds all n rows of them in a [XBLOCK, RBLOCK] tile whose first axis is the contiguous one
(Triton lays such a tile out with the columns across the lanes and each column's rows within a thread
or a few lanes, so the reduction over n is mostly in registers). The scalar tiles ("ours", as the
backend plans them) hold [BLOCK_N, BLOCK_I] tiles of one outer index, the columns on the second axis.
Loads are single elements in both (the rows lie at several 16-byte phases). ``--blocks``: elements a
tile (XBLOCK is that over RBLOCK, n's next power of two) x warps.
Every variant's result is checked against float64 first; each line gives microseconds a call (the best
of ``--rounds`` rounds, each variant timed once a round) and its fraction of copy bandwidth.
"""

from __future__ import annotations

import argparse

import torch
import triton
import triton.language as tl
from kernel_breakdown import cases_of

import fastsoftmax
from fastsoftmax.benchmark.timing import copy_bandwidth_gbps, median_ms


@triton.jit
def _flat_tile(columns, n, inner, outer_stride, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, WIDE: tl.constexpr):
    # 32-bit indices, as torch.compile's where every offset fits (a 64-bit division a column costs more)
    block = tl.program_id(0).to(tl.int64) if WIDE else tl.program_id(0)
    column = block * XBLOCK + tl.arange(0, XBLOCK)[:, None]
    rows = tl.arange(0, RBLOCK)[None, :]
    offsets = column % inner + rows * inner + column // inner * outer_stride
    return offsets, (column < columns) & (rows < n)


@triton.jit
def flat_forward(
    x_ptr, y_ptr, columns, n, inner, outer_stride, XBLOCK: tl.constexpr, RBLOCK: tl.constexpr, WIDE: tl.constexpr
):
    offsets, mask = _flat_tile(columns, n, inner, outer_stride, XBLOCK, RBLOCK, WIDE)
    x = tl.load(x_ptr + offsets, mask=mask, other=float("-inf")).to(tl.float32)
    m = tl.max(x, axis=1, keep_dims=True)
    e = tl.exp(x - tl.where(m == float("-inf"), 0.0, m))
    y = e / tl.sum(e, axis=1, keep_dims=True)
    tl.store(y_ptr + offsets, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def flat_backward(
    y_ptr,
    dy_ptr,
    dx_ptr,
    columns,
    n,
    inner,
    outer_stride,
    XBLOCK: tl.constexpr,
    RBLOCK: tl.constexpr,
    WIDE: tl.constexpr,
):
    offsets, mask = _flat_tile(columns, n, inner, outer_stride, XBLOCK, RBLOCK, WIDE)
    y = tl.load(y_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + offsets, mask=mask, other=0.0).to(tl.float32)
    product = y * dy
    total = tl.sum(product, axis=1, keep_dims=True)
    tl.store(dx_ptr + offsets, (product - y * total).to(dx_ptr.dtype.element_ty), mask=mask)


@triton.jit
def flat_backward_fixed(
    y_ptr,
    dy_ptr,
    dx_ptr,
    columns,
    n,
    INNER: tl.constexpr,
    OUTER_STRIDE: tl.constexpr,
    XBLOCK: tl.constexpr,
    RBLOCK: tl.constexpr,
):
    # flat_backward with the inner size and outer stride compile-time constants, as torch.compile's
    # kernels take a tensor's sizes: divisions and multiplications by immediates
    flat_backward(y_ptr, dy_ptr, dx_ptr, columns, n, INNER, OUTER_STRIDE, XBLOCK, RBLOCK, False)


def flat_call(
    backward: bool, elements: int, warps: int, tensors: tuple, dim: int, fixed: bool = False, wide: bool = False
):
    """The flat form's call on a contiguous tensor softmaxed over ``dim``: ``fixed``, the backward with
    the sizes compile-time constants; ``wide``, 64-bit column indices."""
    first = tensors[0]
    shape = first.shape
    outer = int(torch.tensor(shape[:dim]).prod()) if dim else 1
    n = shape[dim]
    inner = first.numel() // (outer * n)
    columns = outer * inner
    rblock = triton.next_power_of_2(n)
    xblock = max(1, elements // rblock)
    grid = (triton.cdiv(columns, xblock),)
    out = torch.empty_like(first)
    if backward and fixed:
        y, dy = tensors
        flat_backward_fixed[grid](
            y, dy, out, columns, n, inner, n * inner, XBLOCK=xblock, RBLOCK=rblock, num_warps=warps
        )
    elif backward:
        y, dy = tensors
        blocks = dict(XBLOCK=xblock, RBLOCK=rblock, WIDE=wide, num_warps=warps)
        flat_backward[grid](y, dy, out, columns, n, inner, n * inner, **blocks)
    else:
        blocks = dict(XBLOCK=xblock, RBLOCK=rblock, WIDE=wide, num_warps=warps)
        flat_forward[grid](first, out, columns, n, inner, n * inner, **blocks)
    return out


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", default="(16,21,513,513) d1;(8,21,255,255) d1;(8,150,127,127) d1;(16,19,513,513) d1")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--blocks", default="2048x4,4096x4,4096x8,8192x8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--fixed", action="store_true", help="the backward with the sizes compile-time constants too")
    parser.add_argument("--wide", action="store_true", help="64-bit column indices (torch.compile takes 32-bit ones)")
    args = parser.parse_args(argv)
    copy = copy_bandwidth_gbps()
    # a compile for each case, dtype and direction: past dynamo's default limit of 8 it would run eagerly
    torch._dynamo.config.recompile_limit = 1 << 20
    torch._dynamo.config.cache_size_limit = 1 << 20
    compiled = torch.compile(torch.softmax, dynamic=False)
    compiled_backward = torch.compile(torch._softmax_backward_data, dynamic=False)
    for case in cases_of(args.cases):
        shape, dim = case.shape, case.dim
        for dtype in (getattr(torch, name) for name in args.dtypes.split(",")):
            for backward in (d == "backward" for d in args.directions.split(",")):
                x = torch.randn(shape, device="cuda", dtype=dtype) * 3
                y = torch.softmax(x, dim)
                dy = torch.randn_like(x)
                if backward:
                    yd, dyd = y.double(), dy.double()
                    reference = yd * (dyd - (dyd * yd).sum(dim, keepdim=True))
                    tensors, moved = (y, dy), 3 * x.numel() * x.element_size()
                    calls = {
                        "ours": lambda: fastsoftmax.softmax_backward(dy, y, dim),
                        "compile": lambda: compiled_backward(dy, y, dim, dtype),
                    }
                else:
                    reference = torch.softmax(x.double(), dim)
                    tensors, moved = (x,), 2 * x.numel() * x.element_size()
                    calls = {"ours": lambda: fastsoftmax.softmax(x, dim), "compile": lambda: compiled(x, dim)}
                for block in args.blocks.split(","):
                    elements, warps = (int(v) for v in block.split("x"))
                    calls[f"flat{block}"] = lambda elements=elements, warps=warps: flat_call(
                        backward, elements, warps, tensors, dim, wide=args.wide
                    )
                    if backward and args.fixed:
                        calls[f"fixed{block}"] = lambda elements=elements, warps=warps: flat_call(
                            backward, elements, warps, tensors, dim, fixed=True
                        )
                for name, call in calls.items():
                    err = ((call().double() - reference).abs().max() / reference.abs().max()).item()
                    if err > (1e-2 if dtype != torch.float32 else 1e-5):
                        raise SystemExit(f"{name} {case.label} {dtype}: max error {err:.2e} of the largest value")
                best = {}
                for _ in range(args.rounds):
                    for name, call in calls.items():
                        us = 1e3 * median_ms(call)
                        best[name] = min(best.get(name, us), us)
                label = f"{str(dtype).removeprefix('torch.')} {case.label} {'backward' if backward else 'forward'}"
                timed = " ".join(f"{name} {us:.1f} ({moved / us / 1e3 / copy:.3f})" for name, us in best.items())
                print(label, timed, flush=True)


if __name__ == "__main__":
    main()
