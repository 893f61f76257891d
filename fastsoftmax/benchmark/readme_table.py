"""Markdown tables of a result file, for the README.

    python -m fastsoftmax.benchmark.readme_table benchmarks/results/main_<device>_<date>.json [MORE.json ...]

Figures are recomputed from the rows (not taken from the stored summary), so a run that was cut
short renders too. Several files of one device (a long run split with ``--regimes``) are combined:
each row keeps the fraction of copy bandwidth of its own run, and speed-ups only compare rows of
the same run, so combining them is sound.
"""

from __future__ import annotations

import argparse
import sys

from fastsoftmax.benchmark import report, results
from fastsoftmax.benchmark.peers import FASTSOFTMAX
from fastsoftmax.benchmark.shapes import ALL_DTYPES, GROUP_GOALS, REGIMES, SHORT_DTYPE, SUMMARY_GROUPS

PEER_COLUMN = {"torch": "torch.softmax"}


def _fmt(value, pattern: str, missing: str = "-") -> str:
    return pattern.format(value) if isinstance(value, (int, float)) else missing


def _versions_line(document: dict) -> str:
    v = document.get("versions", {})
    parts = [
        f"{name} {v[key]}"
        for name, key in (
            ("torch", "torch"),
            ("triton", "triton"),
            ("CUDA", "torch_cuda"),
            ("driver", "driver"),
            ("cuda-core", "cuda_core"),
        )
        if v.get(key)
    ]
    return ", ".join(parts)


def render(document: dict) -> str:
    summary = report.summarize(document)
    copy = document.get("copy_gbps")
    days = sorted({str(d)[:10] for d in document.get("dates") or [document.get("date", "")]})
    date = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
    runs = f" (mean of {document['runs']} runs)" if document.get("runs", 1) > 1 else ""
    kind = "quick run (a subset of the shapes)" if document.get("quick") else "full shape set of benchmarks/README.md"
    timed = (document.get("args") or {}).get("regimes") or []
    untimed = [regime for regime in REGIMES if timed and regime not in timed]
    if untimed and not document.get("quick"):
        plural = "s" if len(untimed) > 1 else ""
        kind = f"the shape set of benchmarks/README.md but for its {', '.join(untimed)} regime{plural}"
    out = [
        f"Results on **{document.get('device', 'unknown device')}**, {date}, {kind}; {_versions_line(document)}.",
        "",
        (
            f"Copy bandwidth (the ceiling, 512 MiB device-to-device, bytes read + written): "
            f"**{_fmt(copy, '{:.0f}')} GB/s**{runs}. Figures are geometric means of the fraction of that bandwidth "
            f"reached, counting one read and one write per element (forward) or two reads and one write "
            f"(backward); speed-up is over torch.softmax on the same tensors in the same run."
        ),
        "",
    ]
    out += _regime_table(summary)
    decode = _decode_table(document)
    if decode:
        out += ["", "Decode shapes (latency-bound; GPU time per call):", ""] + decode
    host = _host_table(document)
    if host:
        rounds = next((r.get("rounds") for r in document["rows"] if r.get("regime") == "host"), None)
        how = f", median of {rounds} rounds, the implementations alternated" if rounds else ""
        out += ["", f"Host overhead (wall time per call of 2000 back-to-back calls on a 4x1024 bf16 tensor{how}):", ""]
        out += host
    if not document.get("complete", True):
        out += ["", "_This run did not complete: the tables cover the shapes measured before it stopped._"]
    return "\n".join(out) + "\n"


def _regime_table(summary: dict) -> list[str]:
    fractions: dict[tuple, dict[str, float]] = {}
    peers: list[str] = []
    for e in summary["geomean_frac_copy"]:
        fractions.setdefault((e["group"], e["dtype"]), {})[e["impl"]] = e["frac_copy"]
        if not e["impl"].startswith(FASTSOFTMAX) and e["impl"] != "torch" and e["impl"] not in peers:
            peers.append(e["impl"])
    speedup = {(e["group"], e["dtype"]): e["speedup"] for e in summary["speedup_vs_torch"] if e["impl"] == FASTSOFTMAX}
    head = ["regime", "dtype", "fastsoftmax", "torch.softmax", "speed-up"] + peers + ["goal"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for group in SUMMARY_GROUPS:
        for dtype in ALL_DTYPES:
            values = fractions.get((group, dtype))
            if not values:
                continue
            cells = [
                group,
                SHORT_DTYPE[dtype],
                _fmt(values.get(FASTSOFTMAX), "{:.2f}"),
                _fmt(values.get("torch"), "{:.2f}"),
                _fmt(speedup.get((group, dtype)), "x{:.2f}"),
            ]
            cells += [_fmt(values.get(p), "{:.2f}") for p in peers]
            goal = GROUP_GOALS.get(group)
            cells.append(_fmt(goal and goal.min_fraction, "{:.2f}"))
            lines.append("| " + " | ".join(cells) + " |")
    return lines


def _decode_table(document: dict) -> list[str]:
    lines = []
    for rows in report.group_by_case(document.get("rows", [])).values():
        if rows[0]["regime"] != "decode":
            continue
        ok = {r["impl"]: r for r in rows if r["status"] == "ok"}
        fs, torch_row = ok.get(FASTSOFTMAX), ok.get("torch")
        ratio = torch_row["ms"] / fs["ms"] if fs and torch_row else None
        cells = [
            "x".join(map(str, rows[0]["shape"])),
            SHORT_DTYPE.get(rows[0]["dtype"], rows[0]["dtype"]),
            _fmt(fs and fs["gpu_us"], "{:.1f} us"),
            _fmt(torch_row and torch_row["gpu_us"], "{:.1f} us"),
            _fmt(ratio, "x{:.2f}"),
            _fmt(fs and fs["frac_copy"], "{:.2f}"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    if not lines:
        return []
    return [
        "| shape | dtype | fastsoftmax | torch.softmax | speed-up | fastsoftmax, fraction of copy |",
        "|---|---|---|---|---|---|",
    ] + lines


def _host_table(document: dict) -> list[str]:
    rows = [r for r in document.get("rows", []) if r.get("regime") == "host"]
    if not rows:
        return []
    lines = ["| implementation | us per call |", "|---|---|"]
    for r in rows:
        value = _fmt(r.get("host_us"), "{:.1f}", missing=r["status"])
        lines.append(f"| {PEER_COLUMN.get(r['impl'], r['impl'])} | {value} |")
    return lines


def latest_rows(documents: list[dict]) -> tuple[list[dict], list[dict]]:
    """(rows, contributing documents) of runs given oldest first: each case takes all its rows
    from the latest run that timed it (the host overhead counting as one case), so that every
    ratio between implementations compares rows of one run."""

    def case_of(row):
        return "host" if row.get("regime") == "host" else row.get("case")

    taken: set = set()
    rows: list[dict] = []
    contributing: list[dict] = []
    for document in reversed(documents):
        fresh = {case_of(r) for r in document.get("rows", [])} - taken
        mine = [r for r in document.get("rows", []) if case_of(r) in fresh]
        if mine:
            contributing.insert(0, document)
        rows = [dict(r) for r in mine] + rows
        taken |= fresh
    return rows, contributing


def combine(documents: list[dict]) -> dict:
    """One document from several runs on one device, given oldest first: the rows of each case
    from the latest run that timed it (``latest_rows``), the header of the first run that
    contributes."""
    devices = {d.get("device") for d in documents}
    if len(devices) > 1:
        raise ValueError(f"results of different devices cannot share a table: {sorted(map(str, devices))}")
    if len(documents) == 1:
        return dict(documents[0])
    rows, contributing = latest_rows(documents)
    contributing = contributing or documents[-1:]
    first = dict(contributing[0])
    first["rows"] = rows
    first["complete"] = all(d.get("complete", True) for d in contributing)
    first["quick"] = any(d.get("quick") for d in contributing)
    copies = [d.get("copy_gbps") for d in contributing if isinstance(d.get("copy_gbps"), (int, float))]
    first["copy_gbps"] = sum(copies) / len(copies) if copies else None
    # each run's own ceiling, against which its rows' fractions were taken
    first["copy_gbps_runs"] = [
        {"date": d.get("date"), "copy_gbps": d["copy_gbps"]}
        for d in contributing
        if isinstance(d.get("copy_gbps"), (int, float))
    ]
    first["runs"] = len(contributing)
    first["dates"] = sorted(str(d["date"]) for d in contributing if d.get("date"))
    # the regimes the runs timed together (a run that named none timed them all), not the first's alone
    named = [(d.get("args") or {}).get("regimes") or [] for d in contributing]
    timed = [] if not all(named) else [regime for regime in REGIMES if any(regime in n for n in named)]
    first["args"] = {**(first.get("args") or {}), "regimes": timed}
    return first


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m fastsoftmax.benchmark.readme_table",
        description="Print markdown results tables from benchmark result files.",
    )
    parser.add_argument(
        "results",
        nargs="+",
        help="JSON files written by `fastsoftmax bench` on one device, plain or gzip-compressed (.json.gz)",
    )
    args = parser.parse_args(argv)
    try:
        document = combine([results.load(path) for path in args.results])
    except (OSError, ValueError) as exc:
        print(f"cannot read results: {exc}", file=sys.stderr)
        return 1
    sys.stdout.write(render(document))
    return 0


if __name__ == "__main__":
    sys.exit(main())
