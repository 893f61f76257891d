#!/usr/bin/env bash
# After the sixty-third set's changes: (1) the GPU tests of the one-pass widening (tests/test_widening.py,
# "auto" now takes it from 8M elements) and of the tiers whose experimental forms were removed (grid_row,
# cluster_stream, strided: the L2 prefetches and strided_warp's realigned packs); (2) the widening probe
# again, with "auto" on the new rule, cases about its sizes and the host's time to issue a call.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c9; mkdir -p $R
trap 'tar czf $OUT/c9.tar.gz -C $OUT c9 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 150 python3 -m pytest -q --tb=short -n 8 --dist worksteal \
  tests/test_widening.py tests/cuda/test_grid_row_gpu.py tests/cuda/test_cluster_stream_gpu.py \
  tests/cuda/test_strided_gpu.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
timeout 240 python3 benchmarks/widening_probe.py --out $R/widening.txt > $R/widening.log 2>&1
echo "probe rc $?"; tail -n 2 $R/widening.log | cut -c1-300
# (3) the one pass's Triton kernels (now taken by "auto") under compute-sanitizer, while time lasts:
# tests/test_widening.py calls them over rows, transposed, stepped, channels-last and middle-dim views
# in both 16-bit types, forward and backward, each result against float64
for tool in memcheck initcheck racecheck synccheck; do
  (( SECONDS > 480 )) && { echo "skipped $tool: time"; continue; }
  timeout 100 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 -m pytest -q -x -p no:xdist -p no:cacheprovider tests/test_widening.py -k "one_pass_each_way" \
    > $R/san_widening_$tool.txt 2>&1
  echo "$tool widening rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" $R/san_widening_$tool.txt | tail -n 2
done
