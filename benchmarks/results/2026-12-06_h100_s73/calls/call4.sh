#!/usr/bin/env bash
# call 4: after the cluster tier took the backward of 4 rows and more up to its longest row: its GPU
# tests (the new autograd test of 4-12 long rows, the chosen-tier tests); the forward's few long rows
# (4-12 rows past the cluster tier's preferred length) on the cluster tier against grid_row's teams,
# cluster_stream and split_row; the layouts regime's view and channel classes in bf16 with the
# backward (the two torch.compile losses of the seventieth set: (8192, 8192)[:, ::2] over dim 0 and
# (16, 21, 513, 513) over dim 1, backward)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 90 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd --directions fwd --dtypes bf16 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 4x786432,4x1048320,8x699051,12x1048320 > $R/fwd16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd16.txt | cut -c1-230
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd32 --directions fwd --dtypes f32 \
  --tiers cluster,grid_row,cluster_stream,split_row --shapes 4x393216,8x524160,12x393216 > $R/fwd32.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd32.txt | cut -c1-230
timeout 200 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes view,channel \
  --json $R/layouts_bf16.json > $R/layouts_bf16.txt 2>&1
echo "layouts rc $?"; sed -n '/^losses:/,$p' $R/layouts_bf16.txt | head -n 30
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest -q --tb=short -n 4 tests/cuda/test_cuda_gpu.py \
  -k "few_long or chosen" tests/cuda/test_grid_row_gpu.py tests/cuda/test_cluster_stream_gpu.py > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
