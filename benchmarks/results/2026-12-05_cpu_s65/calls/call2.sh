#!/usr/bin/env bash
# (1) The one pass beside the same Triton kernels' plain forms over the same problems (the channel
# head's 0.36 of copy forward against 1.02 backward), with the kernels each form launches; (2) every
# Triton tier (tile, row, online, split, relay; the last three never under the sanitizer), plain and
# widened, forced on small problems, under compute-sanitizer's four tools, through this set's launch
# path. (The second half of ../2026-12-05_cpu_s64/calls/call1.sh.)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
timeout 90 python3 benchmarks/widening_tile_probe.py --kernels --out $R/widening_tile.txt > $R/widening_tile.log 2>&1
echo "tile probe rc $?"; tail -n 5 $R/widening_tile.log | cut -c1-300
# the kernels compiled once outside the sanitizer (Triton's cache), their results checked there too
timeout 120 python3 benchmarks/sanitize_triton.py --tiers > $R/tiers_plain_run.txt 2>&1
echo "tiers rc $?"; tail -n 1 $R/tiers_plain_run.txt
for tool in memcheck initcheck racecheck synccheck; do
  (( SECONDS > 480 )) && { echo "skipped $tool: time"; continue; }
  timeout 90 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize_triton.py --tiers > $R/san_tiers_$tool.txt 2>&1
  echo "$tool tiers rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong results" $R/san_tiers_$tool.txt | tail -n 2
done
