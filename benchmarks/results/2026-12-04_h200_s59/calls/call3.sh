#!/usr/bin/env bash
# Nsight Compute over the bf16 log-softmax backward's partials of (8192, 8192)[:, ::2] over dim 0 (the
# stepped spans, auto: packs of 4 at a warp across; at 128 threads across, 44.1 us against 46.8 in
# c1/) beside Inductor's reduction of the same spans (35.6 us); then racecheck over the flat finish
# across outer indices (strided@6) and the wide tiles (strided@7), whose 70 s ran out in call 2, with
# more time and each launch named as it runs, and initcheck over @7.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R/san
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
timeout 100 python3 -m fastsoftmax compile --match '^fs_(strided|staged)_|_columns$' > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
N=(--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats
   --section LaunchStats)
T=(python3 benchmarks/ncu_target.py --shape 8192x4096 --dim 0 --dtype bf16 --step-inner --backward --log --calls 3)
timeout 70 ncu --profile-from-start off --kernel-name regex:partials --launch-count 1 "${N[@]}" "${T[@]}" \
  > $R/ncu_spans_auto.txt 2>&1; echo "ncu auto rc $?"
timeout 70 ncu --profile-from-start off --kernel-name regex:partials --launch-count 1 "${N[@]}" "${T[@]}" \
  --tier strided --tuned strided_max_width=128 > $R/ncu_spans_wide.txt 2>&1; echo "ncu wide rc $?"
timeout 90 ncu --profile-from-start off --kernel-name regex:triton_red --launch-count 1 "${N[@]}" "${T[@]}" \
  --impl compile > $R/ncu_spans_compile.txt 2>&1; echo "ncu compile rc $?"
for f in auto wide compile; do grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Block Size|Grid Size|Theoretical Occ|Memory Throughput" $R/ncu_spans_$f.txt | head -10; done
run_tool() {  # tool part seconds
  (( SECONDS + $3 > 590 )) && { echo "skipped $1 $2: time"; return; }
  timeout $3 compute-sanitizer --tool $1 --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers $2 --verbose > $R/san/$1_${2/@/_}.txt 2>&1
  echo "$1 $2 rc $?"; tail -n 2 $R/san/$1_${2/@/_}.txt
}
run_tool racecheck strided@6 170
run_tool racecheck strided@7 120
run_tool initcheck strided@7 60
