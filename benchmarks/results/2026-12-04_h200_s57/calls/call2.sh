#!/usr/bin/env bash
# the column-partials probe (benchmarks/column_partials_probe.py): the partials pass of a softmax over
# dim 0 in many access shapes against torch.compile's reduction and a read-only sweep
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
cd benchmarks
timeout 200 python3 column_partials_probe.py --shapes 8192x8192,65536x2048 --dtypes bf16,f32 --ops sum --out $R > $R/sum.log 2>&1
echo "sum rc $?"
timeout 150 python3 column_partials_probe.py --shapes 65536x2048 --dtypes bf16,f32 --ops pair --out $R > $R/pair.log 2>&1
echo "pair rc $?"
timeout 100 python3 column_partials_probe.py --shapes 8192x8192 --dtypes bf16 --ops dot --out $R > $R/dot.log 2>&1
echo "dot rc $?"
cat $R/column_partials_probe.txt
