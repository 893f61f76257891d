#!/usr/bin/env bash
# the last set's c3 (the new dispatch table's changes through "auto"), then Triton's tile kernels with 32- and
# 64-bit offsets alternated on the main points where Triton ran slower in the table's new measurement
bash benchmarks/results/2026-12-06_h100_s79/calls/c3.sh
source benchmarks/call_prelude.sh a1
timeout 200 python3 benchmarks/triton_offsets_probe.py --rounds 2 > $R/offsets.txt 2>&1
echo "offsets rc $? at $SECONDS s"; cat $R/offsets.txt | cut -c1-160
