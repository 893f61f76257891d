"""The Triton tile kernels with the reduced axis last in the tile, against the backends' own kernels
(Triton's tiles; on a GPU the CUDA backend's too) and torch.compile, on strided problems whose rows lie
at several 16-byte phases (loads element by element), alternated in one process.

    PYTHONPATH=$PWD python3 benchmarks/triton_layout_probe.py [--cases "16,21,513,513:1;..."]
        [--dtypes bfloat16,float16,float32] [--configs BLOCK_IxWARPS,...] [--check-only]

Why: torch.compile's persistent reduction for bf16 (16, 21, 513, 513) over dim 1 backward, a
[XBLOCK, R] tile of 128 x 32 at 8 warps, ran 0.81 of copy on an H200 where the backend's tile of the
same size ran 0.77 at 4 warps and 0.51-0.66 at 8 (benchmarks/results/2026-11-28_h200_s29). Its index
is ``x % 263169``, which hides the contiguity of the inner axis from Triton's coalescing pass, so its
layout puts the 32 lanes of a warp along the reduced axis (one row each, the reduction by shuffles)
and the warps along inner; the backend's kernels, whose inner axis is provably contiguous, get lanes
along inner and the whole reduced axis in each thread. The kernels here take the tile as [BLOCK_I,
BLOCK_N], the reduced axis last, with the inner stride a value Triton does not specialise, which gives
them that layout without a division an element (Triton 3.9 on sm_90: the same blocked layout as
Inductor's, 624 SASS instructions a thread at 8 warps against its 536). Every variant's output is
checked against float64 before it is timed; ``--check-only`` runs the checks alone (under
``TRITON_INTERPRET=1`` on a CPU too).
"""

from __future__ import annotations

import argparse
import math

import torch
import triton
import triton.language as tl

NEG_INF = tl.constexpr(float("-inf"))
#: elements of the tile a thread may hold (the forward's most; the backward holds two tensors)
MIN_PER_THREAD, MAX_PER_THREAD = 8, 64


@triton.jit
def _tile(N, INNER, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr):
    """Outer index, inner and reduced indices ([BLOCK_I, 1], [1, BLOCK_N]) and mask of this program's tile."""
    pid = tl.program_id(0)
    inner_blocks = tl.cdiv(INNER, BLOCK_I)
    i = (pid % inner_blocks) * BLOCK_I + tl.arange(0, BLOCK_I)[:, None]
    n = tl.arange(0, BLOCK_N)[None, :]
    return pid // inner_blocks, i, n, (i < INNER) & (n < N)


# ``s_i``: the inner stride, 1 at run time, left unspecialised so that Triton cannot prove the inner
# axis contiguous (which gives the lanes to the reduced axis, the last of the tile)
@triton.jit(do_not_specialize=["s_i"])
def softmax_fwd_nlast(
    x_ptr, y_ptr, N, INNER, xs_o, xs_n, ys_o, ys_n, s_i, BLOCK_N: tl.constexpr, BLOCK_I: tl.constexpr
):
    o, i, n, mask = _tile(N, INNER, BLOCK_N, BLOCK_I)
    x = tl.load(x_ptr + (o * xs_o + n * xs_n + i * s_i), mask=mask, other=NEG_INF).to(tl.float32)
    m = tl.max(x, axis=1)[:, None]
    e = tl.exp(x - tl.where(m == NEG_INF, 0.0, m))
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
    o, i, n, mask = _tile(N, INNER, BLOCK_N, BLOCK_I)
    y = tl.load(y_ptr + (o * ys_o + n * ys_n + i * s_i), mask=mask, other=0.0).to(tl.float32)
    dy = tl.load(dy_ptr + (o * dys_o + n * dys_n + i * s_i), mask=mask, other=0.0).to(tl.float32)
    total = tl.sum(y * dy, axis=1)[:, None]
    dx = y * (dy - total)
    tl.store(dx_ptr + (o * dxs_o + n * dxs_n + i * s_i), dx.to(dx_ptr.dtype.element_ty), mask=mask)


def _variants(x, y, dy, out, dim, backward, configs):
    """name -> fn() returning its output: the backends' calls, and the kernels here in each
    [BLOCK_I, BLOCK_N] configuration (writing ``out``)."""
    import fastsoftmax

    shape = x.shape
    outer, n, inner = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1 :])
    xv, yv, dyv, ov = (t.view(outer, n, inner) for t in (x, y, dy, out))
    block_n = triton.next_power_of_2(n)
    # the Triton backend's tiles and, on a GPU, the CUDA backend's (auto's choice for float32
    # backward there, where the Triton tile is now measured faster in another process)
    backends = ("triton", "cuda") if x.is_cuda else ("triton",)
    if backward:
        found = {b: lambda b=b: fastsoftmax.softmax_backward(dy, y, dim, backend=b) for b in backends}
    else:
        found = {b: lambda b=b: fastsoftmax.softmax(x, dim, backend=b) for b in backends}
    for block_i, warps in configs:
        per_thread = block_n * block_i // (32 * warps)
        if not MIN_PER_THREAD <= per_thread <= MAX_PER_THREAD // (2 if backward else 1):
            continue  # too little work a thread, or more than its registers hold
        grid = (outer * triton.cdiv(inner, block_i),)
        if backward:
            args = (yv, dyv, ov, n, inner, yv.stride(0), yv.stride(1), dyv.stride(0), dyv.stride(1))
            args += (ov.stride(0), ov.stride(1), 1)
            kernel = softmax_bwd_nlast
        else:
            args = (xv, ov, n, inner, xv.stride(0), xv.stride(1), ov.stride(0), ov.stride(1), 1)
            kernel = softmax_fwd_nlast

        def launch(k=kernel, g=grid, a=args, b=block_i, w=warps):
            k[g](*a, BLOCK_N=block_n, BLOCK_I=b, num_warps=w)
            return out

        found[f"n-last {block_i}x{warps}"] = launch
    return found


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", default="16,21,513,513:1;8,150,127,127:1")
    parser.add_argument("--dtypes", default="bfloat16,float16,float32")
    parser.add_argument("--configs", default="16x4,16x8,32x8,64x8,128x4,128x8,256x8")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--check-only", action="store_true")
    args = parser.parse_args(argv)
    configs = [tuple(int(v) for v in c.split("x")) for c in args.configs.split(",")]
    device = "cuda" if torch.cuda.is_available() else "cpu"
    failures = 0
    for case in args.cases.split(";"):
        shape_text, dim_text = case.split(":")
        shape, dim = tuple(int(v) for v in shape_text.split(",")), int(dim_text)
        for dtype in (getattr(torch, d) for d in args.dtypes.split(",")):
            x = (torch.randn(shape, device=device) * 3).to(dtype)
            y = torch.softmax(x.float(), dim).to(dtype)
            dy = torch.randn(shape, device=device).to(dtype)
            for backward in (False, True):
                if backward:
                    reference = torch._softmax_backward_data(dy.double(), y.double(), dim, torch.float64)
                    eager = lambda: torch._softmax_backward_data(dy, y, dim, dtype)  # noqa: E731
                else:
                    reference = torch.softmax(x.double(), dim)
                    eager = lambda: torch.softmax(x, dim)  # noqa: E731
                out = torch.empty_like(x)
                variants = _variants(x, y, dy, out, dim, backward, configs)
                if not args.check_only:
                    compiled = torch.compile(eager, dynamic=False)
                    variants["torch.compile"] = compiled
                tag = f"{shape_text} d{dim} {str(dtype)[6:]} {'backward' if backward else 'forward'}"
                for name, fn in variants.items():
                    out.fill_(float("nan"))
                    error = (fn().double() - reference).abs().max().item()
                    if not error <= 2e-2:
                        failures += 1
                        print(f"{tag} {name}: WRONG (max error {error})", flush=True)
                if args.check_only:
                    print(f"{tag}: {len(variants)} variants checked", flush=True)
                    continue
                _time(tag, variants, x, backward, args.rounds)
            torch._dynamo.reset()
    return 1 if failures else 0


def _time(tag, variants, x, backward, rounds):
    from fastsoftmax.benchmark.layouts import copy_gbps
    from fastsoftmax.benchmark.timing import median_ms

    size = x.numel() * x.element_size() * (3 if backward else 2)
    copy = copy_gbps(x.dtype)
    best = {name: float("inf") for name in variants}
    for _ in range(rounds):  # alternated: each round times every variant once
        for name, fn in variants.items():
            best[name] = min(best[name], median_ms(fn))
    print(f"{tag}: " + "  ".join(f"{name} {size / ms / 1e6 / copy:.3f}" for name, ms in best.items()), flush=True)


if __name__ == "__main__":
    raise SystemExit(main())
