#!/usr/bin/env bash
# Prepared for the next set. Main run, first part (with the peers' archive parts 1-3 beside the tree, which it
# copies to /tmp for n2.sh): tests/gpu after this set's changes (Triton's realigned rows of every
# length from 9 with the held kernels' threads by block size, the retimed dispatch table), then memcheck over
# every Triton tier with a limit that finishes it (h1's 150 s stopped at the last problem, rows of 12345).
bash benchmarks/peers_parts.sh keep > $OUT/kept1.txt 2>&1
source benchmarks/call_prelude.sh n1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 300 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
timeout --kill-after=10 250 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize_triton.py --tiers > $R/memcheck.txt 2>&1
echo "memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|problems" $R/memcheck.txt | head -4
# a sanitizer target left running past the limit must not run beside n2's timings
pkill -9 -f "benchmarks/sanitize_triton.py" && echo "memcheck's target stopped"
tail -2 $OUT/kept1.txt
