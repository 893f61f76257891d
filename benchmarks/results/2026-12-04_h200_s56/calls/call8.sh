#!/usr/bin/env bash
# call 8: compute-sanitizer's four tools over the strided tier (its problems and tuned runs: the deep
# walk forced; memcheck again with host API errors unreported: call 7's 34 errors were all
# cuGetProcAddress_v2 probes of the driver bindings, as device_run.sh leaves out), and all four over
# the Triton tiles (sanitize_triton.py: the capped float32 scalar tiles now by default)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R/san
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
for tool in memcheck racecheck synccheck; do
  timeout 130 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py --tiers strided > $R/san/strided_$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/strided_$tool.txt
done
for tool in memcheck racecheck initcheck synccheck; do
  timeout 80 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 benchmarks/sanitize_triton.py > $R/san/triton_$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/triton_$tool.txt
done
