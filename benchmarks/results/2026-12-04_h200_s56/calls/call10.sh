#!/usr/bin/env bash
# call 10: the layouts regime's log-softmax backward in bf16 (every class; auto against torch and
# torch.compile in one process) after the fifty-fifth set's three log-softmax rules
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c10; mkdir -p $R
trap 'tar czf $OUT/c10.tar.gz -C $OUT c10 && rm -rf $R' EXIT
timeout 280 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes bfloat16 \
  --json $R/layouts_log_backward_bfloat16.json > $R/layouts_log_backward_bfloat16.txt 2>&1
echo "rc $?"
sed -n '/^losses:/,$p' $R/layouts_log_backward_bfloat16.txt | grep -v "under the goal"
grep -c " log bac" $R/layouts_log_backward_bfloat16.txt
