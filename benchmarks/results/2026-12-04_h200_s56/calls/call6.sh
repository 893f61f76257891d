#!/usr/bin/env bash
# call 6: torch.compile's kernels where its split reduction reads faster than the strided tier's
# partials pass (bf16 (8192, 8192).t() over dim 1, log-softmax backward: 33 us against 42; (65536,
# 2048) over dim 0 forward: 66 us against 79-84), with source and the configuration kept
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
cd benchmarks
timeout 120 python3 inductor_kernels.py --log --source --dtypes bfloat16 --directions backward \
  --cases "(8192,8192).t() d1" > $R/inductor_log_backward.txt 2>&1
timeout 120 python3 inductor_kernels.py --source --dtypes bfloat16 --directions forward \
  --cases "(65536,2048) d0" > $R/inductor_forward.txt 2>&1
grep "kept\|kernel " $R/*.txt
