#!/usr/bin/env bash
# call 7: after the cluster tier took the backward of 2 rows and more and the float32 forward of 2-7 rows
# up to its longest row: the autograd test of such rows, the chosen-tier tests, and the public API's
# GPU tests (tests/gpu)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 100 python3 -m pytest -q --tb=short -n 4 tests/cuda/test_cuda_gpu.py \
  -k "few_long or chosen" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
FASTSOFTMAX_TEST_LOG=$R/failures_gpu.txt timeout 200 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/gpu_tests.txt 2>&1
echo "tests/gpu: $(tail -n 1 $R/gpu_tests.txt)"; grep -h "^FAILED" $R/gpu_tests.txt | head
