#!/usr/bin/env bash
# call 1: a share of the 16-bit statistics' exponentials on the FMA pipe (common.cuh ex2_poly,
# grid_row_tier.cuh kGridRowPolyEvery: one term in every 8, 4 or 2 of a pack) against the exponential
# unit alone (0, the default), grid_row and cluster_stream forced and alternated in one process behind
# an L2 flush; ex2_poly's own GPU test; then grid_row's and cluster_stream's GPU tests with one in
# every 4 compiled in (this machine's copy of the tree edited)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
K=fastsoftmax/backends/cuda/kernels
OLD='constexpr int kGridRowPolyEvery = 0;'
timeout 60 python3 -m pytest -q --tb=short tests/cuda/test_grid_row_gpu.py -k ex2_poly > $R/ex2_poly_test.txt 2>&1
echo "ex2_poly test: $(tail -n 1 $R/ex2_poly_test.txt)"
timeout 300 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,log --dtypes bf16,f16 \
  --baseline e8=$K --baseline-replace "e8|$OLD|constexpr int kGridRowPolyEvery = 8;" \
  --baseline e4=$K --baseline-replace "e4|$OLD|constexpr int kGridRowPolyEvery = 4;" \
  --baseline e2=$K --baseline-replace "e2|$OLD|constexpr int kGridRowPolyEvery = 2;" \
  --tiers grid_row,e8/grid_row,e4/grid_row,e2/grid_row \
  --shapes 1x16777216,1x33554432,1x67108864,4x4194304 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-230
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab_cs --directions fwd,log --dtypes bf16 \
  --baseline e4=$K --baseline-replace "e4|$OLD|constexpr int kGridRowPolyEvery = 4;" \
  --baseline e2=$K --baseline-replace "e2|$OLD|constexpr int kGridRowPolyEvery = 2;" \
  --tiers cluster_stream,e4/cluster_stream,e2/cluster_stream \
  --shapes 191x699051,128x1048576 > $R/ab_cs.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab_cs.txt | cut -c1-230
sed -i "s/$OLD/constexpr int kGridRowPolyEvery = 4;/" $K/grid_row_tier.cuh
grep -c "kGridRowPolyEvery = 4;" $K/grid_row_tier.cuh
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 170 python3 -m pytest -q --tb=short -n 4 tests/cuda/test_grid_row_gpu.py \
  tests/cuda/test_cluster_stream_gpu.py > $R/tests_every4.txt 2>&1
echo "tests (one in every 4): $(tail -n 1 $R/tests_every4.txt)"; grep -h "^FAILED" $R/tests_every4.txt | head
