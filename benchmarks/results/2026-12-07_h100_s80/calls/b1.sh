#!/usr/bin/env bash
# the dispatch table of whichever model "auto" reads on this GPU (an H200: dispatch_table_nvidia-h200.json,
# measured 2026-12-02/03) measured again on the current kernels: the grid, then its main points retimed
# nearest ties first for what time is left
source benchmarks/call_prelude.sh b1
cp $(python3 -c 'from fastsoftmax import dispatch; print(dispatch.table_path(0))') $R/table.json
timeout 240 python3 -m fastsoftmax bench table --table-out $R/table.json > $R/grid.log 2>&1
echo "grid exit $? at $SECONDS s: $(tail -n 1 $R/grid.log)"
left=$(( 420 - SECONDS ))
(( left > 30 )) && timeout $(( left + 20 )) python3 -m fastsoftmax bench table --retime-main --table-out $R/table.json \
  --time-limit $left > $R/retime.log 2>&1
echo "retime exit $? at $SECONDS s: $(tail -n 1 $R/retime.log)"
gzip -9n $R/table.json
