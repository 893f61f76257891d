#!/usr/bin/env bash
# call 8: the layouts regime's one loss left on the H100, bf16 (16, 21, 513, 513) over dim 1 backward
# (193.5 us against torch.compile's 190.2 in call 7), and its neighbours, kernel by kernel: the scalar
# tile as planned (two pieces, 128 columns over 4 warps, 64-bit offsets) against 32-bit offsets
# (their 64-bit choice was measured on an H200), tiles of 256 columns over 8 warps and of 64 over 2,
# and 16 elements a thread (one piece over 8 warps)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
timeout 110 python3 benchmarks/kernel_breakdown.py --directions backward \
  --cases "(16,21,513,513) d1;(16,19,513,513) d1;(8,21,255,255) d1" \
  --tunings "triton.SCALAR_TILE_OFFSETS_64_MAX_N=0;triton.SCALAR_TILE_ELEMS=8192;triton.SCALAR_TILE_ELEMS=2048;triton.SCALAR_TILE_PER_THREAD={2: 16, 4: 16}" \
  > $R/backward_tiles.txt 2>&1
echo "rc $?"; grep "a call" $R/backward_tiles.txt | cut -c1-200
