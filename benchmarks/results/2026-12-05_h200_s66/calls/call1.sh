#!/usr/bin/env bash
# The first device call of the sixty-sixth set: (1) the GPU tests of
# the sixty-fourth to sixty-sixth sets' changes (the Triton launch path, the plans of calls with
# dtype= or under autocast, the one pass, threads and CUDA graphs with float32 results, the
# distributed kernels on one GPU, the torch.func wrappers); (2) the Triton launch path on whole calls
# against the one before the sixty-fifth set (launch_92bdadd.py, alternated in one process); (3) the
# channel head's one-pass forward beside the plain forms with the kernels each launches, and under
# several tile shapes (--sweep); (4) every Triton tier under compute-sanitizer's memcheck and
# racecheck. What does not fit is in call2.sh.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/device.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 170 python3 -m pytest -q --tb=short -n 8 --dist worksteal \
  tests/test_triton_launch.py tests/gpu tests/test_repeated_calls.py tests/test_widening.py tests/test_backward.py \
  tests/distributed/test_distributed_kernels.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
timeout 80 python3 benchmarks/triton_launch_probe.py --against benchmarks/results/2026-12-05_cpu_s65/calls/launch_92bdadd.py \
  --out $R/triton_launch.txt > $R/triton_launch.log 2>&1
echo "launch probe rc $?"; tail -n 10 $R/triton_launch.log | cut -c1-200
timeout 100 python3 benchmarks/widening_tile_probe.py --kernels --sweep --out $R/widening_tile.txt > $R/widening_tile.log 2>&1
echo "tile probe rc $?"; tail -n 5 $R/widening_tile.log | cut -c1-300
timeout 60 python3 benchmarks/sanitize_triton.py --tiers > $R/tiers_plain_run.txt 2>&1
echo "tiers rc $?"; tail -n 1 $R/tiers_plain_run.txt
for tool in memcheck racecheck; do
  (( SECONDS > ${DEADLINE:-585} - 55 )) && { echo "skipped $tool: time"; continue; }
  timeout $(( ${DEADLINE:-585} - SECONDS )) compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize_triton.py --tiers > $R/san_tiers_$tool.txt 2>&1
  echo "$tool tiers rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong results" $R/san_tiers_$tool.txt | tail -n 2
done
