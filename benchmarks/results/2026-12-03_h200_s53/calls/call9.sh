#!/usr/bin/env bash
# call 9: call 8's Nsight Compute over our side again, on the Triton backend that auto gives bf16
# (16, 21, 513, 513) over dim 1 (ncu_target.py had forced the CUDA backend: call 8's ncu_odd_ours.txt
# is the strided tier's single elements, which auto does not choose there)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c9; mkdir -p $R
trap 'tar czf $OUT/c9.tar.gz -C $OUT c9 && rm -rf $R' EXIT
T=(python3 benchmarks/ncu_target.py --shape 16x21x513x513 --dim 1 --dtype bf16 --backward --calls 3 --backend triton)
S=(--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis
   --section WarpStateStats --section SchedulerStats)
timeout 100 ncu --profile-from-start off --kernel-name regex:softmax_ --launch-count 1 "${S[@]}" "${T[@]}" > $R/ncu_odd_triton.txt 2>&1
grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occ|Registers Per|Issued Warp|L1/TEX Hit|L2 Hit|Mem Pipes|Block Size|Grid Size" $R/ncu_odd_triton.txt
