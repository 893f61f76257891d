#!/usr/bin/env bash
# Prepared for the next set. Main run, first part (carries the peers' archive parts 1-3, which it copies to
# /tmp for n2.sh on the same machine): tests/gpu after this set's changes (Triton's realigned rows, grid_row's
# uneven teams only at 256 KiB a CTA a round).
bash benchmarks/peers_parts.sh keep > $OUT/kept1.txt 2>&1
source benchmarks/call_prelude.sh n1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 300 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
tail -2 $OUT/kept1.txt
