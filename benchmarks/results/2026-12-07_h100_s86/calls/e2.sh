#!/usr/bin/env bash
# As run on the H200 after e1.sh (one command line, written out here): 160 row lengths drawn log-uniform
# from 33-40000 (seed 862; e2/lengths.txt) in every dtype and direction into a copy of the H200's table.
source benchmarks/call_prelude.sh e2
cp fastsoftmax/dispatch_table_nvidia-h200.json $R/heldout.json
L=$(python3 -c "
import random, math
r = random.Random(862); L = set()
while len(L) < 160: L.add(int(round(2 ** r.uniform(math.log2(33), math.log2(40000)))))
print(','.join(map(str, sorted(L))))")
echo $L > $R/lengths.txt
timeout 400 python3 -m fastsoftmax bench table --row-lengths $L --table-out $R/heldout.json > $R/heldout.log 2>&1
echo "held-out exit $? at $SECONDS s: $(tail -n 1 $R/heldout.log)"
