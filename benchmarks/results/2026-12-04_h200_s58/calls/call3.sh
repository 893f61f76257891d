#!/usr/bin/env bash
# call 3 (right after call 2, on its warm machine): the strided tier's GPU tests again (call 2's ran out
# of time compiling); the layouts regime's bf16 log-softmax backward with the stepped spans as the rule;
# the float32 (128, 16384, 32) and (64, 65536, 16) log-softmax backward over dim 1 under each tier
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
timeout 200 python3 -m pytest -q tests/cuda/test_strided_gpu.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
timeout 220 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes bfloat16 \
  --json $R/layouts_log_backward_bfloat16.json > $R/layouts_log_backward_bfloat16.txt 2>&1
echo "layouts rc $?"; sed -n '/^losses:/,$p' $R/layouts_log_backward_bfloat16.txt | grep -v "under the goal"
cd benchmarks
(( SECONDS > 460 )) && exit 0
timeout 110 python3 kernel_breakdown.py --log --dtypes float32 --directions backward \
  --tunings "tier=strided;tier=strided_staged;tier=strided_warp;tier=strided,strided_partials_kernel=False" \
  --cases "(128,16384,32) d1;(64,65536,16) d1" > $R/narrow_axis_log_backward_f32.txt 2>&1
grep "a call\|Error" $R/narrow_axis_log_backward_f32.txt
