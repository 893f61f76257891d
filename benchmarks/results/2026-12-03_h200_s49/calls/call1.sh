#!/usr/bin/env bash
# call 1: where the layouts' two backward losses to torch.compile spend their time, kernel by kernel
# (bf16 and float32), with the tiers that can take them forced; then racecheck over cluster_stream
# (its five parts in parallel) beside the GPU tests of cluster_stream
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 150 python3 benchmarks/kernel_breakdown.py --cases "(8192,8192)[:, ::2] d0" --dtypes bfloat16,float32 \
  --directions backward --tunings "tier=strided;tier=strided_staged;tier=strided_warp" > $R/breakdown_step.txt 2>&1
timeout 120 python3 benchmarks/kernel_breakdown.py --cases "(16,21,513,513) d1" --dtypes bfloat16 \
  --directions backward --tunings "backend=cuda;backend=triton" > $R/breakdown_odd.txt 2>&1
SANITIZE_TIERS=cluster_stream@0,cluster_stream@1,cluster_stream@2,cluster_stream@3,cluster_stream@4 \
  SANITIZE_TOOLS=racecheck SANITIZE_TIMEOUT=380 OUT=$R/san timeout 390 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest tests/cuda/test_cluster_stream_gpu.py -q -n 4 \
  -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests.txt
wait
