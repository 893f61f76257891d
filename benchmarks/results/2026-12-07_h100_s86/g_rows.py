"""The H100 rows of g1 (the eighty-fifth set) and g2 (this set) as held-out points for
benchmarks/dispatch_heldout.py (g_rows_points.json.gz): each row's CUDA backend time and Triton's at the
count REALIGNED_HELD_ELEMS_PER_THREAD now gives (g1's "realigned" column ran 16 a thread, its others
the count they name; g2's "realigned" is the table's). Run from the repository root; no GPU needed."""

import gzip
import json
import re
from pathlib import Path

from fastsoftmax.backends import triton

HERE = Path(__file__).parent
FILES = [HERE.parent / f"2026-12-07_h100_s85/g1_{t}/realigned_elems.txt" for t in ("bfloat16", "float32")]
FILES += [HERE / f"g2_{t}/realigned_elems.txt" for t in ("bfloat16", "float32")]
LINE = re.compile(r"(\w+) (\d+)x(\d+) (forward|backward) (.*)")

points = []
for path in FILES:
    for line in path.read_text().splitlines():
        match = LINE.match(line)
        if not match:
            continue
        dtype, outer, n, direction = match[1], int(match[2]), int(match[3]), match[4]
        times = {name: float(us) for name, us in re.findall(r"(\S+) ([\d.]+)", match[5])}
        itemsize, backward = (2 if dtype == "bfloat16" else 4), direction == "backward"
        tier = "tile" if triton._pow2(n) <= 1024 else "row"
        block_n = dict(triton.realigned_plan(tier, outer, n, itemsize, backward, 132, False)["configs"][0])["BLOCK_N"]
        steps = triton.REALIGNED_HELD_ELEMS_PER_THREAD[backward, itemsize]
        per_thread = next(elems for most, elems in steps if block_n * itemsize <= most)
        from_g1 = "g1_" in str(path)
        column = "realigned" if (per_thread == 16 if from_g1 else True) else f"realigned@{per_thread}"
        us = {"triton": times[column], "cuda": times["cuda"]}
        key = dict(direction=direction, layout="row", dtype=dtype, n=n, size="probe")
        points.append(dict(key, numel=outer * n, shape=[outer, n], us=us, source=path.parent.name))
document = json.dumps({"device": "NVIDIA H100 80GB HBM3", "points": points})
(HERE / "g_rows_points.json.gz").write_bytes(gzip.compress(document.encode(), compresslevel=9, mtime=0))
print(f"{len(points)} points")
