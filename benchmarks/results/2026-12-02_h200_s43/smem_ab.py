"""grid_row_probe with the cluster tier's realign buffer dropped where tuning.cluster_threads == 224
(the default thread count for rows of 50257 at K = 8): A/B of the shared memory alone (tensors that
share every row's phase never realign)."""
import dataclasses
import runpy
import sys

from fastsoftmax.backends.cuda import plans

original = plans.cluster_shape


def patched(*args, **kwargs):
    shape = original(*args, **kwargs)
    if kwargs.get("threads") == 224:
        shape = dataclasses.replace(shape, smem_bytes=0)
    return shape


plans.cluster_shape = patched
sys.argv = ["grid_row_probe.py"] + sys.argv[1:]
sys.path.insert(0, "benchmarks")
runpy.run_path("benchmarks/grid_row_probe.py", run_name="__main__")
