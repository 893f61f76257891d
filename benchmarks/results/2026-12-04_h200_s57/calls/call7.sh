#!/usr/bin/env bash
# after call 6: broadcast dy (expand(1, 4096, 4096) over dim 1) keeps the two-stage kernel's partials;
# GPU tests; the layouts regime's bf16 log-softmax backward (every class) for the record
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
timeout 100 python3 -m pytest -q -x tests/cuda/test_strided_gpu.py -k "partials or dense_log_backward" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
cd benchmarks
timeout 60 python3 kernel_breakdown.py --log --no-compile --dtypes bfloat16 --directions backward \
  --tunings "tier=strided,strided_partials_kernel=False" --cases "expand(1,4096,4096) d1;(8192,8192).t() d1" \
  > $R/expand_log_backward_bf16.txt 2>&1
grep "a call\|Error" $R/expand_log_backward_bf16.txt
cd ..
timeout 200 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes bfloat16 \
  --json $R/layouts_log_backward_bfloat16.json > $R/layouts_log_backward_bfloat16.txt 2>&1
echo "layouts rc $?"; sed -n '/^losses:/,$p' $R/layouts_log_backward_bfloat16.txt | grep -v "under the goal"
