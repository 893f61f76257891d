#!/usr/bin/env bash
# call 6a (prepared; carries .peer1, .peer2 and .peer3, three of the six parts of the peers' archives: the
# tracked tree, 24 MiB since the records were compressed, leaves room for three a call): keeps the parts in
# /tmp for call 6b on the same machine, then runs the GPU tests of tests/gpu meanwhile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6a; mkdir -p $R
trap 'tar czf $OUT/c6a.tar.gz -C $OUT c6a && rm -rf $R' EXIT
cp .peer1/ppart.aa .peer2/ppart.ab .peer3/ppart.ac /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 240 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
wait
ls -la /tmp/ppart.a* > $R/kept.txt 2>&1; cat $R/kept.txt
