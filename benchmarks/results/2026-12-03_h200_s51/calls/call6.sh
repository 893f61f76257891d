#!/usr/bin/env bash
# call 6: the cluster tier's forward merging only the rounds of posts its launch has (merge_posts)
# against the kernels before (scratch/base_kernels: this revision's host, so both run alike),
# alternated in one process behind an L2 flush, softmax and log-softmax, bulk and decode rows; then
# the cluster tier's GPU tests on the change
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/d6; mkdir -p $R
trap 'tar czf $OUT/d6.tar.gz -C $OUT d6 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/grid_row_probe.py --flush --baseline base=scratch/base_kernels --tiers cluster,base/cluster \
  --directions fwd,log --dtypes bf16,f32 \
  --shapes 2670x50264,2670x50257,2048x65536,1046x128256,512x262144,8x128256,32x151936,128x128256 \
  --out $R/merge > $R/merge_probe.txt 2>&1
sed -n '/summary/,$p' $R/merge_probe.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest tests/cuda/test_cuda_gpu.py -k cluster \
  -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 6 > $R/tests.txt
tail -n 2 $R/tests.txt
