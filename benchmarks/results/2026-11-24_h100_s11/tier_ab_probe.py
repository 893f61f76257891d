"""Strided tiers alternated in one process on contiguous (outer, n, inner) problems, timed as the
layouts regime times (layouts.time_ms over fresh input sets), beside "auto" through the public API."""
import sys

import torch

import fastsoftmax
from fastsoftmax.backends.cuda.backend import BACKEND
from fastsoftmax.benchmark import layouts

CASES = [
    ((8, 150, 128, 128), 1),
    ((16, 21, 512, 512), 1),
    ((32, 4096, 1024), 1),
    ((128, 1024, 1024), 1),
    ((4096, 64, 512), 1),
    ((8192, 16384), 0),
    ((128, 65536, 8), 1),
    ((64, 65536, 16), 1),
]
TIERS = ("strided_staged", "strided")


def canon(shape, dim):
    outer = 1
    for s in shape[:dim]:
        outer *= s
    inner = 1
    for s in shape[dim + 1 :]:
        inner *= s
    return outer, shape[dim], inner


def main():
    dtypes = [getattr(torch, d) for d in (sys.argv[1] if len(sys.argv) > 1 else "bfloat16").split(",")]
    copy = {d: layouts.copy_gbps(d) for d in dtypes}
    for dtype in dtypes:
        for shape, dim in CASES:
            o, n, i = canon(shape, dim)
            for backward in (False, True):
                case = layouts.LayoutCase("x", "x", shape, dim)
                sets = layouts.input_sets(case, dtype, backward)
                floor = case.bytes_moved(torch.empty((), dtype=dtype).element_size(), backward)
                fns = {}
                if backward:
                    fns["auto"] = lambda dy, y: fastsoftmax.softmax_backward(dy, y, dim)
                    for t in TIERS:
                        def f(dy, y, t=t):
                            dx = torch.empty_like(y)
                            BACKEND.backward(y.view(o, n, i), dy.view(o, n, i), dx.view(o, n, i), False, t)
                            return dx
                        fns[t] = f
                else:
                    fns["auto"] = lambda x: fastsoftmax.softmax(x, dim)
                    for t in TIERS:
                        def f(x, t=t):
                            y = torch.empty_like(x)
                            BACKEND.forward(x.view(o, n, i), y.view(o, n, i), False, t)
                            return y
                        fns[t] = f
                res = {k: [] for k in fns}
                for _ in range(3):
                    for k, fn in fns.items():
                        try:
                            ms = layouts.time_ms(fn, sets)
                            res[k].append(floor / ms / 1e6 / copy[dtype])
                        except Exception as exc:
                            res[k].append(float("nan"))
                            print("   ", k, type(exc).__name__, str(exc)[:120])
                cells = "  ".join(f"{k} {max(v):.3f} ({min(v):.3f})" for k, v in res.items())
                print(f"{str(shape):22} d{dim} {str(dtype)[6:]:9} {'bwd' if backward else 'fwd'}  {cells}", flush=True)
                del sets
                torch.cuda.empty_cache()


main()
