#!/usr/bin/env bash
# the float32 log-softmax backward's rules (partials on the partials-only kernel; dense axes of one
# outer index on the strided tier): GPU tests, the layouts regime's float32 log-softmax backward;
# the partials-only kernel A/B on the bf16 log-softmax backward and forward over long axes
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
timeout 150 python3 -m pytest -q -x tests/cuda/test_strided_gpu.py -k "dense_log_backward or partials or deep" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
timeout 220 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes float32 \
  --json $R/layouts_log_backward_float32.json > $R/layouts_log_backward_float32.txt 2>&1
echo "layouts rc $?"; sed -n '/^losses:/,$p' $R/layouts_log_backward_float32.txt | grep -v "under the goal"
cd benchmarks
S="tier=strided"
T="$S;$S,strided_partials_kernel=True"
timeout 130 python3 kernel_breakdown.py --log --no-compile --dtypes bfloat16 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(8192,16384) d0;(65536,2048) d0;(1048576,128) d0;(8192,8192)[::2] d0;(8192,8192)[:, ::2] d0;expand(1,4096,4096) d1;(32,4096,2048)[..., ::2] d1;(128,16384,32) d1" \
  > $R/partials_log_backward_bf16.txt 2>&1
grep "a call\|Error" $R/partials_log_backward_bf16.txt
timeout 100 python3 kernel_breakdown.py --no-compile --dtypes bfloat16 --directions forward --tunings "$T" \
  --cases "(32,4096,1024) d1;expand(1,4096,4096) d1;(1048576,128) d0;(8192,8192)[::2] d0;(8192,8192).t() d1;(8192,16384) d0;(65536,2048) d0;(128,16384,32) d1" \
  > $R/partials_forward_bf16.txt 2>&1
grep "a call\|Error" $R/partials_forward_bf16.txt
