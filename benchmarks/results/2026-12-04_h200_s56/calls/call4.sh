#!/usr/bin/env bash
# call 4, kernel by kernel: the log-softmax backward's strided split (its partials pass reads dy
# alone, half the bytes a row of the softmax backward's, so its blocks are short-lived: bf16 (8192,
# 8192).t() over dim 1 spends 43 us there against Inductor's 33) under fewer, longer chunks (one wave
# of resident blocks, fixed splits), narrower warp rows and contiguous chunks; float32 alike
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
cd benchmarks
S="tier=strided"
T="$S;$S,strided_waves=1;$S,strided_splits=8;$S,strided_splits=16;$S,strided_splits=32;$S,strided_row_bytes=256;$S,strided_interleaved=False;$S,strided_waves=1,strided_row_bytes=256"
timeout 200 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(8192,16384) d0;expand(1,4096,4096) d1;(32,4096,1024) d1" > $R/log_backward_bf16.txt 2>&1
grep "a call\|Error" $R/log_backward_bf16.txt
T="$S;$S,strided_waves=1;$S,strided_waves=2;$S,strided_waves=8;$S,strided_splits=16;$S,strided_row_bytes=128"
timeout 200 python3 kernel_breakdown.py --log --dtypes float32 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(8192,8192)[::2] d0;(65536,2048) d0" > $R/log_backward_f32.txt 2>&1
grep "a call\|Error" $R/log_backward_f32.txt
