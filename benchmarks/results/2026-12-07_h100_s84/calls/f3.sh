#!/usr/bin/env bash
# Prepared for the next set: Triton's held realigned kernels at 32 and 64 elements a thread
# (REALIGNED_HELD_ELEMS_PER_THREAD; 16 as planned) against the tile kernels on rows of 300-999, where they
# lose (p1/realign64.txt); realigned_sass.txt has the SASS of each. Alternated in one process. About 240 s.
source benchmarks/call_prelude.sh f3
SHAPES=223696x300,149130x450,111848x600,86370x777,67176x999
timeout 280 python3 benchmarks/triton_offsets_probe.py --rounds 2 --shapes $SHAPES --variants unrealigned,realigned \
  --realigned-elems 32,64 > $R/realigned_elems.txt 2>&1; echo "probe rc $? at $SECONDS s"
cut -c1-170 $R/realigned_elems.txt
