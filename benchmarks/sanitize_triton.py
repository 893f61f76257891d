"""The Triton backend's tile kernels under compute-sanitizer: forward and backward, softmax and
log-softmax, three dtypes, on small strided problems that reach each tile form (one piece, two
pieces, scalar loads of whole columns, the long axes' scalar tiles, 16-byte loads) and rows; every
result checked against float64 (computed on the CPU, so that the sanitizer sees only these kernels).

    compute-sanitizer --tool memcheck python3 benchmarks/sanitize_triton.py [--shapes 2x21x143:1,..]
"""

from __future__ import annotations

import argparse
import sys

import torch
from sanitize import _problem

import fastsoftmax
from fastsoftmax import dispatch

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


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", help="SHAPE[:DIM] problems instead of PROBLEMS (sanitize.py's), e.g. 2x21x143:1")
    args = parser.parse_args()
    problems = [_problem(item) for item in args.shapes.split(",")] if args.shapes else PROBLEMS
    wrong = []
    for shape, dim in problems:
        for dtype in DTYPES:
            x = (torch.randn(shape, device="cuda") * 4).to(dtype)
            dy = torch.randn(shape, device="cuda").to(dtype)
            for log in (False, True):
                label = f"triton {shape} dim {dim} {dtype} log={log}"
                x64, dy64 = x.double().cpu(), dy.double().cpu()
                with dispatch.forced("triton"):
                    y = (fastsoftmax.log_softmax if log else fastsoftmax.softmax)(x, dim)
                    dx = fastsoftmax.softmax_backward(dy, y, dim, log=log)
                # the backward's reference from the y it was given (its rounding is not the kernel's)
                y64 = y.double().cpu()
                if log:
                    grad = dy64 - y64.exp() * dy64.sum(dim, keepdim=True)
                else:
                    grad = y64 * (dy64 - (dy64 * y64).sum(dim, keepdim=True))
                reference = torch.log_softmax(x64, dim) if log else torch.softmax(x64, dim)
                tolerance = 1e-5 if dtype == torch.float32 else 1e-2
                found = []
                for name, got, want in (("forward", y, reference), ("backward", dx, grad)):
                    error = (got.double().cpu() - want).abs().max().item()
                    if not error <= tolerance * max(1.0, want.abs().max().item()):
                        found.append(f"{label} {name}: error {error:.3g}")
                wrong += found
                print(f"{label}: {'ok' if not found else 'WRONG'}", flush=True)
    torch.cuda.synchronize()
    for line in wrong:
        print("WRONG", line)
    print(f"{len(wrong)} wrong results")
    return 1 if wrong else 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    sys.exit(main())
