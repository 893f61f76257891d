"""The Triton tile kernels (reduced axis in registers) on strided problems, over a grid of block
shapes, against both backends and torch.compile, alternated in one process.

    PYTHONPATH=. python3 benchmarks/triton_tile_probe.py [--cases "16,21,513,513:1;..."]
        [--dtypes bfloat16,float32] [--blocks 32,64,128,256] [--warps 2,4,8] [--layouts tile,nlast]
        [--rounds 3] [--check-only]

Each (case, dtype, direction) prints the fraction of copy bandwidth of each backend's call
("triton", and on a GPU "cuda"), of every (BLOCK_I, num_warps) in the grid for each kernel layout,
and of torch.compile(torch.softmax), the best of ``--rounds`` rounds in which every variant is timed
once; then, as far as Inductor exposes it, the block shape that Inductor's autotuner kept. Every
variant's output is checked against float64 first; ``--check-only`` runs the checks alone (on a CPU too,
under ``TRITON_INTERPRET=1`` and with small ``--cases``: the default ones are GPU-sized, tens of millions of elements).

Kernel layouts: ``tile``, the backend's tile kernels ([BLOCK_N, BLOCK_I] tiles; a warp's lanes along
the contiguous inner axis, each thread holding the whole reduced axis of its columns); ``nlast``,
the kernels below, whose tile is [BLOCK_I, BLOCK_N] with the inner stride a value Triton does not
specialise, so that its coalescing pass, unable to prove the inner axis contiguous, gives the lanes
to the reduced axis (reduced by shuffles) and the warps to inner. That is the layout of
torch.compile's persistent reduction for bf16 (16, 21, 513, 513) over dim 1 backward, whose index
``x % 263169`` hides the contiguity the same way: 0.81 of copy on an H200 where the tile kernel of
the same size ran 0.77 at 4 warps and 0.51-0.66 at 8 (benchmarks/results/2026-11-28_h200_s29); the
nlast kernels get it without a division an element (Triton 3.9 on sm_90: the same blocked layout,
624 SASS instructions a thread at 8 warps against Inductor's 536). Measured on the H200 it did not close
that gap: 0.782 at best against the backend's 0.775 and torch.compile's 0.817
(benchmarks/results/2026-11-28_h200_s30/tile_probe_first.txt).
"""

from __future__ import annotations

import argparse
import math

import torch
import triton
import triton.language as tl

import fastsoftmax
from fastsoftmax.backends import triton as tb
from fastsoftmax.backends.triton import kernels
from fastsoftmax.backends.triton.kernels import NEG_INF, _safe_max


@triton.jit
def _nlast_tile(N, INNER, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    """Outer index, inner and reduced indices ([BLOCK_I, 1], [1, BLOCK_N]) and mask of this program's tile."""
    pid = tl.program_id(0)
    inner_blocks = tl.cdiv(INNER, BLOCK_I)
    i = (pid % inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)[:, None]
    n = tl.arange(0, BLOCK_N)[None, :]
    return pid // inner_blocks, i, n, (i < INNER) & (n < N)


# ``s_i``: the inner stride, 1 at run time, left unspecialised (see the module's docstring)
@triton.jit(do_not_specialize=["s_i"])
def softmax_fwd_nlast(
    x_ptr, y_ptr, N, INNER, xs_o, xs_n, ys_o, ys_n, s_i, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr
):
    o, i, n, mask = _nlast_tile(N, INNER, BLOCK_N, BLOCK_I)
    x = tl.load(x_ptr + (o * xs_o + n * xs_n + i * s_i), mask=mask, other=NEG_INF).to(tl.float32)
    m = tl.max(x, axis=1)[:, None]
    e = tl.exp(x - _safe_max(m))
    y = e * (1.0 / tl.sum(e, axis=1)[:, None])
    tl.store(y_ptr + (o * ys_o + n * ys_n + i * s_i), y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["s_i"])
def softmax_bwd_nlast(
    y_ptr,
    dy_ptr,
    dx_ptr,
    N,
    INNER,
    ys_o,
    ys_n,
    dys_o,
    dys_n,
    dxs_o,
    dxs_n,
    s_i,
    BLOCK_N: tl.constexpr,
    BLOCK_I: tl.constexpr,
):
    o, i, n, mask = _nlast_tile(N, INNER, BLOCK_N, BLOCK_I)
    y = tl.load(y_ptr + (o * ys_o + n * ys_n + i * s_i), mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + (o * dys_o + n * dys_n + i * s_i), mask=mask, other=0.0).to(tl.float32)
    total = tl.sum(y * dy, axis=1)[:, None]
    dx = y * (dy - total)
    tl.store(dx_ptr + (o * dxs_o + n * dxs_n + i * s_i), dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _launch(layout, backward, tensors, block_i, warps):
    """One launch of a ``layout`` kernel on canonical (outer, n, inner) views; returns the output."""
    outer, n, inner = tensors[0].shape
    grid = (outer * triton.cdiv(inner, block_i),)
    block_n = tb._pow2(n)
    if layout == "nlast":
        # the inputs' inner stride is 1 (contiguous problems), passed as a value
        ends = (t.stride()[:2] for t in tensors)
        kernel = softmax_bwd_nlast if backward else softmax_fwd_nlast
        kernel[grid](
            *tensors,
            n,
            inner,
            *(s for pair in ends for s in pair),
            1,
            BLOCK_N=block_n,
            BLOCK_I=block_i,
            num_warps=warps,
        )
        return tensors[-1]
    wide = tb._wide_offsets(outer, n, inner, *(t.stride() for t in tensors))
    blocks = dict(LOG=False, BLOCK_O=1, BLOCK_N=block_n, BLOCK_N2=0, BLOCK_I=block_i, WIDE=wide, num_warps=warps)
    if backward:
        y, dy, dx = tensors
        strides = (*y.stride(), *dy.stride(), dx.stride(0), dx.stride(1))
        kernels.softmax_bwd_tile[grid](y, dy, dx, outer, n, inner, *strides, **blocks)
    else:
        x, y = tensors
        strides = (*x.stride(), y.stride(0), y.stride(1))
        kernels.softmax_fwd_tile[grid](x, y, outer, n, inner, *strides, **blocks)
    return tensors[-1]


def _inductor_blocks() -> list[str]:
    """The configs Inductor's autotuners kept (best effort: Inductor's internals change)."""
    try:
        from inductor_kernels import kept_configs

        return kept_configs()
    except Exception:  # noqa: BLE001 - a torch whose internals moved: no lines, the probe goes on
        return []


def _variants(args, x, y, dy, out, dim, backward) -> dict:
    """name -> fn() returning its output: the backends' calls, each layout's kernels over the grid of
    block shapes a thread can hold, and torch.compile (unless only checking)."""
    shape = x.shape
    backends = ("triton", "cuda") if x.is_cuda else ("triton",)
    if backward:
        found = {b: lambda b=b: fastsoftmax.softmax_backward(dy, y, dim, backend=b) for b in backends}
    else:
        found = {b: lambda b=b: fastsoftmax.softmax(x, dim, backend=b) for b in backends}
    outer, inner = math.prod(shape[:dim]), math.prod(shape[dim + 1 :])
    views = [t.view(outer, shape[dim], inner) for t in ((y, dy, out) if backward else (x, out))]
    block_n = tb._pow2(shape[dim])
    for layout in args.layouts.split(","):
        for block_i in (int(b) for b in args.blocks.split(",")):
            for w in (int(w) for w in args.warps.split(",")):
                per_thread = block_n * block_i // (32 * w)
                if not args.min_per_thread <= per_thread <= args.max_per_thread // (2 if backward else 1):
                    continue
                name = f"{layout} BLOCK_I {block_i:4d} warps {w:2d} ({per_thread:3d} a thread)"
                found[name] = lambda lay=layout, b=block_i, w=w: _launch(lay, backward, views, b, w)
    if not args.check_only:
        found["torch.compile"] = compiled_peer(x, y, dy, dim, backward)
    return found


def compiled_peer(x, y, dy, dim, backward):
    """torch.compile of torch's own call: the softmax of x, or its backward from y and dy."""
    if backward:
        eager = lambda: torch._softmax_backward_data(dy, y, dim, x.dtype)  # noqa: E731
    else:
        eager = lambda: torch.softmax(x, dim)  # noqa: E731
    return torch.compile(eager, dynamic=False)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cases", default="16,21,513,513:1;16,21,512,512:1;8,150,127,127:1")
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--blocks", default="16,32,64,128,256,512")
    parser.add_argument("--warps", default="1,2,4,8,16")
    parser.add_argument("--layouts", default="tile", help="kernel layouts: tile (the backend's), nlast")
    parser.add_argument("--min-per-thread", type=int, default=8)
    parser.add_argument("--max-per-thread", type=int, default=64, help="forward; half of it backward")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check-only", action="store_true")
    args = parser.parse_args(argv)
    wrong = probe_cases(args, _variants)
    for line in [] if args.check_only else _inductor_blocks():
        print("inductor kept", line)
    return 1 if wrong else 0


def probe_cases(args, variants) -> int:
    """For each of ``args.cases`` ("shape:dim;..."), ``args.dtypes`` and direction (``args.directions``
    where given, else both): fresh inputs, every variant of ``variants(args, x, y, dy, out, dim,
    backward)`` (name -> fn() returning its output) checked against float64 with its output
    poisoned, then the right ones timed alternated (unless ``args.check_only``). Returns how many
    were wrong."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    directions = getattr(args, "directions", "forward,backward").split(",")
    wrong = 0
    for case in args.cases.split(";"):
        shape_text, dim_text = case.split(":")
        shape, dim = tuple(int(v) for v in shape_text.split(",")), int(dim_text)
        for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
            x = torch.randn(shape, device=device).mul(3).to(dtype)
            y = torch.softmax(x.float(), dim).to(dtype)
            dy = torch.randn(shape, device=device).to(dtype)
            for backward in (d == "backward" for d in directions):
                if backward:
                    ref = torch._softmax_backward_data(dy.double(), y.double(), dim, torch.float64)
                else:
                    ref = torch.softmax(x.double(), dim)
                out = torch.empty_like(x)
                tag = f"{shape_text} d{dim} {str(dtype)[6:]} {'backward' if backward else 'forward'}"
                right = {}
                for name, fn in variants(args, x, y, dy, out, dim, backward).items():
                    out.fill_(float("nan"))
                    err = (fn().reshape(shape).double() - ref).abs().max().item()
                    if err <= 2e-2:
                        right[name] = fn
                    else:
                        wrong += 1
                        print(f"{tag} {name}: WRONG (max error {err})", flush=True)
                if args.check_only:
                    print(f"{tag}: {len(right)} variants right", flush=True)
                else:
                    _time(tag, right, x, backward, args.rounds)
                del ref
            torch._dynamo.reset()
    return wrong


def _time(tag, variants, x, backward, rounds):
    from fastsoftmax.benchmark.layouts import copy_gbps
    from fastsoftmax.benchmark.timing import median_ms

    size = x.numel() * x.element_size() * (3 if backward else 2)
    copy = copy_gbps(x.dtype)
    best = {name: float("inf") for name in variants}
    for _ in range(rounds):  # alternated: each round times every variant once
        for name, fn in variants.items():
            best[name] = min(best[name], median_ms(fn))
    for name, ms in best.items():
        print(f"{tag} {name}: {ms * 1e3:8.1f} us {size / ms / 1e6 / copy:.3f} of copy", flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
