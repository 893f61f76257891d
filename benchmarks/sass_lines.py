"""Where a kernel instance's code goes, without a GPU: the instance is compiled with NVRTC (line
information on, no disk cache), disassembled with nvdisasm, and its SASS instructions counted by
source line, apart by how deep in loops they sit. Depth 0-1 is the code a CTA runs once a launch or
once per trip of its outermost loop (the persistent tile loop of the strided tiers); deeper code runs
per row or per pack. A kernel whose threads hold few elements each pays for the first kind on every
one of them (Nsight Compute on the bf16 staged forward of (8, 150, 128, 128) over dim 1 found a third
of its instructions there: benchmarks/results/2026-11-28_h200_s33/ncu_source_staged_bf16.txt).

    PYTHONPATH=$PWD python3 benchmarks/sass_lines.py fs_staged_softmax_fwd_bf16_p8 [--arch sm_90]
        [--depth 1] [--top 40] [--kernels DIR]

Counts are static (instructions in the code, not executed); the code of paths a problem does not
take (a team's merges where a tile has one CTA) is counted too. ``--depth D``: list the lines of the
code at loop depth D or less; ``--kernels DIR``: the headers of another revision (a copy of
kernels/). nvdisasm comes from PATH, the nvidia-cuda-nvdisasm package, or Triton's bundled copy.
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def nvdisasm_path() -> str | None:
    """nvdisasm from PATH, pip's nvidia-cuda-nvdisasm, or the copy Triton ships, else None."""
    found = shutil.which("nvdisasm")
    if found:
        return found
    for base in sys.path:
        for pattern in (
            "nvidia/cu*/bin/nvdisasm",
            "nvidia/cuda_nvdisasm/bin/nvdisasm",
            "triton/backends/nvidia/bin/nvdisasm",
        ):
            for candidate in sorted(glob.glob(os.path.join(base, pattern))):
                if os.access(candidate, os.X_OK):
                    return candidate
    return None


def disassemble(instance, arch: str, kernel_dir: Path | None) -> list[str]:
    """The instance's SASS with line information, as nvdisasm prints it."""
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import source_for

    nvdisasm_path_or_exit()
    saved = compiler.COMPILE_OPTIONS
    compiler.COMPILE_OPTIONS = dict(saved, lineinfo=True)
    try:
        cubin = compiler.compile_cubin(
            source_for([instance]), arch, "sass_lines", use_cache=False, kernel_dir=kernel_dir
        )
    finally:
        compiler.COMPILE_OPTIONS = saved
    return nvdisasm_lines(cubin, line_info=True)


def nvdisasm_path_or_exit() -> str:
    tool = nvdisasm_path()
    if tool is None:
        raise SystemExit("no nvdisasm (pip install nvidia-cuda-nvdisasm, or the triton extra)")
    return tool


def nvdisasm_lines(cubin: bytes, line_info: bool = False) -> list[str]:
    """nvdisasm's listing of a CUBIN (every kernel in it), with line information where ``line_info``."""
    tool = nvdisasm_path_or_exit()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        flags = ["-c", "-g"] if line_info else ["-c"]
        return subprocess.run([tool, *flags, str(path)], capture_output=True, text=True, check=True).stdout.splitlines()


def count_lines(sass: list[str]) -> tuple[list[tuple[str, str]], list[int]]:
    """([(instruction, "file:line")], loop depth of each): the depth counts the backward branches
    whose range (their target up to them) holds the instruction."""
    instructions, labels = [], {}
    location = "?"
    for line in sass:
        found = re.match(r'\s*//## File "([^"]+)", line (\d+)', line)
        if found:
            location = f"{Path(found.group(1)).name}:{found.group(2)}"
            continue
        found = re.match(r"\s*\.(L_x_\d+):", line)
        if found:
            labels[found.group(1)] = len(instructions)
            continue
        found = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if found:
            instructions.append((found.group(1), location))
    depth = [0] * len(instructions)
    for k, (text, _) in enumerate(instructions):
        found = re.search(r"BRA\s+`\(\.(L_x_\d+)\)", text)
        if found and labels.get(found.group(1), k + 1) <= k:
            for q in range(labels[found.group(1)], k + 1):
                depth[q] += 1
    return instructions, depth


def source_text(location: str, kernel_dir: Path) -> str:
    name, _, number = location.rpartition(":")
    path = kernel_dir / name
    if not number.isdigit() or not path.is_file():
        return ""
    lines = path.read_text().splitlines()
    return lines[int(number) - 1].strip() if int(number) <= len(lines) else ""


def main() -> int:
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import all_instances

    parser = argparse.ArgumentParser()
    parser.add_argument("instance", help="an instance name (instances.all_instances())")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--depth", type=int, default=1, help="list the lines of code at this loop depth or less")
    parser.add_argument("--top", type=int, default=40)
    parser.add_argument("--kernels", type=Path, help="a kernels/ folder of another revision")
    args = parser.parse_args()
    chosen = [i for i in all_instances() if i.name == args.instance]
    if not chosen:
        parser.error(f"no instance named {args.instance!r}")
    instructions, depth = count_lines(disassemble(chosen[0], args.arch, args.kernels))
    by_depth = collections.Counter(depth)
    print(
        f"{args.instance} ({args.arch}): {len(instructions)} SASS instructions; by loop depth: "
        + ", ".join(f"{d}: {by_depth[d]}" for d in sorted(by_depth))
    )
    shallow = collections.Counter(loc for (_, loc), d in zip(instructions, depth) if d <= args.depth)
    print(f"at depth {args.depth} or less, by source line ({sum(shallow.values())} instructions):")
    kernel_dir = args.kernels or compiler.KERNEL_DIR
    for location, count in shallow.most_common(args.top):
        print(f"{count:6d}  {location:28s} {source_text(location, kernel_dir)[:90]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
