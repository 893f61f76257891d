#!/usr/bin/env bash
# call 3: where the cluster tier's backward should start (call 2: ahead of grid_row's teams at 8, 16 and
# 24 rows of 262145-524032 16-bit or 131073-262144 float32 columns): 4, 9, 12 and 20 rows, against
# grid_row (teams), cluster_stream and split_row, forced and alternated behind an L2 flush; then
# memcheck and racecheck over the cluster and cluster_stream tiers, four processes at once (racecheck
# on smaller problems: clusters of 2 to 16 CTAs, rows held in registers and shared memory)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 80 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab16 --directions bwd --dtypes bf16 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 4x524032,9x393216,9x524032,12x393216,20x524032 > $R/ab16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab16.txt | cut -c1-230
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab32 --directions bwd --dtypes f32 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 4x262144,9x262144,12x262144,20x262144,12x196608 > $R/ab32.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab32.txt | cut -c1-230
san() {  # san TOOL TIER SECONDS NAME [sanitize.py arguments]
  local tool=$1 tier=$2 secs=$3 name=$4; shift 4
  timeout $secs compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    --tiers $tier "$@" > $R/san_${name}_$tool.txt 2>&1
  echo "$tier $tool $* rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_${name}_$tool.txt | tail -n 1)" >> $R/san_summary.txt
}
timeout 60 python3 -m fastsoftmax compile --match '^fs_(cluster|cluster_stream)_' > $R/compile.txt 2>&1
san memcheck cluster 380 cluster &
san memcheck cluster_stream 380 cluster_stream &
san racecheck cluster@0 380 cluster0 --shapes 1x262144,3x50257,20x40001,2x9224 &
san racecheck cluster_stream@0 380 cluster_stream0 --shapes 3x300007,3x4099,2x1000003 &
wait
cat $R/san_summary.txt
