#!/usr/bin/env bash
# call 7: after tier choice gave grid_row's teams 2-32 rows from 8 MiB in all (and teams wherever they
# hold the rows grid_row runs): grid_row's GPU tests, cluster_stream's choice test, the determinism
# tests (8 x 2^21 through the teams added), and compute-sanitizer's four tools over grid_row's tuned
# parts (teams forced on and off) and memcheck over its own problems
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 90 python3 -m fastsoftmax compile --match '^fs_(grid_row|cluster_stream|split_row|cluster)_' > $R/compile.txt 2>&1
tail -n 1 $R/compile.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest -q --tb=short -n 4 tests/cuda/test_grid_row_gpu.py \
  tests/cuda/test_cluster_stream_gpu.py tests/gpu/test_determinism.py > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
for part in 1 2; do
  for tool in memcheck racecheck synccheck initcheck; do
    timeout 40 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
      --tiers grid_row@$part > $R/san_grid_row${part}_$tool.txt 2>&1
    echo "grid_row@$part $tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_grid_row${part}_$tool.txt | tail -n 1)"
  done
done
timeout 60 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
  --tiers grid_row@0 > $R/san_grid_row0_memcheck.txt 2>&1
echo "grid_row@0 memcheck rc $?: $(grep -E 'ERROR SUMMARY' $R/san_grid_row0_memcheck.txt | tail -n 1)"
