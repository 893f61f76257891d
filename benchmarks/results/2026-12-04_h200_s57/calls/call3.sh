#!/usr/bin/env bash
# the column-partials probe again (call 2: the probe kernels did not compile under NVRTC 13.0, a generic
# lambda; and the read ceiling gained from L2 lines left by the call before), the L2 flushed before
# each timed call; sum also once unflushed
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
cd benchmarks
timeout 200 python3 column_partials_probe.py --shapes 8192x8192,65536x2048 --dtypes bf16,f32 --ops sum --out $R > $R/sum.log 2>&1
echo "sum rc $?"
timeout 60 python3 column_partials_probe.py --shapes 8192x8192 --dtypes bf16 --ops sum --no-flush --no-compile --out $R > $R/sum_unflushed.log 2>&1
echo "unflushed rc $?"
timeout 150 python3 column_partials_probe.py --shapes 65536x2048 --dtypes bf16,f32 --ops pair --out $R > $R/pair.log 2>&1
echo "pair rc $?"
timeout 100 python3 column_partials_probe.py --shapes 8192x8192 --dtypes bf16 --ops dot --out $R > $R/dot.log 2>&1
echo "dot rc $?"
cat $R/column_partials_probe.txt
