#!/usr/bin/env bash
# After the sixty-third set's changes: (1) the GPU tests of the one-pass widening (tests/test_widening.py,
# "auto" now takes it from 8M elements) and of the tiers whose experimental forms were removed (grid_row,
# cluster_stream, strided: the L2 prefetches and strided_warp's realigned packs); (2) the widening probe
# again, with "auto" on the new rule, cases about its sizes and the host's time to issue a call.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c9; mkdir -p $R
trap 'tar czf $OUT/c9.tar.gz -C $OUT c9 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 240 python3 -m pytest -q --tb=short -n 8 --dist worksteal \
  tests/test_widening.py tests/cuda/test_grid_row_gpu.py tests/cuda/test_cluster_stream_gpu.py \
  tests/cuda/test_strided_gpu.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
timeout 300 python3 benchmarks/widening_probe.py --out $R/widening.txt > $R/widening.log 2>&1
echo "probe rc $?"; tail -n 2 $R/widening.log | cut -c1-300
