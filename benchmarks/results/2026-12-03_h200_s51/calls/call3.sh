#!/usr/bin/env bash
# call 3 (carries .peerA3, right after call 2): the decode shapes behind Quack in the last main run
# (8 x 128256 16-bit, fp16 128 x 128256, float32 32 x 151936) under the cluster tier's launch forms:
# threads and packs a thread, kept exponentials on and off, clusters of 8; alternated in one process
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/d3; mkdir -p $R
trap 'tar czf $OUT/d3.tar.gz -C $OUT d3 && rm -rf $R' EXIT
[[ -f /tmp/apart.ab ]] || echo "cold: call 2's file is gone" > $R/cold.txt
cp .peerA3/apart.ac .peerA3/bpart.aa /tmp/ &
C=cluster
timeout 120 python3 benchmarks/grid_row_probe.py \
  --tiers "$C,$C:cluster_threads=128:cluster_packs=8,$C:cluster_threads=512:cluster_packs=2,$C:cluster_kept=False,$C:cluster_kept=True,$C:cluster_ctas=8" \
  --directions fwd --dtypes bf16,f16 --shapes 1x128256,8x128256,128x128256 --out $R/decode16 > $R/decode16.txt 2>&1
timeout 60 python3 benchmarks/grid_row_probe.py \
  --tiers "$C,$C:cluster_threads=256:cluster_packs=8,$C:cluster_threads=512:cluster_packs=4,$C:cluster_ctas=8,$C:cluster_kept=True" \
  --directions fwd --dtypes f32 --shapes 32x151936,8x128256 --out $R/decode32 > $R/decode32.txt 2>&1
wait
ls -la /tmp/apart.a* /tmp/bpart.aa > $R/kept.txt 2>&1
