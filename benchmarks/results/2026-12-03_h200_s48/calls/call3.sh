#!/usr/bin/env bash
# call 3: call 2's stagger probe again (its --baseline-replace arguments had been split by the shell);
# the cluster size rule of two CTAs an SM (instances.CLUSTER_STREAM_PAIR_HELD_SHARE) through the default
# against clusters of 16 forced; the GPU tests of cluster_stream
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
trap 'tar czf $OUT/r3.tar.gz -C $OUT r3 && rm -rf $R' EXIT
K=fastsoftmax/backends/cuda/kernels
B=()
for v in "s4 4000 16" "s8 8000 16" "s12 12000 16" "s8b8 8000 8" "s8b32 8000 32"; do
  set -- $v
  B+=(--baseline "$1=$K" --baseline-replace "$1|kStreamStaggerNs = 0|kStreamStaggerNs = $2" --baseline-replace "$1|kStreamStaggerBelow = 0|kStreamStaggerBelow = $3")
done
timeout 200 python3 benchmarks/grid_row_probe.py --flush "${B[@]}" \
  --tiers cluster_stream,s4/cluster_stream,s8/cluster_stream,s12/cluster_stream,s8b8/cluster_stream,s8b32/cluster_stream \
  --directions fwd,bwd --dtypes bf16,f32 --shapes 128x1048576,256x524288,191x699051 --out $R/stagger > $R/stagger_probe.txt 2>&1
timeout 90 python3 benchmarks/grid_row_probe.py --flush --tiers cluster_stream,cluster_stream:cluster_ctas=16 \
  --directions fwd,bwd --dtypes bf16,f16 --shapes 200x655360,191x699051,180x720896,320x393216,256x524288 --out $R/rule > $R/rule_probe.txt 2>&1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest tests/cuda -k "stream" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests.txt
