"""Probe of the "cuda" backend on a GPU: a correctness spot check of every variant timed, then
fractions of copy bandwidth for the cuda backend beside the Triton backend (same process, same
tensors), block-size and strided-split variants, and host time per call.

    PYTHONPATH=$PWD python3 benchmarks/cuda_probe.py [--out FILE]

Prints a compact table at the end; with --out, every line also goes to FILE.
"""

from __future__ import annotations

import argparse
import sys

import torch

sys.path.insert(0, "tests")

from fastsoftmax.backends import cuda as cuda_pkg
from fastsoftmax.backends.cuda import backend as cuda_backend
from fastsoftmax.benchmark.timing import (
    copy_bandwidth_gbps,
    host_us_per_call,
    median_ms,
)

CUDA = cuda_pkg.BACKEND
BULK = 1 << 27
DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}
LINES: list[str] = []


def say(line: str) -> None:
    LINES.append(line)
    print(line, flush=True)


def triton_backend():
    try:
        from fastsoftmax.backends.triton import BACKEND

        return BACKEND
    except Exception as exc:  # noqa: BLE001
        say(f"triton backend unavailable: {exc}")
        return None


def canonical(x: torch.Tensor, dim: int):
    """(outer, n, inner) view of a contiguous x for a softmax over dim."""
    shape = x.shape
    outer = 1
    for s in shape[:dim]:
        outer *= s
    inner = 1
    for s in shape[dim + 1:]:
        inner *= s
    return x.view(outer, shape[dim], inner)


def check(y3, x3, log=False):
    """Against float64 on a corner of the problem (64 outer slices, 64 inner columns, all of n):
    the whole of a 2^27-element tensor takes seconds on the CPU."""
    from reference import check_forward

    try:
        check_forward(y3[:64, :, :64], x3[:64, :, :64], 1, log)
        return "ok"
    except AssertionError as exc:
        return f"WRONG: {str(exc)[:120]}"


def fraction(ms: float, nbytes: int, copy: float) -> float:
    return nbytes / (ms * 1e-3) / 1e9 / copy


def time_forward(backend, x3, y3, tier=None, log=False):
    tier = tier or backend.choose_tier(*x3.shape, x3.dtype, False)
    y3.fill_(float("nan"))
    backend.forward(x3, y3, log, tier)
    torch.cuda.synchronize()
    status = check(y3, x3, log)
    ms = median_ms(lambda: backend.forward(x3, y3, log, tier))
    return ms, status, tier


def forward_row(label, shape, dim, dtype, copy, triton, results):
    x = (torch.randn(shape, device="cuda") * 3).to(dtype)
    x3 = canonical(x, dim)
    y3 = torch.empty_like(x3)
    nbytes = 2 * x.numel() * x.element_size()
    cells = []
    for name, b in (("cuda", CUDA), ("triton", triton)):
        if b is None:
            continue
        try:
            ms, status, tier = time_forward(b, x3, y3)
            f = fraction(ms, nbytes, copy)
            results.setdefault(label, {})[name] = f
            cells.append(f"{name} {f:5.3f} ({ms * 1e3:7.1f} us, {tier}, {status})")
        except Exception as exc:  # noqa: BLE001
            cells.append(f"{name} FAILED {type(exc).__name__}: {str(exc)[:100]}")
    say(f"{label:34s} " + " | ".join(cells))


def backward_row(label, shape, dtype, copy, triton, results):
    from reference import check_backward

    x = (torch.randn(shape, device="cuda") * 3).to(dtype)
    y = torch.softmax(x.double(), -1).to(dtype)
    dy = (torch.randn(shape, device="cuda")).to(dtype)
    dx = torch.empty_like(x)
    x3, y3, dy3, dx3 = (t.view(shape[0], shape[1], 1) for t in (x, y, dy, dx))
    nbytes = 3 * x.numel() * x.element_size()
    cells = []
    for name, b in (("cuda", CUDA), ("triton", triton)):
        if b is None:
            continue
        tier = b.choose_tier(shape[0], shape[1], 1, dtype, True)
        dx.fill_(float("nan"))
        b.backward(y3, dy3, dx3, False, tier)
        torch.cuda.synchronize()
        try:
            check_backward(dx3[:64], x3[:64], dy3[:64], 1, False)
            status = "ok"
        except AssertionError as exc:
            status = f"WRONG {str(exc)[:80]}"
        ms = median_ms(lambda b=b, tier=tier: b.backward(y3, dy3, dx3, False, tier))
        f = fraction(ms, nbytes, copy)
        results.setdefault(label, {})[name] = f
        cells.append(f"{name} {f:5.3f} ({ms * 1e3:7.1f} us, {tier}, {status})")
    say(f"{label:34s} " + " | ".join(cells))


def variant_row(label, shape, dim, dtype, copy, setting, values, tier=None):
    """The cuda backend with a module constant set to each of ``values`` (plans rebuilt)."""
    x = (torch.randn(shape, device="cuda") * 3).to(dtype)
    x3 = canonical(x, dim)
    y3 = torch.empty_like(x3)
    nbytes = 2 * x.numel() * x.element_size()
    old = getattr(cuda_backend, setting)
    cells = []
    for value in values:
        setattr(cuda_backend, setting, value)
        CUDA._plans.clear()
        try:
            ms, status, _ = time_forward(CUDA, x3, y3, tier)
            cells.append(f"{value}: {fraction(ms, nbytes, copy):5.3f}{'' if status == 'ok' else ' ' + status}")
        except Exception as exc:  # noqa: BLE001
            cells.append(f"{value}: FAILED {str(exc)[:60]}")
    setattr(cuda_backend, setting, old)
    CUDA._plans.clear()
    say(f"{label:34s} {setting} " + " | ".join(cells))


def host_overhead():
    import fastsoftmax

    x = (torch.randn(4, 1024, device="cuda") * 3).to(torch.bfloat16)
    x3 = x.view(4, 1024, 1)
    y3 = torch.empty_like(x3)
    say(f"host us/call, 4x1024 bf16: torch.softmax {host_us_per_call(lambda: torch.softmax(x, -1)):.2f} | "
        f"fastsoftmax.softmax(backend='cuda') {host_us_per_call(lambda: fastsoftmax.softmax(x, backend='cuda')):.2f} | "
        f"CUDA.forward {host_us_per_call(lambda: CUDA.forward(x3, y3, False, 'warp')):.2f} | "
        f"fastsoftmax.softmax(backend='triton') "
        f"{host_us_per_call(lambda: fastsoftmax.softmax(x, backend='triton')):.2f} | "
        f"ctypes launch in use: {cuda_backend._driver() is not None}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    args = parser.parse_args()
    torch.manual_seed(0)
    say(f"device: {torch.cuda.get_device_name()}")
    copy = copy_bandwidth_gbps()
    say(f"copy bandwidth: {copy:.0f} GB/s")
    host_overhead()
    triton = triton_backend()
    results: dict = {}
    say("== bulk rows (2^27 elements), fraction of copy ==")
    for dname, dtype in DTYPES.items():
        for cols in ((1024, 2048, 8192, 32768) if dname == "fp16" else (1000, 1024, 2048, 4096, 8192, 16384, 32768,
                                                                          131072)):
            forward_row(f"{dname} {BULK // cols}x{cols}", (BULK // cols, cols), 1, dtype, copy, triton, results)
    say("== huge rows, decode ==")
    for shape in ((1, 1 << 24), (1, 128256)):
        forward_row(f"bf16 {shape[0]}x{shape[1]}", shape, 1, torch.bfloat16, copy, triton, results)
    say("== non-last dim ==")
    for shape, dim in (((65536, 2048), 0), ((32, 4096, 1024), 1), ((8192, 16384), 0), ((1048576, 128), 0),
                       ((128, 1024, 1024), 1), ((4096, 64, 512), 1)):
        for dname in ("bf16",):
            forward_row(f"{dname} {shape} dim {dim}", shape, dim, DTYPES[dname], copy, triton, results)
    say("== backward ==")
    for cols in (4096, 65536):
        backward_row(f"bwd bf16 {BULK // cols}x{cols}", (BULK // cols, cols), torch.bfloat16, copy, triton, results)
    say("== variants ==")
    for dname, cols in (("bf16", 2048), ("bf16", 8192), ("fp32", 8192)):
        variant_row(f"{dname} {BULK // cols}x{cols}", (BULK // cols, cols), 1, DTYPES[dname], copy,
                    "BLOCK_PACKS_PER_THREAD", (2, 4))
    for shape, dim in (((65536, 2048), 0), ((32, 4096, 1024), 1)):
        variant_row(f"bf16 {shape} dim {dim}", shape, dim, torch.bfloat16, copy, "STRIDED_WAVES", (0, 2, 8))
    for shape in ((1, 1 << 24),):
        variant_row(f"bf16 {shape}", shape, 1, torch.bfloat16, copy, "SPLIT_ROW_BLOCKS_PER_SM", (4, 8, 16),
                    tier="split_row")
    say("== summary: geomean fraction of copy, cuda vs triton ==")
    for dname in DTYPES:
        for group, cols_set in (("1024+8192", (1024, 8192)), ("all<=32768", (1000, 1024, 2048, 4096, 8192, 16384,
                                                                              32768))):
            if dname == "fp16" and group != "1024+8192":
                continue
            for name in ("cuda", "triton"):
                vals = [results.get(f"{dname} {BULK // c}x{c}", {}).get(name) for c in cols_set]
                vals = [v for v in vals if v]
                if vals:
                    g = 1.0
                    for v in vals:
                        g *= v
                    say(f"  {dname} {group:11s} {name:6s} {g ** (1 / len(vals)):.3f} (min {min(vals):.3f})")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(LINES) + "\n")


if __name__ == "__main__":
    main()
