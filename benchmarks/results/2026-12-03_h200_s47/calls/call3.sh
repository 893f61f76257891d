#!/usr/bin/env bash
# call 3 (carries .peerA1): GPU tests of the warp and flat_rows tiers on the rule of call 2 (16-bit rows of
# 65-768 columns over part of a warp by default; flat_rows beside them at one word a bank), compute-sanitizer
# over the warp tier beside them, the public-API tests; then the main suite's narrow rows timed on both
# kernel backends (the dispatch table's "main" points for them), kept in /tmp for call 5 and returned
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
trap 'tar czf $OUT/r3.tar.gz -C $OUT r3 && rm -rf $R' EXIT
cp .peerA1/apart.aa /tmp/ &
SANITIZE_TIERS=warp SANITIZE_TIMEOUT=170 SANITIZE_JOBS=4 OUT=$R/san timeout 185 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
timeout 190 python3 -m pytest tests/cuda -k "warp or flat" -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
wait
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 100 python3 -m pytest tests/gpu -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 >> $R/tests.txt
S=16777216x8,8388608x16,4194304x32,2097152x64,1398101x96,1048576x128,838860x160,524288x256,262144x512
timeout 110 python3 -m fastsoftmax bench main --backends cuda,triton --no-peers --no-compile --shapes $S --directions forward,backward --dtypes bf16,fp16,fp32 --time-limit 85 --out $R/narrow > $R/narrow.log 2>&1
cp $R/narrow/main_*.json /tmp/narrow_main.json
ls -la /tmp/apart.aa /tmp/narrow_main.json >> $R/kept.txt 2>&1
