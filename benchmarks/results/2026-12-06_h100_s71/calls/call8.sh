#!/usr/bin/env bash
# call 8: compute-sanitizer's four tools over strided_staged's wider tiles (sanitize.py's parts 9 and
# 10: 128 columns, clusters where a tile fits one; 64 columns for persistent teams, float32's two
# lines as the new rule takes them), then the non-last-dim regime through "auto" beside torch.compile
# (the float32 forward's two-line tiles are in), until DEADLINE
set -u
DEADLINE=${DEADLINE:-420}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R $OUT/main
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
cp $R/device.txt $OUT/main/device.txt
timeout 200 python3 -m fastsoftmax bench --compile --backends auto --peers compile \
  --regimes non_last_dim --time-limit 180 --out $OUT/main > $OUT/main/bench_nonlast.log 2>&1
echo "non-last exit $?"; tail -n 25 $OUT/main/bench_nonlast.log | cut -c1-160
for tool in memcheck racecheck synccheck initcheck; do
  (( SECONDS > DEADLINE - 25 )) && { echo "$tool skipped"; continue; }
  timeout $(( DEADLINE - SECONDS )) compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided_staged@9,strided_staged@10 > $R/san_tiles_$tool.txt 2>&1
  echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong results|: ok" $R/san_tiles_$tool.txt | tail -n 3
done
