#!/usr/bin/env bash
# call 2: (a) grid_row's teams against cluster_stream on 12-24 rows (call 1: float32 forward 15 x 524160
# 0.618 of copy against 0.672, where the seventy-second set had 16 x 524288 at 0.655 against 0.524),
# forced and alternated behind an L2 flush, float32 and bf16, forward and backward; (b) the sanitizer
# runs the seventy-third set's call 2 left out of time with eight processes at once, two at a time:
# initcheck over the cluster tier, initcheck and synccheck over cluster_stream, synccheck over the
# cluster tier's problems of clusters of 8 and fewer (its clusters of 16 at several CTAs an SM stop
# at the tool's own fault)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 60 python3 -m fastsoftmax compile --match '^fs_(cluster|cluster_stream|grid_row)_' > $R/compile.txt 2>&1
timeout 75 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/teams32 --directions fwd,bwd --dtypes f32 \
  --tiers grid_row,cluster_stream --shapes 12x524160,14x524160,15x524160,16x524160,16x524288,17x524160,20x524160,24x524160,15x393216,16x393216,24x393216,16x699051 > $R/teams32.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/teams32.txt | cut -c1-200
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/teams16 --directions fwd,bwd --dtypes bf16 \
  --tiers grid_row,cluster_stream --shapes 12x1048320,15x1048320,16x1048320,16x1048576,20x786432,24x786432,15x699051,16x699051 > $R/teams16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/teams16.txt | cut -c1-200
san() {  # san TOOL TIER SECONDS NAME [sanitize.py arguments]
  local tool=$1 tier=$2 secs=$3 name=$4; shift 4
  timeout $secs compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    --tiers $tier "$@" > $R/san_${name}_$tool.txt 2>&1
  echo "$tier $tool $* rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_${name}_$tool.txt | tail -n 1)" >> $R/san_summary.txt
}
left=$(( 570 - SECONDS ))
san initcheck cluster $(( left / 2 )) cluster &
san initcheck cluster_stream $(( left / 2 )) cluster_stream &
wait
left=$(( 575 - SECONDS ))
san synccheck cluster_stream $left cluster_stream &
san synccheck cluster@0 $left cluster0 --shapes 3x50257,20x40001,2x9224,12x65536 &
wait
cat $R/san_summary.txt
