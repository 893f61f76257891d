#!/usr/bin/env bash
# call 2 (call 1 never ran): cluster_stream's persistent grid, each cluster copying the next
# row's shared-memory slots while it writes the last, against one cluster a row and against the
# kernels before the change (scratch/base_kernels: the same host, so both launches on both),
# alternated in one process behind an L2 flush; grid_row over several rows (the same copy-ahead).
# Then, beside each other: the GPU tests of cluster_stream, grid_row, the cluster tier (the capped
# form's) and the strided tier; compute-sanitizer's synccheck over each cluster-tier problem in a
# process of its own (labels printed before each launch; the many-wave ones also with the stagger
# off), racecheck over each, memcheck and initcheck over the capped float32 backward (20x151936)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R/san
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch, triton, cuda.core; print(torch.__version__, triton.__version__, cuda.core.__version__)" >> $R/device.txt
P=cluster_stream:cluster_stream_persistent=True
timeout 200 python3 benchmarks/grid_row_probe.py --flush --baseline base=scratch/base_kernels \
  --tiers cluster_stream,$P,base/cluster_stream,base/$P --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 128x1048576,191x699051,256x524288,512x262144 --out $R/persist > $R/persist_probe.txt 2>&1
timeout 60 python3 benchmarks/grid_row_probe.py --flush --baseline base=scratch/base_kernels \
  --tiers grid_row,base/grid_row --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 4x4194304,3x16777216 --out $R/gridrows > $R/gridrows_probe.txt 2>&1
SHAPES="3x50257 2x70001 20x40001 4x50264 3x16384 2x9224 1x262144 140x12288 64x131072 20x151936"
{
  for s in 64x131072 140x12288 20x151936 1x262144 3x50257 2x70001 20x40001 4x50264 3x16384 2x9224; do echo "synccheck cluster@0 $s -"; done
  for s in 64x131072 140x12288; do echo "synccheck cluster@0 $s cluster_stagger=False"; done
  echo "memcheck cluster@0 20x151936 -"
  echo "initcheck cluster@0 20x151936 -"
  echo "synccheck cluster@1 - -"
  for s in $SHAPES; do echo "racecheck cluster@0 $s -"; done
} | xargs -P 10 -L 1 bash -c '
  args=(--tiers "$1" --verbose)
  [[ $2 == - ]] || args+=(--shapes "$2")
  [[ $3 == - ]] || args+=(--tuning "$3")
  name="$0_$1_$2_$3"
  timeout 300 compute-sanitizer --tool $0 --error-exitcode 9 --report-api-errors no \
    python3 benchmarks/sanitize.py "${args[@]}" > "'$R'/san/$name.txt" 2>&1
  echo "$name exit $?" >> "'$R'/san/exits.txt"' &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 320 python3 -m pytest tests/cuda/test_cluster_stream_gpu.py tests/cuda/test_grid_row_gpu.py \
  tests/cuda/test_cuda_gpu.py tests/cuda/test_strided_gpu.py -k "cluster or strided or step or grid_row or stream or persistent" \
  -q -n 6 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 25 > $R/tests.txt
wait
