"""The H100's row points of e3/ (held-out lengths, one piece) and e4/ (the edge lengths, and the main points
of rows held in two pieces, timed with two pieces wherever the second was at most 1/8 of the first)
merged into fastsoftmax/dispatch_table.json as it stood before (be6a38d), each replacing a point of the
same key, their records chained under ``measured_rows`` and ``retimed_main`` as the commands chain them.
A point goes in only where Triton's held kernels now take the pieces it was timed with
(triton.realigned_pieces); the eighty-sixth set's probe rows (size "probe", one piece) stay only where the
kernels still take one piece and no new point stands at their row. Run from the repository root; no GPU
needed."""

import gzip
import json
import subprocess
from pathlib import Path

import fastsoftmax.backends.triton as triton_backend
from fastsoftmax.benchmark.table import point_key

HERE = Path(__file__).parent
TABLE = Path("fastsoftmax/dispatch_table.json")
ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}
SMS = 132  # the H100's


def pieces(point: dict, share: float | None = None) -> tuple[int, int]:
    """The held kernels' pieces at a row point: as shipped, or at ``share`` of any length (0: one piece);
    (0, 0) where Triton takes the row to its walked kernels (the online tier), which hold no body."""
    itemsize, backward = ITEMSIZE[point["dtype"]], point["direction"] == "backward"
    outer = point["shape"][0] if len(point["shape"]) == 2 else point["numel"] // point["n"]
    if triton_backend._choose_tier(outer, point["n"], 1, itemsize, backward, SMS) not in ("tile", "row"):
        return 0, 0
    body = point["n"] // (16 // itemsize) * (16 // itemsize)
    if share is None:
        return triton_backend.realigned_pieces(body, itemsize, backward)
    return triton_backend.tile_pieces(body, share)


def as_timed(point: dict, e4: bool) -> bool:
    """Whether the kernels now run at ``point`` are those it was timed with (e3 and probes: one piece; e4:
    1/8 of any length, but the float32 backward in one piece)."""
    if point["layout"] != "row":
        return True
    share = 0.125 if e4 and not (point["direction"] == "backward" and point["dtype"] == "float32") else 0.0
    return pieces(point) == pieces(point, share)


table = json.loads(subprocess.run(["git", "show", f"be6a38d:{TABLE}"], capture_output=True, check=True).stdout)
probes = [p for p in table["points"] if p.get("size") == "probe"]
table["points"] = [p for p in table["points"] if p.get("size") != "probe" or as_timed(p, False)]
print(f"{TABLE}: {len(probes) - sum(as_timed(p, False) for p in probes)} probe rows timed in one piece left out")
for name in ("e3/heldout_points.json.gz", "e4/edge_points.json.gz"):
    measured = json.loads(gzip.decompress((HERE / name).read_bytes()))
    assert measured["device"] == table["device"], (measured["device"], table["device"])
    points = [p for p in measured["points"] if as_timed(p, name.startswith("e4/"))]
    keys = {point_key(point) for point in points}
    rows = {(p["direction"], p["dtype"], p["n"]) for p in points}
    table["points"] = [
        p
        for p in table["points"]
        if point_key(p) not in keys and not (p.get("size") == "probe" and (p["direction"], p["dtype"], p["n"]) in rows)
    ] + points
    record = dict(measured["measured_rows"])
    if "measured_rows" in table:
        record["earlier"] = table["measured_rows"]
    table["measured_rows"] = record
    print(f"{name}: {len(points)} of {len(measured['points'])} points")
retimed = json.loads(gzip.decompress((HERE / "e4/table.json.gz").read_bytes()))
record = retimed["retimed_main"]
fresh = {point_key(p): p for p in retimed["points"] if p.get("retimed") == record["date"] and as_timed(p, True)}
table["points"] = [fresh.get(point_key(p), p) for p in table["points"]]
table["retimed_main"] = dict(record, merged=len(fresh))  # its earlier record is the table's
print(f"e4/table.json.gz: {len(fresh)} of {record['points']} main points timed again")
table["probe_rows"]["kept"] = sum(p.get("size") == "probe" for p in table["points"])
table["points"].sort(key=lambda point: point.get("size") == "main")  # the grid first, as the table suite writes
TABLE.write_text(json.dumps(table, indent=1) + "\n")
print(f"{TABLE}: {len(table['points'])} points")
