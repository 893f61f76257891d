#!/usr/bin/env bash
# call 6 (right after call 5, on the same machine: the peers' site call 5 unpacked in /tmp/site; the
# command as run, on one line there): cluster_stream's launch forms again, both directions, with
# Quack alternated in the same process where it takes the shape (benchmarks/grid_row_probe.py)
export PYTHONPATH=$PWD FASTSOFTMAX_PEER_SITE=/tmp/site
mkdir -p $OUT/c6
timeout 200 python3 benchmarks/grid_row_probe.py --flush --out $OUT/c6 --directions fwd,bwd --dtypes bf16,f32 \
  --tiers cluster_stream,cluster_stream:cluster_stream_per_sm=1,cluster_stream:cluster_stream_per_sm=2,cluster_stream:cluster_ctas=16,quack \
  --shapes 256x524288,128x1048576,191x699051,160x786432 > $OUT/c6/stream_forms_quack.txt 2>&1
echo rc $?; sed -n '/==== summary/,$p' $OUT/c6/stream_forms_quack.txt | cut -c1-300
