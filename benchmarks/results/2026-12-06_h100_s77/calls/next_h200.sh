#!/usr/bin/env bash
# prepared for an H200 (kind nvidia-h200): the rule tiers.warp_takes_long_rows, measured on the H100 alone, applies
# on every GPU; on the H200 block_regs holds 16-bit rows raw (instances.short_row_storage_16bit), so the warp's
# long rows are timed against it there: forced and alternated behind an L2 flush, bf16 and float16, both forms
# of the forward, at 2^27 elements and on fewer rows (the H100's shapes of n2/, n3/ and p1/)
source benchmarks/call_prelude.sh h1
timeout 60 python3 -m fastsoftmax compile --match '^fs_warp_(log)?softmax_fwd_b?f16_p8_c(40|48|64|80|96)_g32_r1$|^fs_block_regs_' \
  > $R/compile.txt 2>&1
timeout 300 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,log --dtypes bf16,f16 \
  --tiers block_regs,warp \
  --shapes 130048x1032,116508x1152,87381x1536,58254x2304,52428x2560,44739x3000,65536x2048,43690x3072,8192x3000,4096x3000,4096x1536,4096x1152,1024x1536 \
  > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-200
