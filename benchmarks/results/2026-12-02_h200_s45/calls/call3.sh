#!/usr/bin/env bash
# call 3: inputs one element into their storage: the staged tiles (windows) against the strided tier, forward over axes of 64-4096 and backward; the view cases on Triton and the CUDA tiers, forced
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
trap 'tar czf $OUT/r3.tar.gz -C $OUT r3 && rm -rf $R' EXIT
P="python3 benchmarks/grid_row_probe.py"
timeout 90 $P --tiers strided_staged,strided --directions bwd --dtypes bf16,f32 --shapes 32x4096x1024o1,128x1024x1024o1,4096x64x512o1,1024x128x1024o1 > $R/offset_bwd.txt 2>&1
timeout 70 $P --tiers strided_staged,strided --directions fwd,log --dtypes bf16 --shapes 2048x64x1024o1,1024x128x1024o1,512x256x1024o1,256x512x1024o1,8x8192x2048o1,64x2048x512o1 > $R/offset_fwd_axes.txt 2>&1
C="offset (32,4096,1024) d1"; S="(32,4096,1024)[..., 1:] d1"; T="(8192,8192)[:, ::2] d0"; U="(16,21,513,513) d1"
timeout 150 python3 benchmarks/results/2026-12-02_h200_s45/calls/forced_views.py "$C:bfloat16:fwd;$C:bfloat16:bwd;$S:bfloat16:fwd;$S:bfloat16:bwd;$T:bfloat16:bwd;$U:bfloat16:bwd;$C:float32:fwd;$C:float32:bwd" > $R/forced_views.txt 2>&1
