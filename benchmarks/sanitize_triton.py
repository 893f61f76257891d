"""The Triton backend's kernels under compute-sanitizer: forward and backward, softmax and
log-softmax, three dtypes, on small strided problems that reach each tile form (one piece, two
pieces, scalar loads of whole columns, the long axes' scalar tiles, 16-byte loads) and rows; with
--tiers, every tier (tile, row, online, split, relay) forced on small
problems it takes, plain and widened (a 16-bit input computed as float32 in one pass, its gradient
back in 16 bits); with --realigned, rows through the realigned kernels; with --two-pieces, the held realigned
kernels' bodies just past a power of two as two pieces (and rows of 521 and 4105 among the tiers'
problems). Every result checked against
float64 (computed on the CPU, so that the sanitizer sees only these kernels).

    compute-sanitizer --tool memcheck python3 benchmarks/sanitize_triton.py [--shapes 2x21x143:1,..]
    compute-sanitizer --tool memcheck python3 benchmarks/sanitize_triton.py --tiers [--realigned] [--two-pieces]
"""

from __future__ import annotations

import argparse
import math
import sys

import torch
from sanitize import _problem

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.triton import settings as triton_settings

DTYPES = (torch.float32, torch.float16, torch.bfloat16)
#: (shape, dim): 21 and 150 channels over odd and even H x W (two pieces: 16 + 8, 128 + 32; the
#: 16-bit log-softmax backward of 21 under its register cap), 40 (32 + 8, two threads a column, 32-bit
#: offsets), 16 (one piece), 3 (2 + 1), rows of 21
PROBLEMS = [
    ((2, 21, 11, 13), 1),
    ((2, 40, 11, 13), 1),
    ((2, 21, 16, 16), 1),
    ((1, 150, 7, 9), 1),
    ((1, 150, 16, 16), 1),
    ((3, 16, 143), 1),
    ((2, 3, 13, 5), 1),
    ((37, 21), -1),
]


#: --tiers: (shape, dim) problems small enough for the sanitizer on which each tier is forced where it
#: takes them (TritonBackend.supports): rows, a long axis over a narrow inner size (the relay's), and
#: an axis of 40 over 128 columns (the tile tier's wide tiles of 16-byte loads); rows of 300, 600 and
#: 12345, whose held realigned plans take 32 or 64 elements a thread (REALIGNED_HELD_ELEMS_PER_THREAD)
TIER_PROBLEMS = [((6, 3000), -1), ((3, 700, 4), 1), ((1, 40, 128), 1), ((37, 100), -1)]
TIER_PROBLEMS += [((13, 300), -1), ((9, 600), -1), ((3, 12345), -1)]
#: --two-pieces: rows whose bodies two pieces hold beside TIER_PROBLEMS' 300 and 600 (256 + 64, 512 + 128):
#: 521 (512 + 8, the tile tier) and 4105 (4096 + 8, the row tier)
TWO_PIECE_PROBLEMS = [((7, 521), -1), ((3, 4105), -1)]


def _check(label: str, x, dy, dim: int, log: bool, tier: str | None, widened: bool) -> list[str]:
    """One forward and one backward of the Triton kernels (``tier`` forced, or the backend's choice),
    against float64: ``widened``, a 16-bit ``x`` computed as float32 in one pass and its gradient back
    in x's type (through autograd), else softmax_backward on x's type."""
    x64, dy64 = x.double().cpu(), dy.double().cpu()
    op = fastsoftmax.log_softmax if log else fastsoftmax.softmax
    with dispatch.forced("triton", tier):
        if widened:
            source = x.detach().requires_grad_(True)
            y = op(source, dim, dtype=torch.float32)
            (dx,) = torch.autograd.grad(y, source, dy.float())
        else:
            y = op(x, dim)
            dx = fastsoftmax.softmax_backward(dy, y, dim, log=log)
    # the backward's reference from the y it was given (its rounding is not the kernel's)
    y64 = y.detach().double().cpu()
    if log:
        grad = dy64 - y64.exp() * dy64.sum(dim, keepdim=True)
    else:
        grad = y64 * (dy64 - (dy64 * y64).sum(dim, keepdim=True))
    reference = torch.log_softmax(x64, dim) if log else torch.softmax(x64, dim)
    found = []
    for name, got, want in (("forward", y, reference), ("backward", dx, grad)):
        tolerance = 1e-5 if got.dtype == torch.float32 else 1e-2
        error = (got.detach().double().cpu() - want).abs().max().item()
        if not error <= tolerance * max(1.0, want.abs().max().item()):
            found.append(f"{label} {name}: error {error:.3g}")
    print(f"{label}: {'ok' if not found else 'WRONG'}", flush=True)
    return found


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", help="SHAPE[:DIM] problems instead of PROBLEMS (sanitize.py's), e.g. 2x21x143:1")
    parser.add_argument(
        "--tiers",
        action="store_true",
        help="each tier forced on TIER_PROBLEMS, plain and widened (16-bit in, float32 out), instead",
    )
    parser.add_argument(
        "--realigned",
        action="store_true",
        help="rows of every length through the realigned kernels where they take them (REALIGNED_ROW_COLS widened)",
    )
    parser.add_argument(
        "--two-pieces",
        action="store_true",
        help="the held realigned kernels' bodies just past a power of two as two pieces (REALIGNED_TWO_PIECES "
        "at 1/2 of any length), TWO_PIECE_PROBLEMS among the tiers' problems",
    )
    args = parser.parse_args()
    from fastsoftmax.backends.triton import REALIGNED_TWO_PIECES, realigned_everywhere

    settings = {}  # the Triton backend's settings the kernels run under
    if args.realigned:
        settings["REALIGNED_ROW_COLS"] = realigned_everywhere()
    tier_problems = TIER_PROBLEMS
    if args.two_pieces:
        settings["REALIGNED_TWO_PIECES"] = dict.fromkeys(REALIGNED_TWO_PIECES, (0.5, None))
        tier_problems = TIER_PROBLEMS + TWO_PIECE_PROBLEMS
    problems = [_problem(item) for item in args.shapes.split(",")] if args.shapes else PROBLEMS
    backend = dispatch.kernel_backend("triton")
    runs = []  # (shape, dim, dtype, tier, widened)
    if args.tiers:
        for shape, dim in tier_problems:
            dim %= len(shape)
            n, inner = shape[dim], math.prod(shape[dim + 1 :])
            outer = math.prod(shape) // (n * inner)
            for tier in backend.tiers:
                for dtype in DTYPES:
                    for backward in (False, True):
                        if not backend.supports(tier, outer, n, inner, dtype, backward):
                            break
                    else:
                        runs.append((shape, dim, dtype, tier, False))
                        if dtype != torch.float32:
                            runs.append((shape, dim, dtype, tier, True))
    else:
        runs = [(shape, dim, dtype, None, False) for shape, dim in problems for dtype in DTYPES]
    wrong = []
    with triton_settings(settings):
        for shape, dim, dtype, tier, widened in runs:
            x = (torch.randn(shape, device="cuda") * 4).to(dtype)
            dy = torch.randn(shape, device="cuda").to(dtype)
            for log in (False, True):
                forms = f"{'@' + tier if tier else ''} {shape} dim {dim} {dtype}{' widened' if widened else ''}"
                label = f"triton{forms} log={log}"
                wrong += _check(label, x, dy, dim, log, tier, widened)
        torch.cuda.synchronize()
    for line in wrong:
        print("WRONG", line)
    print(f"{len(runs) * 2} problems, {len(wrong)} wrong results")
    return 1 if wrong else 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    sys.exit(main())
