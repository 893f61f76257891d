#!/usr/bin/env bash
# call 2: the warp tier's rows a group, interleaved over the block's groups (this revision) against the
# group's own rows consecutive (base/: the kernels before), one row a group, and flat_rows, alternated in
# one process behind an L2 flush as the main benchmark's timer
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
P="python3 benchmarks/grid_row_probe.py --flush --baseline base=benchmarks/results/2026-12-02_h200_s46/calls/base_kernels"
W=warp:warp_rows
timeout 200 $P --tiers base/$W=2,$W=1,$W=2,$W=4,flat_rows --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 16777216x8,8388608x16,4194304x32,2097152x64,1398101x96,1048576x128 --out $R/narrow > $R/warp_rows_narrow.txt 2>&1
timeout 120 $P --tiers base/$W=1,$W=1,$W=2,$W=4 --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 838860x160,524288x256,262144x512 --out $R/full > $R/warp_rows_full.txt 2>&1
timeout 150 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "warp_rows_a_group or warp_sector_groups or warp_tier" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests_warp.txt
SANITIZE_TIERS=warp SANITIZE_TIMEOUT=200 OUT=$R/san timeout 240 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
