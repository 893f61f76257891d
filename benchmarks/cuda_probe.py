"""Probe of the "cuda" backend on a GPU: a correctness spot check of every variant timed, then
fractions of copy bandwidth for the cuda backend beside the Triton backend (same process, same
tensors), and variants of the tiers' settings (benchmarks/host_probe.py measures host time).

    PYTHONPATH=$PWD python3 benchmarks/cuda_probe.py [--out FILE]

Prints a compact table at the end; with --out, every line also goes to FILE.
"""

from __future__ import annotations

import argparse
import sys

import torch

sys.path.insert(0, "tests")

from fastsoftmax.backends import cuda as cuda_pkg
from fastsoftmax.backends.cuda import tiers as cuda_tiers
from fastsoftmax.benchmark.timing import (
    copy_bandwidth_gbps,
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
    for s in shape[dim + 1 :]:
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
    """The cuda backend with a tuning value (``tiers.tuned``) set to each of ``values`` in turn,
    in one process, so that the variants are compared under the same conditions."""
    x = (torch.randn(shape, device="cuda") * 3).to(dtype)
    x3 = canonical(x, dim)
    y3 = torch.empty_like(x3)
    nbytes = 2 * x.numel() * x.element_size()
    cells = []
    for value in values:
        try:
            with cuda_tiers.tuned(**{setting: value}):
                ms, status, _ = time_forward(CUDA, x3, y3, tier)
            cells.append(f"{value}: {fraction(ms, nbytes, copy):5.3f}{'' if status == 'ok' else ' ' + status}")
        except Exception as exc:  # noqa: BLE001
            cells.append(f"{value}: FAILED {str(exc)[:60]}")
    say(f"{label:34s} {setting} " + " | ".join(cells))


BULK_COLS = (64, 128, 256, 512, 1000, 1024, 2048, 3000, 4096, 8192, 16384, 32768)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out")
    parser.add_argument("--quick", action="store_true", help="16-bit rows of 8192 to 32768 columns and variants only")
    args = parser.parse_args()
    torch.manual_seed(0)
    say(f"device: {torch.cuda.get_device_name()}")
    copy = copy_bandwidth_gbps()
    say(f"copy bandwidth: {copy:.0f} GB/s")
    triton = triton_backend()
    results: dict = {}
    say("== bulk rows (2^27 elements), fraction of copy ==")
    for dname, dtype in DTYPES.items():
        if args.quick and dname == "fp32":
            continue
        for cols in BULK_COLS + (50257, 131072):
            if args.quick and not 8192 <= cols <= 32768:
                continue
            forward_row(f"{dname} {BULK // cols}x{cols}", (BULK // cols, cols), 1, dtype, copy, triton, results)
    if not args.quick:
        say("== huge rows, decode ==")
        for shape in ((1, 1 << 24), (1, 128256)):
            forward_row(f"bf16 {shape[0]}x{shape[1]}", shape, 1, torch.bfloat16, copy, triton, results)
        say("== backward ==")
        for cols in (1024, 2048, 4096, 16384, 65536):
            backward_row(f"bwd bf16 {BULK // cols}x{cols}", (BULK // cols, cols), torch.bfloat16, copy, triton, results)
    say("== variants ==")
    for dname, cols, targets in (
        ("bf16", 8192, (32, 64)),
        ("bf16", 16384, (32, 64)),
        ("fp16", 16384, (32, 64)),
        ("bf16", 32768, (32, 64)),
    ):
        variant_row(
            f"{dname} {BULK // cols}x{cols} block_regs",
            (BULK // cols, cols),
            1,
            DTYPES[dname],
            copy,
            "block_regs_elems",
            targets + targets,
            tier="block_regs",
        )
    say("== summary: geomean fraction of copy over bulk cols <= 32768, cuda vs triton ==")
    for dname in DTYPES:
        for name in ("cuda", "triton"):
            vals = [results.get(f"{dname} {BULK // c}x{c}", {}).get(name) for c in BULK_COLS]
            vals = [v for v in vals if v]
            if vals:
                g = 1.0
                for v in vals:
                    g *= v
                worst = min(zip(vals, BULK_COLS))
                say(f"  {dname} {name:6s} {g ** (1 / len(vals)):.3f} (min {worst[0]:.3f} at {worst[1]} cols)")
    if args.out:
        with open(args.out, "w") as f:
            f.write("\n".join(LINES) + "\n")


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main()
