#!/usr/bin/env bash
# call 5 (carries .peerB, right after call 4): the bulk grid of call 1 (in the tree) with the main points of the earlier runs merged
# again with call 3's narrow rows, then the main benchmark through "auto" with Quack and Liger
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
[[ -d /tmp/site && -f /tmp/narrow_main.json ]] || { echo "cold: calls 3-4's files are gone"; exit 3; }
tar xJf .peerB/b.tar.xz -C /tmp/site && export FASTSOFTMAX_PEER_SITE=/tmp/site
T=fastsoftmax/dispatch_table_nvidia-h200.json
python3 -m fastsoftmax bench table --merge-main benchmarks/results/2026-12-02_h200_s41/main_nvidia-h200_2026-12-02T03-08-54.json,benchmarks/results/2026-12-02_h200_s42/main_nvidia-h200_2026-12-02T05-07-02.json,/tmp/narrow_main.json --table-out $T
mkdir -p $OUT/main && cp $T $OUT/main/
timeout 370 python3 -m fastsoftmax bench --no-compile --backends auto --peers quack,liger --regimes bulk,decode,huge,backward --time-limit 310 --out $OUT/main > $OUT/main/main.log 2>&1
tail -n 5 $OUT/main/main.log
