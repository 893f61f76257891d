#!/usr/bin/env bash
# call 6: the cluster tier's forward merging only the rounds of posts its launch has (merge_posts)
# against the kernels before (scratch/base_kernels: this revision's host, so both run alike),
# alternated in one process behind an L2 flush, softmax and log-softmax, bulk and decode rows. Then,
# beside each other: compute-sanitizer over the cluster tier on the change (memcheck and initcheck a
# tier run each, racecheck and synccheck a problem and dtype each) and the cluster tier's GPU tests
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/d6; mkdir -p $R/san
trap 'tar czf $OUT/d6.tar.gz -C $OUT d6 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/grid_row_probe.py --flush --baseline base=scratch/base_kernels --tiers cluster,base/cluster \
  --directions fwd,log --dtypes bf16,f32 \
  --shapes 2670x50264,2670x50257,2048x65536,1046x128256,512x262144,8x128256,32x151936,128x128256 \
  --out $R/merge > $R/merge_probe.txt 2>&1
sed -n '/summary/,$p' $R/merge_probe.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest tests/cuda/test_cuda_gpu.py -k cluster \
  -q -n 3 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 6 > $R/tests.txt &
OUT=$R/san SANITIZE_TIERS=cluster@0,cluster@1 SANITIZE_TOOLS="memcheck initcheck racecheck synccheck" \
  SANITIZE_SPLIT_TOOLS="racecheck synccheck" SANITIZE_JOBS=12 SANITIZE_TIMEOUT=180 \
  bash benchmarks/device_run.sh sanitize > $R/san/sanitize.log 2>&1
wait
grep "compute-sanitizer --tool" $R/san/sanitize.log
tail -n 2 $R/tests.txt
