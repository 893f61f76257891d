#!/usr/bin/env bash
# call 12 (prepared, not run): grid_row's forward phases again, the floor kernel now marking the end
# of its loads' issue apart from their landing (grid_row_phases.py's FLOOR_PHASES): whether grid_row's
# issue (6.9 us a CTA in call 11) is slower than the floor's, or its groups land later
export PYTHONPATH=$PWD; mkdir -p $OUT/c12
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/c12/device.txt
timeout 120 python3 benchmarks/grid_row_phases.py --shapes 1x16777216,1x16777223 --dtypes bf16,f32 > $OUT/c12/phases.txt 2>&1
echo rc $?; cut -c1-200 $OUT/c12/phases.txt | tail -60
