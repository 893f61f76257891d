#!/usr/bin/env bash
# prepared for the next set (not run). The spans' partials kernel at eight
# blocks an SM (the default since c4/): (1) float16, which takes the same constant, timed at five and
# eight beside bf16 (only bf16 was timed); (2) with tiles of more threads across than a warp
# (strided_max_width, c1/: 46.8 -> 44.1 us at 128 on its own), both together; (3) Nsight Compute at
# eight blocks beside Inductor's reduction, with the warps' stall reasons (SourceCounters), for what
# keeps 43.2 us from Inductor's 35.6 (c3/: 2.69 TB/s against 3.74 at five blocks, occupancy 67% against 79%).
# (4) racecheck over the wide tiles, below.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n1; mkdir -p $R
trap 'tar czf $OUT/n1.tar.gz -C $OUT n1 && rm -rf $R' EXIT
timeout 100 python3 -m fastsoftmax compile --match '^fs_(strided|staged)_|_columns$' > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
cd benchmarks
S="tier=strided"
T="$S,strided_spans_blocks=5;$S;$S,strided_max_width=64;$S,strided_max_width=128"
timeout 150 python3 kernel_breakdown.py --log --dtypes bfloat16,float16 --directions backward --tunings "$T" \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1;(2048,128,2048)[..., ::2] d1" \
  > $R/spans_blocks_log_backward_16bit.txt 2>&1
grep "a call\|Error" $R/spans_blocks_log_backward_16bit.txt
cd ..
N=(--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats
   --section LaunchStats --section SourceCounters)
T=(python3 benchmarks/ncu_target.py --shape 8192x4096 --dim 0 --dtype bf16 --step-inner --backward --log --calls 3)
timeout 90 ncu --profile-from-start off --kernel-name regex:partials --launch-count 1 "${N[@]}" "${T[@]}" \
  > $R/ncu_spans_b8.txt 2>&1; echo "ncu b8 rc $?"
timeout 100 ncu --profile-from-start off --kernel-name regex:triton_red --launch-count 1 "${N[@]}" "${T[@]}" \
  --impl compile > $R/ncu_spans_compile.txt 2>&1; echo "ncu compile rc $?"
for f in b8 compile; do grep -E "Duration|DRAM Throughput|Achieved Occupancy|Registers Per|Grid Size|Warp Cycles Per Issued" $R/ncu_spans_$f.txt | head -8; done
# (4) racecheck over the wide tiles (strided@7), which ran out of time in calls 2 and 3 (70 and 120 s),
# one dtype group a run
for dts in float32 float16,bfloat16; do
  (( SECONDS > 420 )) && { echo "skipped racecheck $dts: time"; continue; }
  timeout 170 compute-sanitizer --tool racecheck --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided@7 --dtypes $dts --verbose > $R/racecheck_strided_7_${dts%%,*}.txt 2>&1
  echo "racecheck $dts rc $?"; tail -n 1 $R/racecheck_strided_7_${dts%%,*}.txt
done
