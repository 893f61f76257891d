#!/usr/bin/env bash
# prepared for the next set (not run): where grid_row's forward of a huge row spends its issue slots.
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
N=(--section SpeedOfLight --section ComputeWorkloadAnalysis --section InstructionStats --section WarpStateStats
   --section MemoryWorkloadAnalysis --metrics sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active)
for dt in bf16 f32; do
  timeout 90 ncu --profile-from-start off --kernel-name regex:fs_ --launch-count 1 "${N[@]}" \
    python3 benchmarks/ncu_target.py --shape 1x16777216 --dtype $dt --calls 2 > $R/ncu_grid_row_$dt.txt 2>&1
  echo "ncu $dt rc $?"; grep -i "xu\|fma\|Duration\|Throughput" $R/ncu_grid_row_$dt.txt | head -12
done
timeout 120 python3 benchmarks/grid_row_phases.py --shapes 1x16777216 --dtypes bf16,f32 > $R/phases.txt 2>&1
echo "phases rc $?"; cat $R/phases.txt | head -60
