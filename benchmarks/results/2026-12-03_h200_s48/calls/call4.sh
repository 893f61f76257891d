#!/usr/bin/env bash
# call 4, the landed forms: cluster_stream's first wave staggered by the host (rows a resident cluster >= 4)
# against the same kernels with the wait compiled out, and the cluster rule of two CTAs an SM; GPU tests
# of cluster_stream and grid_row; compute-sanitizer over cluster_stream; the suite's long rows through "auto"
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r4; mkdir -p $R
trap 'tar czf $OUT/r4.tar.gz -C $OUT r4 && rm -rf $R' EXIT
K=fastsoftmax/backends/cuda/kernels
timeout 100 python3 benchmarks/grid_row_probe.py --flush --baseline "nowait=$K" \
  --baseline-replace "nowait|kStreamStaggerNs = 8000|kStreamStaggerNs = 0" \
  --tiers cluster_stream,nowait/cluster_stream,cluster_stream:cluster_ctas=16 \
  --directions fwd,bwd --dtypes bf16,f32 --shapes 128x1048576,256x524288,191x699051,32x1048576 --out $R/landed > $R/landed_probe.txt 2>&1
timeout 80 python3 -m fastsoftmax bench main --backends auto --no-peers --no-compile --shapes 256x524288,191x699051,128x1048576 \
  --directions forward,backward --time-limit 60 --out $R/auto > $R/auto.log 2>&1
SANITIZE_TIERS=cluster_stream SANITIZE_TIMEOUT=200 SANITIZE_JOBS=4 OUT=$R/san timeout 210 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest tests/cuda -k "stream or grid_row" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests.txt
wait
