#!/usr/bin/env bash
# call 6 (right after call 5, as one command line): the layouts regime's channel class in bf16, both
# directions, beside torch.softmax and torch.compile
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $OUT/c6; timeout 170 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes channel --json $OUT/c6/layouts_channel_bf16.json > $OUT/c6/layouts_channel_bf16.txt 2>&1; echo "rc $?"; sed -n '/^losses:/,$p' $OUT/c6/layouts_channel_bf16.txt | head -n 12; tail -n 30 $OUT/c6/layouts_channel_bf16.txt | cut -c1-180
