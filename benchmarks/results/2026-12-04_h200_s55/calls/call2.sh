#!/usr/bin/env bash
# call 2: (0) the GPU tests of the Triton tiles (32-bit offsets in the 16-bit backward over 33-64
# rows); (1) the layouts regime in float32 (every class, forward and backward), fastsoftmax through
# auto against torch.softmax and torch.compile in one process: its first whole float32 run since the
# fortieth sets
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 100 python3 -m pytest tests/test_strided_layouts.py \
  -k "triton or tile" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 5 > $R/tests.txt
cat $R/tests.txt
timeout 420 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes float32 --json $R/layouts_f32.json \
  > $R/layouts_f32.txt 2>&1
sed -n '/^losses:/,$p' $R/layouts_f32.txt
grep -c "float32" $R/layouts_f32.txt
