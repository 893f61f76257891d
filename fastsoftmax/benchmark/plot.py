"""Fraction of copy bandwidth against row length, one panel per dtype, with the copy ceiling at 1.0
(the figure of seed 004, on the bulk shape set). matplotlib is imported only here, only when asked."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from fastsoftmax.benchmark.shapes import ALL_DTYPES, SHORT_DTYPE


def bulk_series(document: dict) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """{dtype: {impl: [(cols, fraction of copy), ...] sorted by cols}} from the bulk rows that passed."""
    series: dict[str, dict[str, list]] = defaultdict(lambda: defaultdict(list))
    for row in document.get("rows", []):
        if row.get("regime") == "bulk" and row["status"] == "ok" and row.get("frac_copy"):
            series[row["dtype"]][row["impl"]].append((row["n"], row["frac_copy"]))
    return {d: {i: sorted(points) for i, points in impls.items()} for d, impls in series.items()}


def save_plot(document: dict, path) -> Path | None:
    series = bulk_series(document)
    if not series:
        return None
    import matplotlib

    matplotlib.use("Agg")  # files only; the device machine has no display
    import matplotlib.pyplot as plt

    dtypes = [d for d in ALL_DTYPES if d in series]
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6 * len(dtypes), 4.5), squeeze=False, sharey=True)
    copy = document.get("copy_gbps")
    for ax, dtype in zip(axes[0], dtypes, strict=False):
        for impl, points in series[dtype].items():
            cols, fractions = zip(*points, strict=True)
            own = impl.startswith("fastsoftmax")
            ax.plot(cols, fractions, marker="o", markersize=3,
                    linewidth=2.0 if own else 1.2, linestyle="-" if own else "--", label=impl)
        ceiling = "copy" + (f" ({copy:.0f} GB/s)" if isinstance(copy, (int, float)) else "")
        ax.axhline(1.0, color="black", linewidth=1, linestyle=":", label=ceiling)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("cols (rows = total // cols)")
        ax.set_title(f"forward softmax, {SHORT_DTYPE.get(dtype, dtype)}")
        ax.grid(True, which="both", alpha=0.3)
    axes[0][0].set_ylabel("fraction of copy bandwidth")
    highest = max(f for impls in series.values() for points in impls.values() for _, f in points)
    axes[0][0].set_ylim(0, max(1.15, highest * 1.05))
    axes[0][-1].legend(loc="lower left", fontsize=8)
    fig.suptitle(f"{document.get('device', '')}  {document.get('date', '')[:10]}")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path
