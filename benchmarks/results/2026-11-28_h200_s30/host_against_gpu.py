"""bf16 (8,150,127,127) over dim 1 forward: the layouts regime's timer against do_bench, per backend."""
import sys

import torch

import fastsoftmax
from fastsoftmax.benchmark import layouts
from fastsoftmax.benchmark.timing import host_us_per_call, median_ms

sys.path.insert(0, "benchmarks")
from kernel_breakdown import breakdown  # noqa: E402

case = next(c for c in layouts.layout_cases() if c.label == "(8,150,127,127) d1")
for dtype in (torch.bfloat16, torch.float32):
    sets = layouts.input_sets(case, dtype, False)
    x0 = sets[0][0]
    print(dtype, "sets", len(sets), x0.shape, x0.stride(), x0.data_ptr() % 16, flush=True)
    for b in ("auto", "triton", "cuda"):

        def fn(x, b=b):
            return fastsoftmax.softmax(x, 1, backend=b)

        loop = layouts.time_ms(fn, sets)
        single = median_ms(lambda b=b: fn(x0, b))
        host = host_us_per_call(lambda b=b: fn(x0, b), 300)
        kernels, _ = breakdown(fn, sets, 20)
        print(f"  {b:6} loop {loop * 1e3:7.1f} us  do_bench {single * 1e3:7.1f} us  host {host:6.1f} us  kernels {kernels}", flush=True)
