import sys, torch
sys.path.insert(0, "benchmarks")
import grid_band_probe as g
x = (torch.randn((4096, 256), device="cuda") * 3).to(torch.bfloat16)
for flags in (8, 4):
    call = g.runner(torch.bfloat16, 3, 8, 4096, 256, flags)
    call.workspace.fill_(-1.0)
    call(x); torch.cuda.synchronize(); print(flags, call.workspace[:16].tolist(), flush=True)
