#!/usr/bin/env bash
# call 2: the cluster tier's launch shapes on the vocabulary and decode rows where Quack leads (issue 11:
# 16-bit 1046 x 128256 and 1024 x 131072 forward 0.976-0.981 against 0.987-0.991, 128 x 128256 28.9
# against 27.4 us, 8 x 128256 7.7 against 7.4 us, float32 32 x 151936 19.9 against 18.7 us): its own
# choice against other cluster sizes, threads and packs a thread, forced and alternated behind an L2 flush
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 60 python3 -m fastsoftmax compile --match '^fs_cluster_' > $R/compile.txt 2>&1
probe() {  # probe NAME SECONDS ARGS...
  local name=$1 t=$2; shift 2
  timeout $t python3 benchmarks/grid_row_probe.py --quick --flush --out $R/$name --directions fwd "$@" > $R/$name.txt 2>&1
  echo "$name rc $?"; sed -n '/==== summary/,$p' $R/$name.txt | cut -c1-220
}
probe vocab16 150 --dtypes bf16,f16 --shapes 1046x128256,1024x131072,128x128256 \
  --tiers cluster,cluster:cluster_ctas=16,cluster:cluster_threads=512,cluster:cluster_ctas=4
probe decode16 90 --dtypes bf16,f16 --shapes 8x128256,1x128256 \
  --tiers cluster,cluster:cluster_ctas=8,cluster:cluster_threads=128,cluster:cluster_threads=512
probe decode32 90 --dtypes f32 --shapes 32x151936,8x128256 \
  --tiers cluster,cluster:cluster_packs=16,cluster:cluster_ctas=8
