#!/usr/bin/env bash
# For an H200, as the eighty-sixth set's f1.sh with less time: its dispatch table measured again into a copy
# (f2/table.json): the grid with the row lengths one past each power of two (the other row points kept) within
# 200 s, then its main points timed again, nearest ties first, until 290 s.
source benchmarks/call_prelude.sh f2
grep -q "H200" $R/device.txt || { echo "f2.sh: for an H200's table; this is $(tail -1 $R/device.txt)"; exit 1; }
cp fastsoftmax/dispatch_table_nvidia-h200.json $R/table.json
bash benchmarks/table_run.sh $R/table.json 200 290
