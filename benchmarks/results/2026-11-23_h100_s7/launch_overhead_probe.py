import torch, time
from fastsoftmax.backends.cuda import BACKEND
def t(fn, spin):
    s,e=torch.cuda.Event(enable_timing=True),torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(spin); s.record(); fn(); e.record(); e.synchronize(); return s.elapsed_time(e)*1000
for dt in (torch.bfloat16, torch.float32):
    x=torch.randn(1,1<<24,device='cuda').to(dt); y=torch.empty_like(x)
    for tier in ('split_row','grid_row'):
        f=lambda: BACKEND.forward(x.unsqueeze(2), y.unsqueeze(2), False, tier)
        f(); torch.cuda.synchronize()
        g=torch.cuda.CUDAGraph()
        with torch.cuda.graph(g): f()
        r={}
        for spin in (100_000, 2_000_000):
            r[f'eager spin{spin}']=sorted(t(f,spin) for _ in range(15))[7]
        r['graph']=sorted(t(g.replay,2_000_000) for _ in range(15))[7]
        h=time.perf_counter(); [f() for _ in range(50)]; h=(time.perf_counter()-h)/50*1e6; torch.cuda.synchronize()
        print(dt, tier, {k:round(v,1) for k,v in r.items()}, 'host us/call', round(h,1), flush=True)
