"""Kernel forms off the catalogue, compiled for sm_90 on every CPU into the kernel cache, so that
the calls' tests and timings find them there:

    python3 compile_forms.py prefetch   # grid_row and cluster_stream rows at every PREFETCH (and 0)
    python3 compile_forms.py realign    # strided_warp's realigned 16-byte packs, every rows kernel
"""

import multiprocessing
import sys
import time
from concurrent.futures import ProcessPoolExecutor

import torch

from fastsoftmax.backends.cuda import strided
from fastsoftmax.backends.cuda.instances import GRID_ROW_PREFETCH, grid_row_instance
from fastsoftmax.backends.cuda.precompile import _compile_one

DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def forms(family: str) -> list:
    if family == "prefetch":
        return [
            grid_row_instance(dtype, backward, log, tier, per_sm, prefetch=prefetch)
            for tier, per_sm in (("grid_row", 1), ("cluster_stream", 1), ("cluster_stream", 2))
            for dtype in DTYPES
            for backward in (False, True)
            for log in (False, True)
            for prefetch in range(GRID_ROW_PREFETCH + 1)
        ]
    if family == "realign":
        return [
            strided.WarpColumnsInstance(dtype, backward, log, 16 // dtype.itemsize, rows, realign=True)
            for dtype in DTYPES
            for backward in (False, True)
            for log in (False, True)
            for rows in strided.WARP_COLUMNS_ROWS[backward]
        ]
    raise SystemExit(f"unknown family {family!r}: prefetch or realign")


if __name__ == "__main__":
    jobs = [("sm_90", inst) for family in sys.argv[1:] for inst in forms(family)]
    start = time.time()
    with ProcessPoolExecutor(mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = [error for error in pool.map(_compile_one, jobs) if error]
    print(f"{len(jobs)} instances in {time.time() - start:.0f} s; errors: {errors}")
