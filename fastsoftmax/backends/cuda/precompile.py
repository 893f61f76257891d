"""``fastsoftmax compile``: fill the kernel cache ahead of time.

The "cuda" backend compiles each kernel instance the first time a problem needs it (a fraction of
a second each, then cached on disk; see compiler.py), and so do the kernels of
fastsoftmax.distributed's collective="peer". A deployment that wants no compile on its
first calls, or a test run that touches hundreds of instances, compiles them all up front, in
parallel, for the GPU in the machine or for any architecture named.
"""

from __future__ import annotations

import os
import re
import sys
import time
from concurrent.futures import ProcessPoolExecutor


def _compile_one(job) -> str | None:
    arch, kernel = job
    from . import compiler
    from .instances import source_for

    name = kernel_name(kernel)
    if isinstance(kernel, tuple):  # fastsoftmax.distributed's collective="peer": (dtype, log, pack)
        from ...distributed import _peer

        source = _peer.source([kernel])
    else:
        source = source_for([kernel])
    try:
        compiler.compile_cubin(source, arch, name)
    except Exception as exc:  # reported, never raised across the process pool
        return f"{name}: {exc}"
    return None


def _default_arch() -> str:
    import torch

    if not torch.cuda.is_available():
        raise SystemExit("fastsoftmax compile: no GPU found; name the architecture with --arch (e.g. sm_90)")
    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def add_arguments(parser) -> None:
    parser.add_argument(
        "--arch",
        action="append",
        help="architecture to compile for, e.g. sm_90 (repeatable; default: the current GPU's)",
    )
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="compiler processes (default: all CPUs)")
    parser.add_argument(
        "--match",
        help="only the instances whose kernel name this regular expression finds (e.g. '^fs_strided_'), so that a "
        "test run of one family compiles its kernels in parallel first",
    )


def kernel_name(kernel) -> str:
    """The kernel name of an instance or of a fastsoftmax.distributed peer kernel ((dtype, log, pack))."""
    if isinstance(kernel, tuple):
        from ...distributed import _peer

        return _peer.kernel_name(*kernel)
    return kernel.name


def run(args) -> int:
    from ...distributed import _peer
    from . import compiler
    from .instances import all_instances

    reason = compiler.nvrtc_unavailable_reason()
    if reason:
        print(f"fastsoftmax compile: {reason}", file=sys.stderr)
        return 1
    archs = args.arch or [_default_arch()]
    malformed = [arch for arch in archs if not re.fullmatch(r"sm_\d+[af]?", arch)]
    if malformed:
        print(f"fastsoftmax compile: --arch takes names such as sm_80 or sm_90, got {malformed[0]!r}", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print(f"fastsoftmax compile: --jobs must be at least 1, got {args.jobs}", file=sys.stderr)
        return 2
    kernels = [*all_instances(), *_peer.all_kernels()]
    if args.match:
        try:
            pattern = re.compile(args.match)
        except re.error as error:
            print(f"fastsoftmax compile: --match {args.match!r} is not a regular expression: {error}", file=sys.stderr)
            return 2
        kernels = [kernel for kernel in kernels if pattern.search(kernel_name(kernel))]
        if not kernels:
            print(f"fastsoftmax compile: no kernel instance's name matches {args.match!r}", file=sys.stderr)
            return 1
    start = time.perf_counter()
    for arch in archs:  # an architecture NVRTC does not know fails every instance alike: say so once
        failure = _compile_one((arch, kernels[0]))
        if failure is not None:
            print(f"fastsoftmax compile: the first instance failed for {arch}, not compiling the rest:\n{failure}")
            return 1
    jobs = [(arch, kernel) for arch in archs for kernel in kernels[1:]]
    if args.jobs <= 1:
        failures = [f for f in map(_compile_one, jobs) if f]
    else:
        import multiprocessing

        # spawn, not fork: NVRTC and torch may have started threads in this process
        with ProcessPoolExecutor(max_workers=args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            failures = [f for f in pool.map(_compile_one, jobs, chunksize=8) if f]
    for failure in failures:
        print(failure, file=sys.stderr)
    print(
        f"compiled {len(jobs) + len(archs) - len(failures)} of {len(jobs) + len(archs)} kernel instances for "
        f"{', '.join(archs)} "
        f"into {compiler.cache_dir()} in {time.perf_counter() - start:.0f} s"
    )
    return 1 if failures else 0
