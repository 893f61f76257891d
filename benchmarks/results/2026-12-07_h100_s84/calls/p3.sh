#!/usr/bin/env bash
# The layouts regime's one loss (p2): the bf16 backward of (16, 21, 513, 513) over dim 1, 0.90 against
# torch.compile's 0.92, on Triton's scalar tiles. Kernel by kernel beside torch.compile, as planned and
# under other tile sizes, elements a thread and offset widths.
source benchmarks/call_prelude.sh p3
T='triton.SCALAR_TILE_ELEMS=2048;triton.SCALAR_TILE_ELEMS=8192;triton.SCALAR_TILE_PER_THREAD={2:16,4:16}'
T="$T;triton.SCALAR_TILE_PER_THREAD={2:64,4:16};triton.SCALAR_TILE_OFFSETS_64_MAX_N=0"
timeout 200 python3 benchmarks/kernel_breakdown.py --cases "(16,21,513,513) d1" --dtypes bfloat16 \
  --directions backward --tunings "$T" > $R/breakdown.txt 2>&1; echo "rc $? at $SECONDS s"
grep -v -i "warn\|online softmax\|split the reduction\|important use\|^$\|^softmax\.$" $R/breakdown.txt | cut -c1-150 | head -60
