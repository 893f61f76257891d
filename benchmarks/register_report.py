"""Registers and stack frame of the kernel instances, without a GPU: the chosen instances are
compiled with NVRTC (one translation unit per kernel header, in parallel, no disk cache) and read
from the CUBIN (``compiler.kernel_resources``). A frame on an instance under a register cap is usually
spill space; register caps and launch bounds decide how many CTAs an SM holds, so a kernel change can
be checked for both before it is timed.

    PYTHONPATH=$PWD python3 benchmarks/register_report.py --match 'cluster_.*columns' [--arch sm_90]
        [--against DIR | --snapshot FILE] [--replace 'OLD|NEW'] [--save FILE] [--changed]

``--match``: a regular expression over the instance names (``instances.all_instances()``, the
strided ones included); ``--against DIR``: also compile them from DIR, a copy of ``kernels/``
from another revision, and print both (changed rows marked); ``--snapshot FILE``: compare with a file
``--save`` wrote instead (no second compile); ``--replace OLD|NEW`` (repeatable): edit this tree's
kernel headers and the units' wrappers first (in a copy), e.g. a wrapper's launch bounds or a
constant of a kernel, an error where OLD occurs in neither; ``--changed``: print only the instances whose
registers or frame differ (exit status 1 if any does); ``--sass`` (with ``--against`` or ``--replace``):
compare each instance's SASS instructions too (nvdisasm, as ``sass_lines.py`` finds it; addresses left
out), so that a change meant to leave the code as it was (a fold of repeated source) is shown to, and
needs no timing on a GPU. Without ``--against``, ``--replace``'s edit is compared with this tree as it is.

A shared header edit can move the register allocation of kernels it does not touch (a branch added
to every strided_staged kernel cost the 16-bit backward 0.1 of copy, found only two sets later; under
NVRTC 13.5 it had taken that kernel from 110 registers to 80): ``--save`` the families' figures with
each recorded set and ``--snapshot`` them before timing the next change, with the same NVRTC (13.0
and 13.5 differ on about a third of the instances: 1098 of 3489 at the ninety-first set). The NVRTC
the tables were measured with beside another: a virtual environment over this one's packages with
that version's wheel in it, e.g.
``python3 -m venv --system-site-packages /tmp/nvrtc13.0 && /tmp/nvrtc13.0/bin/pip install --no-deps
nvidia-cuda-nvrtc==13.0.88``, then this script run by ``/tmp/nvrtc13.0/bin/python`` (cuda.bindings
loads the environment's own libnvrtc first).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections import defaultdict
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _unit_figures(instances, arch: str, kernel_dir: Path | None, replacements, with_sass: bool) -> dict:
    """{name: (registers, frame bytes, SASS instructions or None)} of one unit, compiled once."""
    from fastsoftmax.backends.cuda import compiler
    from fastsoftmax.backends.cuda.instances import source_for

    try:
        variant = compiler.KernelVariant(replacements, kernel_dir)
    except ValueError as exc:
        raise SystemExit(f"--replace: {exc}") from None
    with variant:
        cubin = variant.compile(source_for(instances), arch, "register_report")
    code = _sass_by_kernel(cubin) if with_sass else {}
    return {name: (regs, frame, code.get(name)) for name, (regs, frame) in compiler.kernel_resources(cubin).items()}


def _sass_by_kernel(cubin: bytes) -> dict:
    """{name: the kernel's SASS instructions, addresses left out} of every kernel in the CUBIN."""
    sys.path.insert(0, str(Path(__file__).parent))  # benchmarks/, sass_lines.py's folder
    from sass_lines import nvdisasm_lines

    out: dict = defaultdict(list)
    name = None
    for line in nvdisasm_lines(cubin):
        found = re.match(r"\s*\.section\s+\.text\.([\w$]+),", line)
        if found:
            name = found.group(1)
            continue
        found = re.match(r"\s*/\*[0-9a-f]{4,}\*/\s+(.*?)\s*;", line)
        if found and name is not None:
            out[name].append(found.group(1))
    return {key: _relabelled(value) for key, value in out.items()}


def _relabelled(instructions: list) -> tuple:
    """A kernel's instructions with nvdisasm's branch labels (numbered across the whole file, so that
    a change in one kernel renumbers the next ones') numbered within the kernel."""
    order: dict = {}

    def local(found) -> str:
        return f".L_k{order.setdefault(found.group(0), len(order))}"

    return tuple(re.sub(r"\.L_x_\d+", local, text) for text in instructions)


def figures(instances, arch: str, kernel_dir: Path | None = None, replacements=(), with_sass: bool = False) -> dict:
    """{name: (registers, frame bytes, SASS instructions or None)} of the instances, one unit per
    kernel header, each compiled once."""
    units = defaultdict(list)
    for inst in instances:
        units[inst.header].append(inst)
    if len(units) == 1:
        return _unit_figures(instances, arch, kernel_dir, replacements, with_sass)
    out: dict = {}
    with ProcessPoolExecutor(max_workers=min(len(units), os.cpu_count() or 1)) as pool:
        jobs = [pool.submit(_unit_figures, unit, arch, kernel_dir, replacements, with_sass) for unit in units.values()]
        for job in jobs:
            out.update(job.result())
    return out


def save(path: Path, figures: dict, arch: str) -> None:
    from fastsoftmax.backends.cuda.compiler import versions_line

    named = versions_line()
    lines = [f"# register_report: registers and frame bytes, {arch}, {named}"]
    lines += [f"{name} {regs} {frame}" for name, (regs, frame) in sorted(figures.items())]
    path.write_text("\n".join(lines) + "\n")


def load(path: Path) -> dict:
    figures = {}
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            name, regs, frame = line.split()
            figures[name] = (int(regs), int(frame))
    return figures


def main() -> int:
    from fastsoftmax.backends.cuda import instances

    parser = argparse.ArgumentParser()
    parser.add_argument("--match", default=".", help="regular expression over the instance names")
    parser.add_argument("--arch", default="sm_90")
    parser.add_argument("--against", type=Path, help="a kernels/ folder of another revision")
    parser.add_argument("--snapshot", type=Path, help="a file --save wrote, to compare with")
    parser.add_argument(
        "--replace", action="append", default=[], help="OLD|NEW, applied to this tree's kernel headers and wrappers"
    )
    parser.add_argument("--save", type=Path, help="write this tree's figures to FILE")
    parser.add_argument("--changed", action="store_true", help="only the instances that differ (exit 1 if any)")
    parser.add_argument("--sass", action="store_true", help="compare the instances' SASS too (--against or --replace)")
    args = parser.parse_args()
    if args.against and args.snapshot:
        parser.error("--against and --snapshot are two ways of naming the same comparison: one of them")
    if args.sass and not (args.against or args.replace):
        parser.error("--sass compares this tree with --against's folder, or --replace's edit with this tree")
    pattern = re.compile(args.match)
    chosen = [i for i in instances.all_instances() if pattern.search(i.name)]
    if not chosen:
        parser.error(f"no instance name matches {args.match!r}")
    replacements = [tuple(item.split("|", 1)) for item in args.replace]
    if any(len(pair) != 2 for pair in replacements):
        parser.error("--replace takes OLD|NEW")
    found_here = figures(chosen, args.arch, None, replacements, args.sass)
    here = {name: found[:2] for name, found in found_here.items()}
    if args.save:
        save(args.save, here, args.arch)
    there = found_there = None
    if args.against:
        found_there = figures(chosen, args.arch, args.against, (), args.sass)
        there = {name: found[:2] for name, found in found_there.items()}
    elif args.snapshot:
        there = load(args.snapshot)
    width = max(len(i.name) for i in chosen)
    print(f"{'instance':<{width}}  registers  frame" + ("  (against: registers  frame)" if there else ""))
    changed = 0
    for inst in chosen:
        regs, frame = here[inst.name]
        line = f"{inst.name:<{width}}  {regs:>9}  {frame:>5}"
        differs = False
        if there is not None:
            before = there.get(inst.name)
            differs = before != (regs, frame)
            shown = ("-", "-") if before is None else before
            line += f"  {shown[0]:>21}  {shown[1]:>5}" + ("  new" if before is None else "  changed" if differs else "")
        changed += differs
        if differs or not args.changed:
            print(line)
    if there is not None:
        print(f"{changed} of {len(chosen)} instances differ")
    if args.sass:
        # --against: this tree (with --replace's edit) against that folder; else the edit against this tree
        if found_there is None:
            found_there = figures(chosen, args.arch, None, (), True)
        ours = {name: found[2] for name, found in found_here.items() if found[2] is not None}
        theirs = {name: found[2] for name, found in found_there.items() if found[2] is not None}
        missing = [i.name for i in chosen if i.name not in ours or i.name not in theirs]
        if missing:
            raise SystemExit(f"--sass: no SASS found for {', '.join(missing[:5])}")
        differ = [i.name for i in chosen if ours[i.name] != theirs[i.name]]
        for name in differ:
            print(f"SASS differs: {name} ({len(ours[name])} against {len(theirs[name])} instructions)")
        print(f"SASS: {len(chosen) - len(differ)} of {len(chosen)} instances identical")
        changed += len(differ)
    return 1 if args.changed and changed else 0


if __name__ == "__main__":
    sys.exit(main())
