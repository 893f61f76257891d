#!/usr/bin/env bash
# call 11: Nsight Compute on the bf16 log-softmax backward's column sums of dy over dim 0 of a dense
# (8192, 8192) (the memory pattern of (8192, 8192).t() over dim 1): the strided tier's partials pass
# (42 us kernel by kernel) against Inductor's split reduction (33 us: 16 chunks of 512 rows, tiles of
# 64 columns x 8 rows over 4 warps, 32 registers; c6/)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c11; mkdir -p $R
trap 'tar czf $OUT/c11.tar.gz -C $OUT c11 && rm -rf $R' EXIT
T=(python3 benchmarks/ncu_target.py --shape 8192x8192 --dim 0 --dtype bf16 --backward --log --calls 3)
S=(--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis
   --section WarpStateStats)
timeout 120 ncu --profile-from-start off --kernel-name regex:fs_strided_logsoftmax --launch-count 1 "${S[@]}" \
  "${T[@]}" --tier strided > $R/ncu_partials_ours.txt 2>&1
timeout 120 ncu --profile-from-start off --kernel-name regex:triton_red --launch-count 1 "${S[@]}" \
  "${T[@]}" --impl compile > $R/ncu_partials_inductor.txt 2>&1
grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|Memory Throughput|Achieved Occupancy|Theoretical Occ|Registers Per|Issued Warp|L1/TEX Hit|L2 Hit|Block Size|Grid Size|Waves Per SM|Warp Cycles Per Issued" $R/*.txt
