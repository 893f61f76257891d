"""The main suite's figure (fraction of copy bandwidth against row length, one panel per dtype,
the copy ceiling at 1.0). Kept as the entry point the main suite calls; the drawing lives in
``figures``, beside the seeds' figures."""

from __future__ import annotations

from pathlib import Path

from fastsoftmax.benchmark import figures


def bulk_series(document: dict) -> dict[str, dict[str, list[tuple[int, float]]]]:
    """{dtype: {impl: [(cols, fraction of copy), ...] sorted by cols}} from the bulk rows that passed."""
    found = {}
    for dtype in {row.get("dtype") for row in document.get("rows", []) if row.get("regime") == "bulk"}:
        per_impl = figures.series(document, "bulk", value="frac_copy", dtype=dtype)
        if per_impl:
            found[dtype] = per_impl
    return found


def save_plot(document: dict, path) -> Path | None:
    """Draw the figure; None when the document has no bulk rows. Raises figures.MatplotlibMissing
    (its message is the one line to print) when matplotlib is not installed."""
    return figures.draw_main(document, path)
