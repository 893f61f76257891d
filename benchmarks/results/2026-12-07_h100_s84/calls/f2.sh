#!/usr/bin/env bash
# Prepared for the next set, after f1.sh: TILE_FIXED_N kernel by kernel on the channel class in float32
# (as f1.sh in bf16), then the layouts regime's channel class in bf16 with it on, for the table beside
# p2's. About 380 s.
source benchmarks/call_prelude.sh f2
T='backend=triton;backend=triton,triton.TILE_FIXED_N=True'
T="$T;backend=triton,triton.TILE_FIXED_N=True,triton.TWO_PIECE_TILES=\"none\""
CASES='(16,21,513,513) d1;(16,21,512,512) d1;(8,150,127,127) d1;(8,150,128,128) d1;(8,21,255,255) d1;(16,19,513,513) d1'
timeout 250 python3 benchmarks/kernel_breakdown.py --cases "$CASES" --dtypes float32 \
  --directions forward,backward --tunings "$T" > $R/breakdown_f32.txt 2>&1; echo "breakdown rc $? at $SECONDS s"
grep -E "us a call|Error" $R/breakdown_f32.txt | cut -c1-160
timeout 120 python3 - > $R/layouts_channel_fixed.txt 2>&1 <<'PY'
import fastsoftmax.backends.triton as tb
from fastsoftmax.benchmark import layouts
tb.TILE_FIXED_N = True
raise SystemExit(layouts.main(["--backward", "--dtypes", "bfloat16", "--classes", "channel", "--json", "/dev/null"]))
PY
echo "layouts rc $? at $SECONDS s"; grep -E "^\(|losses|goal" $R/layouts_channel_fixed.txt | head -24
