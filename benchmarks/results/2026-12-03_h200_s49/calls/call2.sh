#!/usr/bin/env bash
# call 2: the cluster tier with its first wave staggered (Tuning.cluster_stagger, the wait compiled in
# at 1.5, 3 and 6 us) against none, decode and vocabulary rows, alternated in one process behind an L2
# flush; the strided tier's walks on the stepped dim-0 backward under its tunings; GPU tests of the
# cluster tier (new stagger argument)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
K=fastsoftmax/backends/cuda/kernels
timeout 240 python3 benchmarks/grid_row_probe.py --flush --baseline "w15=$K" --baseline "w60=$K" \
  --baseline-replace "w15|kClusterStaggerNs = 3000|kClusterStaggerNs = 1500" \
  --baseline-replace "w60|kClusterStaggerNs = 3000|kClusterStaggerNs = 6000" \
  --tiers cluster,cluster:cluster_stagger=True,w15/cluster:cluster_stagger=True,w60/cluster:cluster_stagger=True \
  --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 128x128256,32x151936,256x128256,1046x128256,64x262144,512x262144,2670x50257 \
  --out $R/stagger > $R/stagger_probe.txt 2>&1
timeout 100 python3 benchmarks/kernel_breakdown.py --cases "(8192,8192)[:, ::2] d0" --dtypes bfloat16 --no-compile \
  --directions backward --tunings "tier=strided;tier=strided,strided_row_bytes=128;tier=strided,strided_row_bytes=256;tier=strided,strided_row_bytes=1024;tier=strided,strided_waves=1;tier=strided,strided_waves=4;tier=strided,strided_chunk_major=False" \
  > $R/breakdown_step_tunings.txt 2>&1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest tests/cuda/test_cuda_gpu.py -k cluster -q -n 8 \
  -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests.txt
