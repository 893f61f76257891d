#!/usr/bin/env bash
# call 1: (a) the bf16 channel forward of (8, 21, 255, 255) over dim 1, 0.683 of copy in the sixty-ninth
# set's layouts run and 0.387 in the seventy-third's: its kernels and time through "auto" beside
# (16, 21, 513, 513), then strided_staged as planned against no staggered first wave (staged_stagger_us=0,
# the seventy-first set's change) and against 8 us, forced and alternated behind an L2 flush;
# (b) the GPU tests of the seventy-third set's final few-rows rule and tests/gpu; (c) the cluster tier's
# forward past its preferred length at 8-15 float32 rows and 4-7 16-bit rows (the prepared call 9 of
# the seventy-third set)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
python3 -c "import torch, triton, cuda.core; print(torch.__version__, triton.__version__, cuda.core.__version__)" >> $R/device.txt 2>&1
timeout 100 python3 -m fastsoftmax compile --match '^fs_(cluster|cluster_stream|grid_row|split_row|strided_staged)_' > $R/compile.txt 2>&1
echo "compile rc $?"
timeout 60 python3 - > $R/channel_kernels.txt 2>&1 <<'PY'
import torch
import fastsoftmax
from fastsoftmax.benchmark.layouts import LayoutCase, input_sets, time_ms
from torch.profiler import ProfilerActivity, profile

for shape in ((8, 21, 255, 255), (16, 21, 513, 513)):
    case = LayoutCase("channel", str(shape), shape, 1)
    inputs = input_sets(case, torch.bfloat16, False)
    fn = lambda x: fastsoftmax.softmax(x, 1)
    compiled = torch.compile(lambda x: torch.softmax(x, 1))
    for name, f in (("fastsoftmax", fn), ("torch.compile", compiled), ("fastsoftmax", fn)):
        ms = time_ms(f, inputs)
        print(shape, name, f"{ms * 1e3:.1f} us a call", flush=True)
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn(*inputs[0])
        torch.cuda.synchronize()
    kernels = [(e.name, e.device_time) for e in prof.events() if e.device_time > 0]
    print(shape, "kernels:", kernels, flush=True)
PY
tail -n 8 $R/channel_kernels.txt | cut -c1-400
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/stagger --directions fwd,bwd --dtypes bf16,f32 \
  --tiers strided_staged,strided_staged:staged_stagger_us=0,strided_staged:staged_stagger_us=8 \
  --shapes 8x21x65025,16x21x263169 > $R/stagger_ab.txt 2>&1
echo "stagger probe rc $?"; sed -n '/==== summary/,$p' $R/stagger_ab.txt | cut -c1-230
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest -q --tb=short -n 4 \
  tests/cuda/test_cuda_gpu.py -k "few_long or chosen" tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"
timeout 80 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd32 --directions fwd,log --dtypes f32 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 8x300000,10x393216,14x262400,15x524160 > $R/fwd32.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd32.txt | cut -c1-230
timeout 80 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd16 --directions fwd --dtypes bf16,f16 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 4x600000,5x1048320,6x524800,7x900000 > $R/fwd16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd16.txt | cut -c1-230
