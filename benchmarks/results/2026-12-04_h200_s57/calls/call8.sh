#!/usr/bin/env bash
# which kernels auto launches for the bf16 expand(1, 4096, 4096) log-softmax backward over dim 1 (run
# as one command line; its output is c8/kernels.txt)
PYTHONPATH=$PWD timeout 50 python3 -c "
import torch, fastsoftmax
from fastsoftmax.benchmark import layouts
c=[c for c in layouts.layout_cases() if c.label=='expand(1,4096,4096) d1'][0]
y=c.make(torch.bfloat16,'cuda'); dy=c.make(torch.bfloat16,'cuda')
print(y.shape, y.stride(), dy.stride())
f=lambda: fastsoftmax.softmax_backward(dy,y,1,log=True)
f(); torch.cuda.synchronize()
with torch.profiler.profile() as p:
    f(); torch.cuda.synchronize()
print(sorted({e.name for e in p.events() if e.device_type.name=='CUDA'}))
"
