#!/usr/bin/env bash
# The spans' partials kernel at eight blocks an SM by default now (STRIDED_SPANS_PARTIALS_MIN_BLOCKS):
# its GPU tests at the default and the tuned five, then the layouts regime's bf16 log-softmax backward
# (the stepped layouts it changes; the others as a second reading of the fifty-eighth set's c3/).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
timeout 100 python3 -m fastsoftmax compile --match '^fs_(strided|staged)_|_columns$' > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
timeout 90 python3 -m pytest -q tests/cuda/test_strided_gpu.py -k "spans" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
timeout 220 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes bfloat16 \
  --json $R/layouts_log_backward_bfloat16.json > $R/layouts_log_backward_bfloat16.txt 2>&1
echo "layouts rc $?"; grep "::2\|\.t()" $R/layouts_log_backward_bfloat16.txt | grep -v "losses\|under"
sed -n '/^losses:/,$p' $R/layouts_log_backward_bfloat16.txt | grep -v "under the goal"
