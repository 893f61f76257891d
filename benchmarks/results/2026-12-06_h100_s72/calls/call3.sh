#!/usr/bin/env bash
# call 3: grid_row's forward with its shared-memory copy groups issued 2 or all 4 ahead of the first
# reduction (RowGridTeam::kGroupsAhead; 1 today, measured only on an H200 before) on an H100, forced
# tier alternated in one process behind an L2 flush: rows that fit on chip (1 x 2^24), rows with a
# streamed rest (float32 1 x 2^24, 1 x 2^26), a few rows (4 x 2^22)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
K=fastsoftmax/backends/cuda/kernels
OLD='static constexpr int kGroupsAhead = 1;'
timeout 400 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,log --dtypes bf16,f32 \
  --baseline a2=$K --baseline-replace "a2|$OLD|static constexpr int kGroupsAhead = 2;" \
  --baseline a4=$K --baseline-replace "a4|$OLD|static constexpr int kGroupsAhead = 4;" \
  --tiers grid_row,a2/grid_row,a4/grid_row \
  --shapes 1x16777216,1x16777223,1x67108864,4x4194304 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-230
