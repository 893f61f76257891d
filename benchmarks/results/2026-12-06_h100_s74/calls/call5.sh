#!/usr/bin/env bash
# call 5 (one command line on call 4's machine): the layouts regime's non-last-dim, small-inner and view
# classes in bf16 with the backward, beside torch.softmax and torch.compile, until its time limit
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $OUT/c5; timeout 285 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes small_inner,view,non_last_dim --json $OUT/c5/layouts_bf16.json > $OUT/c5/layouts_bf16.txt 2>&1; echo "rc $?"; sed -n '/^losses:/,$p' $OUT/c5/layouts_bf16.txt | head -40
