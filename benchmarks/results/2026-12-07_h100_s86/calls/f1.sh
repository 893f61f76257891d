#!/usr/bin/env bash
# For an H200: its dispatch table (dispatch_table_nvidia-h200.json: grid and main points of 2026-12-02/03, before
# Triton's realigned rows; row points of this set) measured again into a copy, f1/table.json: the grid with the row
# lengths one past each power of two (edge_lengths; the other row points kept), then its main points timed again,
# nearest ties first, for what time is left.
source benchmarks/call_prelude.sh f1
grep -q "H200" $R/device.txt || { echo "f1.sh: for an H200's table; this is $(tail -1 $R/device.txt)"; exit 1; }
cp fastsoftmax/dispatch_table_nvidia-h200.json $R/table.json
bash benchmarks/table_run.sh $R/table.json 250 330
