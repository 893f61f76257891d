#!/usr/bin/env bash
# call 8 (prepared, not run): the bf16
# backward over 21-48 classes of odd H x W (torch.compile ahead by 11-18% from 33 in call 7):
# Triton's 16-bit scalar tiles as shipped against 32-bit offsets, 16 elements a thread, 2048- and
# 8192-element tiles, kernel by kernel beside torch.compile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n8; mkdir -p $R
trap 'tar czf $OUT/n8.tar.gz -C $OUT n8 && rm -rf $R' EXIT
timeout 170 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16 --directions backward \
  --cases "(16,40,513,513) d1;(16,33,257,257) d1;(8,48,513,513) d1;(16,21,513,513) d1" \
  --tunings "triton.SCALAR_TILE_BACKWARD_16BIT_OFFSETS_64=False;triton.SCALAR_TILE_PER_THREAD={2: 16, 4: 16};triton.SCALAR_TILE_ELEMS=2048;triton.SCALAR_TILE_ELEMS=8192" \
  > $R/classes_backward_tiles.txt 2>&1
grep "a call" $R/classes_backward_tiles.txt
