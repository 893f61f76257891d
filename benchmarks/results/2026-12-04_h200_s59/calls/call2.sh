#!/usr/bin/env bash
# compute-sanitizer over what the fifty-eighth set left unchecked: racecheck and synccheck over the
# strided tier's default problems (strided@0) and the flat finish across outer indices (strided@6),
# whose two-stage kernels were recompiled; memcheck and initcheck over @0 as built now (its last run
# used the source before the flat-outer change); the four tools over the wide tiles (strided@7). Then
# Nsight Compute's pipe use over grid_row's forward of 1 x 2^24 (where its reduction after the data
# lands waits: the exponential unit, FMA, or shared memory), and its phases beside it.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R/san
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
timeout 100 python3 -m fastsoftmax compile --match '^fs_(strided|staged)_|_columns$' > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
run_tool() {  # tool part
  (( SECONDS > 330 )) && { echo "skipped $1 $2: time"; return; }
  timeout 70 compute-sanitizer --tool $1 --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers $2 > $R/san/$1_${2/@/_}.txt 2>&1
  echo "$1 $2 rc $?"; tail -n 1 $R/san/$1_${2/@/_}.txt
}
for t in racecheck synccheck; do run_tool $t strided@6; done
for t in racecheck synccheck memcheck initcheck; do run_tool $t strided@0; done
for t in memcheck racecheck synccheck initcheck; do run_tool $t strided@7; done
N=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats
   --section MemoryWorkloadAnalysis --metrics sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active)
for dt in bf16 f32; do
  (( SECONDS > 480 )) && { echo "skipped ncu $dt: time"; continue; }
  timeout 60 ncu --profile-from-start off --kernel-name regex:fs_ --launch-count 1 "${N[@]}" \
    python3 benchmarks/ncu_target.py --shape 1x16777216 --dtype $dt --calls 2 > $R/ncu_grid_row_$dt.txt 2>&1
  echo "ncu $dt rc $?"; grep -i "xu\|fma\|Duration\|Throughput" $R/ncu_grid_row_$dt.txt | head -12
done
(( SECONDS < 540 )) && { timeout 50 python3 benchmarks/grid_row_phases.py --shapes 1x16777216 --dtypes bf16 \
  > $R/phases.txt 2>&1; echo "phases rc $?"; head -40 $R/phases.txt; }
