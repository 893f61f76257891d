#!/usr/bin/env bash
# Prepared for the next set: Triton's held realigned kernels with a row's body just past a power of two as two
# pieces (REALIGNED_TWO_PIECES_MAX_TAIL at 1/4 and 1/2; shipped off) against one piece ("realigned") and the CUDA
# backend, rows of 2^26 elements of lengths one vector and up to half past a power of two, dtype $1 (bfloat16 or
# float32), both directions, alternated in one process; with bfloat16, then memcheck over every Triton tier with two
# pieces (sanitize_triton.py --tiers --two-pieces: every dtype). About 150 s, bfloat16 400 s.
source benchmarks/call_prelude.sh w1_$1
case $1 in
  bfloat16) LENGTHS="73 137 300 521 600 1033 1300 4105 5000" ;;
  float32) LENGTHS="69 133 300 517 600 1029 1300 4101 5000" ;;
  *) echo "w1.sh: bfloat16 or float32, not $1"; exit 2 ;;
esac
timeout 300 python3 benchmarks/triton_offsets_probe.py --rounds 2 --shapes $(row_shapes $LENGTHS) --dtypes $1 \
  --variants realigned,cuda --two-pieces 0.25,0.5 > $R/two_pieces.txt 2>&1
echo "probe rc $? at $SECONDS s"; cut -c1-200 $R/two_pieces.txt
[[ $1 == bfloat16 ]] && timeout --kill-after=10 250 compute-sanitizer --tool memcheck --report-api-errors no \
  --print-limit 20 python3 benchmarks/sanitize_triton.py --tiers --two-pieces > $R/memcheck.txt 2>&1
echo "memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|problems" $R/memcheck.txt | head -4
pkill -9 -f "benchmarks/sanitize_triton.py" && echo "memcheck's target stopped"
