#!/usr/bin/env bash
# the GPU test of the long rows' plans in either alignment order (mended after the last set's GPU runs), then the
# dispatch table measured again: the grid into a copy of the table (its main points kept), then its main
# points timed again, nearest ties first, within the script's time limit
source benchmarks/call_prelude.sh c1
timeout 150 python3 -m pytest -q --tb=short tests/cuda/test_cuda_gpu.py -k "long_rows_plan or short_rows_in_every_storage" \
  > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
# the table "auto" reads on this GPU's model (its own, or the H100's reference table)
cp $(python3 -c 'from fastsoftmax import dispatch; print(dispatch.table_path(0))') $R/table.json
timeout 240 python3 -m fastsoftmax bench table --table-out $R/table.json > $R/grid.log 2>&1
echo "grid exit $? at $SECONDS s: $(tail -n 1 $R/grid.log)"
left=$(( 400 - SECONDS ))
(( left > 30 )) && timeout $(( left + 20 )) python3 -m fastsoftmax bench table --retime-main --table-out $R/table.json \
  --time-limit $left > $R/retime.log 2>&1
echo "retime exit $? at $SECONDS s: $(tail -n 1 $R/retime.log)"
