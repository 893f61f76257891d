# A/B in one process on the H200 (scratch copies of the kernels as named in the results README); kept for the record
"""A/B in one process: the shipped Triton tile kernels (32-bit offsets where they fit) against the
previous ones (64-bit always, scratch/old_triton_kernels.py = HEAD's kernels.py), each launched with
the backend's own plan, on the problems auto gives the Triton tiles."""
import importlib.util, math, sys, torch
from fastsoftmax.backends import triton as tb
from fastsoftmax.backends.triton.launch import launch
from fastsoftmax.benchmark.layouts import copy_gbps
from fastsoftmax.benchmark.timing import median_ms

def _module(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec); spec.loader.exec_module(mod)
    return mod
old = _module("old_kernels", "scratch/old_triton_kernels.py")
asis = _module("asis_kernels", "scratch/asis_triton_kernels.py")

def run(shape, dim, dtype, backward):
    x = (torch.randn(shape, device="cuda") * 3).to(dtype)
    y = torch.softmax(x.float(), dim).to(dtype)
    dy = torch.randn(shape, device="cuda").to(dtype)
    outer, N, inner = math.prod(shape[:dim]), shape[dim], math.prod(shape[dim + 1:])
    out = torch.empty_like(x)
    xv, yv, dyv, ov = (t.view(outer, N, inner) for t in (x, y, dy, out))
    tensors = (yv, dyv, ov) if backward else (xv, ov)
    p, dev = tb._plan_for(tensors, "tile", backward, False)
    cfg = p["configs"][0]
    if backward:
        args = (yv, dyv, ov, outer, N, inner, *yv.stride(), *dyv.stride(), ov.stride(0), ov.stride(1))
        new = lambda: tb.BACKEND.backward(yv, dyv, ov, False, "tile")
        prev = lambda: launch(old.softmax_bwd_tile, p["programs"], args, cfg, dev, False)
        mid = lambda: launch(asis.softmax_bwd_tile, p["programs"], args, cfg + (("WIDE", False),), dev, False)
        ref = torch._softmax_backward_data(dy.double(), y.double(), dim, torch.float64)
    else:
        args = (xv, ov, outer, N, inner, *xv.stride(), ov.stride(0), ov.stride(1))
        new = lambda: tb.BACKEND.forward(xv, ov, False, "tile")
        prev = lambda: launch(old.softmax_fwd_tile, p["programs"], args, cfg, dev, False)
        mid = lambda: launch(asis.softmax_fwd_tile, p["programs"], args, cfg + (("WIDE", False),), dev, False)
        ref = torch.softmax(x.double(), dim)
    for name, fn in (("old", prev), ("mid", mid), ("new", new)):
        out.fill_(float("nan")); fn(); torch.cuda.synchronize()
        err = (out.double() - ref).abs().max().item()
        assert err <= 2e-2, (name, shape, err)
    size = x.numel() * x.element_size() * (3 if backward else 2)
    copy = copy_gbps(dtype)
    t = {"old": [], "mid": [], "new": []}
    for _ in range(3):
        t["old"].append(median_ms(prev)); t["mid"].append(median_ms(mid)); t["new"].append(median_ms(new))
    f = {k: size / min(v) / 1e6 / copy for k, v in t.items()}
    blocks = dict(cfg)
    print(f"{str(shape):22s} d{dim} {str(dtype)[6:]:9s} {'bwd' if backward else 'fwd'} BLOCK_I {blocks['BLOCK_I']:4d} warps {blocks['num_warps']:2d}: "
          f"64-bit {f['old']:.3f}  32-bit, pointer moved 3 times {f['mid']:.3f}  32-bit summed {f['new']:.3f}", flush=True)

for shape, dim, dtypes in [((16, 21, 513, 513), 1, (torch.bfloat16, torch.float16)), ((8, 150, 127, 127), 1, (torch.bfloat16,))]:
    for dtype in dtypes:
        for backward in (False, True):
            try:
                run(shape, dim, dtype, backward)
            except ValueError as e:
                print(shape, dim, dtype, backward, "not a tile problem:", e)
