#!/usr/bin/env bash
# Prepared for the next set: the CUDA backend's backward of rows just past 16384 and 32768 (e3/, e4/: fp16
# 4095 x 16385 201 us and 2047 x 32769 225 where bf16 takes 139 and 144, at the same cluster shape; float32
# 428-458 where Triton takes 289-351 and the floor is about 270; bf16 rows of 8193-12372 at 189-220). The
# cluster instances' registers under this machine's NVRTC (register_report.py), the three types alternated
# through both backends (triton_offsets_probe.py, rows of 2^26 elements), the cluster tier forced at its own
# shape and at 256 threads or 4 CTAs (grid_row_probe.py: float32's slow rows take CTAs of 288 threads, as the
# eighty-eighth set found (first given here as 160), its 30001 and 32768 of 256), then Nsight Compute on the
# fp16 and bf16 cluster kernels at 16385 (slow in fp16) and 19211 (not); the float32 forward's two pieces
# against one. About 450 s.
source benchmarks/call_prelude.sh k1
grep -q "H100" $R/device.txt || echo "k1.sh: the figures it checks are the H100's; this is $(tail -1 $R/device.txt)"
timeout 120 python3 benchmarks/register_report.py --match 'cluster_softmax_bwd_(bf16|f16|f32)_p[48]_c(32|64)' \
  > $R/registers.txt 2>&1; echo "registers rc $? at $SECONDS s"; tail -n 16 $R/registers.txt
timeout 120 python3 benchmarks/triton_offsets_probe.py --rounds 2 --dtypes bfloat16,float16,float32 --directions backward \
  --shapes $(row_shapes 8193 10053 16384 16385 16752 19211 30001 32769 36484 38259) --variants cuda,realigned \
  > $R/backward.txt 2>&1; echo "probe rc $? at $SECONDS s"; cut -c1-160 $R/backward.txt
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --directions bwd --dtypes f16,f32,bf16 --out $R \
  --shapes 4095x16385,3493x19211,2047x32769 --tiers cluster,cluster:cluster_threads=256,cluster:cluster_ctas=4 \
  > $R/cluster_forced.txt 2>&1; echo "forced rc $? at $SECONDS s"; tail -n 14 $R/cluster_forced.txt | cut -c1-160
# the float32 forward's two pieces, whose share the shipped 1/16 rests on rows timed in separate processes
# (e4/table.json.gz against e3/table.json.gz): shipped, one piece (two@0) and 1/8 of any length (two@0.125)
timeout 60 python3 benchmarks/triton_offsets_probe.py --rounds 2 --dtypes float32 --directions forward \
  --shapes $(row_shapes 36 37 68 72 74 136 145 545 577) --variants realigned,cuda --two-pieces 0,0.125 \
  > $R/float32_pieces.txt 2>&1; echo "float32 pieces rc $? at $SECONDS s"; cut -c1-160 $R/float32_pieces.txt
for case in "4095x16385 f16" "4095x16385 bf16" "3493x19211 f16" "3493x19211 bf16"; do
  set -- $case
  timeout 40 ncu --profile-from-start off --kernel-name regex:fs_cluster --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy \
    --section LaunchStats python3 benchmarks/ncu_target.py --shape $1 --dtype $2 --backward > $R/ncu_$1_$2.txt 2>&1
  echo "$1 $2: rc $? at $SECONDS s"
  grep -E "Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Local" $R/ncu_$1_$2.txt | head -6
done
