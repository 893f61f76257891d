#!/usr/bin/env bash
# call 3 (carries .peerA1): the strided tier's walks over the long dim-0 axes and stepped views under more
# waves of split blocks and the merge kernel, kernel by kernel; then the public-API GPU tests (tests/gpu)
# on the cluster tier's new argument
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
trap 'tar czf $OUT/r3.tar.gz -C $OUT r3 && rm -rf $R' EXIT
cp .peerA1/apart.aa /tmp/ &
timeout 200 python3 benchmarks/kernel_breakdown.py --no-compile --dtypes bfloat16,float32 --directions forward,backward \
  --cases "(8192,8192)[:, ::2] d0;(65536,2048) d0;(1048576,128) d0;(32,4096,2048)[..., ::2] d1" \
  --tunings "tier=strided;tier=strided,strided_waves=4;tier=strided,strided_waves=8;tier=strided,strided_merge=True" \
  > $R/breakdown_waves.txt 2>&1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 190 python3 -m pytest tests/gpu -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests_gpu.txt
wait
ls -la /tmp/apart.aa >> $R/kept.txt 2>&1
