#!/usr/bin/env bash
# call 7: the main suite's staged shapes (chunks of one staging: code path unchanged, the kernels'
# registers and SASS moved by the new loop order) on strided_staged against the kernels before
# (base/: ab_base/kernels, as call 6's), forced and alternated behind an L2 flush, both directions, bf16 and float32
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 150 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,bwd --dtypes bf16,f32 \
  --baseline ab_base/kernels --tiers strided_staged,base/strided_staged \
  --shapes 32x4096x1024,128x1024x1024,1x8192x16384,4096x64x512 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-220
