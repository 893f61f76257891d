#!/usr/bin/env bash
# Prepared for the next set. Triton's strided tiles with the reduced axis' length compiled in
# (TILE_FIXED_N, off): its GPU test and memcheck over the tile forms with it on, then kernel by kernel
# beside torch.compile on the channel class in bf16 (the layouts regime's one loss, (16, 21, 513, 513)
# over dim 1 backward, among them): "auto", Triton forced with it off, on, and on with one piece a tile
# (TWO_PIECE_TILES "none"), both directions. About 450 s; f2.sh and f3.sh follow.
source benchmarks/call_prelude.sh f1
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_strided_layouts.py -k "axis_length_compiled" \
  > $R/tests.txt 2>&1; echo "tests rc $? at $SECONDS s"; tail -1 $R/tests.txt
timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize_triton.py --fixed-n > $R/memcheck.txt 2>&1
echo "memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|problems" $R/memcheck.txt | head -4
source benchmarks/results/2026-12-07_h100_s84/calls/fixed_n_breakdown.sh bfloat16
