#!/usr/bin/env bash
# call 4 (carries .peerB1, right after call 3): the main benchmark through "auto" with Quack and Liger
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/main /tmp/site
[[ -f /tmp/apart.ac && -f /tmp/bpart.aa ]] || { echo "cold: calls 1-3's files are gone"; exit 3; }
cat /tmp/apart.aa /tmp/apart.ab /tmp/apart.ac | tar xJf - -C /tmp/site
cat /tmp/bpart.aa .peerB1/bpart.ab .peerB1/bpart.ac | tar xJf - -C /tmp/site && export FASTSOFTMAX_PEER_SITE=/tmp/site
timeout 370 python3 -m fastsoftmax bench --no-compile --backends auto --peers quack,liger --regimes bulk,decode,huge,backward --time-limit 310 --out $OUT/main > $OUT/main/main.log 2>&1
tail -n 5 $OUT/main/main.log
