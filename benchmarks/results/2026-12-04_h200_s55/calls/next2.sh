#!/usr/bin/env bash
# prepared for the next set (not run: the device budget was spent): the layouts regime's log-softmax
# backward in bf16 and float32 again (wall clock, every class) after this set's three log rules
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/x2; mkdir -p $R
trap 'tar czf $OUT/x2.tar.gz -C $OUT x2 && rm -rf $R' EXIT
for dt in bfloat16 float32; do
  timeout 250 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes $dt \
    --json $R/layouts_log_backward_$dt.json > $R/layouts_log_backward_$dt.txt 2>&1
  sed -n '/^losses:/,$p' $R/layouts_log_backward_$dt.txt | grep -v "under the goal"
done
