#!/usr/bin/env bash
# call 8: compute-sanitizer's racecheck and synccheck over the strided tier (its problems and tuned
# runs: the deep walk forced), and all four tools over the Triton tiles (sanitize_triton.py: the
# capped float32 scalar tiles now by default)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R/san
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
for tool in racecheck synccheck; do
  timeout 130 compute-sanitizer --tool $tool --print-limit 20 python3 benchmarks/sanitize.py --tiers strided > $R/san/strided_$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/strided_$tool.txt
done
for tool in memcheck racecheck initcheck synccheck; do
  timeout 80 compute-sanitizer --tool $tool --print-limit 20 python3 benchmarks/sanitize_triton.py > $R/san/triton_$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/triton_$tool.txt
done
