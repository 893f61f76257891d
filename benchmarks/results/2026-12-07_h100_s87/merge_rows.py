"""The H100's row points of e3/ (held-out lengths; the edge lengths too where e4/ did not measure them
again) and e4/ (the edge lengths, with the held realigned kernels' two pieces) merged into
fastsoftmax/dispatch_table.json, each replacing a point of the same key, their records chained under
``measured_rows`` as the command chains them. A point of e3/ timed Triton's held kernels in one piece
where they now take two (triton.REALIGNED_TWO_PIECES_MAX_TAIL, tile_pieces) is left out: its time is no
longer that of the kernel run there, and so are the eighty-sixth set's probe rows (size "probe") of such
lengths; the others go where an edge point now stands. Run from the repository root on the table as
committed before it (be6a38d); no GPU needed."""

import gzip
import json
from pathlib import Path

import fastsoftmax.backends.triton as triton_backend
from fastsoftmax.benchmark.table import point_key

HERE = Path(__file__).parent
TABLE = Path("fastsoftmax/dispatch_table.json")
ITEMSIZE = {"bfloat16": 2, "float16": 2, "float32": 4}


def two_pieces(point: dict) -> bool:
    itemsize = ITEMSIZE[point["dtype"]]
    body = point["n"] // (16 // itemsize) * (16 // itemsize)
    max_tail = triton_backend.REALIGNED_TWO_PIECES_MAX_TAIL[point["direction"] == "backward", itemsize]
    return triton_backend.tile_pieces(body, max_tail)[1] != 0


def read(name: str) -> dict:
    return json.loads(gzip.decompress((HERE / name).read_bytes()))


table = json.loads(TABLE.read_text())
stale = [p for p in table["points"] if p.get("size") == "probe" and two_pieces(p)]
table["points"] = [p for p in table["points"] if not (p.get("size") == "probe" and two_pieces(p))]
print(f"{TABLE}: {len(stale)} probe rows timed in one piece left out")
sources = ["e3/heldout_points.json.gz"]
sources += ["e4/edge_points.json.gz"] if (HERE / "e4/edge_points.json.gz").exists() else ["e3/edge_points.json.gz"]
for name in sources:
    measured = read(name)
    assert measured["device"] == table["device"], (measured["device"], table["device"])
    points = [p for p in measured["points"] if name.startswith("e4/") or not two_pieces(p)]
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
table["points"].sort(key=lambda point: point.get("size") == "main")  # the grid first, as the table suite writes
TABLE.write_text(json.dumps(table, indent=1) + "\n")
print(f"{TABLE}: {len(table['points'])} points")
