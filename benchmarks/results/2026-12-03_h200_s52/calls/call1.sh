#!/usr/bin/env bash
# call 1: the cluster forward merging a launch's posts in one round where it has 32 or fewer (one post
# a lane; merge_single_round.patch of the fifty-first set) against the kernels before
# (scratch/base_kernels), alternated in one process behind an L2 flush. Then, beside each other: the
# cluster tier's GPU tests on the change, and compute-sanitizer over every part of cluster_stream (the
# fiftieth set's backward change had run only its persistent part)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R/san
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
python3 -c "import torch, triton, cuda.core; print(torch.__version__, triton.__version__, cuda.core.__version__)" >> $R/device.txt 2>&1
timeout 170 python3 benchmarks/grid_row_probe.py --flush --baseline base=scratch/base_kernels --tiers cluster,base/cluster \
  --directions fwd,log --dtypes bf16,f32 \
  --shapes 2670x50264,2670x50257,2048x65536,1046x128256,512x262144,8x128256,32x151936,128x128256 \
  --out $R/merge > $R/merge_probe.txt 2>&1
sed -n '/summary/,$p' $R/merge_probe.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 230 python3 -m pytest tests/cuda/test_cuda_gpu.py -k cluster \
  -q -n 3 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 6 > $R/tests.txt &
OUT=$R/san SANITIZE_TIERS=cluster_stream SANITIZE_TOOLS="memcheck initcheck racecheck synccheck" \
  SANITIZE_SPLIT_TOOLS="racecheck synccheck" SANITIZE_JOBS=12 SANITIZE_TIMEOUT=200 \
  timeout 400 bash benchmarks/device_run.sh sanitize > $R/san/sanitize.log 2>&1
wait
grep "compute-sanitizer --tool" $R/san/sanitize.log
tail -n 2 $R/tests.txt
