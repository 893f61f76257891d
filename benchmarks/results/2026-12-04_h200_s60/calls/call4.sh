#!/usr/bin/env bash
# After call3.sh (the same machine or a fresh one: the forms compile first again, cached if
# warm): the prefetch forms' other GPU tests (3: rest and next; 4: the streamed walks' lead), grid_row's
# phases with each bit, and compute-sanitizer's memcheck, synccheck and initcheck over the parts that
# tune them (grid_row@1: 5, grid_row@2: 7, cluster_stream@6: 7 on persistent clusters); call5.sh: racecheck.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R/san
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/results/2026-12-04_h200_s60/calls/compile_forms.py prefetch > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
timeout -s INT 120 python3 -m pytest -q --tb=short tests/cuda/test_grid_row_gpu.py tests/cuda/test_cluster_stream_gpu.py \
  -k "test_with_prefetch and not 7" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
timeout 80 python3 benchmarks/grid_row_phases.py --shapes 1x16777216 --dtypes bf16,f32 --prefetch 0,1,4,5 \
  > $R/phases.txt 2>&1
echo "phases rc $?"; grep "grid_row\|stream rest\|shared groups\|write" $R/phases.txt
for part in grid_row@1 grid_row@2 cluster_stream@6; do
  for tool in memcheck synccheck initcheck; do
    (( SECONDS > 560 )) && { echo "skipped $tool $part: time"; continue; }
    timeout 50 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
      python3 benchmarks/sanitize.py --tiers $part --dtypes bfloat16,float32 > $R/san/${tool}_${part/@/_}.txt 2>&1
    echo "$tool $part rc $?"; tail -n 1 $R/san/${tool}_${part/@/_}.txt
  done
done
