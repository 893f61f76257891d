#!/usr/bin/env bash
# call 6: (1) both backends forced on 16-bit forwards over axes of 36-56 on 16-byte boundaries, wide
# inner sizes, 20-64 MiB (call 1 found Triton's wide tiles behind over an axis of 40: where does the
# padded tile stop paying?), alternated in one process, each output against float64 first; (2) kernel
# by kernel, bf16 (16, 21, 513, 513) over dim 1 forward (the layouts regime's one forward loss to
# torch.compile, c2/): the scalar tile as shipped, under register caps (SCALAR_TILE_16BIT_FORWARD_MAXNREG),
# in one piece, and torch.compile; (3) the backward of 2670 x 50257 in bf16 and fp16 alternated (the main
# run had fp16 at 0.858 of copy against bf16's 1.002)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
timeout 90 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -c "
import statistics, torch, fastsoftmax
from peer_probe import gpu_and_host_us
from probe_report import Report
r = Report(); copy = r.gpu_header()
cases = [((128, 40, 4096), torch.bfloat16), ((512, 40, 1024), torch.float16), ((256, 36, 2048), torch.bfloat16),
         ((256, 44, 2048), torch.bfloat16), ((128, 44, 4096), torch.float16), ((256, 48, 2048), torch.bfloat16),
         ((128, 48, 4096), torch.bfloat16), ((256, 52, 2048), torch.bfloat16), ((128, 56, 4096), torch.bfloat16)]
for shape, dtype in cases:
    x = (torch.randn(shape, device='cuda') * 4).to(dtype)
    ref = torch.softmax(x.double(), 1)
    runs = {name: (lambda b=name: fastsoftmax.softmax(x, 1, backend=b)) for name in ('triton', 'cuda')}
    for name, run in runs.items():
        assert float((run().double() - ref).abs().max()) < 1e-2, (shape, name)
    times = {name: [] for name in runs}
    for _ in range(3):
        for name, run in runs.items():
            times[name].append(gpu_and_host_us(run, 20, spin=20_000_000)[0])
    r.say(f'{shape} {str(dtype)[6:]} forward ' + ' | '.join(
        f'{name} {statistics.median(t):7.1f} us {x.numel() * 4 / (statistics.median(t) * 1e-6) / copy:5.3f}' for name, t in times.items()))
    r.write('$R/short_axes_fill.txt')
" > $R/fill.log 2>&1; echo "rc $?"; tail -n 10 $R/fill.log | cut -c1-200
timeout 120 python3 benchmarks/kernel_breakdown.py --cases "(16,21,513,513) d1" --directions forward \
  --tunings "triton.SCALAR_TILE_16BIT_FORWARD_MAXNREG=40;triton.SCALAR_TILE_16BIT_FORWARD_MAXNREG=48;triton.SCALAR_TILE_16BIT_FORWARD_MAXNREG=64;triton.TWO_PIECE_TILES='none'" \
  > $R/breakdown_odd_forward.txt 2>&1
echo "breakdown rc $?"; grep "a call" $R/breakdown_odd_forward.txt | cut -c1-200
timeout 40 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -c "
import statistics, torch, fastsoftmax
from peer_probe import gpu_and_host_us
from probe_report import Report
r = Report(); copy = r.gpu_header()
runs = {}
for dtype in (torch.bfloat16, torch.float16):
    y = torch.softmax(torch.randn(2670, 50257, device='cuda'), -1).to(dtype)
    dy = torch.randn(2670, 50257, device='cuda').to(dtype)
    runs[str(dtype)[6:]] = (lambda y=y, dy=dy: fastsoftmax.softmax_backward(dy, y, -1))
times = {name: [] for name in runs}
for _ in range(5):
    for name, run in runs.items():
        times[name].append(gpu_and_host_us(run, 20, spin=20_000_000)[0])
r.say('2670 x 50257 backward ' + ' | '.join(f'{k} {statistics.median(t):7.1f} us {2670 * 50257 * 6 / (statistics.median(t) * 1e-6) / copy:5.3f} (all: ' + ' '.join(f'{v:.0f}' for v in t) + ')' for k, t in times.items()))
r.write('$R/vocab_backward.txt')
" > $R/vocab_backward.log 2>&1; echo "rc $?"; tail -n 3 $R/vocab_backward.log | cut -c1-250
