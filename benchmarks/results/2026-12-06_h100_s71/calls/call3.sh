#!/usr/bin/env bash
# call 3: what the exponentials cost strided_staged and grid_row. Forced tier alternated in one
# process behind an L2 flush: the softmax forward against the log-softmax forward (no exponential
# when writing) and against kernels whose sums take no exponential ("nox": ShiftedSums' terms are
# their exponents, results wrong, timed only), bf16 and float32.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
cp .peer1/ppart.aa /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
K=fastsoftmax/backends/cuda/kernels
OLD='s[i] += FUSED ? ex2_ftz(fmaf(v[i], kLog2e, offset[i])) : sum_exp(v[i] - offset[i]);'
NEW='s[i] += FUSED ? fmaf(v[i], kLog2e, offset[i]) : (v[i] - offset[i]);'
grep -c "$OLD" $K/common.cuh > $R/replace_found.txt
timeout 200 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/staged --directions fwd,log --dtypes bf16,f32 \
  --baseline nox=$K --baseline-replace "nox|$OLD|$NEW" \
  --tiers strided_staged,nox/strided_staged \
  --shapes 1x8192x16384,32x4096x1024,128x1024x1024 > $R/staged.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/staged.txt | cut -c1-230
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/grid --directions fwd,log --dtypes bf16,f32 \
  --baseline nox=$K --baseline-replace "nox|$OLD|$NEW" \
  --tiers grid_row,nox/grid_row,cluster_stream,nox/cluster_stream --shapes 1x16777216,128x1048576 > $R/grid.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/grid.txt | cut -c1-230
wait
