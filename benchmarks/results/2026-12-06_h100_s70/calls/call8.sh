#!/usr/bin/env bash
# call 8 (a fresh machine): forced tiers alternated in one process behind an L2 flush
# (benchmarks/grid_row_probe.py). (1) grid_row against split_row on single rows past grid_row's
# 64 MiB bound (1 x 2^26 16-bit, 128 MiB, where split_row is chosen; its first comparison, 0.59
# against 0.60, predates grid_row's rewrite) and below it; (2) cluster_stream's first-wave wait
# (kStreamStaggerNs, 8 us, set on an H200 at two CTAs an SM) at 4 and 12 us, on rows that now run one
# CTA an SM and two; (3) the cluster tier against cluster_stream on 16-bit backward rows of 2^19
# (Quack 0.918 against cluster_stream's 0.836 in call 6; "auto" gives them to the cluster tier)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
K=fastsoftmax/backends/cuda/kernels
probe() { timeout $1 python3 benchmarks/grid_row_probe.py --quick --flush "${@:2}"; }
probe 150 --out $R/g1 --tiers split_row,grid_row --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 1x67108864,2x33554432,1x16777216 > $R/grid_row_past_64mib.txt 2>&1
probe 120 --out $R/g2 --tiers cluster_stream,s4/cluster_stream,s12/cluster_stream --directions fwd,bwd --dtypes bf16,f32 \
  --baseline s4=$K --baseline-replace "s4|kStreamStaggerNs = 8000|kStreamStaggerNs = 4000" \
  --baseline s12=$K --baseline-replace "s12|kStreamStaggerNs = 8000|kStreamStaggerNs = 12000" \
  --shapes 191x699051,128x1048576,256x524288 > $R/stream_stagger_ns.txt 2>&1
probe 80 --out $R/g3 --tiers cluster,cluster_stream --directions bwd --dtypes bf16 \
  --shapes 256x524288,128x524288,512x393216 > $R/cluster_vs_stream_bwd.txt 2>&1
for f in $R/*.txt; do echo "== $(basename $f)"; sed -n '/==== summary/,$p' $f | cut -c1-250; done
