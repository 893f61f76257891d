#!/usr/bin/env bash
# right after next2.sh (n2) on the same machine: the warp tier's long 16-bit forward rows against block_regs
# over more widths (1152-2816) and fewer rows (1024-16384), forced and alternated behind an L2 flush (the
# tuning warp_long_rows it names was removed once tier choice took the rows)
source benchmarks/call_prelude.sh n3
timeout 250 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,log --dtypes bf16,f16 \
  --tiers block_regs,warp:warp_long_rows=True \
  --shapes 116508x1152,104857x1280,74898x1792,67108x2000,58254x2304,47662x2816,4096x3000,1024x1536,16384x2048,2048x2048 \
  > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-200
