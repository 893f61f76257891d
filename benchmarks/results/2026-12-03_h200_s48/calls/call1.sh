#!/usr/bin/env bash
# call 1: the GPU tests of the warp and flat_rows tiers on the landed lane rule (the row-count test's shape
# assertion as mended), tests/gpu, and the long rows of 2^19-2^20 columns and the float32 decode rows on the
# H200: cluster_stream at one and two CTAs an SM and clusters of 8 and 16 against the defaults, alternated in
# one process behind an L2 flush
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > $R/device.txt 2>&1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 290 python3 -m pytest tests/cuda -k "warp or flat" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 25 > $R/tests.txt
timeout 80 python3 -m pytest tests/gpu -q -x -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests_gpu.txt
timeout 150 python3 benchmarks/grid_row_probe.py --flush \
  --tiers cluster_stream,cluster_stream:cluster_stream_per_sm=1,cluster_stream:cluster_stream_per_sm=2,cluster_stream:cluster_ctas=8,cluster_stream:cluster_stream_per_sm=2:cluster_ctas=8 \
  --directions fwd,bwd --dtypes bf16,f32 --shapes 128x1048576,191x699051,256x524288 --out $R/long > $R/long_probe.txt 2>&1
timeout 50 python3 benchmarks/grid_row_probe.py --flush \
  --tiers cluster,cluster:cluster_ctas=8,cluster_stream:cluster_stream_per_sm=2,cluster_stream:cluster_stream_per_sm=2:cluster_ctas=8 \
  --directions fwd --dtypes f32 --shapes 32x151936,128x128256 --out $R/decode > $R/decode_probe.txt 2>&1
