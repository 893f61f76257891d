"""The SASS of Triton's tile kernels for sm_90, compiled without a GPU: instructions, global loads,
exponentials and registers a thread (and with --realigned, block barriers). By default the strided
tiles the backend plans (triton.plan) with the reduced axis' length a run-time argument (FIXED_N 0) and
compiled in (FIXED_N n); with --realigned, the held realigned row kernels as planned for rows of 255, 300
and 999 at 16, 32 and 64 elements a thread (REALIGNED_HELD_ELEMS_PER_THREAD).

    python benchmarks/results/2026-12-07_h100_s84/tile_sass.py \
        > benchmarks/results/2026-12-07_h100_s84/fixed_n_sass.txt
    python benchmarks/results/2026-12-07_h100_s84/tile_sass.py --realigned \
        > benchmarks/results/2026-12-07_h100_s84/realigned_sass.txt
"""

import os
import re
import subprocess
import sys
import tempfile

import triton

from fastsoftmax.backends import triton as tb
from fastsoftmax.backends.triton import kernels
from fastsoftmax.backends.triton.compile_check import compile_kernel

BIN = os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")
# rows at several 16-byte phases (odd inner sizes): the scalar tiles, whose loads take no alignment hint
CASES = [(16, 21, 263169), (8, 21, 65025), (16, 19, 263169), (8, 150, 16129), (64, 512, 1023)]


def sass_counts(kernel, barriers: bool = False) -> tuple[int, ...]:
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as f:
        f.write(kernel.asm["cubin"])
    sass = subprocess.run([os.path.join(BIN, "cuobjdump"), "-sass", f.name], capture_output=True, text=True).stdout
    usage = subprocess.run([os.path.join(BIN, "cuobjdump"), "-res-usage", f.name], capture_output=True, text=True)
    os.unlink(f.name)
    lines = [line for line in sass.splitlines() if re.match(r"\s+/\*[0-9a-f]{4}\*/", line)]
    registers = int(re.search(r"REG:(\d+)", usage.stdout).group(1))
    counts = (len(lines), sum("LDG" in line for line in lines), sum("MUFU.EX2" in line for line in lines), registers)
    return counts + (sum("BAR.SYNC" in line for line in lines),) if barriers else counts


def realigned_table() -> None:
    print(f"Triton {triton.__version__}, sm_90; per thread: instructions, LDG, MUFU.EX2, registers, BAR.SYNC")
    for n in (255, 300, 999):
        for dtype, itemsize in (("bf16", 2), ("fp32", 4)):
            for backward in (False, True):
                fn = kernels.softmax_bwd_realigned if backward else kernels.softmax_fwd_realigned
                for elements in (16, 32, 64):
                    tb.REALIGNED_HELD_ELEMS_PER_THREAD = elements
                    p = tb.realigned_plan("tile", (1 << 26) // n, n, itemsize, 132, False)
                    config = dict(p["configs"][0])
                    options = {"num_warps": config.pop("num_warps")}
                    counts = sass_counts(
                        compile_kernel(fn, dtype, {**config, "WIDE": False}, options, 90, aligned=True), True
                    )
                    direction = "backward" if backward else "forward"
                    blocks = f"BLOCK_O {config['BLOCK_O']} BLOCK_N {config['BLOCK_N']} {options}"
                    print(f"rows of {n} {dtype} {direction}, {elements} a thread, {blocks}: {counts}", flush=True)


def fixed_n_table() -> None:
    print(f"Triton {triton.__version__}, sm_90; per thread: instructions, LDG, MUFU.EX2, registers")
    for outer, n, inner in CASES:
        for dtype, itemsize in (("bf16", 2), ("fp32", 4)):
            for backward in (False, True):
                p = tb.plan("tile", outer, n, inner, itemsize, backward, 132, False, inner % 2 == 1, False, False)
                config = dict(p["configs"][0])
                options = {key: config.pop(key) for key in ("num_warps", "num_stages", "maxnreg") if key in config}
                fn = kernels.softmax_bwd_tile if backward else kernels.softmax_fwd_tile
                counts = [
                    sass_counts(
                        compile_kernel(
                            fn, dtype, {**config, "WIDE": p.get("offsets_64", False), "FIXED_N": fixed}, options, 90
                        )
                    )
                    for fixed in (0, n)
                ]
                blocks = f"BLOCK_N {config['BLOCK_N']}+{config['BLOCK_N2']} BLOCK_I {config['BLOCK_I']} {options}"
                direction = "backward" if backward else "forward"
                print(f"({outer}, {n}, {inner}) {dtype} {direction} {blocks}: {counts[0]} -> {counts[1]}", flush=True)


if __name__ == "__main__":
    realigned_table() if "--realigned" in sys.argv else fixed_n_table()
