"""The grid_row and cluster_stream row kernels of every prefetch form (and the default ones), compiled
for sm_90 on every CPU into the kernel cache, so that the calls' tests and timings find them there."""

import multiprocessing
import time
from concurrent.futures import ProcessPoolExecutor

import torch

from fastsoftmax.backends.cuda.instances import GRID_ROW_PREFETCH, grid_row_instance
from fastsoftmax.backends.cuda.precompile import _compile_one

if __name__ == "__main__":
    forms = (("grid_row", 1), ("cluster_stream", 1), ("cluster_stream", 2))
    dtypes = (torch.float32, torch.float16, torch.bfloat16)
    jobs = [
        ("sm_90", grid_row_instance(dtype, backward, log, tier, per_sm, prefetch=prefetch))
        for tier, per_sm in forms
        for dtype in dtypes
        for backward in (False, True)
        for log in (False, True)
        for prefetch in range(GRID_ROW_PREFETCH + 1)
    ]
    start = time.time()
    with ProcessPoolExecutor(mp_context=multiprocessing.get_context("spawn")) as pool:
        errors = [error for error in pool.map(_compile_one, jobs) if error]
    print(f"{len(jobs)} instances in {time.time() - start:.0f} s; errors: {errors}")
