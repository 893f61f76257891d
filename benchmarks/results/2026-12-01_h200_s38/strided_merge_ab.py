"""A/B in one process: the strided tier with its merge as a stage of the strided kernel (the
package in scratch/old, imported as fastsoftmax_old) against strided_merge (this tree), on long
dim-0 axes, forward and backward. Each arm captured in a CUDA graph of 20 calls, replayed in turn.

    git archive 6f390af fastsoftmax | tar -x -C <folder of this script>/old
    PYTHONPATH=$PWD python strided_merge_ab.py 5
"""

import os
import re
import shutil
import sys

import torch

ROUNDS = int(sys.argv[1]) if len(sys.argv) > 1 else 5
src = os.path.join(os.path.dirname(__file__), "old", "fastsoftmax")
dst = "/tmp/oldpkg/fastsoftmax_old"
shutil.rmtree("/tmp/oldpkg", ignore_errors=True)
shutil.copytree(src, dst)
for root, _, files in os.walk(dst):
    for f in files:
        if f.endswith(".py"):
            p = os.path.join(root, f)
            t = open(p).read()
            t = re.sub(r"\bfastsoftmax\.", "fastsoftmax_old.", t)
            t = re.sub(r"from fastsoftmax import", "from fastsoftmax_old import", t)
            t = re.sub(r"import fastsoftmax\b(?!_)", "import fastsoftmax_old", t)
            open(p, "w").write(t)
sys.path.insert(0, "/tmp/oldpkg")

from fastsoftmax_old.backends.cuda.backend import BACKEND as OLD  # noqa: E402

from fastsoftmax.backends.cuda.backend import BACKEND as NEW  # noqa: E402
from fastsoftmax.benchmark import layouts  # noqa: E402

CASES = [
    ((65536, 2048), torch.bfloat16),
    ((1048576, 128), torch.bfloat16),
    ((65536, 1000), torch.bfloat16),
    ((262144, 256), torch.bfloat16),
    ((65536, 2048), torch.float32),
    ((1048576, 128), torch.float32),
]


def graph_of(fn, calls=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return g


def time_graph(g, calls=20):
    g.replay()
    torch.cuda.synchronize()
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    g.replay()
    b.record()
    b.synchronize()
    return a.elapsed_time(b) / calls * 1000


def kernel_times(fn):
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(5):
            fn()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        if e.device_type.name == "CUDA" and e.count:
            out[e.key[:60]] = (
                e.device_time_total / e.count if hasattr(e, "device_time_total") else e.cuda_time_total / e.count
            )
    return out


for (n, inner), dtype in CASES:
    copy = layouts.copy_gbps(dtype)
    for backward in (False, True):
        x = torch.randn(n, inner, device="cuda").to(dtype)
        if backward:
            x = torch.softmax(x.float(), 0).to(dtype)
        dy = torch.randn_like(x)
        outs = {k: torch.empty_like(x) for k in ("old", "new")}
        fns = {}
        for k, be in (("old", OLD), ("new", NEW)):
            o = outs[k]
            if backward:
                fns[k] = lambda be=be, o=o: be.backward(
                    x.view(1, n, inner), dy.view(1, n, inner), o.view(1, n, inner), False, "strided"
                )
            else:
                fns[k] = lambda be=be, o=o: be.forward(x.view(1, n, inner), o.view(1, n, inner), False, "strided")
        for k in fns:
            outs[k].fill_(float("nan"))
            fns[k]()
        torch.cuda.synchronize()
        diff = (outs["new"].float() - outs["old"].float()).abs().max().item()
        graphs = {k: graph_of(f) for k, f in fns.items()}
        times = {k: [] for k in graphs}
        for _ in range(ROUNDS):
            for k, g in graphs.items():
                times[k].append(time_graph(g))
        floor = (3 if backward else 2) * x.numel() * x.element_size()
        cells = "  ".join(
            f"{k}={sorted(t)[len(t) // 2]:.1f}us ({floor / (sorted(t)[len(t) // 2] * 1e-6) / 1e9 / copy:.3f})"
            for k, t in times.items()
        )
        print(
            f"{str(dtype)[6:]:9} {'bwd' if backward else 'fwd'} ({n},{inner}) d0  {cells}  max|new-old|={diff:.2e}",
            flush=True,
        )
        for k, f in fns.items():
            kt = kernel_times(f)
            print("    ", k, "  ".join(f"{name}={t:.1f}" for name, t in kt.items()), flush=True)
