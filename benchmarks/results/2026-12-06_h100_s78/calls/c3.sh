#!/usr/bin/env bash
# third call (carries the peers' parts 1-2, kept for the main run): block_regs' 16-bit rows raw against float32
# on rows off 16-byte boundaries, views one element in, and fewer rows, alternated behind an L2 flush
bash benchmarks/peers_parts.sh keep > $OUT/kept1.txt 2>&1
source benchmarks/call_prelude.sh c3
timeout 150 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/raw2 --directions fwd,log --dtypes bf16,f16 \
  --tiers "block_regs:short_row_storage_16bit='float',block_regs:short_row_storage_16bit='raw'" \
  --shapes 130047x1031,87381x1535,52428x2559,16384x3001,8192x1535,26843x5001,16384x8191,65536x2048o1,32768x4096o1,1024x2048,1024x4096,256x8192,2048x1000o1 \
  > $R/raw2.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/raw2.txt | cut -c1-200
tail -2 $OUT/kept1.txt
