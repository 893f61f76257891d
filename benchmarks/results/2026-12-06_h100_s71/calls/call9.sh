#!/usr/bin/env bash
# call 9: the GPU tests after this set's changes: the strided tiers' file whole (its kernels compiled
# on every CPU first; test_wider_tiles as mended), then tests/gpu (the public API under threads and
# CUDA graphs, determinism, Triton), until DEADLINE
set -u
DEADLINE=${DEADLINE:-400}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c9; mkdir -p $R
trap 'tar czf $OUT/c9.tar.gz -C $OUT c9 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 150 python3 -m fastsoftmax compile --match '^fs_(strided|staged)_|_columns$' > $R/compile.txt 2>&1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest -q --tb=short -n 8 tests/cuda/test_strided_gpu.py \
  > $R/strided_tests.txt 2>&1
echo "strided: $(tail -n 1 $R/strided_tests.txt)"; grep -h "^FAILED" $R/strided_tests.txt | head
FASTSOFTMAX_TEST_LOG=$R/failures_gpu.txt timeout $(( DEADLINE - SECONDS )) python3 -m pytest -q --tb=short -n 4 tests/gpu \
  > $R/gpu_tests.txt 2>&1
echo "tests/gpu: $(tail -n 1 $R/gpu_tests.txt)"; grep -h "^FAILED" $R/gpu_tests.txt | head
