#!/usr/bin/env bash
# call 1: the warp tier's rows a group (Tuning.warp_rows 1, 2, 4) on the main benchmark's narrow rows,
# alternated in one process; then compute-sanitizer over the cluster tier as it now compiles (its four tools)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
P="python3 benchmarks/grid_row_probe.py"
S=16777216x8,8388608x16,4194304x32,2097152x64,1398101x96,1048576x128,838860x160,524288x256,262144x512
timeout 200 $P --tiers warp,warp:warp_rows=1,warp:warp_rows=2,warp:warp_rows=4 --directions fwd,bwd --dtypes bf16,f32 --shapes $S --out $R > $R/warp_rows.txt 2>&1
SANITIZE_TIERS=cluster@0,cluster@1 SANITIZE_TIMEOUT=270 SANITIZE_JOBS=8 OUT=$R/san timeout 330 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
