#!/usr/bin/env bash
# main run, third call (carries the peers' parts 5-6; m1.sh and m2.sh left parts 1-4 in /tmp on the same
# machine; this set's bundle made a first archive of 50191356 bytes): benchmarks/main_run.sh's first part only
# (bulk rows, decode, huge single rows, the backward, with Quack and Liger); the non-last dims followed in
# m4.sh
export PEERS_FIRST_ARCHIVE_BYTES=50191356 PYTHONPATH=$PWD PYTHONUNBUFFERED=1
eval "$(bash benchmarks/peers_parts.sh unpack)"
out=$OUT/main
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt"
timeout 330 python3 -m fastsoftmax bench --no-compile --backends auto --peers quack,liger \
  --regimes bulk,decode,huge,backward --time-limit 280 --out "$out" > "$out/bench.log" 2>&1
echo "bench exit $?"
tail -n 45 "$out/bench.log" | cut -c1-160
