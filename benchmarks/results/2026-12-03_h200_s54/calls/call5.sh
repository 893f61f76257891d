#!/usr/bin/env bash
# call 5: float32 NCHW over 19-21 channels of odd H x W (torch.compile's forward ahead of auto by 2-9%
# at the smaller sizes in call 4): Triton's scalar tiles as shipped (128 columns, 8 warps, 16 elements
# a thread over 32 rows) against 4 warps, threads holding whole columns, in two pieces (24 rows) and
# in one (32), kernel by kernel beside auto and torch.compile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n5; mkdir -p $R
trap 'tar czf $OUT/n5.tar.gz -C $OUT n5 && rm -rf $R' EXIT
W="triton.SCALAR_TILE_PER_THREAD={2: 32, 4: 32}"
timeout 240 python3 benchmarks/kernel_breakdown.py --dtypes float32 --directions forward,backward \
  --cases "(16,21,513,513) d1;(8,21,255,255) d1;(16,19,513,513) d1;(4,21,513,513) d1" \
  --tunings "backend=triton;backend=triton,$W;backend=triton,$W,triton.TWO_PIECE_TILES=none" > $R/f32_whole_columns.txt 2>&1
grep "a call" $R/f32_whole_columns.txt
