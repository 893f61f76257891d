#!/usr/bin/env bash
# call 5: the cluster tier on fewer rows still: the backward of 1-3 rows past its preferred length
# (today split_row; call 3 had the cluster tier ahead from 4 rows), and the forward of 4-7 rows (call 4:
# float32 4 x 393216 0.350 against 0.290, bf16 4 x 786432 level, 8 rows and more behind), against
# grid_row (teams where they hold the rows), cluster_stream and split_row, forced and alternated
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/bwd --directions bwd --dtypes bf16,f32 \
  --tiers cluster,grid_row,split_row --shapes 1x262016,2x262016,3x262016,1x393216,2x393216,3x524032 > $R/bwd.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/bwd.txt | cut -c1-230
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd16 --directions fwd --dtypes bf16 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 5x786432,6x1048320,7x655360 > $R/fwd16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd16.txt | cut -c1-230
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd32 --directions fwd --dtypes f32 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 4x262400,4x524160,5x393216,6x458752,7x300000 > $R/fwd32.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd32.txt | cut -c1-230
