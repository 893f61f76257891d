#!/usr/bin/env bash
# prepared for the next set (not run): the layouts regime's float32
# log-softmax backward (every class) after the set's rules, and its float32 forward over the channel
# classes (the few-class rule: Triton's capped scalar tiles over 19-24 classes of up to 2^25 elements)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n2; mkdir -p $R
trap 'tar czf $OUT/n2.tar.gz -C $OUT n2 && rm -rf $R' EXIT
timeout 250 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes float32 \
  --json $R/layouts_log_backward_float32.json > $R/layouts_log_backward_float32.txt 2>&1
sed -n '/^losses:/,$p' $R/layouts_log_backward_float32.txt | grep -v "under the goal"
timeout 200 python3 -m fastsoftmax.benchmark.layouts --dtypes float32 --classes channel \
  --json $R/layouts_channel_float32.json > $R/layouts_channel_float32.txt 2>&1
sed -n '/^losses:/,$p' $R/layouts_channel_float32.txt | grep -v "under the goal"
