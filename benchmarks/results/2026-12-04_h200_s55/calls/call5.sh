#!/usr/bin/env bash
# call 5: (0) the GPU tests of the relay and the strided layouts' log-softmax and Triton paths; (1)
# the log-softmax backward through auto after this set's rules (16-bit dense long axes on the strided
# tier; the relay over the column kernels) against the tiers auto took before, kernel by kernel, on
# the shapes the rules were set on and on two they now also take ((32, 4096, 1024) over dim 1,
# (8192, 8192)[::2] over dim 0)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 90 python3 -m pytest tests/test_relay.py tests/test_strided_layouts.py \
  -k "log or relay or triton or tile" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 5 > $R/tests.txt
cat $R/tests.txt
cd benchmarks
timeout 130 python3 kernel_breakdown.py --log --no-compile --dtypes bfloat16 --directions backward \
  --tunings "tier=strided_staged;backend=cuda" \
  --cases "(32,4096,1024) d1;(8192,8192)[::2] d0;(8192,16384) d0;(8192,8192).t() d1;expand(1,4096,4096) d1;(64,65536,16) d1;(128,16384,32) d1" \
  > $R/log_backward_rules_bf16.txt 2>&1
grep "a call\|Error" $R/log_backward_rules_bf16.txt
timeout 50 python3 kernel_breakdown.py --log --no-compile --dtypes float32 --directions backward \
  --tunings "backend=cuda" --cases "(128,16384,32) d1" > $R/log_backward_rules_f32.txt 2>&1
grep "a call\|Error" $R/log_backward_rules_f32.txt
