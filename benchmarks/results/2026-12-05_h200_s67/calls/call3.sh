#!/usr/bin/env bash
# The third device call, after the backward's wide tiles went to 64 elements a thread: (1) the GPU
# tests of the Triton tiles and every strided layout; (2) the backward's wide tiles at 32 against 64
# a thread on nine more shapes over dim 1 (softmax: bf16, the one pass from float32, float32); (3) every
# Triton tier under compute-sanitizer's racecheck, initcheck and synccheck while the deadline allows; (4) both
# backends as planned on 16-bit problems over short axes (32-128) of wide inner sizes, for a rule
# that would give them Triton's tiles.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
DEADLINE=${DEADLINE:-360}
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 110 python3 -m pytest -q --tb=short -n 8 --dist worksteal \
  tests/gpu/test_triton_gpu.py tests/test_strided_layouts.py tests/test_widening.py tests/test_backward.py \
  > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
timeout 100 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -c "
import widening_tile_probe as w
from probe_report import Report
w.SWEEP = [(4096, 32), (4096, 64)]
w.ROUNDS = 3
r = Report(); copy = r.gpu_header()
for cases in [[((64, 512, 1024), 1, False), ((128, 64, 4096), 1, False), ((32, 256, 2048), 1, False)],
              [((16, 1024, 256), 1, False), ((512, 32, 1024), 1, False), ((8, 2048, 128), 1, False)],
              [((128, 1024, 1024), 1, False), ((4096, 64, 512), 1, False), ((128, 2048, 512), 1, False)]]:
    w.CASES = cases
    w._sweep(False, copy, r.say, True)
    r.write('$R/sweep_backward_more.txt')
" > $R/sweep_backward_more.log 2>&1
echo "backward sweep rc $?"; tail -n 2 $R/sweep_backward_more.log | cut -c1-200
for tool in racecheck initcheck synccheck; do
  (( SECONDS > DEADLINE - 150 )) && { echo "$tool skipped: time"; continue; }
  timeout 70 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize_triton.py --tiers > $R/san_tiers_$tool.txt 2>&1
  echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong results" $R/san_tiers_$tool.txt | tail -n 2
done
(( SECONDS < DEADLINE - 40 )) && timeout $(( DEADLINE - SECONDS )) python3 benchmarks/triton_tile_probe.py \
  --cases "256,48,2048:1;1024,32,512:1;64,64,8192:1;2048,40,1024:1;256,128,1024:1" --dtypes bfloat16 \
  --blocks 64 --warps 2 --rounds 3 > $R/tile_probe_short_axes.txt 2>&1
echo "probe rc $?"; grep -E "triton|cuda" $R/tile_probe_short_axes.txt | grep -v "tile BLOCK" | cut -c1-100
