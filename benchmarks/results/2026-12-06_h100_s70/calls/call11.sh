#!/usr/bin/env bash
# call 11 (every probe writes straight under $OUT, so what finishes comes back if a limit cuts the
# call): strided_staged's team shapes on the non-last-dim shapes under
# their goal, forced tier alternated in one process behind an L2 flush: (1, 8192, 16384) (persistent
# teams of 10 CTAs at two CTAs an SM, staggered) against three and one CTA an SM and clusters of up
# to 16; (32, 4096, 1024) (bf16 forward: clusters of 8) against clusters of 16 and persistent teams
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c11; mkdir -p $R
nvidia-smi --query-gpu=name --format=csv,noheader > $R/device.txt
T=strided_staged
timeout 70 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/a --directions fwd,bwd --dtypes bf16 \
  --tiers $T,$T:staged_ctas_per_sm=3,$T:staged_ctas_per_sm=1,$T:staged_cluster=True:staged_max_cluster=16 \
  --shapes 1x8192x16384 > $R/a.txt 2>&1
sed -n '/==== summary/,$p' $R/a.txt | cut -c1-260
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/b --directions fwd --dtypes bf16 \
  --tiers $T,$T:staged_max_cluster=16,$T:staged_cluster=False --shapes 32x4096x1024 > $R/b.txt 2>&1
sed -n '/==== summary/,$p' $R/b.txt | cut -c1-260
