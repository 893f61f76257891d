"""Kernel by kernel: log-softmax backward over (8192, 8192)[:, ::2] dim 0 and (65536, 2048) dim 0,
fastsoftmax's tiers forced and torch.compile, torch.profiler."""

from collections import defaultdict

import torch

import fastsoftmax
from fastsoftmax import dispatch


def prof(fn, args, calls=10):
    for _ in range(3):
        fn(*args)
    torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as p:
        for _ in range(calls):
            fn(*args)
        torch.cuda.synchronize()
    totals = defaultdict(float)
    for e in p.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            totals[e.name] += e.device_time / calls
    return totals


for label, make, dim in [
    ("(8192,8192)[:, ::2] d0", lambda dt: torch.randn(8192, 8192, device="cuda", dtype=dt)[:, ::2], 0),
    ("(65536,2048) d0", lambda dt: torch.randn(65536, 2048, device="cuda", dtype=dt), 0),
]:
    for dtype in (torch.bfloat16, torch.float32):
        for log in (True, False):
            y, dy = make(dtype), make(dtype)
            ref = torch._log_softmax_backward_data if log else torch._softmax_backward_data
            comp = torch.compile(lambda dy, y: ref(dy, y, dim, y.dtype))
            impls = {"auto": lambda dy, y: fastsoftmax.softmax_backward(dy, y, dim, log=log)}
            for tier in ("strided", "strided_staged"):

                def forced(dy, y, tier=tier):
                    with dispatch.forced("cuda", tier):
                        return fastsoftmax.softmax_backward(dy, y, dim, log=log)

                impls[tier] = forced
            impls["compile"] = comp
            for name, fn in impls.items():
                try:
                    t = prof(fn, (dy, y))
                except Exception as exc:
                    print(label, dtype, "log" if log else "exp", name, "error", str(exc)[:100])
                    continue
                total = sum(t.values())
                parts = ", ".join(f"{k[:40]} {v:.1f}" for k, v in sorted(t.items(), key=lambda kv: -kv[1]))
                print(
                    f"{label} {str(dtype)[6:]} {'log' if log else 'exp'} {name}: {total:.1f} us | {parts}", flush=True
                )
            del y, dy
            torch.cuda.empty_cache()
