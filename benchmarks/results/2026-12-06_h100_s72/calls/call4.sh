#!/usr/bin/env bash
# call 4: grid_row in teams (a few rows at once, each over a team of the grid: RowGridTeams) against
# the whole grid on each row in turn (grid_row_teams=False) and split_row, forced tiers alternated in
# one process behind an L2 flush (results checked against float64 first); then grid_row's GPU tests
# and compute-sanitizer (memcheck, synccheck; racecheck on the teams' problems) over its problems
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 60 python3 -m fastsoftmax compile --match '^fs_(grid_row|split_row)_' > $R/compile.txt 2>&1; tail -n 1 $R/compile.txt
timeout 230 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,bwd --dtypes bf16,f32 \
  --tiers grid_row,grid_row:grid_row_teams=False,split_row \
  --shapes 2x4194304,3x4194304,4x4194304,4x8388608,8x2097152,2x8388608,16x1048576 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-230
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 100 python3 -m pytest -q --tb=short -n 4 tests/cuda/test_grid_row_gpu.py \
  > $R/grid_row_tests.txt 2>&1
echo "grid_row tests: $(tail -n 1 $R/grid_row_tests.txt)"; grep -h "^FAILED" $R/grid_row_tests.txt | head
for tool in memcheck synccheck; do
  timeout 70 compute-sanitizer --tool $tool python3 benchmarks/sanitize.py --tiers grid_row > $R/san_$tool.txt 2>&1
  echo "$tool rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_$tool.txt | tail -n 1)"
done
timeout 80 compute-sanitizer --tool racecheck python3 benchmarks/sanitize.py --tiers grid_row --shapes 3x4099,4x3000017 \
  --dtypes bfloat16 > $R/san_racecheck.txt 2>&1
echo "racecheck rc $?: $(grep -E 'RACECHECK SUMMARY|ERROR SUMMARY' $R/san_racecheck.txt | tail -n 1)"
