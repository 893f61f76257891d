#!/usr/bin/env bash
# grid_row and cluster_stream asking L2 for their rows ahead of their loads (grid_row_tier.cuh's
# PREFETCH, the tuning grid_row_prefetch, new; bulk prefetches of the TMA unit): 1 the CTA's slots of a
# row past its registers as the row starts, 2 its slice of the next row once a row's reads are issued,
# 4 the streamed walks' slots two steps ahead of each step; sums of them.
# Why: c1/'s phases put float32 1 x 2^24's streamed statistics at 11 us for 179 KB an SM (half the SM's
# share of DRAM bandwidth: 4 slots of 16 bytes in flight a thread), and the copy groups ahead (c1/)
# did not move the bf16 shared groups' end (14.6 us, where the floor's data lands by 10.7).
# (0) the forms compiled on every CPU; (1) the GPU tests of all three bits together; (2) kernel by
# kernel in one process, both tiers, both directions. call4.sh: the other tests, phases, sanitizer.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/results/2026-12-04_h200_s60/calls/compile_forms.py prefetch > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
timeout -s INT 100 python3 -m pytest -q --tb=short tests/cuda/test_grid_row_gpu.py tests/cuda/test_cluster_stream_gpu.py \
  -k "test_with_prefetch and 7" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
cd benchmarks
P=grid_row_prefetch
G="tier=grid_row"
timeout 170 python3 kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward --no-compile \
  --tunings "$G;$G,$P=1;$G,$P=4;$G,$P=5;$G,$P=7;$G" \
  --cases "(1,16777216) d1;(1,67108864) d1;(4,4194304) d1" > $R/grid_row_prefetch.txt 2>&1
grep "a call\|Error" $R/grid_row_prefetch.txt
C="tier=cluster_stream"
timeout 170 python3 kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward --no-compile \
  --tunings "$C;$C,$P=2;$C,$P=4;$C,$P=6;$C,$P=7;$C" \
  --cases "(128,1048576) d1;(191,699051) d1;(256,524288) d1" > $R/cluster_stream_prefetch.txt 2>&1
grep "a call\|Error" $R/cluster_stream_prefetch.txt
