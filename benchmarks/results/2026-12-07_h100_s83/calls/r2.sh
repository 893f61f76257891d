#!/usr/bin/env bash
# Triton's realigned rows on lengths r1.sh did not time: the backend as its rules now stand ("triton":
# REALIGNED_ROW_COLS), every length realigned, none realigned, and torch.softmax, alternated in one process
# behind an L2 flush, rows of 2^26 elements of 20, 33, 200, 777, 3000 and 32767 columns, both directions.
# About 200 s.
source benchmarks/call_prelude.sh r2
S=""; for n in 20 33 200 777 3000 32767; do S="$S,$((67108864 / n))x$n"; done
timeout 280 python3 benchmarks/triton_offsets_probe.py --rounds 2 --variants triton,realigned,unrealigned,torch \
  --shapes ${S#,} > $R/realign.txt 2>&1
echo "realign rc $? at $SECONDS s"; cut -c1-160 $R/realign.txt
