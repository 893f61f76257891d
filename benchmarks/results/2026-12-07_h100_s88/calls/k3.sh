#!/usr/bin/env bash
# The eighty-seventh set's k1.sh, shortened to about 220 s at most: the CUDA backend's backward of rows just past
# 16384 and 32768, with K (16-byte packs a thread holds) forced to 4 and 8 and to 4 CTAs (on an H100 the slow rows
# take K = 4 on 288 threads, the fast 19211, 30001 and 38259 one K more on 160-256), then Nsight Compute on fp16
# and bf16 at 16385. k1.sh's register report ran on the development machine under the same NVRTC 13.0
# (../cluster_bwd_registers_nvrtc13.0.txt); its alternation of both backends and its float32 forward pieces are
# left to k1.sh.
source benchmarks/call_prelude.sh k3
grep -q "H100" $R/device.txt || echo "k3.sh: the figures it checks are the H100's; this is $(tail -1 $R/device.txt)"
timeout 150 python3 benchmarks/grid_row_probe.py --quick --flush --directions bwd --dtypes f16,f32,bf16 --out $R \
  --shapes 4095x16385,3493x19211,2047x32769 \
  --tiers cluster,cluster:cluster_packs=4,cluster:cluster_packs=8,cluster:cluster_ctas=4 \
  > $R/cluster_forced.txt 2>&1; echo "forced rc $? at $SECONDS s"; tail -n 40 $R/cluster_forced.txt | cut -c1-160
for case in "4095x16385 f16" "4095x16385 bf16"; do
  set -- $case
  timeout 30 ncu --profile-from-start off --kernel-name regex:fs_cluster --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats python3 benchmarks/ncu_target.py --shape $1 --dtype $2 --backward > $R/ncu_$1_$2.txt 2>&1
  echo "$1 $2: rc $? at $SECONDS s"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Local" $R/ncu_$1_$2.txt | head -6
done
