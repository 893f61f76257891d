"""Registers and stack frame of the kernel instances, without a GPU: the chosen instances are
compiled with NVRTC (one translation unit, no disk cache) and read from the CUBIN
(``compiler.kernel_resources``). A frame on an instance under a register cap is usually spill space;
register caps and launch bounds decide how many CTAs an SM holds, so a kernel change can be checked
for both before it is timed.

    PYTHONPATH=$PWD python3 benchmarks/register_report.py --match 'cluster_.*columns' [--arch sm_90]
        [--against DIR] [--replace 'OLD|NEW']

``--match``: a regular expression over the instance names (``instances.all_instances()`` and
``strided.all_instances()``); ``--against DIR``: also compile them from DIR, a copy of ``kernels/``
from another revision, and print both (changed rows marked); ``--replace OLD|NEW`` (repeatable):
edit the source of this tree's unit first, e.g. a wrapper's launch bounds.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path


def resources(instances, arch: str, kernel_dir: Path | None = None, replacements=()) -> dict:
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import source_for

    source = source_for(instances)
    for old, new in replacements:
        source = source.replace(old, new)
    cubin = compiler.compile_cubin(source, arch, "register_report", use_cache=False, kernel_dir=kernel_dir)
    return compiler.kernel_resources(cubin)


def main() -> int:
    from fastsoftmax.backends.cuda import instances, strided

    parser = argparse.ArgumentParser()
    parser.add_argument("--match", default=".", help="regular expression over the instance names")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--against", type=Path, help="a kernels/ folder of another revision")
    parser.add_argument("--replace", action="append", default=[], help="OLD|NEW, applied to this tree's source")
    args = parser.parse_args()
    pattern = re.compile(args.match)
    # instances.all_instances() may already list the strided ones: each name once
    unique = {i.name: i for i in (*instances.all_instances(), *strided.all_instances())}
    chosen = [i for name, i in unique.items() if pattern.search(name)]
    if not chosen:
        parser.error(f"no instance name matches {args.match!r}")
    replacements = [tuple(item.split("|", 1)) for item in args.replace]
    if any(len(pair) != 2 for pair in replacements):
        parser.error("--replace takes OLD|NEW")
    here = resources(chosen, args.arch, None, replacements)
    there = resources(chosen, args.arch, args.against) if args.against else None
    width = max(len(i.name) for i in chosen)
    print(f"{'instance':<{width}}  registers  frame" + ("  (against: registers  frame)" if there else ""))
    for inst in chosen:
        regs, frame = here[inst.name]
        line = f"{inst.name:<{width}}  {regs:>9}  {frame:>5}"
        if there is not None:
            before = there[inst.name]
            line += f"  {before[0]:>21}  {before[1]:>5}" + ("  changed" if before != (regs, frame) else "")
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
