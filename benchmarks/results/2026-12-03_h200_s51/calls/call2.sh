#!/usr/bin/env bash
# call 2 (carries .peerA2, right after call 1): cluster_stream's persistent launches (landed last set)
# under the launch forms its rules choose between: two CTAs an SM or one, clusters of 16, the first
# wave's stagger forced on and off; rows of 2^19-2^20, alternated in one process behind an L2 flush
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/d2; mkdir -p $R
trap 'tar czf $OUT/d2.tar.gz -C $OUT d2 && rm -rf $R' EXIT
[[ -f /tmp/apart.aa ]] || echo "cold: call 1's file is gone" > $R/cold.txt
cp .peerA2/apart.ab /tmp/ &
S=cluster_stream
timeout 240 python3 benchmarks/grid_row_probe.py --flush \
  --tiers "$S,$S:cluster_stream_per_sm=1,$S:cluster_stream_per_sm=2,$S:cluster_ctas=16,$S:cluster_stream_stagger=False,$S:cluster_stream_stagger=True" \
  --directions fwd,bwd --dtypes bf16,f32 --shapes 128x1048576,191x699051,256x524288 --out $R/forms > $R/stream_forms.txt 2>&1
wait
ls -la /tmp/apart.a* > $R/kept.txt 2>&1
