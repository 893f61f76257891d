#!/usr/bin/env bash
# call 10 (the seventieth set's prepared call 12): the spread of cluster_stream's backward at one CTA an SM (bf16 128 x 2^20 ran
# 0.71-0.80 between processes in calls 6-9, two CTAs 0.71 every time): the rule against clusters of 8
# at one CTA an SM (more clusters resident, each re-reading part of its slice) and against two CTAs,
# in three processes one after another, forced tier alternated behind an L2 flush
set -u
trap 'tar czf $OUT/c10.tar.gz -C $OUT c10 && rm -rf $R' EXIT
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c10; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader > $R/device.txt
S=cluster_stream
for k in 1 2 3; do
  timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/p$k --directions bwd --dtypes bf16,f32 \
    --tiers $S,$S:cluster_ctas=8:cluster_stream_per_sm=1,$S:cluster_stream_per_sm=2 \
    --shapes 128x1048576,256x524288 > $R/spread_$k.txt 2>&1
  sed -n '/==== summary/,$p' $R/spread_$k.txt | cut -c1-260
done
