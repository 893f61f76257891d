#!/usr/bin/env bash
# call 7: the 16-bit scalar tiles over 33-64 classes (64 columns over 128 threads: two threads a
# column) in two pieces, as the rule now plans them, against one, kernel by kernel beside torch.compile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n7; mkdir -p $R
trap 'tar czf $OUT/n7.tar.gz -C $OUT n7 && rm -rf $R' EXIT
timeout 200 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16 --directions forward,backward \
  --cases "(16,40,513,513) d1;(16,33,257,257) d1;(8,48,513,513) d1" \
  --tunings "backend=triton,triton.TWO_PIECE_TILES=none" > $R/classes_33_64.txt 2>&1
grep "a call" $R/classes_33_64.txt
