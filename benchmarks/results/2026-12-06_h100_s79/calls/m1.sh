#!/usr/bin/env bash
# main run, first call (carries the peers' parts 1-2, kept in /tmp for m3.sh on the same machine): c2.sh's probe
# (block_regs raw against the warp on the 16-bit forward's rows of 513-1024)
bash benchmarks/peers_parts.sh keep > $OUT/kept1.txt 2>&1
bash benchmarks/results/2026-12-06_h100_s79/calls/c2.sh
tail -2 $OUT/kept1.txt
