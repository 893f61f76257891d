#!/usr/bin/env bash
# call 5: what the exponentials cost the long-row kernels (issue 11's huge rows and 2^20 rows):
# grid_row and cluster_stream forced, alternated in one process behind an L2 flush, against kernels
# whose sums take no exponential ("nox": ExpShift's terms are their exponents), whose outputs take
# none ("noxw": normalise and FusedNormaliser), and neither ("none"). Results wrong, timed only.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
K=fastsoftmax/backends/cuda/kernels
S1='return ex2_ftz(fmaf(v, kLog2e, neg_k));'; S1N='return fmaf(v, kLog2e, neg_k);'
W1='return exp2_lifted(fmaf(x - r.max, kLog2e, 64.0f - r.log_sum * kLog2e));'; W1N='return fmaf(x - r.max, kLog2e, 64.0f - r.log_sum * kLog2e);'
W2='return ex2_ftz(fmaf(x, kLog2e, offset)) * factor;'; W2N='return fmaf(x, kLog2e, offset) * factor;'
run() {  # label tier shapes dtypes
  timeout 150 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/$1 --directions fwd --dtypes $4 \
    --baseline "nox=$K" --baseline-replace "nox|$S1|$S1N" \
    --baseline "noxw=$K" --baseline-replace "noxw|$W1|$W1N" --baseline-replace "noxw|$W2|$W2N" \
    --baseline "none=$K" --baseline-replace "none|$S1|$S1N" --baseline-replace "none|$W1|$W1N" --baseline-replace "none|$W2|$W2N" \
    --tiers $2,nox/$2,noxw/$2,none/$2 --shapes $3 > $R/$1.txt 2>&1
  echo "$1 rc $?"; sed -n '/==== summary/,$p' $R/$1.txt | cut -c1-260
}
run grid grid_row 1x16777216,1x67108864 bf16,f32
run stream cluster_stream 128x1048576,191x699051 bf16
run cluster cluster 128x128256,1046x128256 bf16
