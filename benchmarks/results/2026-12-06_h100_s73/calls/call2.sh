#!/usr/bin/env bash
# call 2: the last set's prepared call 8 (the backward of 8-24 rows on the cluster tier against grid_row's
# teams and split_row: should tiers.CLUSTER_LONGEST_MIN_ROWS, 32, start at fewer rows?), then the
# sanitizer runs the last sets left out, up to eight processes at a time (after the timing): the cluster and
# cluster_stream tiers (all parts) under memcheck, racecheck, synccheck, initcheck (not run since
# stagger_first_wave moved to common.cuh); strided_staged's persistent teams (@7) under racecheck,
# synccheck, initcheck (team_barrier moved to common.cuh); grid_row's whole grid on many rows (@2)
# under racecheck with 230 s (40 s ran out)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 105 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions bwd --dtypes bf16,f32 \
  --tiers cluster,grid_row,split_row --shapes 8x262144,8x524032,16x262144,16x393216,24x262144,24x393216 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-230
san() {  # san TOOL TIERS SECONDS NAME
  timeout $3 compute-sanitizer --tool $1 --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    --tiers $2 > $R/san_$4_$1.txt 2>&1
  echo "$2 $1 rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_$4_$1.txt | tail -n 1)" >> $R/san_summary.txt
}
timeout 60 python3 -m fastsoftmax compile --match '^fs_(cluster|cluster_stream|grid_row|strided_staged)_' > $R/compile.txt 2>&1
for tool in memcheck racecheck synccheck initcheck; do
  san $tool cluster 200 cluster &
  san $tool cluster_stream 200 cluster_stream &
done
wait
san racecheck grid_row@2 230 grid_row2 &
for tool in racecheck synccheck initcheck; do san $tool strided_staged@7 200 staged7 & done
wait
cat $R/san_summary.txt
