#!/usr/bin/env bash
# call 8: bf16 (16, 21, 513, 513) over dim 1 backward, the layouts' other loss to torch.compile
# (Triton's tiles 162 us against Inductor's 153): Inductor's generated kernel (its tile and warps),
# then Nsight Compute over both kernels
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
T=(python3 benchmarks/ncu_target.py --shape 16x21x513x513 --dim 1 --dtype bf16 --backward --calls 3)
TORCH_LOGS=output_code timeout 100 "${T[@]}" --impl compile > $R/inductor_code.txt 2>&1
grep -n "triton_heuristics\|def triton_\|XBLOCK\|R0_BLOCK\|RBLOCK\|num_warps" $R/inductor_code.txt | head -40
S=(--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis
   --section WarpStateStats --section SchedulerStats)
timeout 80 ncu --profile-from-start off --kernel-name regex:softmax_ --launch-count 1 "${S[@]}" "${T[@]}" > $R/ncu_odd_ours.txt 2>&1
timeout 120 ncu --profile-from-start off --kernel-name regex:triton_ --launch-count 1 "${S[@]}" "${T[@]}" --impl compile \
  > $R/ncu_odd_compile.txt 2>&1
for f in ncu_odd_ours ncu_odd_compile; do echo "== $f"; grep -E "^  [a-zA-Z_]|Duration|DRAM Throughput|Achieved Occupancy|Theoretical Occ|Registers Per|Issued Warp|L1/TEX Hit|L2 Hit|Mem Pipes" $R/$f.txt; done
