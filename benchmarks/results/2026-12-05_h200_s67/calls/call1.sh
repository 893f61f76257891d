#!/usr/bin/env bash
# The first device call of the sixty-seventh set, at Triton's wide tiles of 64 elements a thread
# forward (the sixty-sixth set's change): (1) the GPU tests of the Triton tiles and of every strided
# layout (tests/gpu/test_triton_gpu.py, tests/test_strided_layouts.py, tests/test_widening.py,
# tests/test_backward.py); (2) both backends as planned and torch.compile, alternated in one process, on
# the shapes whose Triton forward the change sped up, with tile shapes around the plan's; (3) the
# backward's wide tiles swept (elements a thread, TILE_TARGET); (4) every Triton tier under
# compute-sanitizer's memcheck.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
DEADLINE=${DEADLINE:-570}
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/device.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 170 python3 -m pytest -q --tb=short -n 8 --dist worksteal \
  tests/gpu/test_triton_gpu.py tests/test_strided_layouts.py tests/test_widening.py tests/test_backward.py \
  > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
timeout 150 python3 benchmarks/triton_tile_probe.py --cases "4096,64,512:1;512,32,1024:1;128,64,4096:1;16,21,512,512:1" \
  --dtypes bfloat16,float32 --blocks 64,128 --warps 2,4 > $R/tile_probe.txt 2>&1
echo "tile probe rc $?"; tail -n 4 $R/tile_probe.txt | cut -c1-250
timeout 110 python3 benchmarks/widening_tile_probe.py --sweep --backward --out $R/sweep_backward.txt > $R/sweep_backward.log 2>&1
echo "backward sweep rc $?"; tail -n 3 $R/sweep_backward.log | cut -c1-250
timeout 50 python3 benchmarks/sanitize_triton.py --tiers > $R/tiers_plain_run.txt 2>&1
echo "tiers rc $?"; tail -n 1 $R/tiers_plain_run.txt
if (( SECONDS < DEADLINE - 60 )); then
  timeout $(( DEADLINE - SECONDS )) compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize_triton.py --tiers > $R/san_tiers_memcheck.txt 2>&1
  echo "memcheck rc $?"; grep -E "ERROR SUMMARY|wrong results" $R/san_tiers_memcheck.txt | tail -n 2
else echo "memcheck skipped: time"; fi
