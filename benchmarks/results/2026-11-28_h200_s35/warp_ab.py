"""The strided_warp A/B of this set, kept with its results: per shape, the kernels of c114ec3 (the
folder scratch/base_kernels: `git archive c114ec3 fastsoftmax/backends/cuda/kernels`, tiers base/...)
at the split and rows a lane c114ec3 chose (rows 4, 8 or 16), against this tree's kernels and
choices and forced variants (MODE=lb: launch bounds of three and four CTAs an SM; MODE=confirm: the
final comparison), alternated call by call in one process through benchmarks/grid_row_probe.py's
checked A/B (float64 check on poisoned outputs first).

    PYTHONPATH=$PWD [MODE=lb|confirm] python3 warp_ab.py 8x150x16384,4x96x65536 bf16,f16 fwd,log,bwd
"""
import os, sys, time
import torch
sys.path.insert(0, "benchmarks")
import grid_row_probe as g
from fastsoftmax.backends.cuda import BACKEND, strided
from fastsoftmax.benchmark.timing import copy_bandwidth_gbps

OLD_ROWS = {False: (4, 8, 16), True: (4, 8)}
out = os.environ.get("OUT", ".") + "/warp_ab"
os.makedirs(out, exist_ok=True)
g.LOG_FILE.append(open(f"{out}/warp_ab_{sys.argv[2]}_{sys.argv[3]}.txt".replace(",", "-"), "w"))
g.BASELINES["base"] = g.baseline_backend(
    "scratch/base_kernels", [("__launch_bounds__(256, 3)", "__launch_bounds__(256)")])
g.BASELINES["lb3"] = g.baseline_backend(
    "fastsoftmax/backends/cuda/kernels", [("__launch_bounds__(256)", "__launch_bounds__(256, 3)")])
g.BASELINES["lb4"] = g.baseline_backend(
    "fastsoftmax/backends/cuda/kernels", [("__launch_bounds__(256)", "__launch_bounds__(256, 4)")])
copy = copy_bandwidth_gbps()
g.say(f"{torch.cuda.get_device_name()} copy {copy:.0f} GB/s")
shapes = [tuple(int(v) for v in s.split("x")) for s in sys.argv[1].split(",")]
dtypes = {"bf16": torch.bfloat16, "f16": torch.float16, "f32": torch.float32}
for direction in sys.argv[3].split(","):
    backward, log = direction == "bwd", direction == "log"
    for tag in sys.argv[2].split(","):
        dtype = dtypes[tag]
        for shape in shapes:
            o, n, inner = shape
            item = dtype.itemsize
            pack = 16 // item
            old = strided.warp_columns_shape(n, inner, item, pack, backward)  # split as before
            rows_old = next(r for r in OLD_ROWS[backward] if r * (32 // old.lanes) * old.row_warps >= n)
            pin = f"strided_warp_lanes={old.lanes}:strided_warp_row_warps={old.row_warps}"
            if os.environ.get("MODE") == "confirm":
                tiers = [f"base/strided_warp:{pin}:strided_warp_rows={rows_old}", "strided_warp",
                         "strided_warp:strided_warp_row_warps=8"]
            elif os.environ.get("MODE") == "lb":
                tiers = ["strided_warp", "lb3/strided_warp", "strided_warp:strided_warp_row_warps=8",
                         "lb3/strided_warp:strided_warp_row_warps=8", "lb4/strided_warp:strided_warp_row_warps=8"]
                if not backward:
                    tiers += ["strided_warp:strided_warp_row_warps=2", "strided_staged"]
            else:
                tiers = [f"base/strided_warp:{pin}:strided_warp_rows={rows_old}",
                         f"strided_warp:{pin}:strided_warp_rows={rows_old}",
                         "strided_warp", "base/strided_warp"]
                if not backward:
                    tiers += ["lb3/strided_warp", "lb4/strided_warp:strided_warp_row_warps=8",
                              "strided_warp:strided_warp_row_warps=8", "strided_warp:strided_warp_row_warps=2"]
                tiers += ["strided_staged"]
            g.say(f"# {tag} {direction} {shape}: auto {old}, before rows {rows_old}")
            try:
                g.ab(BACKEND, copy, shape, dtype, backward, log, 40, tiers)
            except Exception as exc:
                g.say(f"  failed: {exc!r}")
