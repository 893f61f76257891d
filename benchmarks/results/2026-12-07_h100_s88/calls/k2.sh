#!/usr/bin/env bash
# The eighty-seventh set's k1.sh, shortened (about 330 s at most): the CUDA backend's backward of rows just past
# 16384 and 32768. Without k1's register report (the same NVRTC 13.0 gives it on the development machine:
# ../cluster_bwd_registers_nvrtc13.0.txt) and its float32 forward pieces; with K (16-byte packs a thread holds)
# forced to 4 and to 8 in place of 256 threads: on an H100 the slow rows take K = 4 with 288 threads (K = 2 for
# 32769 in 16 bits), the fast 19211, 30001 and 38259 one K more, 160-256 threads. The forced shapes first, then
# the three types through both backends, then Nsight Compute on fp16 and bf16 at 16385.
source benchmarks/call_prelude.sh k2
grep -q "H100" $R/device.txt || echo "k2.sh: the figures it checks are the H100's; this is $(tail -1 $R/device.txt)"
timeout 150 python3 benchmarks/grid_row_probe.py --quick --flush --directions bwd --dtypes f16,f32,bf16 --out $R \
  --shapes 4095x16385,3493x19211,2047x32769 \
  --tiers cluster,cluster:cluster_packs=4,cluster:cluster_packs=8,cluster:cluster_ctas=4 \
  > $R/cluster_forced.txt 2>&1; echo "forced rc $? at $SECONDS s"; tail -n 40 $R/cluster_forced.txt | cut -c1-160
timeout 110 python3 benchmarks/triton_offsets_probe.py --rounds 2 --dtypes bfloat16,float16,float32 --directions backward \
  --shapes $(row_shapes 8193 10053 16384 16385 16752 19211 30001 32769 36484 38259) --variants cuda,realigned \
  > $R/backward.txt 2>&1; echo "probe rc $? at $SECONDS s"; cut -c1-160 $R/backward.txt
for case in "4095x16385 f16" "4095x16385 bf16"; do
  set -- $case
  timeout 35 ncu --profile-from-start off --kernel-name regex:fs_cluster --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats python3 benchmarks/ncu_target.py --shape $1 --dtype $2 --backward > $R/ncu_$1_$2.txt 2>&1
  echo "$1 $2: rc $? at $SECONDS s"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Local" $R/ncu_$1_$2.txt | head -6
done
