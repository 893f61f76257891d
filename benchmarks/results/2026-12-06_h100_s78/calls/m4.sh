#!/usr/bin/env bash
# main run, fourth call (run as one command line on the same machine after m3.sh, the peers still unpacked in
# /tmp/site): benchmarks/main_run.sh's second part, the non-last dims with torch.compile
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1 FASTSOFTMAX_PEER_SITE=/tmp/site; mkdir -p $OUT/main; timeout 250 python3 -m fastsoftmax bench --compile --backends auto --peers quack,compile --regimes non_last_dim --time-limit 220 --out $OUT/main > $OUT/main/bench_nonlast.log 2>&1; echo "non-last exit $?"; tail -n 25 $OUT/main/bench_nonlast.log | cut -c1-160
