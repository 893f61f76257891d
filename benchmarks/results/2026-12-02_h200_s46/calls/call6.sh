#!/usr/bin/env bash
# call 6: the public-API GPU tests (threads, CUDA graphs, torch.compile, another device) on the landed tree
# with its dispatch table, which call 3's time limit may have left unrun
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r6; mkdir -p $R
trap 'tar czf $OUT/r6.tar.gz -C $OUT r6 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 190 python3 -m pytest tests/gpu -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
