"""GPU probe of column_partials_probe.cuh (beside this file): the partials pass of a softmax over dim 0
of a dense (n, inner) tensor -- per-column sums (or (max, sum) pairs) over chunks of rows -- in many
access shapes, against torch.compile's reduction of the same sums and a read-only sweep of the tensor
(the read ceiling), all alternated call by call in one process, the L2 flushed before each (a read of
a 256 MB buffer: lines left by the call before would otherwise serve part of the next one's reads,
the more where its loads evict first). Every variant is checked against
float64 first.

    PYTHONPATH=$PWD python3 benchmarks/column_partials_probe.py [--shapes 8192x8192] [--dtypes bf16,f32]
        [--ops sum,pair,dot] [--variants p8w32s8u4x24f3h0m0,...] [--out DIR]

A variant pPwWsSuUxXfFhHmM: P elements a thread a row (one packed load), W threads across the tile
(W x P columns), S row slices, U rows in flight a slice, X chunks of rows, flags F (1: chunk-major
block order, 2: interleaved row groups), load hint H (0 plain, 1 streaming, 2 read-only path), M the
launch bounds' minimum CTAs an SM (0: none).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics

import torch
from grid_row_probe import SPIN_CYCLES, TAG, say

from fastsoftmax.backends.cuda import compiler
from fastsoftmax.backends.cuda.instances import CXX_TYPES
from fastsoftmax.backends.cuda.launch import Kernel, device_facts, enter, leave, raw_stream
from fastsoftmax.benchmark.timing import copy_bandwidth_gbps

OPS = {"sum": 0, "dot": 1, "pair": 2}
HERE = os.path.dirname(os.path.abspath(__file__))
VARIANT = re.compile(r"p(\d+)w(\d+)s(\d+)u(\d+)x(\d+)f(\d+)h(\d+)m(\d+)")

# the default sweep: the strided tier's shape (256 columns x 8 slices x 4 rows, 24 chunks), Inductor's
# (64 columns x 8 rows a step, 16 contiguous chunks, 128 threads), and one step from each
DEFAULT_VARIANTS = {
    2: [
        "p8w32s8u4x24f3h0m0",  # the strided tier's bf16 partials (interleaved, chunk-major)
        "p8w32s8u4x24f3h1m0",
        "p8w32s8u4x24f3h0m3",
        "p4w16s8u1x16f1h0m0",  # Inductor's
        "p4w16s8u2x16f1h0m0",
        "p4w16s8u4x16f1h0m0",
        "p8w8s16u1x16f1h0m0",
        "p8w8s16u2x16f1h0m0",
        "p8w8s16u4x16f1h0m0",
        "p8w16s8u1x16f1h0m0",
        "p8w16s8u2x16f1h0m0",
        "p8w16s8u4x16f1h0m0",
        "p8w16s16u2x16f1h0m0",
        "p8w32s8u2x16f1h0m0",
        "p8w32s8u4x16f1h0m0",
        "p8w32s8u4x24f1h0m0",
        "p8w32s8u4x24f2h0m0",
        "p8w32s4u4x24f1h0m0",
        "p8w32s4u8x24f1h0m0",
        "p8w8s16u2x32f1h0m0",
        "p8w8s16u2x8f1h0m0",
        "p8w8s16u2x16f0h0m0",
        "p8w8s16u2x16f3h0m0",
        "p8w8s16u2x16f1h1m0",
        "p8w8s16u2x16f1h2m0",
        "p4w16s8u1x16f1h1m0",
        "p4w32s8u2x16f1h0m0",
        "p8w16s8u2x16f1h1m0",
        "p8w16s8u4x16f1h1m0",
        "p2w32s4u4x16f1h0m0",
    ],
    4: [
        "p4w32s8u4x24f3h0m0",  # the strided tier's float32 partials
        "p4w32s8u4x24f3h1m0",
        "p2w32s4u1x16f1h0m0",  # Inductor's shape in float32 (64 columns x 8 rows, 128 threads: 4 each)
        "p4w16s8u1x16f1h0m0",
        "p4w16s8u2x16f1h0m0",
        "p4w16s8u4x16f1h0m0",
        "p4w8s16u2x16f1h0m0",
        "p4w8s16u4x16f1h0m0",
        "p4w32s8u2x16f1h0m0",
        "p4w32s8u4x16f1h0m0",
        "p4w32s4u4x24f1h0m0",
        "p4w16s8u2x32f1h0m0",
        "p4w16s8u2x8f1h0m0",
        "p4w16s8u2x16f0h0m0",
        "p4w16s8u2x16f3h0m0",
        "p4w16s8u2x16f1h1m0",
        "p4w16s8u2x16f1h2m0",
        "p2w32s4u1x16f1h1m0",
        "p4w16s8u4x16f1h1m0",
    ],
}


def compile_probe(name: str, wrapper: str):
    """The kernel ``name`` of column_partials_probe.cuh under the extern "C" ``wrapper``, for this GPU."""
    from cuda.core import ObjectCode

    with open(os.path.join(HERE, "column_partials_probe.cuh")) as f:
        source = f.read() + "\nusing namespace fastsoftmax;\n" + wrapper
    dev = torch.cuda.current_device()
    cubin = compiler.compile_cubin(source, device_facts(dev).arch, name)
    return ObjectCode.from_cubin(cubin, name=name).get_kernel(name), name


def build(dtype, op: int, variant: str):
    p, w, s, u, _, _, hint, minb = map(int, VARIANT.fullmatch(variant).groups())
    name = f"fs_column_partials_probe_{TAG[dtype]}_o{op}_p{p}w{w}s{s}u{u}h{hint}m{minb}"
    t = CXX_TYPES[dtype][0]
    bounds = f"__launch_bounds__({w * s}, {minb})" if minb else f"__launch_bounds__({w * s})"
    return compile_probe(
        name,
        f'extern "C" __global__ void {bounds} {name}(const {t}* x, const {t}* y, float* out, i64 n, i64 inner, '
        + "i64 splits, i64 flags) {\n"
        + f"    column_partials_probe<{t}, {p}, {w}, {s}, {u}, {op}, {hint}>"
        + "(x, y, out, n, inner, splits, (int)flags);\n}\n",
    )


def build_ceiling(unroll: int, hint: int):
    name = f"fs_read_ceiling_probe_u{unroll}h{hint}"
    return compile_probe(
        name,
        f'extern "C" __global__ void __launch_bounds__(256) {name}(const uint4* x, float* out, i64 packs) {{\n'
        + f"    read_ceiling_probe<{unroll}, {hint}>(x, out, packs);\n}}\n",
    )


def launcher(kernel, grid, args_of):
    dev = torch.cuda.current_device()

    def call(*tensors):
        pushed = enter(dev)
        try:
            kernel.launch(grid, raw_stream(dev), args_of(*tensors))
        finally:
            if pushed:
                leave()

    return call


def probe_call(dtype, op: int, variant: str, n: int, inner: int):
    p, w, s, u, splits, flags, _, _ = map(int, VARIANT.fullmatch(variant).groups())
    if inner % (w * p):
        raise ValueError(f"inner {inner} is no multiple of the tile's {w * p} columns")
    core, name = build(dtype, op, variant)
    dev = torch.cuda.current_device()
    kernel = Kernel(core, name, dev, 7, w * s)
    width = 2 if op == OPS["pair"] else 1
    out = torch.empty(splits * inner * width, dtype=torch.float32, device="cuda")
    grid = inner // (w * p) * splits
    call = launcher(kernel, grid, lambda x, y: (x.data_ptr(), y.data_ptr(), out.data_ptr(), n, inner, splits, flags))
    call.out = out
    call.splits = splits
    call.blocks_per_sm = kernel.blocks_per_sm()
    call.registers = kernel.get_attribute("NUM_REGS")
    return call


def ceiling_call(x, unroll: int, hint: int):
    core, name = build_ceiling(unroll, hint)
    dev = torch.cuda.current_device()
    kernel = Kernel(core, name, dev, 3, 256)
    grid = kernel.blocks_per_sm() * device_facts(dev).sm_count
    out = torch.empty(grid * 256, dtype=torch.float32, device="cuda")
    packs = x.numel() * x.element_size() // 16
    return launcher(kernel, grid, lambda x, y: (x.data_ptr(), out.data_ptr(), packs))


def reference(op: str, x, y):
    if op == "sum":
        return x.double().sum(0)
    if op == "dot":
        return (x.double() * y.double()).sum(0)
    return torch.logsumexp(x.double(), 0)


def merged(op: str, call, inner: int):
    if op != "pair":
        return call.out.view(call.splits, inner).double().sum(0)
    pairs = call.out.view(call.splits, inner, 2).double()
    top = pairs[..., 0].max(0).values
    return top + torch.log((pairs[..., 1] * torch.exp(pairs[..., 0] - top)).sum(0))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", default="8192x8192")
    parser.add_argument("--dtypes", default="bf16,f32")
    parser.add_argument("--ops", default="sum")
    parser.add_argument("--variants", default="", help="comma-separated; default: the sweep for the dtype's size")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--no-compile", action="store_true")
    parser.add_argument(
        "--no-flush", action="store_true", help="no L2 flush before each timed call (the flush reads a 256 MB buffer)"
    )
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    log_file = open(os.path.join(args.out, "column_partials_probe.txt"), "a")  # noqa: SIM115
    import grid_row_probe

    grid_row_probe.LOG_FILE.append(log_file)
    copy = copy_bandwidth_gbps()
    say(f"{torch.cuda.get_device_name()}; copy {copy:.0f} GB/s (read + write)")
    names = {tag: dtype for dtype, tag in TAG.items()}
    for shape in args.shapes.split(","):
        n, inner = map(int, shape.split("x"))
        for dtype in (names[d] for d in args.dtypes.split(",")):
            xs = [torch.randn((n, inner), device="cuda").to(dtype) for _ in range(2)]
            ys = [torch.rand((n, inner), device="cuda").to(dtype) for _ in range(2)]
            for op in args.ops.split(","):
                tensors = 2 if op == "dot" else 1
                nbytes = tensors * n * inner * dtype.itemsize
                variants = args.variants.split(",") if args.variants else DEFAULT_VARIANTS[dtype.itemsize]
                calls, facts = {}, {}
                if op == "sum":
                    calls["torch.sum"] = lambda x, y: torch.sum(x, 0, dtype=torch.float32)
                    if not args.no_compile:
                        calls["compile"] = torch.compile(lambda x, y: x.float().sum(0))
                    for unroll in (4, 8):
                        for hint in (0, 1):
                            calls[f"read u{unroll}h{hint}"] = ceiling_call(xs[0], unroll, hint)
                elif op == "dot" and not args.no_compile:
                    calls["compile"] = torch.compile(lambda x, y: (x.float() * y.float()).sum(0))
                elif not args.no_compile:
                    calls["compile"] = torch.compile(lambda x, y: torch.logsumexp(x.float(), 0))
                for variant in variants:
                    try:
                        call = probe_call(dtype, OPS[op], variant, n, inner)
                    except Exception as exc:  # noqa: BLE001 - a variant the shape cannot take
                        say(f"    {variant}: {type(exc).__name__}: {str(exc)[:300]}")
                        continue
                    call(xs[0], ys[0])
                    torch.cuda.synchronize()
                    want = reference(op, xs[0], ys[0])
                    err = ((merged(op, call, inner) - want).abs() / (want.abs() + 1.0)).max().item()
                    calls[variant] = call
                    facts[variant] = f"{call.registers} regs {call.blocks_per_sm} CTAs/SM" + (
                        "" if err < 1e-3 else f" WRONG {err:.3g}"
                    )
                flush = None if args.no_flush else torch.ones(64 << 20, dtype=torch.float32, device="cuda")
                times = {name: [] for name in calls}
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
                order = list(calls)
                for i in range(args.iters):
                    for name in order if i % 2 == 0 else reversed(order):
                        if flush is not None:
                            flush.sum()
                        torch.cuda._sleep(SPIN_CYCLES // 4)
                        start.record()
                        calls[name](xs[i % 2], ys[i % 2])
                        end.record()
                        end.synchronize()
                        times[name].append(start.elapsed_time(end) * 1000)
                say(
                    f"{TAG[dtype]} {n}x{inner} {op} over dim 0: {nbytes / 1e6:.0f} MB read"
                    + ("" if flush is not None else ", L2 not flushed")
                )
                for name in order:
                    us = statistics.median(times[name])
                    say(f"    {name:24s} {us:7.1f} us  {nbytes / us / 1e6:5.2f} TB/s  {facts.get(name, '')}")
            del xs, ys
            torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    raise SystemExit(main())
