#!/usr/bin/env bash
# The GPU checks of the sixty-fourth set's changes, measured there on a CPU only: (1) the GPU
# tests of the remembered plans of calls with dtype= or under autocast and of efficient zero tensors
# (tests/test_repeated_calls.py), of the one pass (tests/test_widening.py, its every-tier test among
# them) and the CUDA graph / thread tests; (2) the widening probe again: the one pass's host time a
# call now that a repeated call takes a plan (32-137 us in 2026-12-05_h200_s63/c9/, before it);
# (3) the one pass beside the same kernels' plain forms (benchmarks/widening_tile_probe.py); (4) every
# Triton tier (tile, row, online, split, relay; the last three never under the sanitizer), plain and
# widened, forced on small problems, under compute-sanitizer's four tools.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 180 python3 -m pytest -q --tb=short -n 8 --dist worksteal \
  tests/test_repeated_calls.py tests/test_widening.py tests/gpu/test_concurrency.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
timeout 240 python3 benchmarks/widening_probe.py --out $R/widening.txt > $R/widening.log 2>&1
echo "probe rc $?"; tail -n 2 $R/widening.log | cut -c1-300
# the one pass against the same Triton kernels' plain forms over the same problems (the channel head's
# 0.36 of copy forward against 1.02 backward), with the kernels each form launches
timeout 90 python3 benchmarks/widening_tile_probe.py --kernels --out $R/widening_tile.txt > $R/widening_tile.log 2>&1
echo "tile probe rc $?"; tail -n 5 $R/widening_tile.log | cut -c1-300
# the kernels compiled once outside the sanitizer (Triton's cache), their results checked there too
timeout 120 python3 benchmarks/sanitize_triton.py --tiers > $R/tiers_plain_run.txt 2>&1
echo "tiers rc $?"; tail -n 1 $R/tiers_plain_run.txt
for tool in memcheck initcheck racecheck synccheck; do
  (( SECONDS > 480 )) && { echo "skipped $tool: time"; continue; }
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize_triton.py --tiers > $R/san_tiers_$tool.txt 2>&1
  echo "$tool tiers rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong results" $R/san_tiers_$tool.txt | tail -n 2
done
