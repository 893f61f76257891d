#!/usr/bin/env bash
# call 9 (prepared, not run): the cluster tier's forward past its preferred length where the rows
# outnumber the clusters resident at once (calls 4-6: float32 ahead at 2-7 rows, behind from 8; likely
# one cluster of 16 more than the H100 holds): 8-15 rows in float32, and the 16-bit forward of 4-7
# rows (0.002-0.055 ahead of the tier chosen before) on more lengths, against grid_row, cluster_stream
# and split_row
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c9; mkdir -p $R
trap 'tar czf $OUT/c9.tar.gz -C $OUT c9 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 90 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd32 --directions fwd,log --dtypes f32 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 8x300000,10x393216,14x262400,15x524160 > $R/fwd32.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd32.txt | cut -c1-230
timeout 90 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd16 --directions fwd,log --dtypes bf16,f16 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 4x600000,5x1048320,6x524800,7x900000 > $R/fwd16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd16.txt | cut -c1-230
