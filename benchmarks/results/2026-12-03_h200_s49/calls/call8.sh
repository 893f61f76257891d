#!/usr/bin/env bash
# call 8, the landed forms (the cluster tier's wait on the backward alone, the forward's kernels as the
# forty-eighth set's; the strided tier's waves), shortened: the float32 cluster backward
# of 32 elements a thread capped at 96 registers (two CTAs of 320 threads an SM) against its launch
# bound's count, alternated in one process behind an L2 flush; then the GPU tests of the cluster and
# strided tiers beside compute-sanitizer's memcheck, initcheck and synccheck over the cluster tier (a
# staggered backward included)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r8; mkdir -p $R
trap 'tar czf $OUT/r8.tar.gz -C $OUT r8 && rm -rf $R' EXIT
K=fastsoftmax/backends/cuda/kernels
timeout 45 python3 benchmarks/grid_row_probe.py --flush --baseline "cap96=$K" \
  --baseline-replace "cap96|__launch_bounds__(512) fs_cluster_softmax_bwd_f32_p4_c32(|__maxnreg__(96) fs_cluster_softmax_bwd_f32_p4_c32(" \
  --tiers cluster,cap96/cluster --directions bwd --dtypes f32 --shapes 32x151936,16x151936,128x128256,64x262144 \
  --out $R/cap > $R/cap96_probe.txt 2>&1
SANITIZE_TIERS=cluster@0 SANITIZE_TOOLS="memcheck initcheck synccheck" SANITIZE_TIMEOUT=110 OUT=$R/san timeout 115 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 120 python3 -m pytest tests/cuda/test_cuda_gpu.py tests/cuda/test_strided_gpu.py -k "cluster or strided or step" -q -n 8 \
  -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests.txt
wait
