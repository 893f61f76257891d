#!/usr/bin/env bash
# prepared for the next set (not run): the 16-bit forward's (max, sum) pairs over long axes in more
# access shapes of the column-partials probe, eight rows in flight among them (the strided tier's
# partials walk the 16-bit forward's x eight rows a step; its pass over (65536, 2048) takes 79-84 us
# against Inductor's 66; call 3's probe shapes, at most four rows in flight, reached 86.9 at best)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n3; mkdir -p $R
trap 'tar czf $OUT/n3.tar.gz -C $OUT n3 && rm -rf $R' EXIT
cd benchmarks
V=p8w32s8u8x24f3h0m3,p8w32s8u8x24f3h0m0,p8w32s8u4x24f3h0m3,p8w16s8u8x16f1h0m0,p4w64s4u8x24f3h0m0
V=$V,p4w16s8u8x16f1h0m0,p8w8s16u8x16f1h0m0,p8w8s16u4x32f1h0m0,p8w32s4u8x24f1h0m0,p8w16s16u4x16f1h0m0
timeout 200 python3 column_partials_probe.py --shapes 65536x2048,8192x16384 --dtypes bf16 --ops pair \
  --variants $V --out $R > $R/pair.log 2>&1
echo "probe rc $?"; cat $R/column_partials_probe.txt
