#!/usr/bin/env bash
# call 4: is synccheck's stop over the cluster tier (float32 forward, clusters of 16 in more than one
# wave) the kernels' or the launch shape's? Minimal cluster kernels (benchmarks/cluster_synccheck_probe.py:
# a cluster barrier alone, and an st.async exchange as ClusterAllToAll's) on clusters of 8 and 16 in one
# wave and four, each in its own process under synccheck; the 16-bit forward on many clusters of 16
# (64x262144, 20x151936 bf16). Beside them: racecheck over cluster_stream's persistent run in six parts
# (each shape and dtype apart; call 3's single process ran out of its time), and the public API's GPU
# tests (autograd, torch.compile, threads, CUDA graphs) on the persistent launches that auto now takes
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R/san
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
{
  for k in barrier exchange; do for c in 8 16; do echo "probe $k $c"; done; done
  echo "synccheck cluster@0 64x262144 bfloat16"
  echo "synccheck cluster@0 20x151936 bfloat16"
  for s in 70x300007 20x600011; do for d in float32 float16 bfloat16; do echo "racecheck cluster_stream@1 $s $d"; done; done
} | xargs -P 12 -L 1 bash -c '
  if [[ $0 == probe ]]; then
    timeout 120 compute-sanitizer --tool synccheck --error-exitcode 9 --report-api-errors no \
      python3 benchmarks/cluster_synccheck_probe.py --kernels $1 --clusters $2 > "'$R'/san/probe_$1_$2.txt" 2>&1
    echo "probe_$1_$2 exit $?" >> "'$R'/san/exits.txt"
  else
    name="$0_$1_$2_$3"
    timeout 320 compute-sanitizer --tool $0 --error-exitcode 9 --report-api-errors no \
      python3 benchmarks/sanitize.py --tiers $1 --shapes $2 --dtypes $3 --verbose > "'$R'/san/$name.txt" 2>&1
    echo "$name exit $?" >> "'$R'/san/exits.txt"
  fi' &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 300 python3 -m pytest tests/gpu -q -n 4 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests_gpu.txt
wait
