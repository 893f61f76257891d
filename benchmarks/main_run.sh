#!/usr/bin/env bash
# The main run's benchmark on the GPU machine, into $OUT/main: the main suite through "auto" with Quack and
# Liger (bulk rows, decode, huge single rows, the backward), then the non-last dims with torch.compile,
# within about 500 s of the script's start (the second within what is left). It unpacks the peers'
# archives first (benchmarks/peers_parts.sh unpack: run it in the command after those that kept the other
# parts, on the same machine) unless FASTSOFTMAX_PEER_SITE is set already. The README's tables and
# benchmarks/report/ are made from the JSON it writes.
set -u
cd "$(dirname "$0")/.."
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
out=$OUT/main
mkdir -p "$out"
[[ -n ${FASTSOFTMAX_PEER_SITE:-} ]] || eval "$(bash benchmarks/peers_parts.sh unpack)"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/device.txt"
timeout 330 python3 -m fastsoftmax bench --no-compile --backends auto --peers quack,liger \
  --regimes bulk,decode,huge,backward --time-limit 280 --out "$out" > "$out/bench.log" 2>&1
echo "bench exit $?"
tail -n 45 "$out/bench.log" | cut -c1-160
if (( SECONDS < 400 )); then
  timeout $(( 500 - SECONDS )) python3 -m fastsoftmax bench --compile --backends auto --peers quack,compile \
    --regimes non_last_dim --time-limit $(( 470 - SECONDS )) --out "$out" > "$out/bench_nonlast.log" 2>&1
  echo "non-last exit $?"
  tail -n 25 "$out/bench_nonlast.log" | cut -c1-160
fi
