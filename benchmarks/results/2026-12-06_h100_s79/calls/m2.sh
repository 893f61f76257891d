#!/usr/bin/env bash
# main run, second call (carries the peers' parts 3-4, kept in /tmp for m3.sh): the GPU tests of tests/gpu
bash benchmarks/peers_parts.sh keep > $OUT/kept2.txt 2>&1
source benchmarks/call_prelude.sh m2
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 300 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
tail -2 $OUT/kept2.txt
