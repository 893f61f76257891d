#!/usr/bin/env bash
# call 6: the 16-bit stepped backward on the strided tier at 3 waves of resident blocks against the
# shipped 4 (call 4: 157.0 against 159.8 us on bf16 (8192, 8192)[:, ::2] over dim 0), each twice in
# turn, 60 calls each, bf16 and fp16, beside torch.compile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n6; mkdir -p $R
trap 'tar czf $OUT/n6.tar.gz -C $OUT n6 && rm -rf $R' EXIT
timeout 200 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16,float16 --directions backward --calls 60 \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1" \
  --tunings "tier=strided,strided_waves=3;tier=strided,strided_waves=4;tier=strided,strided_waves=3,strided_splits=None;tier=strided,strided_waves=4,strided_splits=None" \
  > $R/stepped_waves_ab.txt 2>&1
grep "a call" $R/stepped_waves_ab.txt
