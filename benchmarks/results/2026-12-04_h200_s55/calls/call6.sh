#!/usr/bin/env bash
# call 6: the 16-bit log-softmax backward of Triton's scalar tiles (odd H x W over 19-21 classes)
# under a register cap of 80 (auto now) against none (96 registers), 72 and 64, kernel by kernel
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
cd benchmarks
T=backend=triton,triton.SCALAR_TILE_LOG_BACKWARD_MAXNREG
timeout 120 python3 kernel_breakdown.py --log --no-compile --dtypes bfloat16 --directions backward \
  --tunings "$T=None;$T=72;$T=64" --cases "(16,21,513,513) d1;(16,19,513,513) d1;(8,21,255,255) d1" \
  > $R/log_backward_register_cap.txt 2>&1
grep "a call\|Error" $R/log_backward_register_cap.txt
