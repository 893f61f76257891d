#!/usr/bin/env bash
# The eighty-second set's g2.sh (the backward's teams past 32 rows and in uneven rounds: GPU tests, grid_row
# under the sanitizers, grid_row against cluster_stream on rows no count of teams divides), then both
# backends' forward and backward of more than 2^31 elements
bash benchmarks/peers_parts.sh keep > $OUT/kept1.txt 2>&1
bash benchmarks/results/2026-12-07_h100_s82/calls/g2.sh
source benchmarks/call_prelude.sh m1
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_concurrency.py -k 2_to_the_31 > $R/big.txt 2>&1
echo "2^31 tests rc $? at $SECONDS s"; tail -3 $R/big.txt
tail -2 $OUT/kept1.txt
