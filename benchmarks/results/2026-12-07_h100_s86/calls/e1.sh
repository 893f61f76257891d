#!/usr/bin/env bash
# The rows one past each power of two where a backend's row kernels double their lanes (bench table
# --row-lengths edges: 2^k + 1 and 2^k + 16 / itemsize + 1, k = 6..15, every dtype, both directions) into a
# copy of this GPU's table (e1/table.json); then 24 lengths drawn log-uniform from 65-40000 (seed 86, none a
# point of the table) in bf16 and float32, both directions, into another copy (e1/heldout.json), on which the
# dispatcher's choices with and without the edge points and dispatch.ROW_OCTAVE_DISTANCE are judged.
source benchmarks/call_prelude.sh e1
# this GPU's table (the H100's: fastsoftmax/dispatch_table.json; an H200's: dispatch_table_nvidia-h200.json)
TABLE=$(python3 -c 'from fastsoftmax import dispatch; print(dispatch.table_path(0))')
echo "table: $TABLE"
cp $TABLE $R/table.json
cp $TABLE $R/heldout.json
timeout 280 python3 -m fastsoftmax bench table --row-lengths edges --table-out $R/table.json > $R/edges.log 2>&1
echo "edges exit $? at $SECONDS s: $(tail -n 1 $R/edges.log)"
HELDOUT=70,79,97,102,126,197,248,405,429,499,819,1251,1414,1636,2711,3754,8536,10486,12358,12561,12702,14109,16677,19136
timeout $(( 560 - SECONDS )) python3 -m fastsoftmax bench table --row-lengths $HELDOUT --dtypes bf16,fp32 \
  --table-out $R/heldout.json > $R/heldout.log 2>&1
echo "held-out exit $? at $SECONDS s: $(tail -n 1 $R/heldout.log)"
