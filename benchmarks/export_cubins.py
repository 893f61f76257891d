"""CUBINs of kernel instances compiled by this machine's NVRTC, one file per instance, for timing on
the GPU machine beside that machine's own compilation: each instance is compiled alone, with the
source and label the backend gives it (``backend.CudaBackend.cubin``), and written to
``DIR/<instance name>.cubin``; ``DIR/nvrtc.txt`` names the NVRTC and cuda-core versions.

    PYTHONPATH=$PWD python3 benchmarks/export_cubins.py --match '^fs_staged_' --out scratch/cubins_nvrtc135
        [--arch sm_90]

On the GPU machine, ``benchmarks/grid_row_probe.py --baseline-cubins PREFIX=DIR`` runs a tier written
PREFIX/NAME on those CUBINs, alternated with the same tier compiled there. The question it answers:
the device image's NVRTC (13.0) and pip's (13.5 in November 2026) allocate registers differently in
about half of the instances (``benchmarks/register_report.py``), and only the first's code was
timed. A CUBIN needs no JIT, so one from a newer NVRTC of the same major version loads on the
device's driver.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path


def _compile(instance, arch: str) -> bytes:
    from fastsoftmax.backends.cuda.backend import CudaBackend

    return CudaBackend.cubin(instance, arch)


def export(instances, arch: str, out: Path, workers: int | None = None) -> list[Path]:
    """Writes ``out/<name>.cubin`` for every instance and ``out/nvrtc.txt``; returns the CUBINs' paths."""
    from fastsoftmax.backends.cuda.compiler import versions_line

    out.mkdir(parents=True, exist_ok=True)
    named = versions_line()
    (out / "nvrtc.txt").write_text(f"{arch} {named}\n")
    workers = workers or min(len(instances), os.cpu_count() or 1)
    if workers <= 1:
        cubins = [_compile(inst, arch) for inst in instances]
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            cubins = [job.result() for job in [pool.submit(_compile, inst, arch) for inst in instances]]
    paths = []
    for inst, cubin in zip(instances, cubins):
        path = out / f"{inst.name}.cubin"
        path.write_bytes(cubin)
        paths.append(path)
    return paths


def main() -> int:
    from fastsoftmax.backends.cuda import instances

    parser = argparse.ArgumentParser()
    parser.add_argument("--match", required=True, help="regular expression over the instance names")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--arch", default="sm_90")
    args = parser.parse_args()
    pattern = re.compile(args.match)
    chosen = [i for i in instances.all_instances() if pattern.search(i.name)]
    if not chosen:
        parser.error(f"no instance name matches {args.match!r}")
    paths = export(chosen, args.arch, args.out)
    size = sum(p.stat().st_size for p in paths)
    versions = (args.out / "nvrtc.txt").read_text().strip()
    print(f"{len(paths)} CUBINs, {size / 2**20:.1f} MiB, in {args.out} ({versions})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
