"""``fastsoftmax bench table``: the measured cost table ``backend="auto"`` dispatches by.

For forward and backward, row and strided layout, each dtype, and a grid of reduced lengths n, it
times every available kernel backend (explicit ``backend="triton"`` / ``"cuda"``) at two sizes:

* bulk: ``numel = 2^26``; row layout ``(2^26 // n, n)`` over the last dim, strided layout
  ``(2^26 // (n * 256), n, 256)`` over dim 1;
* small: 4 rows; row layout ``(4, n)``, strided layout ``(1, n, 4)`` over dim 1.

Beside the powers of two, the row layout's bulk size takes the lengths one past each of them where a
backend's row kernels double the lanes they hold a row in (edge_lengths), so that a row just past a
power of two finds a measured point on its own side (dispatch.row_octaves). ``--row-lengths
LIST|edges`` measures the row layout's bulk points of those lengths alone into an existing table of
this GPU, keeping its other points (its record: ``measured_rows``, an earlier one's under ``earlier``).

What ``us`` holds (the cost of one call, microseconds):

* bulk points: the GPU time alone. A call that long is issued while the previous kernel still
  runs, so its host cost is hidden behind the GPU.
* small points: GPU time plus host overhead (wall time per call of back-to-back calls). There the
  GPU finishes before the host has issued the next call, so a caller pays both, and a backend with
  a faster kernel but a slower launch path can lose.

``--merge-main RESULT.json[,MORE.json]`` adds, without a GPU, the shapes of main-suite runs as further points
(``size`` "main"): every shape where the run timed both kernel backends. The grid above is powers
of two at two sizes (and the rows one past them), and a shape far from it (one row of 2^24, an odd
length) would otherwise take the nearest grid point's winner. For those points ``us = max(gpu_us,
host_us)``, with the host time per call that run measured for each backend: back-to-back calls go at
the pace of the slower of the two.

Measuring the grid into a table of the same GPU model replaces its grid points, each as its new
measurement lands, and keeps the others (main points, rows measured alone).
``--retime-main`` times those points again on this GPU with the grid's timer, nearest ties first (the
points whose choice a newer kernel may have turned), replacing their GPU times and stamping them
``retimed``; each keeps the host times its run measured, and a backend not available here its time.
With ``--time-limit`` it starts no point after that many seconds, and the points not reached keep
their earlier times. ``--retime-since DATE`` (an ISO date, or ``last``: where the table's last
retiming began its own) leaves out the points retimed at that moment or later, so that a run the limit
cut is continued (its record keeps ``since`` and the earlier record under ``earlier``).
``--retime-lengths LIST`` times only the main points whose reduced axis has one of those lengths (its
record names them; ``--retime-since last`` after it continues that run, so give it the same lengths).

``gpu_us`` and ``host_us`` are stored beside ``us`` so another rule can be applied later. A backend
whose output fails the float64 check, or that raises, is left out of ``us`` for that point and its
reason is stored under ``errors``.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path

from fastsoftmax.benchmark import checks
from fastsoftmax.benchmark.peers import parse_backends
from fastsoftmax.benchmark.results import _clean, collect_versions, now_iso, read_json
from fastsoftmax.benchmark.runner import ContextLost, bound_call, describe, make_inputs, make_reference
from fastsoftmax.benchmark.shapes import ALL_DTYPES, Case, parse_dtypes

BULK_NUMEL = 1 << 26
SMALL_ROWS = 4
STRIDED_INNER_BULK = 256
N_GRID = tuple(1 << k for k in range(6, 19))  # 64 .. 262144
#: the octaves whose edges the grid measures in the row layout (edge_lengths): rows of 65 .. 32777
EDGE_OCTAVES = range(6, 16)
QUICK_N_GRID = (64, 1024, 16384, 262144)
KERNEL_BACKENDS = ("triton", "cuda")
# Short timings: the table needs the order of backends, not three significant digits.
WARMUP_MS = 5.0
REP_MS = 20.0
HOST_CALLS = 500
#: a small point's host time is the median of this many rounds of HOST_CALLS // HOST_ROUNDS calls: a
#: single window of 500 calls read 106 us a CUDA call on one H100 point (fp16 (1, 2048, 4) over dim 1)
#: whose neighbours at 1024 and 4096 read 11 and 20
HOST_ROUNDS = 5


def default_table_path() -> Path:
    from fastsoftmax import dispatch

    return dispatch.TABLE_PATH


def table_out_path(table_out: str | None, runs=()) -> Path:
    """Where the table suite writes: ``table_out``, the default table without one, and for "device"
    the table of the GPU model's own (dispatch.device_table_path): this GPU's, or the model the
    main-suite ``runs`` merged into it were measured on."""
    from fastsoftmax import dispatch

    if not table_out:
        return default_table_path()
    if table_out != "device":
        return Path(table_out)
    if runs:
        models = {read_json(run).get("device") for run in runs}
        if len(models) != 1 or None in models:
            named = ", ".join(sorted(map(str, models)))
            raise ValueError(f"--table-out device: the runs to merge name no one GPU model ({named})")
        return dispatch.device_table_path(models.pop())
    import torch

    return dispatch.device_table_path(torch.cuda.get_device_name())


def point_case(direction: str, layout: str, dtype: str, n: int, size: str) -> Case:
    """The problem measured at one grid point (``size`` is "bulk" or "small")."""
    if layout == "row":
        rows = max(1, BULK_NUMEL // n) if size == "bulk" else SMALL_ROWS
        return Case("table", (rows, n), -1, dtype, direction)
    if size == "bulk":
        outer = max(1, BULK_NUMEL // (n * STRIDED_INNER_BULK))
        return Case("table", (outer, n, STRIDED_INNER_BULK), 1, dtype, direction)
    return Case("table", (1, n, SMALL_ROWS), 1, dtype, direction)


def edge_lengths(dtype: str) -> tuple[int, ...]:
    """Row lengths one past the powers of two (EDGE_OCTAVES) where a backend's row kernels double the
    lanes they hold a row in (dispatch.row_octaves): 2^k + 1, the CUDA backend's warp tier, and the first
    past a whole 16-byte vector, Triton's realigned body (2^k + 9 in 16-bit types, 2^k + 5 in float32)."""
    import torch

    vector = 16 // getattr(torch, dtype).itemsize
    return tuple(n for k in EDGE_OCTAVES for n in ((1 << k) + 1, (1 << k) + vector + 1))


def grid(dtypes=ALL_DTYPES, n_grid=N_GRID, edges=True):
    """The points measured: the powers of two at both sizes and layouts, then (``edges``) the row
    layout's edge lengths at the bulk size."""
    for direction in ("forward", "backward"):
        for layout in ("row", "strided"):
            for dtype in dtypes:
                for n in n_grid:
                    for size in ("bulk", "small"):
                        yield direction, layout, dtype, n, size
                if edges and layout == "row":
                    for n in edge_lengths(dtype):
                        yield direction, layout, dtype, n, "bulk"


def row_points(dtypes, lengths):
    """The row layout's bulk points of ``lengths`` (``"edges"``: each dtype's edge_lengths), both directions."""
    for direction in ("forward", "backward"):
        for dtype in dtypes:
            for n in edge_lengths(dtype) if lengths == "edges" else lengths:
                yield direction, "row", dtype, n, "bulk"


def parse_row_lengths(text: str | None, option: str = "--row-lengths", edges: bool = True):
    """``--row-lengths``: None, ``"edges"``, or a tuple of row lengths (a comma list of integers >= 2);
    without ``edges``, not ``"edges"`` (``--retime-lengths``; ``option`` names the option in errors)."""
    if not text or (edges and text == "edges"):
        return text or None
    try:
        lengths = tuple(dict.fromkeys(int(item) for item in text.split(",")))
    except ValueError:
        raise ValueError(f"{option} {text!r}: a comma list of integers" + ", or 'edges'" * edges) from None
    if min(lengths) < 2:
        raise ValueError(f"{option} {text!r}: rows of at least 2 elements")
    return lengths


def combine(gpu_us: float, host_us: float | None, size: str) -> float:
    """The cost one call is charged in the table (see the module docstring)."""
    if size == "small" and host_us is not None:
        return gpu_us + host_us
    return gpu_us


def _call(backend: str, case: Case):
    import fastsoftmax

    if case.direction == "backward":
        return lambda dy, y: fastsoftmax.softmax_backward(dy, y, case.dim, backend=backend)
    return lambda x: fastsoftmax.softmax(x, case.dim, backend=backend)


def measure_point(case: Case, size: str, backends, timer, host_timer) -> dict:
    inputs = make_inputs(case, "cuda")
    reference = make_reference(case, inputs)
    point = {"gpu_us": {}, "host_us": {}, "us": {}, "errors": {}}
    for backend in backends:
        try:
            fn = _call(backend, case)
            output = fn(*inputs)
            result = checks.check(output, reference)
            del output
            if not result.passed:
                point["errors"][backend] = f"wrong output: {result.message}"
                continue
            gpu_us = float(timer(bound_call(fn, inputs))) * 1e3
            host_us = float(host_timer(bound_call(fn, inputs))) if size == "small" else None
        except Exception as exc:  # noqa: BLE001
            point["errors"][backend] = describe(exc)
            _check_context()
            continue
        point["gpu_us"][backend] = gpu_us
        if host_us is not None:
            point["host_us"][backend] = host_us
        point["us"][backend] = combine(gpu_us, host_us, size)
    return point


def _check_context() -> None:
    import torch

    try:
        torch.ones(1, device="cuda").add_(1).cpu()
    except Exception as exc:
        raise ContextLost(describe(exc)) from exc


def _save(path: Path, document: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(_clean(document), indent=1) + "\n")
    os.replace(tmp, path)


MAIN_IMPLS = {"fastsoftmax[triton]": "triton", "fastsoftmax[cuda]": "cuda"}


def main_cost(gpu_us: dict, host_us: dict) -> dict:
    """A main point's ``us`` per backend: back-to-back calls go at the pace of the slower of its GPU
    time and its launch's host time."""
    return {name: max(t, host_us.get(name, 0.0)) for name, t in gpu_us.items()}


def main_points(result: dict) -> list[dict]:
    """Table points from a main-suite result: one per shape both kernel backends ran correctly."""
    host = {
        MAIN_IMPLS[r["impl"]]: r["host_us"]
        for r in result.get("rows", ())
        if r.get("regime") == "host" and r.get("impl") in MAIN_IMPLS and r.get("status") == "ok"
    }
    timed: dict = {}
    for r in result.get("rows", ()):
        if r.get("impl") not in MAIN_IMPLS or r.get("status") != "ok" or not r.get("gpu_us") or r["regime"] == "host":
            continue
        shape, dim = r["shape"], r["dim"] % len(r["shape"])
        inner = 1
        for size in shape[dim + 1 :]:
            inner *= size
        key = (r["direction"], "strided" if inner > 1 else "row", r["dtype"], tuple(shape), dim)
        timed.setdefault(key, {})[MAIN_IMPLS[r["impl"]]] = r["gpu_us"]
    points = []
    for (direction, layout, dtype, shape, dim), gpu_us in timed.items():
        if len(gpu_us) < len(MAIN_IMPLS):
            continue
        numel = 1
        for size in shape:
            numel *= size
        us = main_cost(gpu_us, host)
        points.append(
            {
                "direction": direction,
                "layout": layout,
                "dtype": dtype,
                "n": shape[dim],
                "numel": numel,
                "size": "main",
                "shape": list(shape),
                "dim": dim,
                "gpu_us": gpu_us,
                "host_us": {b: host[b] for b in gpu_us if b in host},
                "us": us,
                "errors": {},
            }
        )
    return points


def merge_main(table_path: Path, *result_paths: Path) -> int:
    """Add the shapes of main-suite runs (one run split over several ``--regimes`` calls, say) to
    the table at ``table_path``, replacing its earlier "main" points; a shape timed by several of
    the runs takes the last one's point."""
    if not table_path.exists():
        print(f"no table at {table_path} to merge into: measure one first (fastsoftmax bench table)", file=sys.stderr)
        return 1
    document = json.loads(table_path.read_text())
    added: dict = {}
    merged = []
    for result_path in result_paths:
        try:
            result = read_json(result_path)
        except (OSError, ValueError) as error:
            print(f"cannot read {result_path} as a run's JSON: {error}; nothing merged", file=sys.stderr)
            return 1
        if result.get("device") != document.get("device"):
            print(
                f"{result_path.name} is from {result.get('device')!r} but the table from "
                f"{document.get('device')!r}; not merged"
            )
            return 1
        for point in main_points(result):
            added[(point["direction"], point["dtype"], tuple(point["shape"]), point.get("dim"))] = point
        merged.append({"file": Path(result_path).name, "date": result.get("date")})
    if not added:
        # the table's earlier main points would be dropped for nothing: a run of "auto" alone, say,
        # has no per-backend rows
        print(
            f"{', '.join(r['file'] for r in merged)} hold no per-backend main-suite shapes; "
            "the table is left as it was",
            file=sys.stderr,
        )
        return 1
    document["points"] = [p for p in document["points"] if p.get("size") != "main"] + list(added.values())
    document["merged_main"] = {"runs": merged, "points": len(added)}
    document.pop("retimed_main", None)  # the points it named are replaced
    _save(table_path, document)
    print(f"merged {len(added)} shapes of {', '.join(r['file'] for r in merged)} into {table_path}")
    return 0


def run(args) -> int:
    import torch

    from fastsoftmax.benchmark.timing import host_us_per_call, median_ms

    started = time.perf_counter()
    import fastsoftmax

    available = fastsoftmax.available_backends(torch.device("cuda"))
    requested = parse_backends(getattr(args, "backends", None))
    backends = [
        b for b in KERNEL_BACKENDS if b in available and (not requested or b in requested or "auto" in requested)
    ]
    if not backends:
        print(f"no kernel backend available on this device (available: {available}); no table written")
        return 1
    dtypes = parse_dtypes(getattr(args, "dtypes", None))
    quick = getattr(args, "quick", False)
    n_grid = QUICK_N_GRID if quick else N_GRID
    row_lengths = parse_row_lengths(getattr(args, "row_lengths", None))
    path = table_out_path(getattr(args, "table_out", None))
    document = {
        "device": torch.cuda.get_device_name(),
        "date": now_iso(),
        "versions": collect_versions(),
        "backends": backends,
        "rule": "us = gpu_us at the bulk numel (2^26); us = gpu_us + host_us at the small numel (4 rows)",
        "complete": False,
        "points": [],
    }
    points = list(row_points(dtypes, row_lengths) if row_lengths else grid(dtypes, n_grid, edges=not quick))
    earlier = _earlier_table(path, document["device"])
    if row_lengths:
        if earlier is None:
            print(f"--row-lengths: no table of this {document['device']!r} at {path} to add points to", file=sys.stderr)
            return 1
        document = earlier
        lengths = "edges" if row_lengths == "edges" else list(row_lengths)
        rows = {"date": now_iso(), "versions": collect_versions(), "backends": backends, "lengths": lengths}
        if "measured_rows" in document:
            rows["earlier"] = document["measured_rows"]
        document["measured_rows"] = rows
    elif earlier is not None:
        # the grid's points are replaced as they are measured; the others (main points, rows measured
        # alone) and the records of where they came from are kept
        document["points"] = earlier.get("points", [])
        document.update(
            {key: earlier[key] for key in ("merged_main", "retimed_main", "measured_rows") if key in earlier}
        )
    # where this run's outcome is recorded: the table's own fields, or those of the rows added to it
    record = document["measured_rows"] if row_lengths else document
    print(f"dispatch table on {document['device']}: backends {', '.join(backends)}; writing {path}")

    def timer(fn):
        return median_ms(fn, warmup_ms=WARMUP_MS, rep_ms=REP_MS)

    def host_timer(fn):
        return statistics.median(host_us_per_call(fn, calls=HOST_CALLS // HOST_ROUNDS) for _ in range(HOST_ROUNDS))

    try:
        from tqdm import tqdm

        bar = tqdm(points, file=sys.stderr, mininterval=0.1 if sys.stderr.isatty() else 15.0)
    except ImportError:
        bar = points
    measured = 0
    for direction, layout, dtype, n, size in bar:
        case = point_case(direction, layout, dtype, n, size)
        entry = {
            "direction": direction,
            "layout": layout,
            "dtype": dtype,
            "n": n,
            "numel": case.numel,
            "size": size,
            "shape": list(case.shape),
        }
        try:
            entry.update(measure_point(case, size, backends, timer, host_timer))
        except ContextLost as exc:
            record["aborted"] = f"CUDA context lost: {exc}"
            print(f"table stopped: CUDA context lost ({exc})")
            break
        except Exception as exc:  # noqa: BLE001 - inputs that do not fit, a harness bug: record and go on
            entry["errors"] = {"*": describe(exc)}
            entry["us"] = {}
        finally:
            torch.cuda.empty_cache()
        # the point it replaces goes only now: a run cut short keeps the earlier times of those it did not reach
        key = point_key(entry)
        document["points"] = [p for p in document["points"] if point_key(p) != key] + [entry]
        measured += 1
        _save(path, document)  # after every point, so a timeout still leaves a usable table
    document["points"].sort(key=lambda point: point.get("size") == "main")  # the grid first, as merged tables hold
    record["complete"] = "aborted" not in record
    record["wall_s"] = round(time.perf_counter() - started, 1)
    _save(path, document)
    print(format_table(document))
    print(f"saved {path} ({measured} of its {len(document['points'])} points measured, {record['wall_s']:.0f} s)")
    return 0


def point_key(point: dict) -> tuple:
    """What one point measures: as the grid names it (direction, layout, dtype, n, size), and for a main
    point its shape and dim too (main shapes share lengths). A point measured again replaces the one of
    the same key."""
    key = point["direction"], point["layout"], point["dtype"], point["n"], point.get("size")
    if point.get("size") == "main":
        key += (tuple(point["shape"]), point.get("dim"))
    return key


def _earlier_table(path: Path, device: str) -> dict | None:
    """The table at ``path`` where it was measured on ``device``, else None, with a note where a table
    there is not kept (unreadable, or another model's points)."""
    if not path.exists():
        return None
    try:
        earlier = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        print(f"the table at {path} cannot be read ({error}): measuring a new one in its place", file=sys.stderr)
        return None
    points = earlier.get("points", [])
    if points and earlier.get("device") != device:
        print(
            f"{path} holds {len(points)} points of {earlier.get('device')!r}, not this {device!r}: "
            "they are not kept (--table-out device writes this model's own table)",
            file=sys.stderr,
        )
    return earlier if earlier.get("device") == device else None


def tie_closeness(point: dict) -> float:
    """How far apart the kernel backends' times at a point lie (octaves; 0: level, inf: one backend
    alone), the order --retime-main takes points in."""
    times = [t for name, t in point.get("us", {}).items() if name in KERNEL_BACKENDS and t and t > 0]
    return abs(math.log2(times[0] / times[1])) if len(times) == 2 else math.inf


def retimed_since(text: str | None, earlier: dict | None):
    """The moment ``--retime-since`` names (None: none): an ISO date or time (UTC where it names no
    zone), or ``last``: where the table's last retiming began its own (its ``since``, for a run that
    continued another, else its date). ValueError for a date that does not parse, or ``last`` without
    a retiming before."""
    if text is None:
        return None
    if text == "last":
        if not earlier:
            raise ValueError("--retime-since last: the table records no retiming")
        text = earlier.get("since") or earlier["date"]
    try:
        return _moment(text)
    except ValueError:
        raise ValueError(f"--retime-since {text!r}: not an ISO date") from None


def _moment(text: str | None):
    """An ISO date or time as an aware datetime (UTC where it names no zone); the earliest one for None."""
    if not text:
        return _dt.datetime.min.replace(tzinfo=_dt.timezone.utc)
    moment = _dt.datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=_dt.timezone.utc)


def retime_main(args) -> int:
    """``--retime-main``: the table's main points timed again on this GPU (module docstring). Each point
    timed is stamped with the date (``retimed``); a backend not available here keeps its earlier time."""
    import torch

    import fastsoftmax
    from fastsoftmax.benchmark.timing import median_ms

    started = time.perf_counter()
    path = table_out_path(getattr(args, "table_out", None))
    if not path.exists():
        print(f"no table at {path} to time again", file=sys.stderr)
        return 1
    document = json.loads(path.read_text())
    device = torch.cuda.get_device_name()
    if document.get("device") != device:
        print(f"{path} was measured on {document.get('device')!r}, not this {device!r}; nothing timed", file=sys.stderr)
        return 1
    available = fastsoftmax.available_backends(torch.device("cuda"))
    backends = [b for b in document.get("backends", KERNEL_BACKENDS) if b in KERNEL_BACKENDS and b in available]
    earlier = document.get("retimed_main")
    try:
        since = retimed_since(getattr(args, "retime_since", None), earlier)
        lengths = parse_row_lengths(getattr(args, "retime_lengths", None), "--retime-lengths", edges=False)
    except ValueError as exc:
        print(f"{path}: {exc}; nothing timed", file=sys.stderr)
        return 1
    main = [p for p in document["points"] if p.get("size") == "main" and (not lengths or p["n"] in lengths)]
    points = sorted((p for p in main if not (since and _moment(p.get("retimed")) >= since)), key=tie_closeness)
    if not points or not backends:
        print(f"{path}: {len(points)} main points, backends {backends} available here; nothing timed", file=sys.stderr)
        return 1
    limit = getattr(args, "time_limit", None)
    record = {"date": now_iso(), "versions": collect_versions(), "points": 0, "of": len(points), "complete": False}
    if lengths:
        record["lengths"] = list(lengths)
    if since:
        record["since"] = since.isoformat(timespec="seconds")
    if (since or lengths) and earlier:  # a part of the main points: the whole's record stays beneath
        record["earlier"] = earlier

    def timer(fn):
        return median_ms(fn, warmup_ms=WARMUP_MS, rep_ms=REP_MS)

    print(f"timing again {len(points)} main points of {path} on {device}: backends {', '.join(backends)}")
    for point in points:
        if limit is not None and time.perf_counter() - started > limit:
            print(f"time limit: {record['points']} of {len(points)} points timed again")
            break
        case = Case("table", tuple(point["shape"]), point["dim"], point["dtype"], point["direction"])
        try:
            fresh = measure_point(case, "main", backends, timer, host_timer=None)
        except ContextLost as exc:
            record["aborted"] = f"CUDA context lost: {exc}"
            print(f"stopped: CUDA context lost ({exc})")
            break
        except Exception as exc:  # noqa: BLE001 - inputs that do not fit, say: the point keeps its times
            fresh = {"gpu_us": {}, "errors": {"*": describe(exc)}}
        finally:
            torch.cuda.empty_cache()
        _take_times(point, fresh, backends)
        if "*" not in fresh["errors"]:
            point["retimed"] = record["date"]
        record["points"] += 1
        document["retimed_main"] = record  # a run that times no point leaves an earlier record
        _save(path, document)
    record["complete"] = record["points"] == len(points)
    record["wall_s"] = round(time.perf_counter() - started, 1)
    if record["points"]:
        _save(path, document)
    print(f"{path}: {record['points']} of {len(points)} main points timed again ({record['wall_s']:.0f} s)")
    return 1 if "aborted" in record else 0


def _take_times(point: dict, fresh: dict, backends) -> None:
    """A retimed point's times: each backend timed takes its new time or, where it raised or gave a wrong
    result, none (its error noted); a point whose inputs could not be made keeps its times beside that
    error; a backend not timed keeps its own. ``us`` is the slower of the new GPU time and the host time
    the point's run measured."""
    errors = fresh["errors"]
    if "*" in errors:
        point["errors"] = {**point.get("errors", {}), **errors}
        return
    gpu_us = {name: t for name, t in point.get("gpu_us", {}).items() if name not in backends}
    point["gpu_us"] = {**gpu_us, **fresh["gpu_us"]}
    point["us"] = main_cost(point["gpu_us"], point.get("host_us", {}))
    untimed = {name: error for name, error in point.get("errors", {}).items() if name not in backends and name != "*"}
    point["errors"] = {**untimed, **errors}


def format_table(document: dict) -> str:
    """One line per (direction, layout, dtype, size): the winning backend at each n."""
    lines = []
    rows: dict[tuple, list[str]] = {}
    for p in document["points"]:
        key = (p["direction"], p["layout"], p["dtype"], p.get("size", ""))
        us = p.get("us") or {}
        cell = f"{p['n']}:{min(us, key=us.get)}" if us else f"{p['n']}:-"
        rows.setdefault(key, []).append(cell)
    for (direction, layout, dtype, size), cells in rows.items():
        lines.append(f"{direction:8} {layout:7} {dtype:8} {size:5} " + " ".join(cells))
    return "\n".join(lines)
