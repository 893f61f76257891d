#!/usr/bin/env bash
# call 5: float32 forward rows of 2^19 (and 393216), which "auto" gives the cluster tier from 32 rows, against
# cluster_stream with its staggered first wave, alternated in one process behind an L2 flush
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
trap 'tar czf $OUT/r5.tar.gz -C $OUT r5 && rm -rf $R' EXIT
timeout 100 python3 benchmarks/grid_row_probe.py --flush --tiers cluster,cluster_stream \
  --directions fwd --dtypes f32 --shapes 64x524288,128x524288,256x524288,512x524288,256x393216 --out $R/f32 > $R/f32_probe.txt 2>&1
