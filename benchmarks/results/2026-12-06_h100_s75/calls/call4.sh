#!/usr/bin/env bash
# call 4 (on the same machine): racecheck over strided_staged's window and folded runs (out of time in call 1), each dtype
# in a process of its own, then memcheck and synccheck over every part in float16 (call 3: bfloat16 and float32)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
export DEADLINE=$(( $(date +%s) + 320 )) R
parts="strided_staged@0 strided_staged@1 strided_staged@2 strided_staged@3 strided_staged@4 strided_staged@5"
parts="$parts strided_staged@6 strided_staged@7 strided_staged@8 strided_staged@9 strided_staged@10"
parts="$parts strided_window strided_stepped strided_folded"
{ for p in strided_window strided_folded; do for d in bfloat16 float16 float32; do echo "racecheck $p $d"; done; done; for t in memcheck synccheck; do for p in $parts; do echo "$t $p float16"; done; done; } |
xargs -P 16 -L 1 bash -c '
  left=$(( DEADLINE - $(date +%s) )); (( left > 10 )) || { echo "$0 $1 $2 not started" >> $R/san_summary.txt; exit 0; }
  f=$R/san_$0_${1//@/_}_$2.txt
  timeout $left compute-sanitizer --tool $0 --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    --tiers $1 --dtypes $2 > $f 2>&1
  echo "$0 $1 $2 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $f | tail -n 1)" >> $R/san_summary.txt'
sort $R/san_summary.txt
