"""Triton's tile kernels with 32-bit element offsets against the same kernels with 64-bit ones, on rows
and strided problems, alternated in one process behind an L2 flush; the CUDA backend's call beside them
for scale, and on request the realigned row kernels and torch.softmax.

    PYTHONPATH=$PWD python benchmarks/triton_offsets_probe.py [--shapes 1032444x65,256x512x64@1]
        [--dtypes bfloat16,float32] [--directions forward,backward] [--rounds 3]
        [--variants triton32,triton64,triton,realigned,realigned64,unrealigned,cuda,torch] [--realigned-elems 32,64]
        [--two-pieces 0.25,0.5]

Each (shape, dtype, direction) prints microseconds a call (the best of ``--rounds`` rounds, in each of
which every variant is timed once with ``timing.median_ms``): "triton32" (the backend's plans with
32-bit offsets wherever every offset fits: row_offsets_64's ranges emptied, the scalar tiles'
``offsets_64`` kept), "triton64" (``_wide_offsets`` answering yes: 64-bit offsets everywhere), "triton"
(the backend as its rules stand), "realigned" (as they stand, but rows of every length through the
realigned kernels where rows_realign lets them: REALIGNED_ROW_COLS widened), "realigned64" (the same
with 64-bit offsets), "realigned@E" for each E of ``--realigned-elems`` (the same with the held kernels'
REALIGNED_HELD_ELEMS_PER_THREAD at E on every block), "two@T" for each T of ``--two-pieces`` (the same with
the held kernels' bodies as two pieces where the second is at most T of the first:
REALIGNED_TWO_PIECES at (T, any length)), "unrealigned" (as they stand, but no row through the
realigned kernels), "cuda" and "torch" (torch's own kernels, through ``backend="torch"``); triton32, triton64 and
cuda unless ``--variants``.
Every variant's result is checked against float64 first."""

from __future__ import annotations

import argparse
import contextlib

import torch

import fastsoftmax
from fastsoftmax import dispatch
from fastsoftmax.backends.triton import REALIGNED_TWO_PIECES, held_everywhere, realigned_everywhere
from fastsoftmax.backends.triton import settings as triton_settings
from fastsoftmax.benchmark.timing import median_ms

DEFAULT_SHAPES = "1032444x65,1864135x36,1342177x100,67176x999,1048576x64,256x512x64@1,16x21x512x512@1"


def parse_shape(item: str) -> tuple[tuple[int, ...], int]:
    text, _, dim = item.partition("@")
    return tuple(int(v) for v in text.split("x")), int(dim) if dim else -1


@contextlib.contextmanager
def triton_offsets(settings: dict):
    # a forced call works the offset width out at every launch, from the module's plans and _wide_offsets
    with dispatch.forced("triton"), triton_settings(settings):
        yield


# name: (the context the calls run in, the backend they name)
VARIANTS = {
    "triton32": (
        lambda: triton_offsets({"ROW_BACKWARD_OFFSETS_64_COLS": (0, -1), "ROW_FORWARD_16BIT_OFFSETS_64_COLS": (0, -1)}),
        "auto",
    ),
    "triton64": (lambda: triton_offsets({"_wide_offsets": lambda *args: True}), "auto"),
    "triton": (lambda: dispatch.forced("triton"), "auto"),
    "realigned": (lambda: triton_offsets({"REALIGNED_ROW_COLS": realigned_everywhere()}), "auto"),
    "realigned64": (
        lambda: triton_offsets({"REALIGNED_ROW_COLS": realigned_everywhere(), "_wide_offsets": lambda *args: True}),
        "auto",
    ),
    "unrealigned": (lambda: triton_offsets({"REALIGNED_ROW_COLS": realigned_everywhere(())}), "auto"),
    "cuda": (lambda: dispatch.forced("cuda"), "auto"),
    "torch": (contextlib.nullcontext, "torch"),
}


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shapes", default=DEFAULT_SHAPES)
    parser.add_argument("--dtypes", default="bfloat16,float32")
    parser.add_argument("--directions", default="forward,backward")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument(
        "--variants",
        default="triton32,triton64,cuda",
        help=f"comma list of {', '.join(VARIANTS)} (realigned@E: --realigned-elems)",
    )
    parser.add_argument(
        "--realigned-elems",
        default="",
        help="comma list of elements a thread: a variant realigned@E for each, as realigned with the held "
        "kernels' REALIGNED_HELD_ELEMS_PER_THREAD at E on every block",
    )
    parser.add_argument(
        "--two-pieces",
        default="",
        help="comma list of shares: a variant two@T for each, as realigned with the held kernels' bodies just "
        "past a power of two as two pieces where the second is at most T of the first",
    )
    args = parser.parse_args(argv)
    known = dict(VARIANTS)
    for share in filter(None, args.two_pieces.split(",")):
        settings = {
            "REALIGNED_ROW_COLS": realigned_everywhere(),
            "REALIGNED_TWO_PIECES": dict.fromkeys(REALIGNED_TWO_PIECES, (float(share), None)),
        }
        known[f"two@{share}"] = (lambda settings=settings: triton_offsets(settings), "auto")
        args.variants += f",two@{share}"
    for elements in filter(None, args.realigned_elems.split(",")):
        settings = {
            "REALIGNED_ROW_COLS": realigned_everywhere(),
            "REALIGNED_HELD_ELEMS_PER_THREAD": held_everywhere(int(elements)),
        }
        known[f"realigned@{elements}"] = (lambda settings=settings: triton_offsets(settings), "auto")
        args.variants += f",realigned@{elements}"
    unknown = set(args.variants.split(",")) - set(known)
    if unknown:
        parser.error(f"unknown variants {sorted(unknown)}; choose among {', '.join(known)}")
    variants = {name: known[name] for name in args.variants.split(",")}
    for item in args.shapes.split(","):
        shape, dim = parse_shape(item)
        for dtype in (getattr(torch, name) for name in args.dtypes.split(",")):
            for backward in (d == "backward" for d in args.directions.split(",")):
                x = torch.randn(shape, device="cuda", dtype=dtype)
                y = torch.softmax(x, dim)
                dy = torch.randn_like(x)
                if backward:  # the gradient of the y the kernels are given
                    yd, dyd = y.double(), dy.double()
                    reference = yd * (dyd - (dyd * yd).sum(dim, keepdim=True))
                else:
                    reference = torch.softmax(x.double(), dim)

                def call(backend):
                    if backward:
                        return fastsoftmax.softmax_backward(dy, y, dim, backend=backend)
                    return fastsoftmax.softmax(x, dim, backend=backend)

                best, refused = {}, []
                for name, (context, backend) in variants.items():
                    with context():
                        try:
                            out = call(backend)
                        except ValueError:  # a forced tier that cannot hold the problem
                            refused.append(name)
                            continue
                        # relative to the largest value: a 16-bit result rounds at 2^-8 of itself
                        err = ((out.double() - reference).abs().max() / reference.abs().max()).item()
                        if err > (1e-2 if dtype != torch.float32 else 1e-5):
                            raise SystemExit(f"{name} {item} {dtype}: max error {err:.2e} of the largest value")
                for _ in range(args.rounds):
                    for name, (context, backend) in variants.items():
                        if name in refused:
                            continue
                        with context():
                            us = 1e3 * median_ms(lambda: call(backend))
                        best[name] = min(best.get(name, us), us)
                label = f"{str(dtype).removeprefix('torch.')} {item} {'backward' if backward else 'forward'}"
                timed = " ".join(f"{name} {us:.1f}" for name, us in best.items())
                print(label, timed, " ".join(f"{name} refused" for name in refused), flush=True)


if __name__ == "__main__":
    main()
