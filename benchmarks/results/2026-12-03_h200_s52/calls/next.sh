#!/usr/bin/env bash
# prepared for the next set, not run: (1) whether the last, partial wave holds the bf16 forward of rows
# of about 50K columns (2640 rows: 20 waves of the 132 clusters resident at 4 CTAs an SM, against
# 2670), the cluster tier alone, alternated behind an L2 flush; (2) the layouts regime's view class
# in bf16, which this set's call 3 did not reach; (3) racecheck over cluster@0 64 x 131072 float32 on
# the landed merge_posts, alone, with the time it needs
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n1; mkdir -p $R
trap 'tar czf $OUT/n1.tar.gz -C $OUT n1 && rm -rf $R' EXIT
timeout 120 python3 benchmarks/grid_row_probe.py --flush --tiers cluster --directions fwd --dtypes bf16,f32 \
  --shapes 2640x50264,2670x50264,2640x50257,2670x50257,1980x65536,2048x65536 --out $R/tail > $R/tail_probe.txt 2>&1
sed -n '/summary/,$p' $R/tail_probe.txt
timeout 200 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes view \
  --json $R/layouts_view_bf16.json > $R/layouts_view_bf16.txt 2>&1
sed -n '/^losses:/,$p' $R/layouts_view_bf16.txt
timeout 500 compute-sanitizer --tool racecheck --error-exitcode 9 --report-api-errors no \
  python3 benchmarks/sanitize.py --tiers cluster@0 --shapes 64x131072:-1 --dtypes float32 > $R/racecheck_cluster0_64x131072.txt 2>&1
echo "racecheck cluster@0 64x131072 float32: exit $?"
