"""GPU probe of the cluster tier (kernels/cluster_tier.cuh) on its own: correctness against a
float64 torch reference (poisoned outputs, misaligned views, cluster-size boundaries, special
values), then bandwidth against a device-to-device copy: the kernels (every compiled K, launched
by instances.cluster_shape or with a forced C, thread count or K) on the same tensors in the same
process, variant after variant (A/B). Launches through the driver (cuLaunchKernelEx with a
cluster dimension), so it does not depend on the backend's launcher.

    PYTHONPATH=$PWD python3 benchmarks/cluster_probe.py [--quick] [--sanitize] [--out DIR]

``--sanitize`` runs a few small correctness cases only (for compute-sanitizer). Details go to
``$OUT/cluster_probe.txt`` (or --out); the compact table is printed last.
"""

from __future__ import annotations

import argparse
import ctypes
import math
import os
import statistics
import sys
import time

import torch

from fastsoftmax.backends.cuda import compiler
from fastsoftmax.backends.cuda.instances import (
    CLUSTER_MAX_DYNAMIC_SMEM,
    CXX_TYPES,
    Instance,
    cluster_held_packs,
    cluster_max_cols,
    cluster_pack,
    cluster_shape,
    source_for,
)

DTYPES = (torch.bfloat16, torch.float16, torch.float32)
TAG = {torch.bfloat16: "bf16", torch.float16: "f16", torch.float32: "f32"}
SPIN_CYCLES = 100_000  # ~55 us at 1.8 GHz: longer than the host takes to enqueue one call
LOG_FILE: list = []  # the details file, written as the probe goes so that a timeout keeps them


def say(*parts) -> None:
    line = " ".join(str(p) for p in parts)
    print(line, flush=True)
    for f in LOG_FILE:
        f.write(line + "\n")
        f.flush()


# ---- loading and launching ----------------------------------------------------------------------
def check(result, what: str):
    from cuda.bindings import driver

    err = result[0] if isinstance(result, tuple) else result
    if int(err) != int(driver.CUresult.CUDA_SUCCESS):
        raise RuntimeError(f"{what}: {err}")
    if isinstance(result, tuple) and len(result) == 2:
        return result[1]
    return None


class Kernels:
    """Every cluster instance, compiled into one CUBIN for the device, as driver functions (one
    per K)."""

    def __init__(self, arch: str, sources=None):
        from cuda.core import Device

        Device(torch.cuda.current_device()).set_current()
        self.instances = {(i.dtype, i.backward, i.log, i.cols): i for i in self._all()}
        self.functions = {}
        self.registers = {}
        if sources is None:  # the production header, every instance
            source = source_for(list(self.instances.values()))
            source += '\nextern "C" __global__ void fs_probe_empty() {}\n'
            sources = {"cluster_probe": (source, [i.name for i in self.instances.values()] + ["fs_probe_empty"])}
        for label, (source, names) in sources.items():
            start = time.time()
            cubin = compiler.compile_cubin(source, arch, label)
            say(f"compiled {label}: {len(names)} kernels for {arch} in {time.time() - start:.1f} s")
            self._load(cubin, label, names)

    def _load(self, cubin, label, names):
        from cuda.bindings import driver
        from cuda.core import ObjectCode

        code = ObjectCode.from_cubin(cubin, name=label)
        for name in names:
            kernel = code.get_kernel(name)
            fn = check(driver.cuKernelGetFunction(driver.CUkernel(int(kernel.handle))), name)
            attr = driver.CUfunction_attribute
            check(
                driver.cuFuncSetAttribute(
                    fn, attr.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, CLUSTER_MAX_DYNAMIC_SMEM
                ),
                name,
            )
            check(driver.cuFuncSetAttribute(fn, attr.CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1), name)
            self.functions[name] = fn
            regs = check(driver.cuFuncGetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS, fn), name)
            self.registers[name] = regs
            say(f"  {label}/{name}: {regs} registers")

    @staticmethod
    def _all():
        for dtype in DTYPES:
            for backward in (False, True):
                for log in (False, True):
                    for packs in cluster_held_packs(backward):
                        yield Instance(
                            "cluster", dtype, backward, log, cluster_pack(dtype), cols=packs * cluster_pack(dtype)
                        )

    def function(self, dtype, backward, log, held):
        return self.functions[self.instances[(dtype, backward, log, held)].name]


def launch_config(grid: int, block: int, smem: int, ctas: int, stream: int):
    from cuda.bindings import driver

    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = block, 1, 1
    config.sharedMemBytes = smem
    config.hStream = driver.CUstream(stream)
    attr = driver.CUlaunchAttribute()
    attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = ctas, 1, 1
    config.attrs = [attr]
    config.numAttrs = 1
    return config


class Launch:
    """One prepared launch: its config and packed 8-byte arguments, reusable."""

    def __init__(self, fn, grid, block, smem, ctas, args):
        self.fn = fn
        self.config = launch_config(grid, block, smem, ctas, torch.cuda.current_stream().cuda_stream)
        self.values = (ctypes.c_int64 * len(args))(*args)
        base = ctypes.addressof(self.values)
        self.pointers = (ctypes.c_void_p * len(args))(*[base + 8 * i for i in range(len(args))])

    def __call__(self):
        from cuda.bindings import driver

        check(driver.cuLaunchKernelEx(self.config, self.fn, ctypes.addressof(self.pointers), 0), "launch")


def resident_clusters(fn, block, smem, ctas) -> int:
    from cuda.bindings import driver

    config = launch_config(ctas, block, smem, ctas, torch.cuda.current_stream().cuda_stream)
    return int(check(driver.cuOccupancyMaxActiveClusters(fn, config), "cuOccupancyMaxActiveClusters"))


def is_aligned(tensors, rows) -> bool:
    bits = 0
    for t in tensors:
        bits |= t.data_ptr()
        if rows > 1:
            bits |= t.stride(0) * t.element_size()
    return bits % 16 == 0


def prepare(kernels, dtype, backward, log, tensors, n, rows, ctas=0, threads=0, clusters=0, packs=0):
    """The launch of the cluster kernel on (x, y) or (y, dy, dx) views of rows x n; ``clusters``
    below ``rows`` makes a persistent grid, -1 as many clusters as are resident."""
    from fastsoftmax.backends.cuda.launch import device_facts

    facts = device_facts(torch.cuda.current_device())
    shape = cluster_shape(
        n,
        dtype,
        backward,
        rows=rows,
        sm_count=facts.sm_count,
        ctas=ctas,
        aligned=is_aligned(tensors, rows),
        threads=threads,
        packs=packs,
        high_bandwidth=facts.high_bandwidth_per_sm,
    )
    block = shape.threads
    fn = kernels.function(dtype, backward, log, shape.held)
    if clusters == -1:
        clusters = min(rows, max(1, resident_clusters(fn, block, shape.smem_bytes, shape.ctas)))
    clusters = clusters or rows
    ptrs = [t.data_ptr() for t in tensors]
    pitches = [t.stride(0) for t in tensors]
    args = [*ptrs, rows, n, *pitches]
    return Launch(fn, clusters * shape.ctas, block, shape.smem_bytes, shape.ctas, args), shape, block


# ---- correctness ----------------------------------------------------------------------------------
def tolerance(dtype):
    return {torch.float32: 2e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}[dtype]


def subnormal_step(dtype) -> float:
    """The spacing of the type's subnormals: the rounding error floor of small outputs."""
    info = torch.finfo(dtype)
    return info.smallest_normal * info.eps


def strided(rows, n, dtype, offset, extra):
    """A rows x n view at column `offset` of a rows x (n + extra) buffer: misaligned rows when the
    offset or the pitch is not a multiple of the 16-byte pack."""
    buffer = torch.full((rows, n + extra), 7.0, device="cuda", dtype=dtype)
    return buffer, buffer[:, offset : offset + n]


def fill_specials(x, dtype):
    rows = x.shape[0]
    if rows >= 4:
        x[0] = -math.inf
        x[1, x.shape[1] // 3] = math.inf
        x[2, -1] = math.nan
        x[3] = 0.0
        x[3, ::2] = torch.finfo(dtype).max if dtype != torch.float32 else 1e30


def compare(name, out, ref, dtype, scale=None) -> bool:
    out64 = out.double()
    tol = tolerance(dtype)
    err = (out64 - ref).abs()
    bound = tol * ref.abs() + tol * (scale if scale is not None else ref.abs().amax(-1, keepdim=True).nan_to_num(0))
    bound = bound + subnormal_step(dtype)
    nan_ok = torch.isnan(out64) == torch.isnan(ref)
    bad = (~nan_ok) | ((err > bound) & ~torch.isnan(ref))
    if bad.any():
        idx = bad.nonzero()[0].tolist()
        say(
            f"FAIL {name}: {int(bad.sum())} bad elements, first at {idx}: got {out64[tuple(idx)].item()} "
            f"want {ref[tuple(idx)].item()}"
        )
        return False
    return True


def run_case(
    kernels,
    dtype,
    backward,
    log,
    rows,
    n,
    offset=0,
    extra=0,
    ctas=0,
    threads=0,
    clusters=0,
    specials=False,
    packs=0,
) -> bool:
    name = (
        f"{TAG[dtype]} {'bwd' if backward else 'fwd'} {'log' if log else 'exp'} {rows}x{n} off{offset} "
        f"extra{extra} C{ctas or 'auto'} t{threads or 'auto'} K{packs or 'auto'} clusters{clusters or 'rows'}"
        f"{' specials' if specials else ''}"
    )
    torch.manual_seed(rows * 1000003 + n)
    try:
        cluster_shape(n, dtype, backward, rows=rows, sm_count=132, ctas=ctas, threads=threads, packs=packs)
    except ValueError as exc:
        say(f"skip {name}: {exc}")
        return True
    ok = True
    if not backward:
        _, x = strided(rows, n, dtype, offset, extra)
        x.copy_(torch.randn(rows, n, device="cuda", dtype=torch.float32) * 4)
        if specials:
            fill_specials(x, dtype)
        y_offset = (offset + 1) % (extra + 1)
        y_buf, y = strided(rows, n, dtype, y_offset, extra)
        y.fill_(math.nan)
        launch, shape, block = prepare(kernels, dtype, False, log, (x, y), n, rows, ctas, threads, clusters, packs)
        launch()
        torch.cuda.synchronize()
        fn = torch.log_softmax if log else torch.softmax
        ref = fn(x.double(), -1)
        ok &= compare(name, y, ref, dtype)
        outside = y_buf.clone()
        outside[:, y_offset : y_offset + n] = 7.0
        if extra and not (outside == 7.0).all():
            say(f"FAIL {name}: wrote outside the output view")
            ok = False
    else:
        y_buf, yv = strided(rows, n, dtype, offset, extra)
        src = torch.randn(rows, n, device="cuda", dtype=torch.float64)
        yv.copy_(torch.log_softmax(src, -1) if log else torch.softmax(src, -1))
        _, dyv = strided(rows, n, dtype, (offset + 2) % (extra + 1), extra)
        dyv.copy_(torch.randn(rows, n, device="cuda", dtype=torch.float32))
        _, dxv = strided(rows, n, dtype, (offset + 1) % (extra + 1), extra)
        dxv.fill_(math.nan)
        launch, shape, block = prepare(
            kernels, dtype, True, log, (yv, dyv, dxv), n, rows, ctas, threads, clusters, packs
        )
        launch()
        torch.cuda.synchronize()
        y64, dy64 = yv.double(), dyv.double()
        if log:
            total = dy64.sum(-1, keepdim=True)
            ref = dy64 - y64.exp() * total
            scale = dy64.abs() + y64.exp() * dy64.abs().sum(-1, keepdim=True)
        else:
            total = (dy64 * y64).sum(-1, keepdim=True)
            ref = y64 * (dy64 - total)
            scale = y64.abs() * (dy64.abs() + (dy64 * y64).abs().sum(-1, keepdim=True))
        ok &= compare(name, dxv, ref, dtype, scale)
    say(
        f"{'ok  ' if ok else 'FAIL'} {name} -> C={shape.ctas} threads={block} K={shape.held // shape.pack} "
        f"smem={shape.smem_bytes}"
    )
    return ok


def guarded_case(*args, **kwargs) -> bool:
    """run_case; a case whose kernel cannot be had fails the probe instead of ending it."""
    try:
        return run_case(*args, **kwargs)
    except Exception as exc:  # noqa: BLE001
        say(f"FAIL {args[1:6]} {kwargs}: {type(exc).__name__}: {str(exc)[:200]}")
        return False


def correctness(kernels, sanitize: bool) -> bool:
    ok = True
    if sanitize:
        cases = [
            (torch.bfloat16, {"rows": 3, "n": 5000, "offset": 1, "extra": 3, "ctas": 4}),
            (torch.float32, {"rows": 5, "n": 3001, "offset": 1, "extra": 1, "ctas": 2, "clusters": 2}),
            (torch.float16, {"rows": 2, "n": 100, "ctas": 16}),
            (torch.bfloat16, {"rows": 4, "n": 9000, "ctas": 8, "specials": True}),
            (torch.float16, {"rows": 7, "n": 4099, "ctas": 2, "clusters": 2, "offset": 1, "extra": 2}),
            (torch.bfloat16, {"rows": 3, "n": 20001, "ctas": 4, "clusters": 1}),
        ]
        for dtype, case in cases:
            for backward in (False, True):
                for log in (False, True):
                    if backward and case.get("specials"):
                        continue
                    ok &= guarded_case(kernels, dtype, backward, log, **case)
        return ok

    for dtype in DTYPES:
        pack = cluster_pack(dtype)
        # one element either side of every cluster-size step of the default rule (16-bit: 16K,
        # 32K, 64K, 128K elements per row; float32 half those)
        steps = [(16384 * 2 // CXX_TYPES[dtype][2]) << i for i in range(4)]
        for backward in (False, True):
            for log in (False, True):
                cases = [
                    {"rows": 3, "n": 50257},
                    {"rows": 1, "n": 128256},
                    {"rows": 5, "n": 65537, "offset": 1, "extra": 2},
                    {"rows": 4, "n": 262144, "specials": not backward},
                    {"rows": 2, "n": 100, "ctas": 16},
                    {"rows": 3, "n": 7, "ctas": 4, "offset": 1, "extra": 1},
                    {"rows": 300, "n": 32768, "clusters": 20},
                    {"rows": 7, "n": 20001, "ctas": 1, "offset": 3, "extra": 5},
                    {"rows": 7, "n": 20001, "ctas": 2, "threads": 160},
                    {"rows": 37, "n": 65537, "offset": 1, "extra": 2, "clusters": 5},
                    {"rows": 64, "n": 50257, "clusters": -1, "specials": not backward},
                    {"rows": 9, "n": 1000, "ctas": 2, "clusters": 2, "offset": 3, "extra": 3},
                    {"rows": 6, "n": 151936, "offset": pack - 1, "extra": pack},
                    {
                        "rows": 3,
                        "n": 40000,
                        "packs": 16 if not backward else 8,
                        "threads": 128,
                        "offset": 2,
                        "extra": 2,
                    },
                    {"rows": 3, "n": 9000, "packs": 2, "threads": 512, "ctas": 2},
                    {"rows": 2, "n": 30000, "offset": 1, "extra": 1},
                ]
                cases += [{"rows": 2, "n": s + d} for s in steps for d in (-1, 1)]
                if not backward:
                    cases.append({"rows": 2, "n": cluster_max_cols(dtype, False), "offset": 1, "extra": 1})
                else:
                    cases.append({"rows": 2, "n": cluster_max_cols(dtype, True)})
                for case in cases:
                    ok &= guarded_case(kernels, dtype, backward, log, **case)
    return ok


# ---- timing ----------------------------------------------------------------------------------------
def gpu_times_us(fn, iters: int, warmup: int = 5) -> list[float]:
    """Per-call GPU time of fn() from CUDA events around each call. A short spin kernel before
    each call keeps the GPU busy while the host enqueues it, so that host launch time (tens of
    microseconds through the Python driver bindings) is not counted."""
    for _ in range(warmup):
        fn()
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(iters)]
    for i in range(iters):
        torch.cuda._sleep(SPIN_CYCLES)
        starts[i].record()
        fn()
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) * 1000 for s, e in zip(starts, ends)]


def copy_bandwidth() -> float:
    src = torch.empty(512 << 20, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    times = gpu_times_us(lambda: dst.copy_(src), 20)
    gbs = 2 * src.numel() / (statistics.median(times) * 1e-6) / 1e9
    say(f"copy bandwidth: {gbs:.0f} GB/s (512 MiB device-to-device, read + write)")
    return gbs


def make_sets(dtype, backward, log, rows, n):
    """Enough independent (inputs, outputs) sets that rotating them leaves L2 (50 MB) cold."""
    elem = CXX_TYPES[dtype][2]
    per_set = rows * n * elem * (3 if backward else 2)
    count = max(1, min(8, -(-200_000_000 // per_set)))
    sets = []
    for _ in range(count):
        if backward:
            src = torch.randn(rows, n, device="cuda", dtype=torch.float32)
            yv = (torch.log_softmax(src, -1) if log else torch.softmax(src, -1)).to(dtype)
            del src
            dyv = torch.randn(rows, n, device="cuda", dtype=dtype)
            sets.append((yv, dyv, torch.empty_like(yv)))
        else:
            x = torch.randn(rows, n, device="cuda", dtype=dtype)
            sets.append((x, torch.empty_like(x)))
    return sets


def time_cluster(kernels, sets, dtype, backward, log, rows, n, iters, **variant):
    launches = [prepare(kernels, dtype, backward, log, t, n, rows, **variant) for t in sets]
    state = {"i": 0}

    def step():
        launches[state["i"] % len(launches)][0]()
        state["i"] += 1

    us = statistics.median(gpu_times_us(step, iters))
    _, shape, block = launches[0]
    grid = launches[0][0].config.gridDimX // shape.ctas
    return us, shape, block, grid


def time_fastsoftmax(sets, backward, log, iters):
    """The current backend='cuda' tiers on the same tensors, or None where they fail."""
    try:
        import fastsoftmax

        state = {"i": 0}

        def step():
            s = sets[state["i"] % len(sets)]
            state["i"] += 1
            if backward:
                fastsoftmax.softmax_backward(s[1], s[0], -1, log=log)
            elif log:
                fastsoftmax.log_softmax(s[0], -1, backend="cuda")
            else:
                fastsoftmax.softmax(s[0], -1, backend="cuda")

        return statistics.median(gpu_times_us(step, iters))
    except Exception as exc:  # noqa: BLE001 - the backend is being rewritten; the probe must go on
        say(f"  fastsoftmax backend='cuda' failed: {type(exc).__name__}: {str(exc)[:200]}")
        return None


def benchmark(kernels, quick: bool) -> list[str]:
    copy = copy_bandwidth()
    props = torch.cuda.get_device_properties(0)
    iters = 30 if quick else 60
    table = []

    empty = Launch(kernels.functions["fs_probe_empty"], 1, 32, 0, 1, [])
    empty_us = statistics.median(gpu_times_us(empty, 200))
    say(f"empty kernel (cluster launch, same timer): {empty_us:.2f} us")
    empty16 = Launch(kernels.functions["fs_probe_empty"], 16, 256, 0, 16, [])
    empty16_us = statistics.median(gpu_times_us(empty16, 200))
    table.append(
        f"empty kernel: {empty_us:.2f} us (one cluster of 16 CTAs: {empty16_us:.2f} us); copy {copy:.0f} GB/s; "
        f"{props.name}, {props.multi_processor_count} SMs"
    )

    def ab(kind, dtype, backward, log, rows, n, variants, compare_fs=False):
        """One shape, every variant on the same tensors, in turn: fraction of copy (and us)."""
        sets = make_sets(dtype, backward, log, rows, n)
        nbytes = rows * n * CXX_TYPES[dtype][2] * (3 if backward else 2)
        cells = []
        for label, variant in variants:
            try:
                us, shape, block, grid = time_cluster(kernels, sets, dtype, backward, log, rows, n, iters, **variant)
            except Exception as exc:  # noqa: BLE001 - one bad variant must not end the probe
                say(f"  {label}: {type(exc).__name__}: {str(exc)[:160]}")
                cells.append(f"{label} --")
                continue
            frac = nbytes / (us * 1e-6) / 1e9 / copy
            k = shape.held // shape.pack if shape.held else 0
            say(
                f"  {kind} {TAG[dtype]} {rows}x{n} {label}: C={shape.ctas} t={block} K={k} clusters={grid} "
                f"smem={shape.smem_bytes} {us:.2f} us {frac:.3f}"
            )
            cells.append(f"{label} {frac:.3f}" if kind != "decode" else f"{label} {us:5.2f}us")
        if compare_fs:
            fs_us = time_fastsoftmax(sets, backward, log, iters)
            if fs_us is not None:
                cells.append(f"backend=cuda {nbytes / (fs_us * 1e-6) / 1e9 / copy:.3f} ({fs_us:.1f}us)")
        line = (
            f"{kind:<7} {TAG[dtype]:<4} {'bwd' if backward else 'fwd'} {'log' if log else 'exp'} "
            f"{rows:>5}x{n:<8} " + " | ".join(cells)
        )
        say(line)
        table.append(line)
        del sets
        torch.cuda.empty_cache()

    def train_variants(n, dtype, backward):
        base = cluster_shape(n, dtype, backward, aligned=True)
        out = [("auto", {})]
        if not quick:
            if backward:
                out.append(("persist", {"clusters": -1}))
            if base.ctas > 1:
                out.append((f"C{base.ctas // 2}", {"ctas": base.ctas // 2}))
            if base.ctas < 16:
                out.append((f"C{base.ctas * 2}", {"ctas": base.ctas * 2}))
            out.append(("t512", {"threads": 512}))
            out.append(("auto'", {}))
        return out

    training = [(2048, 50257), (2048, 65536), (1024, 128256), (1024, 151936), (512, 262144)]
    for rows, n in training:
        ab("train", torch.bfloat16, False, False, rows, n, train_variants(n, torch.bfloat16, False))
    for rows, n in training:
        ab("train", torch.bfloat16, True, False, rows, n, train_variants(n, torch.bfloat16, True))
    for rows, n in training:
        ab("train", torch.float32, False, False, rows // 2, n, train_variants(n, torch.float32, False))
    for rows, n in training:
        ab("train", torch.float32, True, True, rows // 2, n, train_variants(n, torch.float32, True))
    for backward in (False, True):
        ab("align", torch.bfloat16, backward, False, 2048, 50264, [("auto", {})])
    for rows, n in training[::2]:
        ab("train", torch.float16, False, True, rows, n, [("auto", {})])
        ab("train", torch.float16, True, False, rows, n, [("auto", {}), ("persist", {"clusters": -1})])
    decode = [
        ("auto", {}),
        ("C8", {"ctas": 8}),
        ("t128", {"threads": 128}),
        ("t512", {"threads": 512}),
        ("auto'", {}),
    ]
    for rows in (1, 8, 32, 128):
        ab("decode", torch.bfloat16, False, False, rows, 128256, decode)
    for rows, n in ((1, 50257), (1, 151936), (1, 262144), (8, 262144)):
        ab("decode", torch.bfloat16, False, False, rows, n, decode[:2])
    ab("decode", torch.bfloat16, True, False, 1, 128256, decode[:2])
    ab("decode", torch.float32, False, False, 1, 128256, decode[:2])
    ab("decode", torch.float32, False, False, 32, 151936, decode[:2])
    for rows, n in ((64, 1 << 19), (32, cluster_max_cols(torch.bfloat16, False))):
        ab(
            "long",
            torch.bfloat16,
            False,
            False,
            rows,
            n,
            [("auto", {}), ("t512", {"threads": 512})],
        )
    ab("long", torch.float32, False, False, 64, 1 << 19, [("auto", {})])
    ab("long", torch.bfloat16, True, False, 64, 1 << 19, [("auto", {}), ("persist", {"clusters": -1})])
    return table


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--sanitize", action="store_true", help="small correctness cases only")
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    if not torch.cuda.is_available():
        print("cluster probe: no CUDA device")
        return 0
    major, minor = torch.cuda.get_device_capability()
    if major < 9:
        print(f"cluster probe: sm_{major}{minor} has no thread-block clusters")
        return 0
    start = time.time()
    os.makedirs(args.out, exist_ok=True)
    name = "cluster_probe_sanitize.txt" if args.sanitize else "cluster_probe.txt"
    LOG_FILE.append(open(os.path.join(args.out, name), "w"))  # noqa: SIM115 - closed at exit
    kernels = Kernels(f"sm_{major}{minor}")
    ok = correctness(kernels, args.sanitize)
    say(f"correctness: {'all passed' if ok else 'FAILURES'} ({time.time() - start:.0f} s)")
    table = []
    if not args.sanitize:
        table = benchmark(kernels, args.quick)
    print("\n==== summary ====")
    print(f"correctness: {'all passed' if ok else 'FAILURES'}; total {time.time() - start:.0f} s")
    for line in table:
        print(line)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
