#!/usr/bin/env bash
# call 7: the 16-bit softmax backward of (8192, 8192)[:, ::2] over dim 0 through "auto" after the rule
# that sends stepped inputs whose staged team would pass 32 CTAs to the strided tier, kernel by kernel
# beside torch.compile, the staged spans and the strided tier split into other counts of chunks
# (strided_splits; the default's 21 chunks of 128 tiles launch 4.07 waves of 660 resident blocks);
# then the layouts regime's view class in bf16 through auto
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16,float16 --directions backward \
  --cases "(8192,8192)[:, ::2] d0" \
  --tunings "tier=strided_staged;tier=strided,strided_splits=16;tier=strided,strided_splits=20;tier=strided,strided_splits=21;tier=strided,strided_splits=26;tier=strided,strided_splits=40" \
  > $R/breakdown_rule.txt 2>&1
grep "a call" $R/breakdown_rule.txt
timeout 150 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes view \
  --json $R/layouts_view_bf16.json > $R/layouts_view_bf16.txt 2>&1
grep "::2" $R/layouts_view_bf16.txt; sed -n '/^losses:/,$p' $R/layouts_view_bf16.txt | grep compile
