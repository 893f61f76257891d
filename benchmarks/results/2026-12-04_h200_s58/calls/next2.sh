#!/usr/bin/env bash
# prepared for the next set (not run): Nsight Compute over the stepped spans' partials (below), then where
# grid_row's forward of a huge row spends its issue slots.
# The forty-third set's phases put about 5.6 us of bf16 1 x 2^24's 7.7 us gap to a floor kernel (the
# same bytes through registers, shared memory and one grid barrier) in the reduction of the staged
# shared-memory groups after their data landed (8.4 k cycles for about 78 K elements an SM), and the
# exponential unit takes 16 results a cycle an SM: 4.9 k cycles for those elements alone. Nsight
# Compute's pipe utilisation (XU: the exponentials; FMA; LSU and shared-memory wavefronts) says which
# of them the reduction waits on, before any kernel work on it (an exponential on the FMA pipe for part
# of each pack, as FlashAttention-4 does, would only help the first); the phases again beside it.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n2; mkdir -p $R
trap 'tar czf $OUT/n2.tar.gz -C $OUT n2 && rm -rf $R' EXIT
# first, next.sh's stepped spans: Nsight Compute over the bf16 log-softmax backward's partials of
# (8192, 8192)[:, ::2] over dim 0 (auto: packs of 4; and at 128 threads across) beside Inductor's
# reduction of the same spans (35.7 us against 47.4)
N=(--section SpeedOfLight --section Occupancy --section MemoryWorkloadAnalysis --section WarpStateStats)
T=(python3 benchmarks/ncu_target.py --shape 8192x4096 --dim 0 --dtype bf16 --step-inner --backward --log --calls 3)
timeout 80 ncu --profile-from-start off --kernel-name regex:fs_ --launch-count 3 "${N[@]}" "${T[@]}" \
  > $R/ncu_spans_auto.txt 2>&1
timeout 80 ncu --profile-from-start off --kernel-name regex:fs_ --launch-count 3 "${N[@]}" "${T[@]}" --tier strided \
  --tuned strided_max_width=128 > $R/ncu_spans_wide.txt 2>&1
timeout 100 ncu --profile-from-start off --kernel-name regex:triton_ --launch-count 3 "${N[@]}" "${T[@]}" --impl compile \
  > $R/ncu_spans_compile.txt 2>&1
N=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats
   --section MemoryWorkloadAnalysis --metrics sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active)
for dt in bf16 f32; do
  timeout 90 ncu --profile-from-start off --kernel-name regex:fs_ --launch-count 1 "${N[@]}" \
    python3 benchmarks/ncu_target.py --shape 1x16777216 --dtype $dt --calls 2 > $R/ncu_grid_row_$dt.txt 2>&1
  echo "ncu $dt rc $?"; grep -i "xu\|fma\|Duration\|Throughput" $R/ncu_grid_row_$dt.txt | head -12
done
timeout 120 python3 benchmarks/grid_row_phases.py --shapes 1x16777216 --dtypes bf16,f32 > $R/phases.txt 2>&1
echo "phases rc $?"; cat $R/phases.txt | head -60
