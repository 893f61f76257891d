#!/usr/bin/env bash
# call 3 (carries .peer3, right after call 2: the third part of the peers' archives, kept in /tmp for
# call 4): the repeated-call tests on the GPU (softmax_backward's remembered plans among them) and the
# public API's tests under several threads
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
[[ -f /tmp/ppart.ab ]] || echo "cold: call 2's file is gone" > $R/cold.txt
cp .peer3/ppart.ac /tmp/ &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 100 python3 -m pytest -q --tb=short -n 8 \
  tests/test_repeated_calls.py tests/gpu/test_concurrency.py > $R/tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/tests.txt
wait
ls -la /tmp/ppart.a* > $R/kept.txt 2>&1
