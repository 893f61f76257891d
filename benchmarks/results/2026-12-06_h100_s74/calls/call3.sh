#!/usr/bin/env bash
# call 3 (carries .peer1, the first of six parts of the peers' archives, kept in /tmp for call 4's main
# run; .peer2-.peer5 followed in four calls of `cp .peerK/* /tmp/`, one part a call): the layouts regime's channel class in bf16 with the backward (the (8, 21, 255,
# 255) forward's figure again, call 1 having put its fall on the timing of back-to-back calls); the
# GPU tests of tests/gpu (not run after the seventy-third set's final rule) and grid_row's
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
cp .peer1/ppart.aa /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 150 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes channel \
  --json $R/layouts_channel_bf16.json > $R/layouts_channel_bf16.txt 2>&1
echo "layouts rc $?"; grep -E "^\(|^channel|255|loss" $R/layouts_channel_bf16.txt | head -n 30 | cut -c1-200
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest -q --tb=short -n 4 tests/gpu \
  tests/cuda/test_grid_row_gpu.py > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
wait
ls -la /tmp/ppart.a* > $R/kept.txt 2>&1; cat $R/kept.txt
