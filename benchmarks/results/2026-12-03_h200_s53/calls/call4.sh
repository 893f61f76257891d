#!/usr/bin/env bash
# call 4 (carries .peerA2, right after call 3): the public API's GPU tests (tests/gpu) beside
# racecheck over the cluster tier's part cut last set (cluster@0, rows of 131072 float32: a launch of
# more than 32 posts, the merge's walk), on 8 rows rather than 64 (the same instance and launch shape)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
[[ -f /tmp/apart.aa ]] || echo "cold: call 3's file is gone" > $R/cold.txt
cp .peerA2/apart.ab /tmp/ &
timeout 230 compute-sanitizer --tool racecheck --error-exitcode 9 --report-api-errors no \
  python3 benchmarks/sanitize.py --tiers cluster@0 --shapes 8x131072:-1 --dtypes float32 > $R/racecheck_cluster0_8x131072.txt 2>&1 &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 220 python3 -m pytest tests/gpu -q -n 8 -p no:cacheprovider \
  -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests_gpu.txt
cat $R/tests_gpu.txt
wait
echo "racecheck: $(tail -n 2 $R/racecheck_cluster0_8x131072.txt | tr '\n' ' ')"
ls -la /tmp/apart.a* > $R/kept.txt 2>&1
