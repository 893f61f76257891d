#!/usr/bin/env bash
# Prepared for the next set, before n1.sh and n2.sh: the shipped table's main points that h1 did not reach,
# timed again (--retime-since last: the 389 points not stamped with h1's retiming, among them the 16-bit forward
# of rows of 184-1000 and 5001 off multiples of 16, whose Triton figures are still the tile kernels'), into a
# copy of the table (t1/table.json), which then replaces fastsoftmax/dispatch_table.json before the main run.
source benchmarks/call_prelude.sh t1
grep -q "H100" $R/device.txt || { echo "t1.sh: the shipped table is the H100's; this is $(tail -1 $R/device.txt)"; exit 1; }
cp fastsoftmax/dispatch_table.json $R/table.json
timeout 560 python3 -m fastsoftmax bench table --retime-main --retime-since last --table-out $R/table.json \
  --time-limit 520 > $R/retime.log 2>&1
echo "retime exit $? at $SECONDS s: $(tail -n 1 $R/retime.log)"
