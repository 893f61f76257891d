"""GPU probe of grid_band_probe.cuh (beside this file): a softmax over a long axis (dim 0 of (65536, 2048)) with
every resident CTA holding its rows of a band of columns, bands pipelined through shared-memory
buffers, one cooperative launch; against fastsoftmax "auto" (the strided tier's three passes) and
torch.compile, alternated call by call in one process on the same tensors. Every variant is checked
against float64 first.

    PYTHONPATH=$PWD python3 benchmarks/grid_band_probe.py [--shapes 65536x2048,8192x16384]
        [--dtypes bf16,f32] [--variants b3p8,b3p8f3] [--out DIR]

A variant bNpK: N shared-memory buffers (3 or more), bands of K 16-byte packs of each row; a
trailing fF sets the kernel's probe flags (1: no grid barrier, 2: no merge; timing only, their
results are wrong). The first form of the kernel (one grid barrier a band, the band written right
after its merge), against which results 2026-11-27_h100_s20/grid_band_probe_forms_ab.txt timed this
one, is grid_band_probe_v1.cuh at commit 76ad63b.
"""

from __future__ import annotations

import argparse
import os
import re
import statistics

import torch
from grid_row_probe import SPIN_CYCLES, TAG, error, say, tolerance

import fastsoftmax
from fastsoftmax.backends.cuda import compiler
from fastsoftmax.backends.cuda.launch import Kernel, device_facts, enter, leave, raw_stream
from fastsoftmax.benchmark.timing import copy_bandwidth_gbps

CXX = {torch.bfloat16: "__nv_bfloat16", torch.float16: "__half", torch.float32: "float"}
THREADS = 512
SCRATCH = {2: THREADS * 8 * 4 + THREADS * 8 + 512 * 12, 4: THREADS * 4 * 4 + THREADS * 8 + 512 * 12}


HERE = os.path.dirname(os.path.abspath(__file__))


def build(dtype, nbuf: int, log: bool):
    """The probe kernel (grid_band_probe.cuh), compiled for this GPU."""
    name = f"fs_grid_band_probe_{TAG[dtype]}_b{nbuf}_{'log' if log else 'exp'}"
    t = CXX[dtype]
    log_arg = "true" if log else "false"
    with open(os.path.join(HERE, "grid_band_probe.cuh")) as f:
        header = f.read()
    source = (
        header
        + "\nusing namespace fastsoftmax;\n"
        + f'extern "C" __global__ void __launch_bounds__({THREADS}, 1) {name}(const {t}* x, {t}* y, float2* ws, '
        + "unsigned* counters, i64 outer, i64 n, i64 inner, i64 xs0, i64 xs1, i64 ys0, i64 ys1, i64 band_packs, "
        + "i64 rows, i64 flags) {\n"
        + f"    grid_band_forward<{t}, {nbuf}, {log_arg}>(x, y, ws, counters, outer, n, inner, xs0, xs1, ys0, ys1, "
        + "(int)band_packs, (int)rows, (int)flags);\n}\n"
    )
    from cuda.core import ObjectCode

    dev = torch.cuda.current_device()
    cubin = compiler.compile_cubin(source, device_facts(dev).arch, name)
    return ObjectCode.from_cubin(cubin, name=name).get_kernel(name), name


def runner(dtype, nbuf: int, packs: int, n: int, inner: int, flags: int = 0, log=False):
    dev = torch.cuda.current_device()
    facts = device_facts(dev)
    core, name = build(dtype, nbuf, log)
    nargs = 14  # every parameter of the wrapper in build()
    probe = Kernel(core, name, dev, nargs, THREADS, 1, 0, 1, True)
    probe.allow_dynamic_smem(64 * 1024)
    grid = facts.sm_count
    rows = -(-n // grid)
    smem = nbuf * rows * packs * 16 + SCRATCH[dtype.itemsize]
    if smem > facts.smem_per_block - 1024:
        raise ValueError(f"{smem} bytes of shared memory a CTA")
    if probe.blocks_per_sm(THREADS, smem) < 1:
        raise ValueError("not one CTA an SM")
    band = packs * 16 // dtype.itemsize
    if inner % band:
        raise ValueError(f"inner {inner} is no multiple of the band's {band} columns")
    kernel = Kernel(core, name, dev, nargs, THREADS, 1, smem, 1, True)
    ws = torch.empty(4 * grid * band * 2, dtype=torch.float32, device="cuda")
    counters = torch.zeros(4, dtype=torch.int32, device="cuda")

    def call(x):
        y = torch.full_like(x, float("nan"))
        counters.zero_()
        pushed = enter(dev)
        try:
            pointers = (x.data_ptr(), y.data_ptr(), ws.data_ptr(), counters.data_ptr())
            args = pointers + (1, n, inner, 0, x.stride(0), 0, y.stride(0), packs, rows, flags)
            kernel.launch(grid, raw_stream(dev), args)
        finally:
            if pushed:
                leave()
        return y

    call.workspace = ws
    return call


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="65536x2048")
    parser.add_argument("--dtypes", default="bf16,f32")
    parser.add_argument("--variants", default="b3p8")
    parser.add_argument("--iters", type=int, default=30)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    log_file = open(os.path.join(args.out, "grid_band_probe.txt"), "a")  # noqa: SIM115
    import grid_row_probe

    grid_row_probe.LOG_FILE.append(log_file)
    copy = copy_bandwidth_gbps()
    say(f"{torch.cuda.get_device_name()}; copy {copy:.0f} GB/s")
    names = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
    for shape in args.shapes.split(","):
        n, inner = map(int, shape.split("x"))
        for dtype in (names[d] for d in args.dtypes.split(",")):
            xs = [(torch.randn((n, inner), device="cuda") * 3).to(dtype) for _ in range(2)]
            reference = torch.softmax(xs[0].double(), 0)
            calls = {"auto": lambda x: fastsoftmax.softmax(x, 0)}
            if not args.no_compile:
                calls["compile"] = torch.compile(lambda x: torch.softmax(x, 0))
            for variant in args.variants.split(","):
                nbuf, packs, flags = re.fullmatch(r"b(\d+)p(\d+)(?:f(\d+))?", variant).groups()
                try:
                    calls[variant] = runner(dtype, int(nbuf), int(packs), n, inner, int(flags or 0))
                except Exception as exc:  # noqa: BLE001 - a variant the shape cannot take
                    say(f"    {variant}: {type(exc).__name__}: {str(exc)[:200]}")
            problems = {}
            for name, fn in calls.items():
                out = fn(xs[0])
                torch.cuda.synchronize()
                err = error(out, reference)
                problems[name] = "" if err <= tolerance(dtype) else f" WRONG error {err:.3g}"
            times = {name: [] for name in calls}
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            order = list(calls)
            for i in range(args.iters):
                for name in order if i % 2 == 0 else reversed(order):
                    torch.cuda._sleep(SPIN_CYCLES)
                    start.record()
                    calls[name](xs[i % 2])
                    end.record()
                    end.synchronize()
                    times[name].append(start.elapsed_time(end) * 1000)
            nbytes = 2 * n * inner * dtype.itemsize
            cells = []
            for name in order:
                us = statistics.median(times[name])
                cells.append(f"{name} {us:.1f}us {nbytes / us / 1e3 / copy:.3f}{problems[name]}")
            say(f"{TAG[dtype]} {n}x{inner} d0  " + " | ".join(cells))
            del xs, reference
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    raise SystemExit(main())
