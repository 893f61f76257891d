#!/usr/bin/env bash
# main run, first call (carries the peers' parts 1-3, kept in /tmp for m2.sh on the same machine): the
# eighty-second set's g2.sh (the backward's teams past 32 rows and in uneven rounds: GPU tests, grid_row
# under the sanitizers, grid_row against cluster_stream on rows no count of teams divides)
bash benchmarks/peers_parts.sh keep > $OUT/kept1.txt 2>&1
bash benchmarks/results/2026-12-07_h100_s82/calls/g2.sh
tail -2 $OUT/kept1.txt
