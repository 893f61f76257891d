"""``fastsoftmax bench`` (suite ``main``): the shape set of benchmarks/README.md (or the shapes given
with ``--shapes``), fastsoftmax against its peers.

Order: copy bandwidth first (every figure is a fraction of it), then the shapes regime by regime,
then host overhead. The result file (JSON, with a CSV twin) is saved after every shape.
"""

from __future__ import annotations

import sys
import time

from fastsoftmax.benchmark import figures, plot, report
from fastsoftmax.benchmark.peers import chosen_peers, fastsoftmax_impls, load_peers, parse_backends
from fastsoftmax.benchmark.results import ResultFile, load_resumable
from fastsoftmax.benchmark.runner import ContextLost, Runner, describe
from fastsoftmax.benchmark.shapes import (
    GOALS,
    cases_for,
    custom_cases,
    parse_directions,
    parse_dtypes,
    parse_regimes,
    parse_shapes,
)

# --quick trades repeats for time: medians of ~10-100 runs are still stable for these sizes.
FULL_TIMING = {"warmup_ms": 25.0, "rep_ms": 100.0}
QUICK_TIMING = {"warmup_ms": 5.0, "rep_ms": 25.0}


def progress_bar(items, description: str | None = None):
    try:
        from tqdm import tqdm

        # Off a terminal (a captured log) redraw rarely, so the bar does not flood the log.
        interactive = sys.stderr.isatty()
        bar = tqdm(
            items, dynamic_ncols=True, file=sys.stderr, mininterval=0.1 if interactive else 15.0, desc=description
        )
        return bar, tqdm.write
    except ImportError:
        return items, print


def _resumed_rows(path, device_name: str):
    """(rows, file name) of the shapes an earlier run of this device measured, or None. Host
    overhead rows are left out: that regime is measured again in the new run."""
    if not path:
        return None
    from pathlib import Path

    document = load_resumable(path)
    if document.get("device") != device_name:
        raise ValueError(
            f"--resume {path}: that run is from {document.get('device')!r}, this device is {device_name!r}"
        )
    rows = [r for r in document.get("rows", ()) if r.get("regime") != "host" and r.get("case")]
    return rows, Path(path).name


def run(args, *, device: str = "cuda", cases=None, copy_gbps=None, runner_options=None) -> int:
    """Run the suite. The keyword arguments exist for tests, which run it on the CPU with a few
    tiny cases, a given copy bandwidth and fake timers."""
    import torch

    started = time.perf_counter()
    dtypes = parse_dtypes(getattr(args, "dtypes", None))
    regimes = parse_regimes(getattr(args, "regimes", None))
    requested = list(parse_backends(getattr(args, "backends", None) or "auto,triton,cuda"))
    quick = bool(getattr(args, "quick", False))
    # compiling every shape costs minutes: off by default with --quick
    compile_peer, peer_names = chosen_peers(getattr(args, "peers", None), getattr(args, "compile", None), quick)
    optional_peers = not getattr(args, "no_peers", False)
    shape_dims = parse_shapes(getattr(args, "shapes", None))
    directions = parse_directions(getattr(args, "directions", None))
    if shape_dims and getattr(args, "regimes", None) is None:
        regimes = ()  # only the shapes asked for: no host overhead unless --regimes says so

    on_cuda = torch.device(device).type == "cuda"
    device_name = torch.cuda.get_device_name() if on_cuda else str(device)
    try:
        earlier = _resumed_rows(getattr(args, "resume", None), device_name)
    except ValueError as exc:  # a run of another device: refused in a line, before any timing
        print(f"fastsoftmax bench: {exc}", file=sys.stderr)
        return 2
    result = ResultFile.start(
        args.out,
        "main",
        device_name,
        quick,
        GOALS,
        extra={
            "args": {
                "dtypes": list(dtypes),
                "regimes": list(regimes),
                "backends": requested,
                "compile": compile_peer,
                "peers": optional_peers,
                "peer_names": list(peer_names) if peer_names else None,
                "shapes": [[list(shape), dim] for shape, dim in shape_dims],
                "directions": list(directions),
            }
        },
    )
    versions = result.document["versions"]
    print(
        f"fastsoftmax bench: {device_name}; torch {versions.get('torch')}, triton {versions.get('triton')}, "
        f"CUDA {versions.get('torch_cuda')}, driver {versions.get('driver')}"
    )
    print(f"results: {result.path}")

    if copy_gbps is None:
        from fastsoftmax.benchmark.timing import copy_bandwidth_gbps

        copy_gbps = copy_bandwidth_gbps()
    copy = copy_gbps
    result.document["copy_gbps"] = copy
    result.save()
    print(f"copy bandwidth (512 MiB device-to-device, read + write): {copy:.0f} GB/s")

    fs_impls, left_out = fastsoftmax_impls(requested, torch.device(device))
    peers = load_peers(optional=optional_peers, compile_peer=compile_peer, names=peer_names)
    result.document["peers"] = peers.status
    result.document["fastsoftmax_backends"] = {"timed": [i.name for i in fs_impls], "left_out": left_out}
    result.save()
    for name, status in peers.status.items():
        print(f"peer {name}: {status}")
    for backend, why in left_out.items():
        print(f"fastsoftmax backend {backend}: {why}")

    if earlier is not None:
        rows, source = earlier
        result.add_rows(rows)
        result.document["resumed_from"] = source
        result.save()
        print(f"resumed from {source}: {len({r['case'] for r in rows})} shapes kept")
    time_limit = getattr(args, "time_limit", None)

    timing = QUICK_TIMING if quick else FULL_TIMING
    runner = Runner(fs_impls + peers.impls, copy, device=device, **{**timing, **(runner_options or {})})
    if cases is None:
        cases = [c for c in cases_for(quick, dtypes) if c.regime in regimes]
        cases += custom_cases(shape_dims, dtypes, directions)
    if earlier is not None:
        kept = {r["case"] for r in earlier[0]}
        cases = [c for c in cases if c.key not in kept]
    bar, write = progress_bar(cases)
    context_lost = None
    stopped = None
    for case in bar:
        if time_limit is not None and time.perf_counter() - started > time_limit:
            stopped = f"time limit of {time_limit:.0f} s reached before {case.key}"
            break
        if hasattr(bar, "set_description"):
            bar.set_description(case.label[:40], refresh=False)
        try:
            rows = runner.run_case(case)
        except ContextLost as exc:
            context_lost = str(exc)
            break
        except Exception as exc:  # noqa: BLE001 - a bug of the harness itself must not end the run either
            rows = runner.all_rows(case, "error", "benchmark harness: " + describe(exc))
        result.add_rows(rows)
        result.save()
        write(report.format_case(case, rows))
    if hasattr(bar, "close"):
        bar.close()

    if stopped is not None:
        result.document["stopped"] = stopped
        print(f"\nRUN STOPPED: {stopped}; continue it with --resume {result.path}")
    if context_lost is None and stopped is None and "host" in regimes:
        try:
            host_rows = runner.host_overhead()
            result.add_rows(host_rows)
            print(report.format_host(host_rows))
        except ContextLost as exc:
            context_lost = str(exc)
        except Exception as exc:  # noqa: BLE001
            print(f"host overhead not measured: {describe(exc)}")
    if context_lost is not None:
        result.document["aborted"] = f"CUDA context lost: {context_lost}"
        print(
            f"\nRUN STOPPED: the CUDA context is unusable after a fault ({context_lost}); "
            f"the shapes after it were not measured."
        )

    summary = report.summarize(result.document)
    result.document["summary"] = summary
    result.document["complete"] = context_lost is None and stopped is None
    result.document["wall_s"] = round(time.perf_counter() - started, 1)
    result.save()
    print(report.format_summary(summary, copy))

    try:
        png = plot.save_plot(result.document, result.path.with_suffix(".png"))
        if png:
            print(f"plot: {png}")
    except figures.MatplotlibMissing as exc:
        print(exc)
    except Exception as exc:  # noqa: BLE001 - matplotlib broken: the numbers are what matter
        print(f"plot not written: {describe(exc)}")
    print(f"saved {result.path} and its .csv ({len(result.rows)} rows, {result.document['wall_s']:.0f} s)")
    return 0
