#!/usr/bin/env bash
# call 5: the GPU tests (tests/cuda, tests/gpu, the public API and layout tests) (the set's two rules and the forced window forms in place); Nsight Compute on the bf16 forward of rows of 50257 (whole packs) and 50264 (on 16-byte boundaries)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
trap 'tar czf $OUT/r5.tar.gz -C $OUT r5 && rm -rf $R' EXIT
timeout 250 python3 -m pytest tests/cuda tests/gpu tests/test_strided_layouts.py tests/test_functional.py tests/test_backward.py -n 16 --dist worksteal -q -p no:cacheprovider -p no:benchmark -rfE -W ignore::RuntimeWarning 2>&1 | tail -n 30 > $R/tests_full.txt
PROFILE_TARGETS="3 1 --shape 2670x50257 --dtype bf16 --tier cluster --calls 6;3 1 --shape 2670x50264 --dtype bf16 --tier cluster --calls 6" OUT=$R/ncu timeout 90 bash benchmarks/device_run.sh profile > $R/ncu.log 2>&1
