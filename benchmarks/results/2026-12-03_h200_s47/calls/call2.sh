#!/usr/bin/env bash
# call 2: aligned 16-bit rows of 96-448, forward and backward: flat_rows against the warp tier by default
# (8 lanes a row at 129-192 columns, 16 at 193-384) and forced to 8 lanes or a whole warp, alternated in
# one process behind an L2 flush; then the GPU tests of the warp and flat_rows tiers and of the public
# API (tests/gpu) beside compute-sanitizer over the warp tier, its default now over fewer lanes
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $R/device.txt 2>&1
python3 -c "import torch, triton, cuda.core, cuda.bindings; print(torch.__version__, triton.__version__, cuda.core.__version__, cuda.bindings.__version__)" >> $R/device.txt 2>&1
timeout 270 python3 benchmarks/grid_row_probe.py --flush --tiers flat_rows,warp,warp:warp_lanes=32,warp:warp_lanes=8 \
  --directions fwd,bwd --dtypes bf16 \
  --shapes 1398101x96,1048576x128,932067x144,838860x160,699050x192,645277x208,599186x224,524288x256,419430x320,299593x448 \
  --out $R/rows > $R/rows_probe.txt 2>&1
SANITIZE_TIERS=warp,flat_rows SANITIZE_TIMEOUT=230 SANITIZE_JOBS=4 OUT=$R/san timeout 240 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
( timeout 120 python3 -m pytest tests/cuda -k "warp or flat" -q -n 10 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 12
  FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 110 python3 -m pytest tests/gpu -q -n 10 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 12 ) > $R/tests.txt
wait
