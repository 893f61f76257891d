#!/usr/bin/env bash
# call 4 (carries .peer4, right after call 3): cluster_stream's launch forms on the H100 (its rules for
# CTAs an SM, cluster size and the persistent grid were measured on an H200), forced tier alternated in
# one process behind an L2 flush (benchmarks/grid_row_probe.py): the rule against one and two CTAs an
# SM, clusters of 8 and 16, and one cluster a row; forward bf16 191 x 699051 (0.79 of copy in the last
# main run) and 128 x 2^20 (0.89), float32 256 x 524288 (0.90, Quack 0.93) and 128 x 2^20
set -u
DEADLINE=${DEADLINE:-240}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
[[ -f /tmp/ppart.aa && -f /tmp/ppart.ab && -f /tmp/ppart.ac ]] || echo "cold: calls 1-3's files are gone" > $R/cold.txt
cp .peer4/ppart.ad /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
S=cluster_stream
timeout 110 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/bf16 --directions fwd --dtypes bf16 \
  --tiers $S,$S:cluster_stream_per_sm=1,$S:cluster_stream_per_sm=2,$S:cluster_ctas=8,$S:cluster_ctas=16,$S:cluster_stream_persistent=False \
  --shapes 191x699051,128x1048576 > $R/stream_forms_bf16.txt 2>&1
echo "bf16 rc $?"; sed -n '/==== summary/,$p' $R/stream_forms_bf16.txt | cut -c1-260
timeout $(( DEADLINE - SECONDS - 5 )) python3 benchmarks/grid_row_probe.py --quick --flush --out $R/f32 --directions fwd --dtypes f32 \
  --tiers $S,$S:cluster_stream_per_sm=1,$S:cluster_stream_per_sm=2,$S:cluster_ctas=8,$S:cluster_ctas=16,$S:cluster_stream_persistent=False \
  --shapes 256x524288,128x1048576 > $R/stream_forms_f32.txt 2>&1
echo "f32 rc $?"; sed -n '/==== summary/,$p' $R/stream_forms_f32.txt | cut -c1-260
wait
ls -la /tmp/ppart.a* > $R/kept.txt 2>&1
