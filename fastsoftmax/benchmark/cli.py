"""``fastsoftmax bench [main|ladder|table|seeds|sweep]``: argument parsing and dispatch.

The suites load only when one runs: the top-level command line imports this module to build its
parser even for other subcommands (torch itself is loaded by the package already).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys

SUITES = ("main", "ladder", "table", "seeds", "sweep")
DEFAULT_OUT = os.path.join("benchmarks", "results")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "suite",
        nargs="?",
        default="main",
        choices=SUITES,
        help="main: the shape set of benchmarks/README.md against the peers (default); "
        "ladder: the kernel ladder; table: the dispatcher's cost table; "
        "seeds: every seed's figure (see --figures); sweep: seed 002's column sweep alone",
    )
    parser.add_argument(
        "--quick", action="store_true", help="a subset of every regime that finishes in under a minute on an H100"
    )
    parser.add_argument(
        "--out", default=DEFAULT_OUT, help=f"directory for the JSON result and the plot (default {DEFAULT_OUT})"
    )
    parser.add_argument("--dtypes", default="bf16,fp16,fp32", help="comma list of bf16, fp16, fp32")
    parser.add_argument(
        "--regimes",
        default=None,
        help="main suite only: comma list of bulk, huge, decode, non_last_dim, backward, "
        "host (default: all), to split a long run over several invocations",
    )
    parser.add_argument(
        "--backends",
        default="auto,triton,cuda",
        help="fastsoftmax backends to time: auto and explicit ones among "
        "triton, cuda, torch (explicit ones that cannot run here are left out)",
    )
    parser.add_argument(
        "--no-peers",
        action="store_true",
        help="skip the optional peers (torch.compile, Quack, Liger); torch.softmax, "
        "the baseline of every speed-up, always runs",
    )
    parser.add_argument(
        "--compile",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="time torch.compile'd softmax (default: on, off with --quick; beside --peers, it joins the peers named)",
    )
    parser.add_argument(
        "--table-out",
        default=None,
        help="where the table suite writes its JSON (default fastsoftmax/dispatch_table.json; 'device': "
        "the GPU model's own table beside it, e.g. fastsoftmax/dispatch_table_nvidia-h200.json, which "
        '"auto" reads on that model)',
    )
    parser.add_argument(
        "--time-limit",
        type=float,
        default=None,
        metavar="SECONDS",
        help="main suite: start no new shape after this many seconds and save the run as "
        "incomplete (continue it with --resume); table suite with --retime-main: start no new point after it",
    )
    parser.add_argument(
        "--resume",
        default=None,
        metavar="RESULT_JSON",
        help="main suite only: keep the shapes an earlier, incomplete run of this device measured "
        "(copied into the new result) and measure only the others",
    )
    parser.add_argument(
        "--merge-main",
        default=None,
        metavar="RESULT_JSON",
        help="table suite only: add the shapes of main-suite results (a comma list: one run "
        "split over several --regimes calls) to the table (no GPU needed) instead of measuring the grid",
    )
    parser.add_argument(
        "--retime-main",
        action="store_true",
        help="table suite only: time the table's main-suite points again on this GPU (nearest ties "
        "first, every kernel backend the table names that runs here; --backends and --dtypes do not "
        "apply), keeping their host times, instead of measuring the grid",
    )
    parser.add_argument(
        "--retime-since",
        default=None,
        metavar="DATE",
        help="with --retime-main: leave out the points retimed at this ISO date or later ('last': from "
        "where the table's last retiming began), to continue a run --time-limit cut",
    )
    parser.add_argument(
        "--retime-lengths",
        default=None,
        metavar="LIST",
        help="with --retime-main: time again only the main points whose reduced axis has one of these lengths "
        "(a comma list; --retime-since last after such a run continues it: give the same lengths)",
    )
    parser.add_argument(
        "--row-lengths",
        default=None,
        metavar="LIST",
        help="table suite only: measure the row layout's bulk points of these lengths (a comma list, or "
        "'edges': those one past each power of two where a backend's row kernels double their lanes) into "
        "the table, keeping its other points, instead of measuring the grid",
    )
    parser.add_argument(
        "--demo", action="store_true", help="run the CPU correctness demo under the Triton interpreter, GPU or not"
    )
    parser.add_argument(
        "--shapes",
        default=None,
        metavar="LIST",
        help="main suite: time these shapes instead of the shape set, e.g. 4096x50257,8192x16384@0 "
        "(sizes joined by x, @dim for a dim other than the last), in every --dtypes",
    )
    parser.add_argument(
        "--directions", default=None, metavar="LIST", help="with --shapes: forward, backward or both (default forward)"
    )
    parser.add_argument(
        "--peers",
        default=None,
        metavar="LIST",
        help="main suite: optional peers to time among torch.compile (or compile), cudnn, "
        "triton-tutorial (or tutorial), quack, liger, torch-unfused; all or none "
        "(default: all that load; torch.softmax always runs)",
    )
    parser.add_argument(
        "--seeds", action="store_true", help="the same as the seeds suite: every seed's figure, then the report page"
    )
    parser.add_argument(
        "--sweep", action="store_true", help="the same as the sweep suite: seed 002's dense column sweep"
    )
    parser.add_argument(
        "--figures",
        default=None,
        metavar="LIST",
        help="seeds suite: which figures, among ladder (000), hardware (001), sweep (002), "
        "vector (003), attention (004) (default: all)",
    )


def run(args) -> int:
    from fastsoftmax.benchmark.peers import parse_backends, parse_peers
    from fastsoftmax.benchmark.results import load_resumable
    from fastsoftmax.benchmark.seeds import parse_figures
    from fastsoftmax.benchmark.shapes import parse_directions, parse_dtypes, parse_regimes, parse_shapes
    from fastsoftmax.benchmark.table import parse_row_lengths

    if getattr(args, "seeds", False):
        args.suite = "seeds"
    elif getattr(args, "sweep", False):
        args.suite = "sweep"
    if args.suite == "sweep":
        args.suite, args.figures = "seeds", "sweep"
    try:  # refuse a typo before any GPU time is spent
        parse_dtypes(args.dtypes)
        parse_regimes(args.regimes)
        parse_shapes(getattr(args, "shapes", None))
        parse_directions(getattr(args, "directions", None))
        parse_peers(getattr(args, "peers", None))
        parse_figures(getattr(args, "figures", None))
        parse_backends(getattr(args, "backends", None))
        parse_row_lengths(getattr(args, "row_lengths", None))
        parse_row_lengths(getattr(args, "retime_lengths", None), "--retime-lengths", edges=False)
        if getattr(args, "resume", None):
            load_resumable(args.resume)
    except ValueError as exc:
        print(f"fastsoftmax bench: {exc}", file=sys.stderr)
        return 2
    if getattr(args, "no_peers", False):
        args.compile = False if args.compile is None else args.compile
    if getattr(args, "demo", False):
        return _demo()
    if getattr(args, "retime_main", False) and (args.suite != "table" or getattr(args, "merge_main", None)):
        print("fastsoftmax bench: --retime-main goes with the table suite alone, not --merge-main", file=sys.stderr)
        return 2
    if getattr(args, "row_lengths", None) and (args.suite != "table" or args.merge_main or args.retime_main):
        print(
            "fastsoftmax bench: --row-lengths goes with the table suite alone, not --retime-main or --merge-main",
            file=sys.stderr,
        )
        return 2
    for option in ("retime_since", "retime_lengths"):
        if getattr(args, option, None) and not getattr(args, "retime_main", False):
            print(f"fastsoftmax bench: --{option.replace('_', '-')} goes with --retime-main", file=sys.stderr)
            return 2
    if args.suite == "table" and getattr(args, "merge_main", None):
        from pathlib import Path

        from fastsoftmax.benchmark import table

        runs = [Path(path) for path in args.merge_main.split(",")]
        try:
            out = table.table_out_path(args.table_out, runs)
        except (OSError, ValueError) as exc:
            print(f"fastsoftmax bench: {exc}", file=sys.stderr)
            return 2
        return table.merge_main(out, *runs)
    import torch

    if args.suite == "seeds":
        from fastsoftmax.benchmark import seeds

        if not torch.cuda.is_available():
            print("No CUDA device is present: the seeds' GPU figures are skipped; the hardware model runs on the CPU.")
        return seeds.run(args)
    if not torch.cuda.is_available():
        print(_no_gpu_message())
        return _demo()
    if args.suite == "ladder":
        try:
            from fastsoftmax.benchmark import ladder
        except ImportError as exc:
            print(f"the ladder suite is not available in this build: {exc}")
            return 1
        outcome = ladder.run(args)  # returns its result document, or an exit status
        return outcome if isinstance(outcome, int) else 0
    if args.suite == "table":
        from fastsoftmax.benchmark import table

        return table.retime_main(args) if getattr(args, "retime_main", False) else table.run(args)
    from fastsoftmax.benchmark import main_suite

    return main_suite.run(args)


def _no_gpu_message() -> str:
    from fastsoftmax.benchmark.demo import NO_GPU_MESSAGE

    return NO_GPU_MESSAGE


def _demo() -> int:
    from fastsoftmax.benchmark import demo

    if not demo.ensure_interpreter():
        # triton was imported before the interpreter could be chosen: start afresh with it chosen
        command, env = demo.reexec_command()
        sys.stdout.flush()
        return subprocess.run(command, env=env, check=False).returncode
    print("Triton interpreter demo (TRITON_INTERPRET=1): max |error| against float64.")
    return demo.run_demo()
