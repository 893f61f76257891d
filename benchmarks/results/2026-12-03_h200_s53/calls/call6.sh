#!/usr/bin/env bash
# call 6 (carries .peerB1, right after call 5): the main benchmark through "auto" with Quack and Liger
# (bulk, decode, huge, backward; the README's H200 table)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/main /tmp/site
[[ -f /tmp/apart.aa && -f /tmp/apart.ab && -f /tmp/apart.ac && -f /tmp/bpart.aa ]] || { echo "cold: calls 3-5's files are gone"; exit 3; }
cat /tmp/apart.aa /tmp/apart.ab /tmp/apart.ac | tar xJf - -C /tmp/site
cat /tmp/bpart.aa .peerB1/bpart.ab .peerB1/bpart.ac | tar xJf - -C /tmp/site
export FASTSOFTMAX_PEER_SITE=/tmp/site
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/main/device.txt
timeout 370 python3 -m fastsoftmax bench --no-compile --backends auto --peers quack,liger \
  --regimes bulk,decode,huge,backward --time-limit 310 --out $OUT/main > $OUT/main/bench.log 2>&1
echo "bench exit $?"
tail -n 60 $OUT/main/bench.log
