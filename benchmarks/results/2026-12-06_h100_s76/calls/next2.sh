#!/usr/bin/env bash
# prepared for the next set (an H100): the warp tier's long 16-bit forward rows (Tuning.warp_long_rows,
# 1025-3072 columns over a whole warp, 40-96 columns a lane: written after this set's run, not yet on a
# GPU). Its GPU test and the sanitizer's warp part 9 under all four tools first, then the rows forced on
# the warp tier against block_regs (what "auto" takes there), alternated behind an L2 flush, in bf16 and
# float16, softmax and log-softmax: 44739 x 3000 is where Quack leads (0.99 against 0.97 in the main runs)
source benchmarks/call_prelude.sh n2
timeout 60 python3 -m fastsoftmax compile --match '^fs_warp_(log)?softmax_fwd_b?f16_p8_c(40|48|64|80|96)_g32_r1$|^fs_block_regs_' \
  > $R/compile.txt 2>&1
timeout 90 python3 -m pytest -q --tb=short tests/cuda/test_cuda_gpu.py -k "warp_long" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"
for tool in memcheck racecheck initcheck synccheck; do
  ( timeout 60 compute-sanitizer --tool $tool --error-exitcode 9 --report-api-errors no python3 benchmarks/sanitize.py \
      --tiers warp@9 > $R/san_$tool.txt 2>&1; echo "$tool rc $?" >> $R/san_summary.txt ) &
done
wait
cat $R/san_summary.txt
grep -H "ERROR SUMMARY\|RACECHECK SUMMARY\|: ok\|wrong\|Target application returned" $R/san_*.txt
timeout 200 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,log --dtypes bf16,f16 \
  --tiers block_regs,warp:warp_long_rows=True \
  --shapes 44739x3000,65536x2048,87381x1536,52428x2560,43690x3072,130048x1032 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-200
