#!/usr/bin/env bash
# main run, second call (carries .peer4, .peer5 and .peer6, right after main1.sh, which left the first three
# parts in /tmp): the main benchmark through "auto" with Quack and Liger (bulk, decode, huge, backward), then
# the non-last-dim regime with torch.compile, within about 500 s (it ran in 253 s with the kernel cache
# warm from the calls before)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/main
eval "$(bash benchmarks/peers_parts.sh unpack)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $OUT/main/device.txt
timeout 330 python3 -m fastsoftmax bench --no-compile --backends auto --peers quack,liger \
  --regimes bulk,decode,huge,backward --time-limit 280 --out $OUT/main > $OUT/main/bench.log 2>&1
echo "bench exit $?"
tail -n 45 $OUT/main/bench.log | cut -c1-160
(( SECONDS < 400 )) && timeout $(( 500 - SECONDS )) python3 -m fastsoftmax bench --compile --backends auto --peers quack,compile \
  --regimes non_last_dim --time-limit $(( 470 - SECONDS )) --out $OUT/main > $OUT/main/bench_nonlast.log 2>&1
echo "non-last exit $?"; tail -n 25 $OUT/main/bench_nonlast.log | cut -c1-160
