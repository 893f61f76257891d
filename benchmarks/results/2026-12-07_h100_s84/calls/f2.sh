#!/usr/bin/env bash
# Prepared for the next set, after f1.sh: TILE_FIXED_N kernel by kernel on the channel class in float32
# (as f1.sh in bf16), then the layouts regime's channel class in bf16 with it on, for the table beside
# p2's. About 380 s.
source benchmarks/call_prelude.sh f2
source benchmarks/results/2026-12-07_h100_s84/calls/fixed_n_breakdown.sh float32
timeout 120 python3 - > $R/layouts_channel_fixed.txt 2>&1 <<'PY'
import fastsoftmax.backends.triton as tb
from fastsoftmax.benchmark import layouts
tb.TILE_FIXED_N = True
raise SystemExit(layouts.main(["--backward", "--dtypes", "bfloat16", "--classes", "channel", "--json", "/dev/null"]))
PY
echo "layouts rc $? at $SECONDS s"; grep -E "^\(|losses|goal" $R/layouts_channel_fixed.txt | head -24
