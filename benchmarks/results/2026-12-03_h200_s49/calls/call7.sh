#!/usr/bin/env bash
# call 7 (right after call 6, the peers still unpacked in /tmp/site): the cluster tier with and without the
# backward's staggered first wave against Quack, decode and vocabulary rows, alternated in one process behind
# an L2 flush (run inline; this is its command)
export PYTHONPATH=$PWD FASTSOFTMAX_PEER_SITE=/tmp/site; [[ -d /tmp/site ]] || exit 3; mkdir -p $OUT/r7
timeout 150 python3 benchmarks/grid_row_probe.py --flush --tiers cluster,cluster:cluster_stagger=False,quack --directions fwd,bwd \
  --dtypes bf16,f32 --shapes 128x128256,256x128256,64x262144,32x151936 --out $OUT/r7/q > $OUT/r7/quack_probe.txt 2>&1
tail -20 $OUT/r7/quack_probe.txt
