#!/usr/bin/env bash
# prepared for the next set, not run: (1) Triton's scalar tiles of bf16 (16, 21, 513, 513) over dim 1
# with 32-bit offsets, at the shipped 32 elements a thread and at Inductor's 16 over 8 warps (call 10
# timed 16 a thread with 64-bit offsets only), three rounds alternated in one process; (2) the strided
# tier's split chunks rounded down to whole waves (strided_whole_waves) against rounded up, kernel by
# kernel, on the split launches it changes and on some it does not (dense dim-0 axes), bf16 and float32;
# (3) backend="cuda" on 16-bit rows at several 16-byte phases over short axes (NCHW over C with an odd
# H x W, which auto gives Triton): the strided tier the CUDA rule picks (904 us at the profiler's clocks
# in call 8) against the staged tiles in their windows, kernel by kernel beside Triton and torch.compile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n1; mkdir -p $R
trap 'tar czf $OUT/n1.tar.gz -C $OUT n1 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/scalar_tile_probe.py "(16,21,513,513) d1" bfloat16 > $R/scalar_tiles_32bit.txt 2>&1
grep "d1" $R/scalar_tiles_32bit.txt
timeout 300 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward --no-compile \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1;(65536,2048) d0;(1048576,128) d0" \
  --tunings "tier=strided;tier=strided,strided_whole_waves=True" > $R/whole_waves.txt 2>&1
grep "a call" $R/whole_waves.txt
timeout 200 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16 --directions forward,backward \
  --cases "(16,21,513,513) d1;(8,150,127,127) d1" \
  --tunings "backend=cuda;tier=strided;tier=strided_staged;backend=triton" > $R/staggered_cuda.txt 2>&1
grep "a call" $R/staggered_cuda.txt
