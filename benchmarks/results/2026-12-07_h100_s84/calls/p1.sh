#!/usr/bin/env bash
# Triton's realigned kernels as one kernel a direction (held or walked by a constexpr): their GPU tests and
# memcheck over every Triton tier with rows realigned; then the realigned kernels with 32- and 64-bit offsets
# against the tile kernels (as the rules stand, and with 64-bit offsets) on rows of 150-3000, the lengths
# the realigned kernels lost or were not timed on, alternated in one process behind an L2 flush.
source benchmarks/call_prelude.sh p1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_realigned_rows.py tests/test_dispatch.py -k "realign or torch_over" \
  > $R/tests.txt 2>&1; echo "tests rc $? at $SECONDS s"; tail -1 $R/tests.txt
timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize_triton.py --tiers --realigned > $R/memcheck.txt 2>&1
echo "memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|problems" $R/memcheck.txt | head -4
SHAPES=447392x150,263172x255,223696x300,175218x383,149130x450,111848x600,95869x700,86370x777,78953x850,67176x999,65472x1025,44739x1500,22369x3000
timeout 330 python3 benchmarks/triton_offsets_probe.py --rounds 2 --shapes $SHAPES \
  --variants unrealigned,triton64,realigned,realigned64 > $R/realign64.txt 2>&1
echo "probe rc $? at $SECONDS s"; cat $R/realign64.txt | cut -c1-150
