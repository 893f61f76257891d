#!/usr/bin/env bash
# Sourced by f1.sh and f2.sh after call_prelude.sh: TILE_FIXED_N kernel by kernel beside torch.compile on the
# channel class in the dtype $1 ("auto"; Triton forced with it off, on, and on with one piece a tile),
# both directions, into $R/breakdown_$1.txt.
T='backend=triton;backend=triton,triton.TILE_FIXED_N=True'
T="$T;backend=triton,triton.TILE_FIXED_N=True,triton.TWO_PIECE_TILES=\"none\""
CASES='(16,21,513,513) d1;(16,21,512,512) d1;(8,150,127,127) d1;(8,150,128,128) d1;(8,21,255,255) d1;(16,19,513,513) d1'
timeout 280 python3 benchmarks/kernel_breakdown.py --cases "$CASES" --dtypes $1 --directions forward,backward \
  --tunings "$T" > $R/breakdown_$1.txt 2>&1; echo "breakdown $1 rc $? at $SECONDS s"
grep -E "us a call|Error" $R/breakdown_$1.txt | cut -c1-160
