#!/usr/bin/env bash
# Prepared for the next set: Nsight Compute on Triton's held realigned forward where the elements a thread
# decided the time (g1: bf16 111848 x 600 190.1 us at 16 a thread, 105.1 at 64; the tile tier, blocks of 2 KiB)
# and on rows of 1025 (the row tier, level at every count; 32 and 64 a thread plan the same one warp there),
# to see what the slow form spends: memory throughput, L2 and DRAM traffic, warp stalls. Each case up to 100 s.
source benchmarks/call_prelude.sh p1
for case in "111848x600 16" "111848x600 32" "111848x600 64" "65472x1025 16" "65472x1025 32"; do
  set -- $case
  timeout 100 ncu --profile-from-start off --kernel-name regex:softmax_fwd_realigned --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats python3 benchmarks/ncu_target.py --shape $1 --dtype bf16 --backend triton \
    --held-elems $2 > $R/ncu_$1_$2.txt 2>&1
  echo "$1 at $2 a thread: rc $? at $SECONDS s"
  grep -E "Duration|Memory Throughput|DRAM Throughput|L2 Cache Throughput|Registers Per|Achieved Occupancy" \
    $R/ncu_$1_$2.txt | head -8
done
