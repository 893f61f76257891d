#!/usr/bin/env bash
# first call of a main run (carries .peer1-.peer3; benchmarks/peers_parts.sh keeps them in /tmp for b.sh on the
# same machine): p1.sh's GPU tests and probes, then the GPU tests of tests/gpu
bash benchmarks/peers_parts.sh keep > $OUT/kept.txt 2>&1
bash benchmarks/results/2026-12-06_h100_s77/calls/p1.sh
source benchmarks/call_prelude.sh m1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 240 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
cat $OUT/kept.txt
