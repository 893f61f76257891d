"""The H200's row points of e1/ and e2/ (edge lengths and 183 lengths drawn at random, measured with
``bench table --row-lengths`` on this set's code) merged into fastsoftmax/dispatch_table_nvidia-h200.json,
each replacing a point of the same key, in the order they were measured, their records chained under
``measured_rows`` as the command chains them. Run from the repository root; no GPU needed."""

import gzip
import json
from pathlib import Path

from fastsoftmax.benchmark.table import point_key

HERE = Path(__file__).parent
TABLE = Path("fastsoftmax/dispatch_table_nvidia-h200.json")

table = json.loads(TABLE.read_text())
for name in ("e1/edge_points.json.gz", "e1/heldout_points.json.gz", "e2/heldout_points.json.gz"):
    measured = json.loads(gzip.decompress((HERE / name).read_bytes()))
    assert measured["device"] == table["device"], (measured["device"], table["device"])
    keys = {point_key(point) for point in measured["points"]}
    table["points"] = [p for p in table["points"] if point_key(p) not in keys] + measured["points"]
    record = dict(measured["measured_rows"])
    if "measured_rows" in table:
        record["earlier"] = table["measured_rows"]
    table["measured_rows"] = record
    print(f"{name}: {len(measured['points'])} points ({record['lengths'][:40]}...)")
table["points"].sort(key=lambda point: point.get("size") == "main")  # the grid first, as the table suite writes
TABLE.write_text(json.dumps(table, indent=1) + "\n")
print(f"{TABLE}: {len(table['points'])} points")
