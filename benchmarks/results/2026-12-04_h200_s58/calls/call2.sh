#!/usr/bin/env bash
# call 2: the strided tier's GPU tests after the stepped spans became the rule (packs of 4 for the 16-bit
# log-softmax backward's partials over a dy stepping by 2); compute-sanitizer's four tools over the
# strided tier's default problems (its stepped variants now take the spans; the narrow-pack partials
# too); the kernels auto launches for bf16 expand(1, 4096, 4096) log-softmax backward over dim 1 (the
# fifty-seventh set's broadcast rule, call8.sh there)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R/san
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
timeout 200 python3 -m pytest -q tests/cuda/test_strided_gpu.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
bash benchmarks/results/2026-12-04_h200_s57/calls/call8.sh > $R/expand_kernels.txt 2>&1; cat $R/expand_kernels.txt
for tool in memcheck initcheck synccheck racecheck; do
  (( SECONDS > 520 )) && { echo "skipped $tool: time"; continue; }
  timeout 130 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided@0 > $R/san/$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/$tool.txt
done
