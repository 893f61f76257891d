#!/usr/bin/env bash
# call 4: GPU tests of the strided tiers' window and view cases (the 16-bit forward of inputs off their boundaries now on the strided tier over axes of 256 or more); the layouts regime's view class in bf16, forward and backward, against torch.softmax and torch.compile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r4; mkdir -p $R
trap 'tar czf $OUT/r4.tar.gz -C $OUT r4 && rm -rf $R' EXIT
timeout 140 python3 -m pytest tests/cuda/test_strided_gpu.py tests/test_strided_layouts.py -k "window or offset or view or phase or tier" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
timeout 240 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes view --json $R/layouts_view_bf16.json > $R/layouts_view_bf16.txt 2>&1
