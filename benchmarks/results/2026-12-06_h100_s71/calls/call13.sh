#!/usr/bin/env bash
# call 13 (prepared, not run): why bf16 staged tiles run at 0.77 of copy where float32 runs 0.88 on
# the same byte geometry ((32, 4096, 1024) over dim 1: 128-byte row pieces, clusters of 8, two CTAs an
# SM; the exponentials explain at most 0.02-0.04, calls 3-4). Nsight Compute on both forwards: the
# warps' stall reasons, the pipes, the instructions an element and the issue rate, then per SASS line
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c13; mkdir -p $R
trap 'tar czf $OUT/c13.tar.gz -C $OUT c13 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
for dt in bf16 f32; do
  timeout 120 ncu --kernel-name regex:fs_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section WarpStateStats --section InstructionStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    python3 benchmarks/ncu_target.py --shape 32x4096x1024 --dim 1 --dtype $dt --tier strided_staged --calls 6 \
    > $R/ncu_staged_$dt.txt 2>&1
  echo "$dt rc $?"; grep -E "Duration|Issue Slots Busy|Executed Ipc|Warp Cycles Per Issued|DRAM Throughput|Stall" $R/ncu_staged_$dt.txt | head -20
  timeout 150 ncu --kernel-name regex:fs_ --launch-skip 3 --launch-count 1 --section SourceCounters --page source \
    --print-source sass --csv \
    python3 benchmarks/ncu_target.py --shape 32x4096x1024 --dim 1 --dtype $dt --tier strided_staged --calls 6 \
    > $R/ncu_sass_$dt.csv 2> $R/ncu_sass_$dt.err
done
