"""GPU probe of the cluster tier's launch shape: cluster sizes (and thread counts) forced through
the backend's tuning, alternated call by call on the same tensors in one process with Quack when
it is importable (A/B): GPU time with L2 flushed before every call as the benchmark times it, and
a spin kernel ahead of each call so that the host's time to enqueue it is not counted.
Every variant is checked against float64 on a poisoned output first.

    PYTHONPATH=$PWD python3 benchmarks/cluster_size_probe.py [--shapes 1x128256,32x151936]
        [--dtypes bf16,f32] [--variants auto,c4,c8,c16,c8t256] [--backward] [--out DIR]
        [--baseline DIR --variants auto,base]

Decides instances.cluster_shape's choice of C for few rows (decode: 1..128 rows of vocabulary
length), where the number of waves of clusters and the exchange between CTAs set the time.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import re
import statistics
import sys
import time

import torch
from grid_row_probe import DTYPES, SPIN_CYCLES, TAG, checked, make_sets, say

from fastsoftmax.benchmark.timing import copy_bandwidth_gbps, l2_flush_bytes

SHAPES = ((1, 128256), (8, 128256), (32, 151936), (128, 128256), (1046, 128256), (512, 262144))
VARIANTS = ("auto", "c4", "c8", "c16")
LOG_FILE_NAME = "cluster_size_probe.txt"


def parse_variant(name: str) -> dict:
    """'auto' -> {}; 'c8' -> cluster_ctas=8; 'c8t256' -> and 256 threads; a trailing 'k0' or 'k1'
    (alone: the automatic shape) forces the kept exponentials off or on; a trailing 'r48' compiles
    the instance under a cap of 48 registers a thread (in a backend of its own, so that both forms
    of one instance live in the process)."""
    if name in ("auto", "quack"):
        return {}
    match = re.fullmatch(r"(?:c(\d+)(?:t(\d+))?)?(?:k([01]))?(?:r(\d+))?", name)
    if not match or not any(match.groups()):
        raise ValueError(f"variant {name!r} is not auto, quack, cC[tT][kK][rR]")
    ctas, threads, kept, registers = match.groups()
    values = {"registers": int(registers)} if registers else {}
    if ctas:
        values["cluster_ctas"] = int(ctas)
    if threads:
        values["cluster_threads"] = int(threads)
    if kept:
        values["cluster_kept"] = kept == "1"
    return values


#: the backend compiled from --baseline's kernel folder, for variants named base[...]
BASELINE: list = []


def runner(backend, name, quack):
    from fastsoftmax.backends.cuda import tiers

    if name == "quack":
        return lambda t, backward: quack.softmax_bwd(t[1], t[0]) if backward else quack.softmax_fwd(t[0])
    if name.startswith("base"):
        backend, name = BASELINE[0], name[4:] or "auto"
    values = parse_variant(name)
    registers = values.pop("registers", None)
    if registers:
        backend = _capped_backends.setdefault(registers, type(backend)())

    def call(tensors, backward):
        views = [t.unsqueeze(2) for t in tensors]
        with tiers.tuned(**values), _register_cap(registers):
            if backward:
                backend.backward(*views, False, "cluster")
            else:
                backend.forward(*views, False, "cluster")

    return call


_capped_backends: dict = {}


@contextlib.contextmanager
def _register_cap(registers):
    """Every cluster instance compiled inside takes this register cap (None: the measured ones)."""
    from fastsoftmax.backends.cuda import instances

    if not registers:
        yield
        return

    class Cap(dict):
        def get(self, key, default=None):
            return registers

    saved = instances.CLUSTER_MAX_REGISTERS
    instances.CLUSTER_MAX_REGISTERS = Cap()
    try:
        yield
    finally:
        instances.CLUSTER_MAX_REGISTERS = saved


def quack_checked(quack, tensors, backward, dtype) -> str:
    from grid_row_probe import error, tolerance

    out = quack.softmax_bwd(tensors[1], tensors[0]) if backward else quack.softmax_fwd(tensors[0])
    torch.cuda.synchronize()
    if backward:
        y64, dy64 = tensors[0].double(), tensors[1].double()
        reference = y64 * (dy64 - (dy64 * y64).sum(-1, keepdim=True))
    else:
        reference = torch.softmax(tensors[0].double(), -1)
    err = error(out, reference)
    return "" if err <= tolerance(dtype) else f"error {err:.3g}"


def probe(backend, quack, copy, rows, n, dtype, backward, variants, iters, flush):
    sets = make_sets((rows, n), dtype, backward)[:2]
    nbytes = rows * n * dtype.itemsize * (3 if backward else 2)
    calls, problems = {}, {}
    for name in variants:
        if name == "quack":
            if quack is None or n % (16 // dtype.itemsize):
                continue
            problems[name] = quack_checked(quack, sets[0], backward, dtype)
        else:
            try:
                call = runner(backend, name, None)
                problems[name] = checked(backend, "cluster", sets[0], False, backward, dtype, call)
            except Exception as exc:  # noqa: BLE001 - a shape the variant cannot launch
                say(f"    {name}: {type(exc).__name__}: {str(exc)[:160]}")
                continue
        calls[name] = runner(backend, name, quack)
    times = {name: [] for name in calls}
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    order = list(calls)
    for i in range(iters):
        for name in order if i % 2 == 0 else reversed(order):
            tensors = sets[i % len(sets)]
            flush.zero_()
            torch.cuda._sleep(SPIN_CYCLES)  # the host enqueues the call while the GPU spins
            start.record()
            calls[name](tensors, backward)
            end.record()
            end.synchronize()
            times[name].append(start.elapsed_time(end) * 1000)
    cells = []
    for name in order:
        us = statistics.median(times[name])
        frac = nbytes / (us * 1e-6) / 1e9 / copy
        bad = f" WRONG {problems[name]}" if problems[name] else ""
        cells.append(f"{name} {us:.1f}us {frac:.2f}{bad}")
    line = f"{TAG[dtype]:<4} {'bwd' if backward else 'fwd'} {rows}x{n:<7} " + " | ".join(cells)
    say(line)
    del sets
    return line, all(not p for p in problems.values())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--shapes", help="ROWSxCOLS comma list")
    parser.add_argument("--dtypes", help="comma list of bf16, f16, f32")
    parser.add_argument("--variants", default=",".join(VARIANTS) + ",quack")
    parser.add_argument("--backward", action="store_true", help="the backward too")
    parser.add_argument("--iters", type=int, default=60)
    parser.add_argument(
        "--baseline",
        help="a copy of kernels/ from another revision: variants named base (or base + a variant, e.g. basec8) "
        "run kernels compiled from it",
    )
    parser.add_argument("--out", default=os.environ.get("OUT", "."))
    args = parser.parse_args()
    shapes = SHAPES
    if args.shapes:
        shapes = tuple(tuple(int(v) for v in item.split("x")) for item in args.shapes.split(","))
    by_tag = {tag: dtype for dtype, tag in TAG.items()}
    dtypes = tuple(by_tag[t] for t in args.dtypes.split(",")) if args.dtypes else DTYPES
    if not torch.cuda.is_available():
        print("cluster size probe: no CUDA device")
        return 0
    from fastsoftmax.backends.cuda import BACKEND
    from fastsoftmax.benchmark.peers import add_peer_site

    quack = None
    if "quack" in args.variants.split(","):
        add_peer_site()
        try:
            quack = importlib.import_module("quack.softmax")
        except Exception as exc:  # noqa: BLE001 - the peer is optional
            print(f"quack not importable: {type(exc).__name__}: {exc}"[:300])
    os.makedirs(args.out, exist_ok=True)
    import grid_row_probe

    if args.baseline:
        BASELINE.append(grid_row_probe.baseline_backend(args.baseline))

    grid_row_probe.LOG_FILE.append(open(os.path.join(args.out, LOG_FILE_NAME), "w"))  # noqa: SIM115
    begin = time.time()
    copy = copy_bandwidth_gbps()
    say(f"{torch.cuda.get_device_name()}; copy {copy:.0f} GB/s; quack {'yes' if quack else 'no'}")
    flush = torch.empty(l2_flush_bytes(), dtype=torch.int8, device="cuda")
    variants = args.variants.split(",")
    table, ok = [], True
    for backward in (False, True) if args.backward else (False,):
        for dtype in dtypes:
            for rows, n in shapes:
                line, good = probe(BACKEND, quack, copy, rows, n, dtype, backward, variants, args.iters, flush)
                table.append(line)
                ok &= good
    print(f"\n==== summary ({time.time() - begin:.0f} s; {'all correct' if ok else 'WRONG results above'}) ====")
    print("\n".join(table))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
