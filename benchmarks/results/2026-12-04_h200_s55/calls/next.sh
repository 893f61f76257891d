#!/usr/bin/env bash
# prepared for the next set (not run): (0) the GPU tests of this set's
# rules (the dense log-softmax backward's tier, the relay, the Triton tiles' register caps), which no
# GPU has run with the cap; (1) compute-sanitizer over the Triton tiles with the cap (sanitize_triton
# now holds 40 classes too)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/x1; mkdir -p $R
trap 'tar czf $OUT/x1.tar.gz -C $OUT x1 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest tests/test_relay.py tests/test_strided_layouts.py \
  tests/cuda/test_strided_gpu.py -k "log or relay or triton or tile or sees_the_function" -q -n 8 -p no:cacheprovider \
  -W ignore::RuntimeWarning 2>&1 | tail -n 5 > $R/tests.txt
cat $R/tests.txt
mkdir -p $R/san
for tool in memcheck racecheck initcheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --print-limit 20 python3 benchmarks/sanitize_triton.py > $R/san/$tool.txt 2>&1
  tail -n 2 $R/san/$tool.txt
done
