#!/usr/bin/env bash
# call 8: the backward of 8-24 rows the cluster tier could hold (tiers.CLUSTER_LONGEST_MIN_ROWS is 32,
# fewer rows unmeasured; call 6 ran bf16 16 x 524288 0.618 on it against the teams' 0.571): the cluster
# tier against grid_row's teams and split_row
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 105 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions bwd --dtypes bf16,f32 \
  --tiers cluster,grid_row,split_row --shapes 8x262144,8x524032,16x262144,16x393216,24x262144,24x393216 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-230
