#!/usr/bin/env bash
# call 1: prepared probes (cluster size of 16-bit backward rows of about 50K; the whole-pack cut on decode launches); the layouts regime in bf16, forward and backward, against torch.softmax and torch.compile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch,triton,cuda.core;print(torch.__version__,triton.__version__,cuda.core.__version__)" >> $R/device.txt
P="python3 benchmarks/grid_row_probe.py"
timeout 70 $P --tiers cluster,cluster:cluster_ctas=8 --directions bwd,logbwd --dtypes bf16,f16 --shapes 2670x50257,2670x50264,4096x50257,1024x50264,2670x32769,2670x40000 > $R/ctas8_50k.txt 2>&1
timeout 70 $P --flush --tiers cluster,cluster:cluster_alike=True --directions fwd,bwd --dtypes bf16,f16,f32 --shapes 1x128255,8x128255,32x151937,128x128255,32x151936p151937 > $R/decode_alike.txt 2>&1
timeout 400 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --json $R/layouts_bf16.json > $R/layouts_bf16.txt 2>&1
