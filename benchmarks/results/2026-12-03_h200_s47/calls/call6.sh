#!/usr/bin/env bash
# call 6: 16-bit rows of 48-128 over 4 lanes a row (Tuning.warp_lanes=4, new) against the default (a narrow
# group one pack a lane, or 8 lanes) and flat_rows, alternated in one process behind an L2 flush; the GPU
# tests of the lane counts and compute-sanitizer over the warp tier (its 4-, 8- and 16-lane tuned runs)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r6; mkdir -p $R
trap 'tar czf $OUT/r6.tar.gz -C $OUT r6 && rm -rf $R' EXIT
timeout 200 python3 benchmarks/grid_row_probe.py --flush --tiers flat_rows,warp,warp:warp_lanes=4,warp:warp_lanes=8 \
  --directions fwd,bwd --dtypes bf16,f16 --shapes 2796202x48,2396745x56,2097152x64,1398101x96,1048576x128 \
  --out $R/lanes4 > $R/lanes4_probe.txt 2>&1
SANITIZE_TIERS=warp SANITIZE_TIMEOUT=170 SANITIZE_JOBS=4 OUT=$R/san timeout 180 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
timeout 120 python3 -m pytest tests/cuda/test_cuda_gpu.py -k warp_lanes -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests.txt
wait
