#!/usr/bin/env bash
# call 3, the landed forms: cluster_stream's persistent launches (the rule) against one cluster a row,
# and grid_row's backward (the team's copy-ahead off, its row description refactored) against the
# kernels before the set, alternated in one process behind an L2 flush. Then, beside each other:
# compute-sanitizer's four tools over cluster_stream's persistent run (sanitize.py cluster_stream@1)
# and grid_row's problems; synccheck over the cluster tier's faulting float32 forward at other cluster
# sizes and row counts (is it the clusters of 16, or many of them?); the GPU tests of cluster_stream
# and grid_row. The first part of the peers' archive goes to /tmp for the main run.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R/san
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
cp .peerA1/apart.aa /tmp/ &
timeout 110 python3 benchmarks/grid_row_probe.py --flush \
  --tiers cluster_stream,cluster_stream:cluster_stream_persistent=False --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 128x1048576,191x699051,256x524288 --out $R/persist > $R/persist_probe.txt 2>&1
timeout 50 python3 benchmarks/grid_row_probe.py --flush --baseline base=scratch/base_kernels \
  --tiers grid_row,base/grid_row --directions bwd --dtypes bf16,f32 \
  --shapes 4x4194304,3x16777216 --out $R/gridrows > $R/gridrows_probe.txt 2>&1
{
  for t in memcheck initcheck synccheck racecheck; do echo "$t cluster_stream@1 - -"; echo "$t grid_row@0 - -"; done
  echo "synccheck cluster@0 64x131072 cluster_ctas=8"
  echo "synccheck cluster@0 20x151936 cluster_ctas=8"
  echo "synccheck cluster@0 2x131072 -"
  echo "synccheck cluster@0 1x131072 -"
} | xargs -P 12 -L 1 bash -c '
  args=(--tiers "$1" --verbose)
  [[ $2 == - ]] || args+=(--shapes "$2")
  [[ $3 == - ]] || args+=(--tuning "$3")
  name="$0_$1_$2_$3"
  timeout 240 compute-sanitizer --tool $0 --error-exitcode 9 --report-api-errors no \
    python3 benchmarks/sanitize.py "${args[@]}" > "'$R'/san/$name.txt" 2>&1
  echo "$name exit $?" >> "'$R'/san/exits.txt"' &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 240 python3 -m pytest tests/cuda/test_cluster_stream_gpu.py tests/cuda/test_grid_row_gpu.py \
  -q -n 4 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 12 > $R/tests.txt
wait
ls -la /tmp/apart.aa > $R/kept.txt 2>&1
