#!/usr/bin/env bash
# After call4.sh: compute-sanitizer's racecheck over the prefetch forms' sanitizer parts (grid_row@1:
# 5, grid_row@2: 7, cluster_stream@6: 7 on persistent clusters), one dtype a run, with the time
# racecheck takes over cluster kernels (c1/'s cluster_stream@6 ran out of 40 s).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R/san
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/results/2026-12-04_h200_s60/calls/compile_forms.py prefetch > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
for part in cluster_stream@6 grid_row@2 grid_row@1; do
  for dtype in bfloat16 float32; do
    (( SECONDS > 450 )) && { echo "skipped racecheck $part $dtype: time"; continue; }
    timeout 140 compute-sanitizer --tool racecheck --report-api-errors no --print-limit 20 \
      python3 benchmarks/sanitize.py --tiers $part --dtypes $dtype --verbose > $R/san/racecheck_${part/@/_}_$dtype.txt 2>&1
    echo "racecheck $part $dtype rc $?"; tail -n 1 $R/san/racecheck_${part/@/_}_$dtype.txt
  done
done
