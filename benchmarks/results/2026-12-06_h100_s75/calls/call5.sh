#!/usr/bin/env bash
# call 5 (prepared): the forward of tiles one team of the whole grid walks in turn, each held in its staging
# (strided.staged_shape: teams 1, tiles > 1, chunk held), strided_staged ("auto") against the strided tier,
# forced and alternated behind an L2 flush. Call 1 found the strided tier ahead on the two such forwards
# it timed (bf16 (4, 1048576, 8) 0.447 against 0.367, float32 (8, 1048576, 4) 0.567 against 0.493) and
# behind or level on the rest; the rule that would follow reaches 143 shapes of a grid of powers of two
# (teams of 66-264 CTAs, tiles of whole or part of inner), of which these sample ten more (and the two
# again) before it is written
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 90 python3 -m fastsoftmax compile --match '^fs_(staged|strided|cluster_stream)|_columns$' > $R/compile.txt 2>&1
timeout 200 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,log --dtypes bf16,f32 \
  --tiers strided_staged,strided --shapes 2x1048576x8,4x1048576x8,8x1048576x4,2x2097152x2,4x524288x8,4x262144x16,\
4x262144x32,2x131072x64,4x131072x96,4x131072x4,2x131072x12,128x131072x4 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-200
