#!/usr/bin/env bash
# prepared for the next set (not run), kernel by kernel: (1) the float32
# log-softmax backwards still behind torch.compile under each strided tier and Triton; (2) the bf16
# log-softmax backward's strided split (its partials pass reads dy alone: 3.0 TB/s on (8192, 8192).t()
# over dim 1) at other waves of resident blocks; (3) the float32 forward of Triton's scalar tiles
# under a register cap of 40 (Inductor's registers, no spills) beside auto and torch.compile; (4) the
# 16-bit softmax backward of the scalar tiles of whole columns under caps of 64 and 72 (80 uncapped)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/x3; mkdir -p $R
trap 'tar czf $OUT/x3.tar.gz -C $OUT x3 && rm -rf $R' EXIT
cd benchmarks
timeout 150 python3 kernel_breakdown.py --log --dtypes float32 --directions backward \
  --tunings "tier=strided;tier=strided_staged;backend=triton" \
  --cases "(8192,8192).t() d1;(8192,8192)[::2] d0;(16,1048576,2) d1;(65536,2048) d0" > $R/log_backward_f32.txt 2>&1
grep "a call\|Error" $R/log_backward_f32.txt
timeout 120 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward \
  --tunings "tier=strided,strided_waves=2;tier=strided,strided_waves=3;tier=strided,strided_waves=6;tier=strided,strided_waves=8" \
  --cases "(8192,8192).t() d1;(8192,16384) d0" > $R/log_backward_waves_bf16.txt 2>&1
grep "a call\|Error" $R/log_backward_waves_bf16.txt
timeout 120 python3 kernel_breakdown.py --dtypes float32 --directions forward \
  --tunings "backend=triton;backend=triton,triton.SCALAR_TILE_F32_FORWARD_MAXNREG=40" \
  --cases "(8,21,255,255) d1;(16,21,255,255) d1;(4,21,513,513) d1;(16,21,513,513) d1" > $R/f32_forward_cap.txt 2>&1
grep "a call\|Error" $R/f32_forward_cap.txt
C="backend=triton,triton.SCALAR_TILE_BACKWARD_MAXNREG"
timeout 120 python3 kernel_breakdown.py --dtypes bfloat16 --directions backward \
  --tunings "backend=triton;$C={'log_softmax': 64, 'softmax': 64};$C={'log_softmax': 64, 'softmax': 72}" \
  --cases "(16,21,513,513) d1;(16,19,513,513) d1;(8,21,255,255) d1" > $R/bf16_backward_cap.txt 2>&1
grep "a call\|Error" $R/bf16_backward_cap.txt
