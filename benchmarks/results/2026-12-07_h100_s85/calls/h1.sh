#!/usr/bin/env bash
# The held realigned kernels' threads by the bytes of a row's body block (REALIGNED_HELD_ELEMS_PER_THREAD) and
# realigned rows of every length from 9 (REALIGNED_ROW_COLS): their GPU tests, memcheck over every Triton tier
# (rows of 300, 600 and 12345 among the problems), then the dispatch table measured again as in
# 2026-12-06_h100_s79/calls/c1.sh: the grid into a copy of this GPU's table, then its main points retimed,
# nearest ties first, within the script's limit.
source benchmarks/call_prelude.sh h1
timeout 150 python3 -m pytest -q -p no:cacheprovider tests/test_realigned_rows.py tests/test_dispatch.py \
  > $R/tests.txt 2>&1; echo "tests rc $? at $SECONDS s"; tail -1 $R/tests.txt; grep -h "^FAILED" $R/tests.txt | head
timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize_triton.py --tiers > $R/memcheck.txt 2>&1
echo "memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|problems" $R/memcheck.txt | head -4
cp $(python3 -c 'from fastsoftmax import dispatch; print(dispatch.table_path(0))') $R/table.json
timeout 220 python3 -m fastsoftmax bench table --table-out $R/table.json > $R/grid.log 2>&1
echo "grid exit $? at $SECONDS s: $(tail -n 1 $R/grid.log)"
left=$(( 560 - SECONDS ))
(( left > 30 )) && timeout $(( left + 20 )) python3 -m fastsoftmax bench table --retime-main --table-out $R/table.json \
  --time-limit $left > $R/retime.log 2>&1
echo "retime exit $? at $SECONDS s: $(tail -n 1 $R/retime.log)"
