#!/usr/bin/env bash
# call 1 (carries .peer1: the first of five parts of the peers' archives, kept in /tmp for call 5's
# main run): strided_staged's staggered first wave (Tuning.staged_stagger_us) against none, forced
# tier, alternated in one process behind an L2 flush (benchmarks/grid_row_probe.py), forward and
# backward, bf16 and float32: (1, 8192, 16384) over dim 1 (persistent teams walking ~10 tiles),
# (32, 4096, 1024) (bf16 forward clusters of 8 in waves, the backward persistent teams) and
# (128, 1024, 1024) (clusters of 2-4); waits of 4, 8 and 16 us. Then the stagger's GPU tests.
set -u
DEADLINE=${DEADLINE:-250}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
cp .peer1/ppart.aa /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 175 python3 benchmarks/grid_row_probe.py --quick --flush --out $R --directions fwd,bwd --dtypes bf16,f32 \
  --tiers strided_staged,strided_staged:staged_stagger_us=4,strided_staged:staged_stagger_us=8,strided_staged:staged_stagger_us=16 \
  --shapes 1x8192x16384,32x4096x1024,128x1024x1024 > $R/stagger_ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/stagger_ab.txt | cut -c1-230
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout $(( DEADLINE - SECONDS )) python3 -m pytest -q --tb=short -n 4 \
  tests/cuda/test_strided_gpu.py -k "stagger or teams_walk or cluster_teams or counters" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"
wait
ls -la /tmp/ppart.aa > $R/kept.txt 2>&1
