#!/usr/bin/env bash
# call 3: the layouts regime's log-softmax backward (every class), bf16 then float32, fastsoftmax
# through auto against torch and torch.compile in one process: its first run since the fortieth set,
# which found torch.compile ahead on the log-softmax backward of long axes and narrow inner sizes
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
for dt in bfloat16 float32; do
  timeout 250 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes $dt \
    --json $R/layouts_log_backward_$dt.json > $R/layouts_log_backward_$dt.txt 2>&1
  sed -n '/^losses:/,$p' $R/layouts_log_backward_$dt.txt | grep -v "under the goal"
  grep -c " log bac" $R/layouts_log_backward_$dt.txt
done
