import sys, torch
sys.path.insert(0, "benchmarks")
import grid_band_probe as g
x = (torch.randn((4096, 256), device="cuda") * 3).to(torch.bfloat16)
for flags in (4,):
    call = g.runner(torch.bfloat16, 3, 8, 4096, 256, flags)
    call.workspace.fill_(-1.0)
    call(x); torch.cuda.synchronize(); print(flags, call.workspace[:16].tolist(), flush=True)
for n, inner in ((4096, 256), (65536, 2048)):
    x = (torch.randn((n, inner), device="cuda") * 3).to(torch.bfloat16)
    call = g.runner(torch.bfloat16, 3, 8, n, inner, 0)
    y = call(x); torch.cuda.synchronize()
    ref = torch.softmax(x.double(), 0)
    print(n, inner, "nan", torch.isnan(y).sum().item(), "maxerr", (y.double() - ref).abs().max().item(), flush=True)
