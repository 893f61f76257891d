#!/usr/bin/env bash
# Triton's held realigned kernels by elements a thread (REALIGNED_HELD_ELEMS_PER_THREAD: 16 as planned,
# 32, 64, 128) against the tile kernels ("unrealigned") and the CUDA backend, rows of 20-12345 of 2^26
# elements, dtype $1, both directions, alternated in one process. f3 found 64 ahead at 300-999 in bf16.
source benchmarks/call_prelude.sh g1_$1
SHAPES=3355443x20,1032444x65,671088x100,447392x150,263172x255,223696x300,149130x450,111848x600
SHAPES=$SHAPES,86370x777,67176x999,65472x1025,44739x1500,33554x2000,22369x3000,13421x5000,5436x12345
timeout 560 python3 benchmarks/triton_offsets_probe.py --rounds 2 --shapes $SHAPES --dtypes $1 \
  --variants unrealigned,realigned,cuda --realigned-elems 32,64,128 > $R/realigned_elems.txt 2>&1
echo "probe rc $? at $SECONDS s"; cut -c1-200 $R/realigned_elems.txt
