#!/usr/bin/env bash
# call 5: the GPU tests (the CUDA tiers', the prepared runs', tests/gpu's public API and the layout tests) with the set's two rules and the forced window forms in place; compute-sanitizer over the window tiles, both forms forced
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
trap 'tar czf $OUT/r5.tar.gz -C $OUT r5 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/tests_failures_and_slow.txt timeout 210 python3 -m pytest tests/cuda/test_cuda_gpu.py tests/cuda/test_strided_gpu.py tests/cuda/test_cluster_stream_gpu.py tests/cuda/test_prepared_runs.py tests/gpu tests/test_strided_layouts.py -n 16 --dist worksteal -q -p no:cacheprovider -p no:benchmark -rfE -W ignore::RuntimeWarning 2>&1 | tail -n 30 > $R/tests_gpu.txt
export SANITIZE_TIERS=strided_window SANITIZE_TIMEOUT=110 SANITIZE_JOBS=4
OUT=$R/san timeout 120 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
