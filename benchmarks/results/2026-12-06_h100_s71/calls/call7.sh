#!/usr/bin/env bash
# call 7: the float32 forward's two-line tiles as the rule (strided.staged_wide_tile) against one line
# forced, strided_staged alternated in one process behind an L2 flush, on the shapes the rule takes and
# on shapes it leaves (a second process for call 6's figures); then strided_staged's GPU tests.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
T=strided_staged
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/f32 --directions fwd,bwd --dtypes f32 \
  --tiers $T,$T:staged_tile_cols=32 \
  --shapes 1x8192x16384,1x8192x8192,4x8192x4096,1x12288x16384,1x16384x8192,32x4096x1024 > $R/rule.txt 2>&1
echo "rule rc $?"; sed -n '/==== summary/,$p' $R/rule.txt | cut -c1-230
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 240 python3 -m pytest -q --tb=short -n 8 \
  tests/cuda/test_strided_gpu.py -k "staged or stagger or teams or counters or wider" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
