"""The H100 rows of g_rows_points.json.gz (rows of 20-12345 at 2^26 elements, both backends alternated in one
process by benchmarks/triton_offsets_probe.py in the eighty-fifth set's g1 and this set's g2, Triton at the
count the held kernels now take; ``size`` "probe") merged into fastsoftmax/dispatch_table.json, each replacing
a point of the same key, with a record under ``probe_rows``: rows just past a power of two (519, 1025, 1031)
that the table's grid and main points decide wrongly until its edge points are measured. Run from the
repository root; no GPU needed."""

import gzip
import json
from pathlib import Path

from fastsoftmax.benchmark.table import point_key

HERE = Path(__file__).parent
TABLE = Path("fastsoftmax/dispatch_table.json")

table = json.loads(TABLE.read_text())
measured = json.loads(gzip.decompress((HERE / "g_rows_points.json.gz").read_bytes()))
assert measured["device"] == table["device"], (measured["device"], table["device"])
keys = {point_key(point) for point in measured["points"]}
table["points"] = [p for p in table["points"] if point_key(p) not in keys] + measured["points"]
table["points"].sort(key=lambda point: point.get("size") == "main")  # the grid first, as the table suite writes
table["probe_rows"] = {
    "source": "benchmarks/results/2026-12-07_h100_s86/g_rows_points.json.gz (g_rows.py)",
    "points": len(measured["points"]),
}
TABLE.write_text(json.dumps(table, indent=1) + "\n")
print(f"{TABLE}: {len(table['points'])} points, {len(measured['points'])} of them the probe's")
