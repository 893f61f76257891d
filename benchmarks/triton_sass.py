"""SASS counts a thread of a compiled Triton kernel, without a GPU: instructions, global loads,
exponentials (MUFU.EX2), registers, block barriers, shared-memory stores and local-memory accesses
(spills), from the cubin through cuobjdump (Triton's bundled copy). Counts are static: the code, not
what a launch executes. Used by the SASS records under results/, e.g.

    python3 benchmarks/results/2026-12-07_h100_s85/realigned_sass.py
"""

from __future__ import annotations

import os
import re
import subprocess
import tempfile

import triton

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")


def sass_counts(kernel) -> dict:
    """The counts of ``kernel`` (a compiled Triton kernel, e.g. compile_check.compile_kernel's)."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(kernel.asm["cubin"])
    try:
        sass = subprocess.run([os.path.join(BIN, "cuobjdump"), "-sass", f.name], capture_output=True, text=True)
        usage = subprocess.run([os.path.join(BIN, "cuobjdump"), "-res-usage", f.name], capture_output=True, text=True)
    finally:
        os.unlink(f.name)
    lines = [line for line in sass.stdout.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", line)]

    def count(*ops: str) -> int:
        return sum(any(op in line for op in ops) for line in lines)

    return dict(
        instr=len(lines),
        ldg=count("LDG"),
        ex2=count("MUFU.EX2"),
        regs=int(re.search(r"REG:(\d+)", usage.stdout).group(1)),
        bar=count("BAR.SYNC"),
        sts=count("STS"),
        local=count("LDL", "STL"),
    )


def held_realigned_counts(n: int, itemsize: int, backward: bool) -> tuple[str, dict, int, dict]:
    """(tier, constexprs, warps, sass_counts) of the held realigned kernel the Triton backend plans for
    rows of n of 2^26 elements, on the tier it takes there, compiled for sm_90 with 32-bit offsets under
    the backend's settings as they stand (the records set REALIGNED_* around it)."""
    from fastsoftmax.backends import triton as backend
    from fastsoftmax.backends.triton import kernels
    from fastsoftmax.backends.triton.compile_check import compile_kernel

    fn = kernels.softmax_bwd_realigned if backward else kernels.softmax_fwd_realigned
    outer = (1 << 26) // n
    tier = backend._choose_tier(outer, n, 1, itemsize, backward, 132)
    config = dict(backend.realigned_plan(tier, outer, n, itemsize, backward, 132, False)["configs"][0])
    warps = config.pop("num_warps")
    dtype = "bf16" if itemsize == 2 else "fp32"
    kernel = compile_kernel(fn, dtype, {**config, "WIDE": False}, {"num_warps": warps}, 90, aligned=True)
    return tier, config, warps, sass_counts(kernel)
