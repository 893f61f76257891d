#!/usr/bin/env bash
# call 6: the forward of 2-3 rows past the cluster tier's preferred length (call 5 had the cluster tier
# ahead in float32 at 4-7 rows, bf16 level to ahead), against grid_row, cluster_stream and split_row
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd --directions fwd --dtypes bf16 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 2x786432,3x1048320,2x600000 > $R/fwd16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd16.txt | cut -c1-230
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd32 --directions fwd --dtypes f32 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 2x393216,3x524160,2x300000,3x262400 > $R/fwd32.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd32.txt | cut -c1-230
