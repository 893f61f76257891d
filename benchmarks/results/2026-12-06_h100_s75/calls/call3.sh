#!/usr/bin/env bash
# call 3 (on call 1's machine): memcheck and synccheck over strided_staged's parts, which call 1's racecheck
# left no time for, each part a dtype at a time (bfloat16 and float32), 16 processes at once, cut at a shared deadline
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
export DEADLINE=$(( $(date +%s) + 400 )) R
parts="strided_staged@0 strided_staged@1 strided_staged@2 strided_staged@3 strided_staged@4 strided_staged@5"
parts="$parts strided_staged@6 strided_staged@7 strided_staged@8 strided_staged@9 strided_staged@10"
parts="$parts strided_window strided_stepped strided_folded"
for t in memcheck synccheck; do for p in $parts; do for d in bfloat16 float32; do echo "$t $p $d"; done; done; done |
xargs -P 16 -L 1 bash -c '
  left=$(( DEADLINE - $(date +%s) )); (( left > 10 )) || { echo "$0 $1 $2 not started" >> $R/san_summary.txt; exit 0; }
  f=$R/san_$0_${1//@/_}_$2.txt
  timeout $left compute-sanitizer --tool $0 --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    --tiers $1 --dtypes $2 > $f 2>&1
  echo "$0 $1 $2 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $f | tail -n 1)" >> $R/san_summary.txt'
sort $R/san_summary.txt
