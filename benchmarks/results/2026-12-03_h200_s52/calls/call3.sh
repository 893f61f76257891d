#!/usr/bin/env bash
# call 3: the layouts regime (issue 12's classes: strided axes, small inner sizes, views, channel
# softmax) in bf16, forward and backward, fastsoftmax ("auto") against torch.softmax and
# torch.compile in one process: its first run since the forty-fifth set
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $R/device.txt
timeout 320 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --json $R/layouts_bf16.json > $R/layouts_bf16.txt 2>&1
sed -n '/^losses:/,$p' $R/layouts_bf16.txt
