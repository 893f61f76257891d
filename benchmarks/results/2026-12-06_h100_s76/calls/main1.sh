#!/usr/bin/env bash
# main run, first call (carries .peer1, .peer2 and .peer3, three of the six parts of the peers' archives):
# keeps the parts in /tmp for main2.sh on the same machine (benchmarks/peers_parts.sh), then runs the GPU
# tests of tests/gpu meanwhile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/m1; mkdir -p $R
trap 'tar czf $OUT/m1.tar.gz -C $OUT m1 && rm -rf $R' EXIT
bash benchmarks/peers_parts.sh keep > $R/kept.txt 2>&1 &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 240 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
wait
cat $R/kept.txt
