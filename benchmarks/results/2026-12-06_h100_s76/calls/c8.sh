#!/usr/bin/env bash
# call 8: the forward of one team walking 16-64 tiles (strided.one_team_walks_tiles' reach past the
# 4-12 tiles calls 5 measured), strided_staged against the strided tier, forced and alternated behind an
# L2 flush; float16 once
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 100 python3 -m fastsoftmax compile --match '^fs_(staged|strided)' > $R/compile.txt 2>&1
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd --dtypes bf16,f32 \
  --tiers strided_staged,strided --shapes 32x1048576x8,16x524288x16,32x131072x64,64x1048576x4,32x131072x32,\
16x2097152x2 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-200
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab16 --directions fwd --dtypes f16 \
  --tiers strided_staged,strided --shapes 32x262144x32,8x1048576x8 > $R/ab16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab16.txt | cut -c1-200
