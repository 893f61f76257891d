"""How well "auto" picks a row's backend at lengths its table did not measure, no GPU needed.

Held-out points (``bench table --row-lengths`` into a copy of a GPU model's table; both kernel backends
timed at each) are the truth; the dispatcher's choice for each (dispatch._table_choice, given the
table as that model's own beside the H100's reference table, as on that GPU, or alone with
``--alone``) is charged its backend's time over the faster one's. For each table (as given; with
``--add`` points merged in; with ``--leave-one-out`` the last of them again, each held-out point judged
with every other one added) and each ``dispatch.ROW_OCTAVE_DISTANCE`` it prints the geometric mean of
that ratio, how many choices lose more than 2% and 5%, and the worst.

    git show ad272207:fastsoftmax/dispatch_table_nvidia-h200.json > /tmp/h200.json  # before the points
    python3 benchmarks/dispatch_heldout.py --table /tmp/h200.json --add results/.../e1/edge_points.json.gz \\
        --heldout results/.../e1/heldout_points.json.gz results/.../e2/heldout_points.json.gz --leave-one-out

A held-out point whose key (table.point_key) the table or the added points hold is left out, and
of one key measured twice the last is kept.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math

import torch

from fastsoftmax import dispatch
from fastsoftmax.benchmark.table import point_key

DTYPES = {"bfloat16": torch.bfloat16, "float16": torch.float16, "float32": torch.float32}


def read(path: str) -> dict:
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as handle:
        return json.load(handle)


def judge(table: dict, truth: list, distance: float, alone: bool = False, one_out: bool = False) -> tuple:
    """(geometric mean of chosen over fastest time, [(ratio, point)] worst first) on ``table``, beside
    the reference table unless ``alone``; ``one_out``: each point judged on the table with every other
    held-out point added to it."""
    points = list(table["points"])
    beside = [] if alone else [(dispatch._points_by_kind(dispatch.TABLE_PATH), dispatch.OTHER_MODEL_DISTANCE)]
    own = dispatch.points_by_kind(points)
    ratios = []
    for i, point in enumerate(truth):
        if one_out:
            own = dispatch.points_by_kind(points + truth[:i] + truth[i + 1 :])
        backward, dtype = point["direction"] == "backward", DTYPES[point["dtype"]]
        choice = dispatch._table_choice(
            backward,
            False,
            dtype,
            point["n"],
            point["numel"],
            tables=[(own, 0.0)] + beside,
            row_octave_distance=distance,
        )
        ratios.append((point["us"][choice] / min(point["us"].values()), point))
    mean = math.exp(sum(math.log(ratio) for ratio, _ in ratios) / len(ratios))
    return mean, sorted(ratios, key=lambda item: -item[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--table", required=True, help="the GPU model's table (JSON)")
    parser.add_argument("--add", nargs="*", default=(), help="points to merge into it for a second judgement")
    parser.add_argument("--heldout", nargs="+", required=True, help="held-out points (JSON, .gz or not)")
    parser.add_argument("--distances", default="0,0.5,1,2", help="ROW_OCTAVE_DISTANCE values, a comma list")
    parser.add_argument("--alone", action="store_true", help="without the reference table beside it")
    parser.add_argument(
        "--leave-one-out",
        action="store_true",
        help="also judge each held-out point on the last table with every other held-out point added",
    )
    parser.add_argument("--worst", type=int, default=8, help="the worst choices printed for each")
    args = parser.parse_args()
    table = read(args.table)
    added = [point for path in args.add for point in read(path)["points"]]
    known = {point_key(p) for p in table["points"] + added}
    truth = {
        point_key(point): point
        for path in args.heldout
        for point in read(path)["points"]
        if point_key(point) not in known and point["layout"] == "row" and len(point.get("us", {})) == 2
    }
    truth = list(truth.values())
    if not truth:
        parser.error("no held-out row point is left: the table or the added points hold every one")
    tables = [("as given", table)]
    if added:
        keys = {point_key(p) for p in added}
        merged = dict(table, points=[p for p in table["points"] if point_key(p) not in keys] + added)
        tables.append((f"with {len(added)} point{'s' * (len(added) > 1)} added", merged))
    print(f"{len(truth)} held-out row points against {args.table} ({table.get('device')})")
    judgements = [(name, document, False) for name, document in tables]
    if args.leave_one_out:
        judgements.append((f"{tables[-1][0]}, the other held-out points added", tables[-1][1], True))
    for name, document, one_out in judgements:
        for distance in (float(text) for text in args.distances.split(",")):
            mean, ratios = judge(document, truth, distance, args.alone, one_out)
            over = [sum(ratio > 1 + margin for ratio, _ in ratios) for margin in (0.02, 0.05)]
            print(
                f"{name}, ROW_OCTAVE_DISTANCE {distance:g}: chosen over fastest {mean:.4f} (geomean), "
                f"{over[0]} lose more than 2%, {over[1]} more than 5%"
            )
            for ratio, p in ratios[: args.worst]:
                times = ", ".join(f"{backend} {us:.1f}" for backend, us in sorted(p["us"].items()))
                print(f"    {p['dtype']} {p['direction']} {p['shape'][0]} x {p['n']}: x{ratio:.2f} ({times} us)")


if __name__ == "__main__":
    main()
