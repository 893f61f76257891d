#!/usr/bin/env bash
# call 6: strided_staged's wider tiles over more long-axis shapes (call 1 found float32 (8192, 16384)
# forward at two lines a row 0.776 -> 0.800, and bf16 there at one CTA an SM with two lines 0.664 ->
# 0.683): forced tier alternated in one process behind an L2 flush, forward, persistent-team shapes
# and two the clusters take.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
T=strided_staged
SH=1x8192x16384,1x16384x8192,1x8192x8192,4x8192x4096,1x12288x16384,1x6144x16384
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/f32 --directions fwd --dtypes f32 \
  --tiers $T,$T:staged_tile_cols=64 --shapes $SH > $R/f32.txt 2>&1
echo "f32 rc $?"; sed -n '/==== summary/,$p' $R/f32.txt | cut -c1-230
timeout 150 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/bf16 --directions fwd --dtypes bf16 \
  --tiers $T,$T:staged_tile_cols=128,$T:staged_ctas_per_sm=1:staged_tile_cols=128 --shapes $SH > $R/bf16.txt 2>&1
echo "bf16 rc $?"; sed -n '/==== summary/,$p' $R/bf16.txt | cut -c1-230
