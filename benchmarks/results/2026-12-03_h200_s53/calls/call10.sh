#!/usr/bin/env bash
# call 10: Triton's scalar tiles of bf16 (16, 21, 513, 513) over dim 1 (call 9: 110 registers a thread,
# 4 warps of 32 elements each, 25% occupancy, against Inductor's 48 registers over 8 warps of 16) at
# other tile shapes, three rounds alternated in one process through the public API
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c10; mkdir -p $R
trap 'tar czf $OUT/c10.tar.gz -C $OUT c10 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/scalar_tile_probe.py "(16,21,513,513) d1" bfloat16 > $R/scalar_tiles_h200.txt 2>&1
grep "d1" $R/scalar_tiles_h200.txt
