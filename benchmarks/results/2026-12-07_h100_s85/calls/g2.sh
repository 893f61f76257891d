#!/usr/bin/env bash
# Prepared for the next set: the held realigned kernels' threads (REALIGNED_HELD_ELEMS_PER_THREAD) on each side of
# the table's block boundaries, as shipped against 16, 32 and 64 a thread, the tile kernels and the CUDA
# backend, rows of 2^26 elements, dtype $1 (bfloat16 or float32), both directions, alternated in one process
# (g1.sh timed the lengths between). bf16 blocks: 71 | 73 (128 | 256 bytes), 519 | 521 (1 | 2 KiB), 1031 | 1033
# (2 | 4 KiB), 4097 | 4105 (8 | 16 KiB); float32: 129 | 133 (512 bytes | 1 KiB), 259 | 261 (1 | 2 KiB),
# 515 | 517 (2 | 4 KiB). About 100 s a dtype.
source benchmarks/call_prelude.sh g2_$1
case $1 in
  bfloat16) LENGTHS="71 73 519 521 1031 1033 4097 4105" ;;
  float32) LENGTHS="129 133 259 261 515 517" ;;
  *) echo "g2.sh: bfloat16 or float32, not $1"; exit 2 ;;
esac
SHAPES=$(for n in $LENGTHS; do printf "%dx%d," $(( (1 << 26) / n )) $n; done)
timeout 280 python3 benchmarks/triton_offsets_probe.py --rounds 2 --shapes ${SHAPES%,} --dtypes $1 \
  --variants unrealigned,realigned,cuda --realigned-elems 16,32,64 > $R/realigned_elems.txt 2>&1
echo "probe rc $? at $SECONDS s"; cut -c1-200 $R/realigned_elems.txt
