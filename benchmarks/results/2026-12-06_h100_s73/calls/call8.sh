#!/usr/bin/env bash
# call 8 (prepared, not run): the sanitizer runs this set's call 2 left out of time with eight processes
# at once, now two at a time: initcheck over the cluster tier, initcheck and synccheck over cluster_stream
# (the cluster tier's synccheck stops at the tool's own fault on clusters of 16 at several CTAs an SM:
# its problems of clusters of 8 and fewer are given instead)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
san() {  # san TOOL TIER SECONDS NAME [sanitize.py arguments]
  local tool=$1 tier=$2 secs=$3 name=$4; shift 4
  timeout $secs compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    --tiers $tier "$@" > $R/san_${name}_$tool.txt 2>&1
  echo "$tier $tool $* rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_${name}_$tool.txt | tail -n 1)" >> $R/san_summary.txt
}
timeout 60 python3 -m fastsoftmax compile --match '^fs_(cluster|cluster_stream)_' > $R/compile.txt 2>&1
san initcheck cluster 280 cluster &
san initcheck cluster_stream 280 cluster_stream &
wait
san synccheck cluster_stream 250 cluster_stream &
san synccheck cluster@0 250 cluster0 --shapes 3x50257,20x40001,2x9224,12x65536 &
wait
cat $R/san_summary.txt
