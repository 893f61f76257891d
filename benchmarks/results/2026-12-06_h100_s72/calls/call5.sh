#!/usr/bin/env bash
# call 5: after grid_row's teams landed in tier choice: grid_row's and the strided tiers' GPU tests
# (the team barrier moved to common.cuh), the teams against split_row and cluster_stream on shapes
# call 4 did not time, and compute-sanitizer's four tools over grid_row's problems (its teams) and
# memcheck over strided_staged's persistent teams
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 150 python3 -m fastsoftmax compile --match '^fs_(grid_row|split_row|cluster_stream|strided|staged)_|_columns$' \
  > $R/compile.txt 2>&1; tail -n 1 $R/compile.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest -q --tb=short -n 8 tests/cuda/test_grid_row_gpu.py \
  tests/cuda/test_strided_gpu.py > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,bwd --dtypes bf16,f32 \
  --tiers grid_row,split_row,cluster_stream --shapes 8x1048576,16x1048576,4x2097152,12x2097152 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-230
for tool in memcheck initcheck synccheck racecheck; do
  timeout 55 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    --tiers grid_row --shapes 3x4099,2x1000003,4x3000017 > $R/san_grid_row_$tool.txt 2>&1
  echo "grid_row $tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_grid_row_$tool.txt | tail -n 1)"
done
timeout 60 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
  --tiers strided_staged@7 > $R/san_staged_memcheck.txt 2>&1
echo "staged memcheck rc $?: $(grep -E 'ERROR SUMMARY' $R/san_staged_memcheck.txt | tail -n 1)"
