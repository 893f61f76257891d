#!/usr/bin/env bash
# With REALIGNED_TWO_PIECES_MAX_TAIL (the setting then; now REALIGNED_TWO_PIECES) at 1/8 (forward, 16-bit backward): two pieces whose second piece is 1/16
# and 1/8 of the first, held by more than one vector (rows of 2^26 elements of 145, 289, 545, 577, 1089, 1153,
# 2177, 2305, 4353 and 4609), against one piece (two@0) and the CUDA backend, bfloat16 and float32, both
# directions, alternated in one process; then, into a copy of e3's table (e4/table.json), the row lengths one
# past each power of two (--row-lengths edges) and the main points whose rows Triton now holds in two pieces
# (--retime-lengths), all timed in one piece before.
source benchmarks/call_prelude.sh e4
grep -q "H100" $R/device.txt || { echo "e4.sh: for the H100's table; this is $(tail -1 $R/device.txt)"; exit 1; }
timeout 120 python3 benchmarks/triton_offsets_probe.py --rounds 2 --dtypes bfloat16,float32 \
  --shapes $(row_shapes 145 289 545 577 1089 1153 2177 2305 4353 4609) --variants realigned,cuda --two-pieces 0 \
  > $R/two_pieces.txt 2>&1
echo "probe rc $? at $SECONDS s"; cut -c1-200 $R/two_pieces.txt
zcat benchmarks/results/2026-12-07_h100_s87/e3/table.json.gz > $R/table.json
timeout 100 python3 -m fastsoftmax bench table --row-lengths edges --table-out $R/table.json > $R/edges.log 2>&1
echo "edges exit $? at $SECONDS s: $(tail -n 1 $R/edges.log)"
timeout 60 python3 -m fastsoftmax bench table --retime-main --retime-lengths 36,37,68,72,74,76,136,144,150 \
  --table-out $R/table.json > $R/retime.log 2>&1
echo "retime exit $? at $SECONDS s: $(tail -n 1 $R/retime.log)"
