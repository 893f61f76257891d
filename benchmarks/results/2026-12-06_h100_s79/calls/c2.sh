#!/usr/bin/env bash
# the 16-bit forward's rows of 513-1024 on 16-byte boundaries, which "auto" gives the warp tier (measured in
# the twelfth set against block_regs' float32 form): block_regs held raw against the warp, alternated behind
# an L2 flush, softmax and log-softmax
source benchmarks/call_prelude.sh c2
timeout 200 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/warp_short --directions fwd,log --dtypes bf16,f16 \
  --tiers "warp,block_regs:short_row_storage_16bit='raw'" \
  --shapes 258111x520,209715x640,174762x768,167772x800,134217x1000,132104x1016,131072x1024,262144x512,8192x1000,4096x768,16384x640 \
  > $R/warp_short.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/warp_short.txt | cut -c1-200
