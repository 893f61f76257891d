#!/usr/bin/env bash
# call 1: (0) the GPU tests of stepped inputs (a new one: (8192, 8192)[:, ::2] over dim 0 backward
# through auto) and of the Triton tiles (two pieces, new); (1) Triton's strided tiles in two pieces
# (TWO_PIECE_TILES: 21 channels as 16 + 8 rows, 150 as 128 + 32) against one, and the 16-bit
# backward's scalar tiles with 32-bit offsets, through the public API, three rounds alternated in one
# process; (2) the strided tier's split chunks rounded down to whole waves (strided_whole_waves)
# against rounded up, kernel by kernel, on the split launches it changes and on some it does not
# (dense dim-0 axes), bf16 and float32
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n1; mkdir -p $R
trap 'tar czf $OUT/n1.tar.gz -C $OUT n1 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 130 python3 -m pytest tests/cuda/test_strided_gpu.py tests/test_strided_layouts.py \
  -k "stepped or triton" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests.txt
cat $R/tests.txt
timeout 200 python3 benchmarks/scalar_tile_probe.py "(16,21,513,513) d1;(8,150,127,127) d1;(16,21,512,512) d1" \
  bfloat16,float32 "base;one-piece;32-bit;32-bit,one-piece" > $R/two_pieces.txt 2>&1
grep "d1" $R/two_pieces.txt
timeout 230 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward --no-compile \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1;(65536,2048) d0;(1048576,128) d0" \
  --tunings "tier=strided;tier=strided,strided_whole_waves=True" > $R/whole_waves.txt 2>&1
grep "a call" $R/whole_waves.txt
