"""The figures: one PNG and one Markdown table per seed claim, drawn from recorded result documents
(so a run on the GPU and a report anywhere else draw the same thing).

=============  ======================  =========================================================
seed           document                figure
=============  ======================  =========================================================
000            ``ladder.json``         each ladder step as a fraction of copy, GFLOP/s beside it
002            suite ``sweep``         GB/s against columns, every 128 up to 32768, then log
003            suite ``vector_matrix`` a 2^24 vector and a 2^12 x 2^16 matrix, unfused vs fused
004            suite ``attention``     49152 rows, fp16, forward and backward, against cuDNN
main suite     suite ``main``          fraction of copy against columns, per dtype
=============  ======================  =========================================================

matplotlib is imported only when drawing; without it :func:`pyplot` raises
:class:`MatplotlibMissing`, whose message is the one line a command prints before writing its
tables anyway.
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from fastsoftmax.benchmark.shapes import ALL_DTYPES, SHORT_DTYPE

MATPLOTLIB_HINT = (
    "plots not drawn: matplotlib is not installed (pip install matplotlib, or pip install 'fastsoftmax[plot]')"
)


class MatplotlibMissing(ImportError):
    pass


def pyplot():
    try:
        import matplotlib

        matplotlib.use("Agg")  # files only; the device machine has no display
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MatplotlibMissing(MATPLOTLIB_HINT) from exc
    return plt


# One colour per implementation in every figure, fastsoftmax in solid lines, peers dashed.
COLOURS = {
    "fastsoftmax": "#d62728",
    "fastsoftmax[triton]": "#ff7f0e",
    "fastsoftmax[cuda]": "#8c564b",
    "torch": "#1f77b4",
    "torch.compile": "#17becf",
    "torch-unfused": "#7f7f7f",
    "cudnn": "#2ca02c",
    "cudnn[fast]": "#98df8a",
    "triton-tutorial": "#9467bd",
    "quack": "#e377c2",
    "liger": "#bcbd22",
}
ORDER = tuple(COLOURS)


def impl_order(names) -> list[str]:
    names = list(dict.fromkeys(names))
    return sorted(names, key=lambda n: (ORDER.index(n) if n in ORDER else len(ORDER), n))


def style(impl: str) -> dict:
    """fastsoftmax thick and on top, its explicit backends thin and solid, peers dashed."""
    if impl == "fastsoftmax":
        return {"color": COLOURS[impl], "linewidth": 2.6, "linestyle": "-", "zorder": 4}
    if impl.startswith("fastsoftmax"):
        return {"color": COLOURS.get(impl, "#444444"), "linewidth": 1.2, "linestyle": "-", "zorder": 3}
    return {"color": COLOURS.get(impl, "#444444"), "linewidth": 1.4, "linestyle": "--", "zorder": 2}


def _ok(row) -> bool:
    return row.get("status") == "ok" and isinstance(row.get("gbps"), (int, float))


def series(document: dict, regime: str, value: str = "gbps", **match) -> dict[str, list[tuple[int, float]]]:
    """{impl: [(n, value), ...] sorted by n} over the rows of ``regime`` that passed and match."""
    found: dict[str, list] = defaultdict(list)
    for row in document.get("rows", []):
        if row.get("regime") != regime or not _ok(row) or any(row.get(k) != v for k, v in match.items()):
            continue
        if isinstance(row.get(value), (int, float)):
            found[row["impl"]].append((row["n"], row[value]))
    return {impl: sorted(found[impl]) for impl in impl_order(found)}


def _title_suffix(document: dict) -> str:
    return f"{document.get('device', 'unknown device')}, {str(document.get('date', ''))[:10]}"


def _ceiling(ax, copy, label_unit="GB/s"):
    if isinstance(copy, (int, float)) and copy > 0:
        ax.axhline(
            copy,
            color="black",
            linewidth=1.2,
            linestyle=":",
            zorder=1,
            label=f"copy bandwidth ({copy:.0f} {label_unit})",
        )


def _finish(fig, path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def _legend_outside(ax):
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)


def _lines(ax, found: dict, marker_size: float = 2.5):
    for impl, points in found.items():
        xs, ys = zip(*points)
        ax.plot(xs, ys, marker="o" if len(points) < 40 else None, markersize=marker_size, label=impl, **style(impl))


# --- seed 002: the sweep ------------------------------------------------------------------------


def draw_sweep(document: dict, path) -> Path | None:
    found = series(document, "sweep")
    if not found:
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(11, 4.8))
    top = max(y for points in found.values() for _, y in points)
    highest_n = max(x for points in found.values() for x, _ in points)
    lowest_n = min(x for points in found.values() for x, _ in points)
    power = 1 << max(0, (lowest_n - 1).bit_length())
    while power <= highest_n:
        ax.axvline(power, color="#bbbbbb", linewidth=0.6, zorder=0)
        power <<= 1
    _lines(ax, found)
    _ceiling(ax, document.get("copy_gbps"))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("columns per row (log scale; grey lines at powers of two)")
    ax.set_ylabel("GB/s (one read + one write per element)")
    copy = document.get("copy_gbps") or 0
    ax.set_ylim(0, max(top, copy) * 1.08)
    dtype = SHORT_DTYPE.get(_first(document, "dtype"), "")
    ax.set_title(
        f"Seed 002: forward softmax bandwidth against row length, {dtype}, ~128 MiB per point\n"
        f"{_title_suffix(document)}",
        fontsize=10,
    )
    ax.grid(True, which="major", axis="y", alpha=0.3)
    _legend_outside(ax)
    return _finish(fig, path)


def _first(document: dict, key: str):
    for row in document.get("rows", []):
        if key in row:
            return row[key]
    return None


def dips(document: dict, regime: str = "sweep") -> list[dict]:
    """For each implementation, the deepest drop from a power of two to the point just past it:
    the signature of a kernel that pads rows to the next power of two."""
    out = []
    for impl, points in series(document, regime).items():
        by_n = dict(points)
        worst = None
        for n in sorted(by_n):
            if n & (n - 1) or n not in by_n:
                continue
            after = min((m for m in by_n if m > n), default=None)
            if after is None or after > 2 * n:
                continue
            drop = 1 - by_n[after] / by_n[n]
            if worst is None or drop > worst["drop"]:
                worst = {
                    "impl": impl,
                    "power": n,
                    "after": after,
                    "gbps_at": by_n[n],
                    "gbps_after": by_n[after],
                    "drop": drop,
                }
        if worst:
            out.append(worst)
    return out


def sweep_table(document: dict) -> list[str]:
    found = series(document, "sweep")
    if not found:
        return []
    copy = document.get("copy_gbps")
    lines = [
        (
            "| implementation | columns timed | median GB/s | lowest GB/s (at columns) | "
            "deepest dip past a power of two |"
        ),
        "|---|---|---|---|---|",
    ]
    dip_of = {d["impl"]: d for d in dips(document)}
    for impl, points in found.items():
        values = sorted(y for _, y in points)
        low = min(points, key=lambda p: p[1])
        dip = dip_of.get(impl)
        dip_text = f"{dip['drop'] * 100:.0f}% ({dip['power']} -> {dip['after']})" if dip else "-"
        median = values[len(values) // 2]
        frac = f" ({median / copy:.2f} of copy)" if isinstance(copy, (int, float)) and copy else ""
        lines.append(
            f"| {impl} | {points[0][0]}-{points[-1][0]} ({len(points)}) | {median:.0f}{frac} | "
            f"{low[1]:.0f} ({low[0]}) | {dip_text} |"
        )
    return lines


# --- seed 003: the vector and the matrix --------------------------------------------------------


def _problem_label(row) -> str:
    shape = row["shape"]
    if len(shape) == 1:
        return f"vector 2^{shape[0].bit_length() - 1}" if shape[0] & (shape[0] - 1) == 0 else f"vector {shape[0]}"
    dims = "x".join(str(s) for s in shape)
    return f"matrix {dims}, dim {row['dim']}"


def vector_matrix_results(document: dict) -> tuple[list[str], dict[str, dict[str, dict]]]:
    """(problems in order, {impl: {problem: row}}) of every vector_matrix row, failures included."""
    problems: list[str] = []
    by_impl: dict[str, dict[str, dict]] = defaultdict(dict)
    for row in document.get("rows", []):
        if row.get("regime") != "vector_matrix":
            continue
        label = _problem_label(row)
        if label not in problems:
            problems.append(label)
        by_impl[row["impl"]][label] = row
    return problems, {impl: by_impl[impl] for impl in impl_order(by_impl)}


def draw_vector_matrix(document: dict, path) -> Path | None:
    problems, by_impl = vector_matrix_results(document)
    if not any(_ok(r) for rows in by_impl.values() for r in rows.values()):
        return None
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(11, 4.8))
    width = 0.8 / max(1, len(by_impl))
    for i, (impl, rows) in enumerate(by_impl.items()):
        xs = [j + (i - (len(by_impl) - 1) / 2) * width for j in range(len(problems))]
        heights = [rows[p]["gbps"] if p in rows and _ok(rows[p]) else 0 for p in problems]
        ax.bar(
            xs,
            heights,
            width=width * 0.95,
            label=impl,
            color=COLOURS.get(impl, "#444444"),
            edgecolor="black" if impl.startswith("fastsoftmax") else "none",
            linewidth=0.8,
        )
        for x, p in zip(xs, problems):
            if p in rows and not _ok(rows[p]):
                ax.text(x, 1.2, rows[p]["status"], rotation=90, ha="center", va="bottom", fontsize=7)
    _ceiling(ax, document.get("copy_gbps"))
    ax.set_yscale("log")
    measured = [r["gbps"] for rows in by_impl.values() for r in rows.values() if _ok(r) and r["gbps"] > 0]
    ax.set_ylim(min([1.0] + [v / 2 for v in measured]), (document.get("copy_gbps") or max(measured)) * 2)
    ax.set_xticks(range(len(problems)))
    ax.set_xticklabels(problems)
    ax.set_ylabel("GB/s, log scale (one read + one write per element)")
    dtype = SHORT_DTYPE.get(_first(document, "dtype"), "")
    ax.set_title(
        f"Seed 003: unfused torch sequence against fused kernels and cuDNN, {dtype}\n{_title_suffix(document)}",
        fontsize=10,
    )
    ax.grid(True, which="major", axis="y", alpha=0.3)
    _legend_outside(ax)
    return _finish(fig, path)


def vector_matrix_table(document: dict) -> list[str]:
    problems, by_impl = vector_matrix_results(document)
    if not problems:
        return []
    lines = ["| implementation | " + " | ".join(problems) + " |", "|---|" + "---|" * len(problems)]
    for impl, rows in by_impl.items():
        cells = []
        for p in problems:
            row = rows.get(p)
            if row is None:
                cells.append("-")
            elif _ok(row):
                cells.append(
                    f"{row['gpu_us']:.0f} us, {row['gbps']:.0f} GB/s ({row['frac_copy']:.2f})"
                    if isinstance(row.get("frac_copy"), (int, float))
                    else f"{row['gbps']:.0f} GB/s"
                )
            else:
                cells.append(row["status"])
        lines.append(f"| {impl} | " + " | ".join(cells) + " |")
    return lines


# --- seed 004: BERT attention rows against cuDNN ------------------------------------------------


def draw_attention(document: dict, path) -> Path | None:
    panels = [(d, series(document, "attention", direction=d)) for d in ("forward", "backward")]
    panels = [(d, found) for d, found in panels if found]
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(7 * len(panels) + 2, 4.8), squeeze=False, sharey=True)
    copy = document.get("copy_gbps")
    rows = _first(document, "shape")
    for ax, (direction, found) in zip(axes[0], panels):
        _lines(ax, found, marker_size=4)
        _ceiling(ax, copy)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("columns per row (log scale)")
        moved = "one read + one write" if direction == "forward" else "two reads + one write"
        ax.set_title(f"{direction} ({moved} per element)", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("GB/s")
    top = max([y for _, found in panels for points in found.values() for _, y in points] + [copy or 0])
    axes[0][0].set_ylim(0, top * 1.08)
    _legend_outside(axes[0][-1])
    dtype = SHORT_DTYPE.get(_first(document, "dtype"), "")
    fig.suptitle(
        f"Seed 004: {rows[0] if rows else '?'} rows (BERT-base attention), {dtype}, against cuDNN - "
        f"{_title_suffix(document)}",
        fontsize=10,
    )
    return _finish(fig, path)


def attention_table(document: dict) -> list[str]:
    lines = []
    for direction in ("forward", "backward"):
        found = series(document, "attention", value="frac_copy", direction=direction)
        if not found:
            continue
        cols = sorted({n for points in found.values() for n, _ in points})
        lines += [
            f"{direction}, fraction of copy bandwidth:",
            "",
            "| implementation | " + " | ".join(str(c) for c in cols) + " |",
            "|---|" + "---|" * len(cols),
        ]
        for impl, points in found.items():
            by_n = dict(points)
            lines.append(f"| {impl} | " + " | ".join(f"{by_n[c]:.2f}" if c in by_n else "-" for c in cols) + " |")
        lines.append("")
    return lines[:-1] if lines else []


# --- seed 000: the ladder -----------------------------------------------------------------------


def ladder_steps(document: dict) -> tuple[list[str], list[int]]:
    names, widths = [], []
    for r in document.get("results", []):
        if r["name"] not in names:
            names.append(r["name"])
        if r["n"] not in widths:
            widths.append(r["n"])
    return names, sorted(widths)


def draw_ladder(document: dict, path) -> Path | None:
    names, widths = ladder_steps(document)
    if not names:
        return None
    plt = pyplot()
    copy = document.get("copy_gbps")
    flops = document.get("flops_per_element", 5)
    fig, ax = plt.subplots(figsize=(12, 4.8))
    width = 0.8 / len(widths)
    colours = plt.get_cmap("viridis")
    for i, n in enumerate(widths):
        by_name = {r["name"]: r["fraction_of_copy"] for r in document["results"] if r["n"] == n}
        xs = [j + (i - (len(widths) - 1) / 2) * width for j in range(len(names))]
        ax.bar(
            xs,
            [by_name.get(name, 0) for name in names],
            width=width * 0.95,
            label=f"{n} columns",
            color=colours(i / max(1, len(widths) - 1) * 0.85),
        )
    ax.axhline(
        1.0,
        color="black",
        linestyle=":",
        linewidth=1.2,
        label="copy bandwidth" + (f" ({copy:.0f} GB/s)" if copy else ""),
    )
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels(names, rotation=20)
    ax.set_ylabel("fraction of copy bandwidth")
    ax.set_ylim(0, 1.15)
    if isinstance(copy, (int, float)) and copy:
        # float32: 8 bytes and `flops` flops per element, so GFLOP/s is a fixed multiple of GB/s
        scale = copy * flops / 8

        def to_gflops(fraction):
            return fraction * scale

        def to_fraction(gflops):
            return gflops / scale

        right = ax.secondary_yaxis("right", functions=(to_gflops, to_fraction))
        right.set_ylabel(f"GFLOP/s at {flops} flops per element")
    ax.set_title(
        f"Seed 000: the kernel ladder, float32, rows of {', '.join(map(str, widths))} columns\n"
        f"{_title_suffix(document)}",
        fontsize=10,
    )
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(loc="upper left", bbox_to_anchor=(1.08, 1.0), fontsize=8, frameon=False)
    return _finish(fig, path)


def ladder_table(document: dict) -> list[str]:
    names, widths = ladder_steps(document)
    if not names:
        return []
    lines = [
        "| step | " + " | ".join(f"{n} cols: GFLOP/s (of copy)" for n in widths) + " |",
        "|---|" + "---|" * len(widths),
    ]
    for name in names:
        cells = []
        for n in widths:
            found = [r for r in document["results"] if r["n"] == n and r["name"] == name]
            cells.append(f"{found[0]['gflops']:.0f} ({found[0]['fraction_of_copy']:.2f})" if found else "-")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return lines


# --- the main suite -----------------------------------------------------------------------------


def draw_main(document: dict, path) -> Path | None:
    """Fraction of copy against row length on the bulk shapes, one panel per dtype."""
    panels = [(d, series(document, "bulk", value="frac_copy", dtype=d)) for d in ALL_DTYPES]
    panels = [(d, found) for d, found in panels if found]
    if not panels:
        return None
    plt = pyplot()
    fig, axes = plt.subplots(1, len(panels), figsize=(5.5 * len(panels) + 2, 4.5), squeeze=False, sharey=True)
    copy = document.get("copy_gbps")
    for ax, (dtype, found) in zip(axes[0], panels):
        _lines(ax, found, marker_size=3)
        ax.axhline(
            1.0,
            color="black",
            linewidth=1.2,
            linestyle=":",
            zorder=1,
            label="copy bandwidth" + (f" ({copy:.0f} GB/s)" if isinstance(copy, (int, float)) else ""),
        )
        ax.set_xscale("log", base=2)
        ax.set_xlabel("columns per row (log scale)")
        ax.set_title(f"forward softmax, {SHORT_DTYPE.get(dtype, dtype)}", fontsize=10)
        ax.grid(True, which="major", alpha=0.3)
    axes[0][0].set_ylabel("fraction of copy bandwidth")
    highest = max(y for _, found in panels for points in found.values() for _, y in points)
    axes[0][0].set_ylim(0, max(1.15, highest * 1.05))
    _legend_outside(axes[0][-1])
    fig.suptitle(f"Bulk rows, 2^27 elements per shape - {_title_suffix(document)}", fontsize=10)
    return _finish(fig, path)


DRAWERS = {
    "main": draw_main,
    "sweep": draw_sweep,
    "vector_matrix": draw_vector_matrix,
    "attention": draw_attention,
    "ladder": draw_ladder,
}
TABLES = {
    "sweep": sweep_table,
    "vector_matrix": vector_matrix_table,
    "attention": attention_table,
    "ladder": ladder_table,
}
