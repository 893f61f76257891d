#!/usr/bin/env bash
# call 1: where compute-sanitizer's synccheck faults over the cluster tier. Each cluster problem in a
# process of its own under synccheck (labels printed before each launch), the many-wave ones also with
# the backward's stagger off; racecheck over each problem (never run over the staggered backward);
# memcheck and initcheck over the capped float32 backward (20x151936); beside them, the GPU tests of
# the cluster tier (the capped form's among them) and the strided tier
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R/san
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch, triton, cuda.core; print(torch.__version__, triton.__version__, cuda.core.__version__)" >> $R/device.txt
SHAPES="3x50257 2x70001 20x40001 4x50264 3x16384 2x9224 1x262144 140x12288 64x131072 20x151936"
{
  for s in $SHAPES; do echo "synccheck cluster@0 $s -"; done
  for s in 64x131072 140x12288 20x151936; do echo "synccheck cluster@0 $s cluster_stagger=False"; done
  echo "synccheck cluster@1 - -"
  for s in $SHAPES; do echo "racecheck cluster@0 $s -"; done
  echo "racecheck cluster@1 - -"
  echo "memcheck cluster@0 20x151936 -"
  echo "initcheck cluster@0 20x151936 -"
} | xargs -P 12 -L 1 bash -c '
  args=(--tiers "$1" --verbose)
  [[ $2 == - ]] || args+=(--shapes "$2")
  [[ $3 == - ]] || args+=(--tuning "$3")
  name="$0_$1_$2_$3"
  timeout 420 compute-sanitizer --tool $0 --error-exitcode 9 --report-api-errors no \
    python3 benchmarks/sanitize.py "${args[@]}" > "'$R'/san/$name.txt" 2>&1
  echo "$name exit $?" >> "'$R'/san/exits.txt"' &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 480 python3 -m pytest tests/cuda/test_cuda_gpu.py tests/cuda/test_strided_gpu.py \
  -k "cluster or strided or step" -q -n 4 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
wait
