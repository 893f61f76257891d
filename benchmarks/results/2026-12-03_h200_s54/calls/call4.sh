#!/usr/bin/env bash
# call 4: (1) the strided tier's waves of resident blocks for stepped inputs (strided_waves; 16-bit
# backward 4 as shipped) on (8192, 8192)[:, ::2] over dim 0, which auto gives that tier, kernel by
# kernel beside torch.compile, bf16 and float32; (2) float32 NCHW over 21 channels of odd H x W at
# smaller sizes than the layouts regime's: strided_warp's spread columns (auto) against Triton's
# scalar tiles and torch.compile (call 3: (8, 21, 255, 255) 26.4 us against 25.0 and 23.9)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n4; mkdir -p $R
trap 'tar czf $OUT/n4.tar.gz -C $OUT n4 && rm -rf $R' EXIT
timeout 200 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward \
  --cases "(8192,8192)[:, ::2] d0" \
  --tunings "tier=strided,strided_waves=3;tier=strided,strided_waves=5;tier=strided,strided_waves=6;tier=strided,strided_waves=8" \
  > $R/stepped_waves.txt 2>&1
grep "a call" $R/stepped_waves.txt
timeout 200 python3 benchmarks/kernel_breakdown.py --dtypes float32 --directions forward,backward \
  --cases "(8,21,255,255) d1;(16,21,255,255) d1;(8,21,383,383) d1;(4,21,513,513) d1;(8,19,513,513) d1" \
  --tunings "backend=triton" > $R/f32_staggered.txt 2>&1
grep "a call" $R/f32_staggered.txt
