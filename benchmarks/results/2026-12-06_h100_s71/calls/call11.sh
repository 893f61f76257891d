#!/usr/bin/env bash
# call 11 (one command line): grid_row's forward phases on the H100 beside the floor kernel
# (benchmarks/grid_row_phases.py; the last such timeline was an H200's)
export PYTHONPATH=$PWD; mkdir -p $OUT/c11
nvidia-smi --query-gpu=name,driver_version --format=csv > $OUT/c11/device.txt
timeout 150 python3 benchmarks/grid_row_phases.py --shapes 1x16777216 --dtypes bf16,f32 > $OUT/c11/phases.txt 2>&1
echo rc $?; cat $OUT/c11/phases.txt | cut -c1-200 | tail -60
