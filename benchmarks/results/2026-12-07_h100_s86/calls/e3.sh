#!/usr/bin/env bash
# For an H100, as e1.sh and e2 for the H200: the row lengths one past each power of two (--row-lengths edges)
# into a copy of the shipped table (e3/table.json, to ship), then e2's 160 lengths (e2/lengths.txt) in every
# dtype and direction into another copy (e3/heldout.json), on which benchmarks/dispatch_heldout.py judges the
# dispatcher's choices with and without the edge points.
source benchmarks/call_prelude.sh e3
grep -q "H100" $R/device.txt || { echo "e3.sh: the shipped table is the H100's; this is $(tail -1 $R/device.txt)"; exit 1; }
cp fastsoftmax/dispatch_table.json $R/table.json
cp fastsoftmax/dispatch_table.json $R/heldout.json
timeout 120 python3 -m fastsoftmax bench table --row-lengths edges --table-out $R/table.json > $R/edges.log 2>&1
echo "edges exit $? at $SECONDS s: $(tail -n 1 $R/edges.log)"
timeout $(( 250 - SECONDS )) python3 -m fastsoftmax bench table --row-lengths $(cat benchmarks/results/2026-12-07_h100_s86/e2/lengths.txt) \
  --table-out $R/heldout.json > $R/heldout.log 2>&1
echo "held-out exit $? at $SECONDS s: $(tail -n 1 $R/heldout.log)"
