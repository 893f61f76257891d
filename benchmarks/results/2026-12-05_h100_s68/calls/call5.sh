#!/usr/bin/env bash
# call 5 (right after call 4, as one command line): the layouts regime's non-last-dim class, whose run
# in call 2 the time limit cut, and the view class after it while time allowed (it did not: skipped)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $OUT/c5; for cls in non_last_dim view; do (( SECONDS > 200 )) && { echo "$cls skipped"; continue; }; timeout $(( 300 - SECONDS )) python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes $cls --json $OUT/c5/layouts_${cls}_bf16.json > $OUT/c5/layouts_${cls}_bf16.txt 2>&1; echo "$cls rc $?"; sed -n '/^losses:/,$p' $OUT/c5/layouts_${cls}_bf16.txt | head -n 14; done
