"""Device probe: the Triton tile tier's scalar tiles (strided rows at several 16-byte phases,
e.g. NCHW over C with an odd H x W) at other shapes than the shipped SCALAR_TILE_ELEMS and
SCALAR_TILE_PER_THREAD, and the strided tiles in one piece against two (TWO_PIECE_TILES), through
the public API, variants alternated over three rounds in one process.

    PYTHONPATH=$PWD python benchmarks/scalar_tile_probe.py ["(16,21,513,513) d1;..." [bfloat16,float32
        [VARIANT;.. [triton]]]]

``triton`` (a fourth argument) times the Triton backend forced, where "auto" gives the shape to the
CUDA backend (e.g. the 16-byte tiles of (16, 21, 512, 512) over dim 1).
"""

from __future__ import annotations

import argparse

import torch
from kernel_breakdown import tuned

import fastsoftmax.backends.triton as triton_backend
from fastsoftmax.backends.triton import settings as triton_settings
from fastsoftmax.benchmark.layouts import copy_gbps, input_sets, layout_cases, public_call, time_ms

SHIPPED = (
    triton_backend.SCALAR_TILE_ELEMS,
    dict(triton_backend.SCALAR_TILE_PER_THREAD),
    triton_backend.SCALAR_TILE_OFFSETS_64_MAX_N,
    triton_backend.TWO_PIECE_TILES,
)
#: name -> (elements a 16-bit tile, elements a thread by item size, the longest axis (padded) whose
#: 16-bit backward takes 64-bit offsets, which strided tiles take two pieces)
VARIANTS = {
    "base": SHIPPED,
    "one-piece": (*SHIPPED[:3], "none"),
    "all-two-pieces": (*SHIPPED[:3], "all"),  # every strided tile, threads sharing columns too
    "16/thr": (4096, {2: 16, 4: 16}, *SHIPPED[2:]),
    "8192": (8192, {2: 32, 4: 16}, *SHIPPED[2:]),
    "8192,16/thr": (8192, {2: 16, 4: 8}, *SHIPPED[2:]),
    # half the columns at 16 a thread: 4 warps of Inductor's registers a thread (its persistent
    # reduction of (16, 21, 513, 513) over dim 1: 128 x 32 elements over 8 warps, 32-bit offsets)
    "2048,16/thr": (2048, {2: 16, 4: 16}, *SHIPPED[2:]),
    "32-bit": (*SHIPPED[:2], 0, SHIPPED[3]),
    "64-bit": (*SHIPPED[:2], 64, SHIPPED[3]),
    "32-bit,one-piece": (*SHIPPED[:2], 0, "none"),
    "16/thr,32-bit": (4096, {2: 16, 4: 16}, 0, SHIPPED[3]),
    "16/thr,32-bit,one-piece": (4096, {2: 16, 4: 16}, 0, "none"),
}


#: the dtypes timed (the probe's second argument: comma-separated)
DTYPES = ("bfloat16", "float32")


def settings(variant) -> dict:
    """The Triton backend's module settings of a variant (triton.settings)."""
    elems, per_thread, offsets_64, pieces = variant
    return dict(
        SCALAR_TILE_ELEMS=elems,
        SCALAR_TILE_PER_THREAD=dict(per_thread),
        SCALAR_TILE_OFFSETS_64_MAX_N=offsets_64,
        TWO_PIECE_TILES=pieces,
    )


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "cases",
        nargs="?",
        default="(16,21,513,513) d1",
        metavar="CASES",
        help="labels of layout cases of fastsoftmax/benchmark/layouts.py joined by ';' (default: %(default)s)",
    )
    parser.add_argument(
        "dtypes",
        nargs="?",
        default=",".join(DTYPES),
        metavar="DTYPES",
        help="torch dtypes joined by ',' (default: %(default)s)",
    )
    parser.add_argument(
        "variants",
        nargs="?",
        default=None,
        metavar="VARIANTS",
        help=f"variants to alternate joined by ';', among {'; '.join(VARIANTS)} (default: all)",
    )
    parser.add_argument(
        "backend",
        nargs="?",
        default=None,
        metavar="BACKEND",
        help='"triton": time the Triton backend forced where "auto" gives the case to the CUDA backend',
    )
    return parser.parse_args(argv)


def main(args: argparse.Namespace) -> int:
    labels = args.cases.split(";")
    dtypes = args.dtypes.split(",")
    chosen = args.variants.split(";") if args.variants else list(VARIANTS)
    forced = args.backend == "triton"
    cases = {c.label: c for c in layout_cases()}
    for kind, names, known in (("case", labels, cases), ("variant", chosen, VARIANTS)):
        unknown = [name for name in names if name not in known]
        if unknown:  # before any GPU time: a typo is named with what is known
            raise SystemExit(f"scalar_tile_probe.py: unknown {kind} {unknown[0]!r}; known: {'; '.join(known)}")
    variants = {name: VARIANTS[name] for name in chosen}
    for case in (cases[label] for label in labels):
        for dtype_name in dtypes:
            dtype = getattr(torch, dtype_name)
            copy = copy_gbps(dtype)
            for backward in (False, True):
                sets = input_sets(case, dtype, backward)
                fn = public_call(case.dim, backward)
                if forced:
                    fn = tuned(fn, {"backend": "triton"})
                floor = case.bytes_moved(sets[0][0].element_size(), backward)
                results = {name: [] for name in variants}
                for _ in range(3):
                    for name, variant in variants.items():
                        with triton_settings(settings(variant)):
                            fn(*sets[0])
                            results[name].append(floor / time_ms(fn, sets) / 1e6 / copy)
                cells = " | ".join(f"{k} {max(v):.3f} ({min(v):.3f})" for k, v in results.items())
                print(f"{case.label} {dtype_name} {'bwd' if backward else 'fwd'} {cells}", flush=True)
    return 0


if __name__ == "__main__":
    ARGS = parse_args()  # --help before the GPU check: it needs none
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    raise SystemExit(main(ARGS))
