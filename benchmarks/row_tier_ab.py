"""Row tiers of the CUDA backend (and tunings of them) against each other and torch.softmax, on
rows of 128 MiB a tensor: each variant captured in a CUDA graph of 20 calls, so that no host time
enters the figure, and the graphs replayed in turn, round after round, in one process. Prints the
fraction of copy bandwidth of each (median of 5 rounds).

    PYTHONPATH=$PWD python benchmarks/row_tier_ab.py bfloat16,float32 [N,N,...] ["tier;tier@field=value"] [--backward]

A variant is a tier, optionally with fields of tiers.Tuning after "@" joined by "+", each value a
Python literal (flat_rows@flat_rows_tight=False: flat_rows' general form). Default: rows of
5-160, flat_rows in its tight and general forms and the warp tier.
"""

import argparse
import ast

import torch

from fastsoftmax.backends.cuda import tiers
from fastsoftmax.backends.cuda.backend import BACKEND
from fastsoftmax.benchmark import layouts

DEFAULT_N = "5,9,13,21,37,50,60,63,72,74,100,127,150,160"
DEFAULT_VARIANTS = "flat_rows;flat_rows@flat_rows_tight=False;warp"
BYTES = 1 << 27  # per tensor


def row_lengths(text: str) -> list[int]:
    return [int(v) for v in text.split(",")]


def parse_args(argv=None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dtypes", metavar="DTYPES", help="torch dtypes joined by ',', e.g. bfloat16,float32")
    parser.add_argument(
        "n",
        nargs="?",
        default=DEFAULT_N,
        type=row_lengths,
        metavar="N",
        help=f"row lengths joined by ',' (default: {DEFAULT_N})",
    )
    parser.add_argument(
        "variants",
        nargs="?",
        default=DEFAULT_VARIANTS,
        metavar="VARIANTS",
        help="TIER or TIER@FIELD=VALUE+FIELD=VALUE (fields of tiers.Tuning, Python literals) joined by ';' "
        f"(default: {DEFAULT_VARIANTS})",
    )
    parser.add_argument("--backward", action="store_true", help="time the backward (default: the forward)")
    # intermixed: --backward may stand anywhere among the positional arguments, as it always could
    # (which is also why the help spells the defaults out: %(default)s fails under it)
    return parser.parse_intermixed_args(argv)


def variant_fn(spec, x3, y3, backward, dy3=None):
    tier, _, tuned = spec.partition("@")
    fields = {k: ast.literal_eval(v) for k, _, v in (i.partition("=") for i in tuned.split("+") if i)}

    def run():
        with tiers.tuned(**fields):
            if backward:
                BACKEND.backward(x3, dy3, y3, False, tier)
            else:
                BACKEND.forward(x3, y3, False, tier)

    return run


def graph_of(fn, calls=20):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()
    torch.cuda.current_stream().wait_stream(s)
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(calls):
            fn()
    return g


def time_graph(g, calls=20, reps=3):
    g.replay()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        g.replay()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b) / calls)
    return sorted(ts)[len(ts) // 2]


def main(args: argparse.Namespace) -> None:
    dtypes = [getattr(torch, d) for d in args.dtypes.split(",")]
    backward = args.backward
    for dtype in dtypes:
        copy = layouts.copy_gbps(dtype)
        print(f"copy {dtype}: {copy:.0f} GB/s", flush=True)
        for n in args.n:
            rows = BYTES // (n * dtype.itemsize)
            x = (torch.randn(rows, n, device="cuda") * 3).to(dtype)
            y = torch.empty_like(x)
            dy = torch.randn_like(x) if backward else None
            if backward:
                x = torch.softmax(x.float(), -1).to(dtype)
            floor = (3 if backward else 2) * x.numel() * x.element_size()
            graphs = {}
            for v in args.variants.split(";"):
                tier = v.partition("@")[0]
                if not BACKEND.supports(tier, rows, n, 1, dtype, backward):
                    continue
                fn = variant_fn(
                    v, x.view(rows, n, 1), y.view(rows, n, 1), backward, dy.view(rows, n, 1) if backward else None
                )
                try:
                    graphs[v] = graph_of(fn)
                except Exception as e:
                    print("  ", v, "failed:", str(e)[:200])
            graphs["torch"] = graph_of(lambda: torch.softmax(x, -1)) if not backward else None
            graphs = {k: g for k, g in graphs.items() if g is not None}
            times = {k: [] for k in graphs}
            for _ in range(5):
                for k, g in graphs.items():
                    times[k].append(time_graph(g))
            cells = "  ".join(f"{k}={floor / sorted(t)[2] / 1e6 / copy:.3f}" for k, t in times.items())
            print(f"{str(dtype)[6:]:9} {'bwd' if backward else 'fwd'} n={n:5d} rows={rows:9d}  {cells}", flush=True)


if __name__ == "__main__":
    ARGS = parse_args()  # --help before the GPU check: it needs none
    from gpu_required import require_gpu  # this folder is the script's

    require_gpu()
    main(ARGS)
