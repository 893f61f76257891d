#!/usr/bin/env bash
# call 7 (right after call 6): compute-sanitizer over the cluster tier on the merge_posts change:
# memcheck and initcheck a tier run each, racecheck and synccheck a problem and dtype each
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
mkdir -p $OUT/san
OUT=$OUT/san SANITIZE_TIERS=cluster@0,cluster@1 SANITIZE_TOOLS="memcheck initcheck racecheck synccheck" \
  SANITIZE_SPLIT_TOOLS="racecheck synccheck" SANITIZE_JOBS=15 SANITIZE_TIMEOUT=200 \
  bash benchmarks/device_run.sh sanitize > $OUT/san/sanitize.log 2>&1
grep "compute-sanitizer --tool" $OUT/san/sanitize.log
