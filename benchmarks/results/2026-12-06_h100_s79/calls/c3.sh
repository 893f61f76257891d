#!/usr/bin/env bash
# after the dispatch table's new measurement: c2.sh's probe in bf16 (float16 ran alike in earlier sets),
# then "auto" alone over the main suite's bulk rows, backward and non-last dims (no peers: their ratios stay
# with the last set's run)
source benchmarks/call_prelude.sh c3
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/warp_short --directions fwd,log --dtypes bf16 \
  --tiers "warp,block_regs:short_row_storage_16bit='raw'" \
  --shapes 258111x520,209715x640,174762x768,134217x1000,132104x1016,131072x1024,262144x512,8192x1000,16384x640 \
  > $R/warp_short.txt 2>&1
echo "probe rc $? at $SECONDS s"; grep -E "^(bf16|f16)" $R/warp_short.txt | cut -c1-150
timeout $(( 330 - SECONDS )) python3 -m fastsoftmax bench --no-peers --no-compile --backends auto \
  --regimes bulk,backward,non_last_dim --time-limit $(( 300 - SECONDS )) --out $R > $R/bench.log 2>&1
echo "bench exit $? at $SECONDS s"; gzip -9n $R/*.json $R/*.csv 2>/dev/null; ls $R
