#!/usr/bin/env bash
# call 5: the strided tier's partials stage with twice the rows in flight (strided_deep_partials, new:
# the 16-bit forward's x and the log-softmax backward's dy walked 8 rows a step, where the softmax
# backward's y and dy take 4 each): its GPU test, then kernel by kernel, the strided tier forced with
# and without it (auto and torch.compile beside)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest tests/cuda/test_strided_gpu.py \
  -k "deep or split_chunks" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 5 > $R/tests.txt
cat $R/tests.txt
cd benchmarks
S="tier=strided"
T="$S,strided_deep_partials=False;$S,strided_deep_partials=True;$S,strided_deep_partials=False;$S,strided_deep_partials=True"
timeout 150 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(8192,16384) d0;expand(1,4096,4096) d1;(32,4096,1024) d1;(65536,2048) d0;(1048576,128) d0" > $R/deep_log_backward_bf16.txt 2>&1
grep "a call\|Error" $R/deep_log_backward_bf16.txt
timeout 120 python3 kernel_breakdown.py --log --dtypes float32 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(8192,8192)[::2] d0;(65536,2048) d0;(32,4096,1024) d1" > $R/deep_log_backward_f32.txt 2>&1
grep "a call\|Error" $R/deep_log_backward_f32.txt
timeout 150 python3 kernel_breakdown.py --dtypes bfloat16 --directions forward --tunings "$T" \
  --cases "(65536,2048) d0;(1048576,128) d0;(8192,16384) d0;(32,4096,1024) d1;(8192,8192).t() d1;(8192,8192)[::2] d0" > $R/deep_forward_bf16.txt 2>&1
grep "a call\|Error" $R/deep_forward_bf16.txt
