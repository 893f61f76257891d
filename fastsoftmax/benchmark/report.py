"""What a run prints, and the summary it stores: per-shape lines, geomeans per regime and dtype,
and the shapes where fastsoftmax misses its goal.

Works on plain row dicts (the JSON rows), so a saved result can be re-summarised anywhere.
"""

from __future__ import annotations

import math
from collections import defaultdict

from fastsoftmax.benchmark.peers import FASTSOFTMAX
from fastsoftmax.benchmark.shapes import (
    ALL_DTYPES,
    SHORT_DTYPE,
    SUMMARY_GROUPS,
    Case,
    goal_for,
    summary_group,
)


def geomean(values) -> float | None:
    values = [v for v in values if v is not None and v > 0 and math.isfinite(v)]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def case_rows(rows) -> list[dict]:
    return [r for r in rows if r.get("regime") != "host"]


def group_by_case(rows) -> dict[str, list[dict]]:
    grouped: dict[str, list[dict]] = defaultdict(list)
    for row in case_rows(rows):
        grouped[row["case"]].append(row)
    return grouped


def speedups(case_rows_: list[dict]) -> dict[str, dict[str, float]]:
    """{fastsoftmax impl: {peer: peer_ms / impl_ms}} over the rows of one case that passed."""
    ok = {r["impl"]: r for r in case_rows_ if r["status"] == "ok" and r.get("ms")}
    result = {}
    for name, row in ok.items():
        if row["kind"] != "fastsoftmax":
            continue
        result[name] = {peer: other["ms"] / row["ms"] for peer, other in ok.items() if other["kind"] == "peer"}
    return result


# --- per-shape lines --------------------------------------------------------------------------


def _impl_width(rows) -> int:
    return max([len(r["impl"]) for r in rows] + [12])


def format_row(row: dict, width: int, speedup: dict[str, float] | None = None) -> str:
    name = row["impl"].ljust(width)
    if row["status"] != "ok":
        detail = row.get("message") or ""
        if row["status"] == "wrong" and row.get("max_abs_err") is not None:
            detail = f"max err {row['max_abs_err']:.3g} ({detail})"
        return f"  {name}  {row['status'].upper()}: {detail}"
    text = f"  {name}  {row['gbps']:7.0f} GB/s"
    if row.get("frac_copy") is not None:
        text += f"  {row['frac_copy']:5.2f} of copy"
    if row["regime"] == "decode" or row["gpu_us"] < 100:
        text += f"  {row['gpu_us']:8.1f} us"
    text += f"  err {row['max_abs_err']:.1e}"
    if speedup:
        text += "  " + "  ".join(f"x{v:.2f} vs {peer}" for peer, v in speedup.items())
    return text


def format_case(case: Case, rows: list[dict]) -> str:
    goal = goal_for(case)
    head = case.label
    if goal:
        head += f"   (goal {goal.min_fraction:.2f} of copy)"
    width = _impl_width(rows)
    ups = speedups(rows)
    return "\n".join([head] + [format_row(r, width, ups.get(r["impl"])) for r in rows])


def format_host(rows: list[dict]) -> str:
    width = _impl_width(rows)
    lines = [
        f"host overhead: wall time per call, {rows[0]['calls']} back-to-back calls on "
        f"{'x'.join(map(str, rows[0]['shape']))} {rows[0]['dtype']}"
        + (f", median of {rows[0]['rounds']} rounds" if rows[0].get("rounds") else "")
        if rows
        else "host overhead"
    ]
    for row in rows:
        if row["status"] == "ok":
            lines.append(f"  {row['impl'].ljust(width)}  {row['host_us']:7.1f} us")
        else:
            lines.append(f"  {row['impl'].ljust(width)}  {row['status'].upper()}: {row['message']}")
    return "\n".join(lines)


# --- summary ----------------------------------------------------------------------------------


def _case_of(row: dict) -> Case:
    return Case.from_json(row)


def summarize(document: dict) -> dict:
    rows = document.get("rows", [])
    impls = []
    for row in rows:
        if row["impl"] not in impls:
            impls.append(row["impl"])

    fractions: dict[tuple, list[float]] = defaultdict(list)
    ratios: dict[tuple, list[float]] = defaultdict(list)
    for group_rows in group_by_case(rows).values():
        case = _case_of(group_rows[0])
        group = summary_group(case)
        for row in group_rows:
            if row["status"] == "ok" and row.get("frac_copy"):
                fractions[(group, case.dtype, row["impl"])].append(row["frac_copy"])
        for impl, vs in speedups(group_rows).items():
            if "torch" in vs:
                ratios[(group, case.dtype, impl)].append(vs["torch"])

    def ordered(table: dict, value_name: str) -> list[dict]:
        out = []
        for group in SUMMARY_GROUPS:
            for dtype in ALL_DTYPES:
                for impl in impls:
                    values = table.get((group, dtype, impl))
                    if values:
                        out.append(
                            {
                                "group": group,
                                "dtype": dtype,
                                "impl": impl,
                                value_name: geomean(values),
                                "count": len(values),
                            }
                        )
        return out

    below = []
    for row in case_rows(rows):
        if row["kind"] != "fastsoftmax":
            continue
        case = _case_of(row)
        goal = goal_for(case)
        if goal is None:
            continue
        frac = row.get("frac_copy")
        if row["status"] != "ok" or frac is None or frac < goal.min_fraction:
            below.append(
                {
                    "case": row["case"],
                    "label": case.label,
                    "impl": row["impl"],
                    "status": row["status"],
                    "frac_copy": frac,
                    "goal": goal.name,
                    "min_fraction": goal.min_fraction,
                }
            )

    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        counts.setdefault(row["impl"], defaultdict(int))[row["status"]] += 1

    return {
        "geomean_frac_copy": ordered(fractions, "frac_copy"),
        "speedup_vs_torch": ordered(ratios, "speedup"),
        "below_goal": below,
        "host_us": {r["impl"]: r["host_us"] for r in rows if r.get("regime") == "host" and r["status"] == "ok"},
        "status_counts": {impl: dict(c) for impl, c in counts.items()},
    }


def format_summary(summary: dict, copy_gbps: float | None = None) -> str:
    lines = ["", "=" * 78, "Summary" + (f" (copy bandwidth {copy_gbps:.0f} GB/s)" if copy_gbps else "")]
    table: dict[tuple, dict[str, float]] = defaultdict(dict)
    impls: list[str] = []
    for entry in summary["geomean_frac_copy"]:
        table[(entry["group"], entry["dtype"])][entry["impl"]] = entry["frac_copy"]
        if entry["impl"] not in impls:
            impls.append(entry["impl"])
    if table:
        lines.append("geomean fraction of copy bandwidth")
        w = max(len(i) for i in impls) + 1
        header = f"  {'regime':22} {'dtype':5} " + " ".join(f"{i:>{w}}" for i in impls)
        lines.append(header)
        for (group, dtype), values in table.items():
            cells = " ".join(f"{values[i]:{w}.2f}" if i in values else f"{'-':>{w}}" for i in impls)
            lines.append(f"  {group:22} {SHORT_DTYPE.get(dtype, dtype):5} {cells}")
    ups = [e for e in summary["speedup_vs_torch"] if e["impl"] == FASTSOFTMAX]
    if ups:
        lines.append("fastsoftmax speed-up over torch.softmax (geomean)")
        for e in ups:
            lines.append(
                f"  {e['group']:22} {SHORT_DTYPE.get(e['dtype'], e['dtype']):5} x{e['speedup']:.2f}"
                f"  ({e['count']} shapes)"
            )
    if summary.get("host_us"):
        lines.append(
            "host overhead per call: " + ", ".join(f"{impl} {us:.1f} us" for impl, us in summary["host_us"].items())
        )
    below = summary["below_goal"]
    auto = [b for b in below if b["impl"] == FASTSOFTMAX]
    lines.append(f"fastsoftmax below its goals: {len(auto)} shape(s)")
    for b in auto:
        got = f"{b['frac_copy']:.2f}" if b["frac_copy"] is not None else b["status"]
        lines.append(f"  {b['label']:48} {got:>8} < {b['min_fraction']:.2f}  ({b['goal']})")
    explicit = defaultdict(int)
    for b in below:
        if b["impl"] != FASTSOFTMAX:
            explicit[b["impl"]] += 1
    for impl, count in explicit.items():
        lines.append(f"  ({impl}: {count} shape(s) below goal)")
    bad = {
        impl: c
        for impl, c in summary["status_counts"].items()
        if impl.startswith(FASTSOFTMAX) and (c.get("wrong") or c.get("error"))
    }
    for impl, c in bad.items():
        lines.append(f"  {impl}: {c.get('wrong', 0)} WRONG output(s), {c.get('error', 0)} error(s)")
    return "\n".join(lines)
