#!/usr/bin/env bash
# call 12: the strided tier's partials stage on a kernel of its own (strided_partials_kernel, new:
# PARTIALS_ONLY instances of 34-48 registers compiled for four or five blocks an SM where the
# two-stage kernel's 80 hold three; c11's Nsight Compute), its GPU test, then kernel by kernel the
# strided tier forced three ways: as shipped (16-bit forward deep), the partials kernel, neither
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c12; mkdir -p $R
trap 'tar czf $OUT/c12.tar.gz -C $OUT c12 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 80 python3 -m pytest tests/cuda/test_strided_gpu.py \
  -k "partials_walks" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 3 > $R/tests.txt
cat $R/tests.txt
cd benchmarks
S="tier=strided"
T="$S;$S,strided_partials_kernel=True;$S,strided_deep_partials=False"
timeout 70 python3 kernel_breakdown.py --no-compile --log --dtypes bfloat16,float32 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(65536,2048) d0" > $R/partials_log_backward.txt 2>&1
grep "a call\|Error" $R/partials_log_backward.txt
timeout 70 python3 kernel_breakdown.py --no-compile --dtypes bfloat16,float32 --directions forward --tunings "$T" \
  --cases "(65536,2048) d0;(1048576,128) d0" > $R/partials_forward.txt 2>&1
grep "a call\|Error" $R/partials_forward.txt
