#!/usr/bin/env bash
# The one pass's widened forms on every Triton tier (tests/test_widening.py's
# test_one_pass_on_every_triton_tier: tile, row, online, split, relay forced onto small problems, both
# 16-bit types, both directions, against float64), on the GPU and under compute-sanitizer.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c10; mkdir -p $R
trap 'tar czf $OUT/c10.tar.gz -C $OUT c10 && rm -rf $R' EXIT
timeout -s INT 90 python3 -m pytest -q --tb=short -p no:cacheprovider tests/test_widening.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 1 $R/gpu_tests.txt
for tool in memcheck racecheck initcheck synccheck; do
  (( SECONDS > 200 )) && { echo "skipped $tool: time"; continue; }
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 -m pytest -q -x -p no:xdist -p no:cacheprovider tests/test_widening.py -k "every_triton_tier" \
    > $R/san_tiers_$tool.txt 2>&1
  echo "$tool tiers rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|passed|failed" $R/san_tiers_$tool.txt | tail -n 2
done
