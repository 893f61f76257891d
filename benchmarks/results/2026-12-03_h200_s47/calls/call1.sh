#!/usr/bin/env bash
# call 1: 16-bit rows of 160-512 over 8 or 16 lanes (Tuning.warp_lanes) against a whole warp, alternated in
# one process behind an L2 flush; the dispatch table's bulk grid measured again; then the GPU tests of the
# warp tier's lanes and the public API (tests/gpu) beside compute-sanitizer over the warp tier
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $R/device.txt 2>&1
python3 -c "import torch, triton, cuda.core, cuda.bindings; print(torch.__version__, triton.__version__, cuda.core.__version__, cuda.bindings.__version__)" >> $R/device.txt 2>&1
timeout 200 python3 benchmarks/grid_row_probe.py --flush --tiers warp,warp:warp_lanes=16,warp:warp_lanes=8 \
  --directions fwd,bwd --dtypes bf16,f16 --shapes 524288x256,838860x160,671088x200,349525x384,262144x512 \
  --out $R/lanes > $R/warp_lanes.txt 2>&1
mkdir -p $R/table
timeout 130 python3 -m fastsoftmax bench table --table-out $R/table/dispatch_table_nvidia-h200.json > $R/table/table.log 2>&1
SANITIZE_TIERS=warp SANITIZE_TIMEOUT=190 SANITIZE_JOBS=4 OUT=$R/san timeout 200 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
( timeout 60 python3 -m pytest tests/cuda/test_cuda_gpu.py -k warp_lanes -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8
  FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest tests/gpu -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 ) > $R/tests.txt
wait
