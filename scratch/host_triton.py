"""Host time a call (back-to-back calls, no synchronisation) per backend, beside torch.softmax."""

import torch

import fastsoftmax
from fastsoftmax.benchmark.timing import host_us_per_call

torch.manual_seed(0)
cases = [((4, 1024), 1), ((16, 21, 33, 31), 1), ((64, 64, 64), 1), ((2, 16, 64), 1), ((4, 33, 136), 1)]
for shape, dim in cases:
    for dtype in (torch.bfloat16, torch.float32):
        x = torch.randn(shape, device="cuda", dtype=dtype)
        dy = torch.randn_like(x)
        y = torch.softmax(x, dim)
        row = []
        for b in ("triton", "cuda"):

            def f(b=b):
                return fastsoftmax.softmax(x, dim, backend=b)

            def g(b=b):
                return fastsoftmax.softmax_backward(dy, y, dim, backend=b)

            f()
            g()
            torch.cuda.synchronize()
            row.append(f"{b} fwd {host_us_per_call(f, 1000):6.1f} bwd {host_us_per_call(g, 1000):6.1f}")
        t = host_us_per_call(lambda: torch.softmax(x, dim), 1000)
        print(shape, dim, str(dtype)[6:], " | ".join(row), f"| torch fwd {t:6.1f}", flush=True)
