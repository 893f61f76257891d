#!/usr/bin/env bash
# call 6: where grid_row's teams stop paying. (a) few rows under 16 MiB in all, which the rows' own
# length gives grid_row (backward of 4-8 MiB rows): teams forced on and off against split_row; (b) 16
# rows and more that fit on chip together, which cluster_stream takes: the teams against cluster_stream,
# the cluster tier and split_row; then the new rows-in-teams GPU test (teams forced)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 100 python3 -m fastsoftmax compile --match '^fs_(grid_row|split_row|cluster_stream|cluster)_' > $R/compile.txt 2>&1
tail -n 1 $R/compile.txt
timeout 100 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/small --directions fwd,bwd --dtypes bf16,f32 \
  --tiers grid_row:grid_row_teams=True,grid_row:grid_row_teams=False,split_row \
  --shapes 2x1048576,3x1048576,2x2097152,3x2097152 > $R/small.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/small.txt | cut -c1-230
timeout 200 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/many --directions fwd,bwd --dtypes bf16,f32 \
  --tiers grid_row,cluster_stream,cluster,split_row \
  --shapes 16x786432,24x699051,32x524288,16x524288,32x262144 > $R/many.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/many.txt | cut -c1-230
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 100 python3 -m pytest -q --tb=short -n 4 tests/cuda/test_grid_row_gpu.py \
  > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
