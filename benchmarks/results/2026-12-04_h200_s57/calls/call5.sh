#!/usr/bin/env bash
# the bf16 log-softmax backward over dim 0 of (8192, 8192)[::2] (its partials pass read 67 MB at 2.4
# TB/s in 2026-12-04_h200_s55/c5): the column-partials probe on a dense (4096, 8192) in short-chunk
# shapes, and the strided tier's splits, waves, chunk order and row bytes kernel by kernel
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
cd benchmarks
V=p8w32s8u4x24f3h0m3,p8w32s8u4x24f3h0m0,p8w32s8u4x12f3h0m0,p8w32s8u4x48f3h0m0,p8w32s8u2x24f3h0m0,p8w32s8u1x24f3h0m0
V=$V,p8w32s8u1x48f1h0m0,p8w32s16u1x16f1h0m0,p8w32s4u4x24f1h0m0,p8w16s8u2x16f1h0m0,p8w16s8u1x32f1h0m0,p8w8s16u1x16f1h0m0
V=$V,p4w16s8u4x16f1h0m0,p4w16s8u1x16f1h0m0,p4w16s8u2x32f1h0m0,p4w32s8u2x16f1h0m0,p4w32s8u1x32f1h0m0,p4w64s4u2x24f3h0m0
V=$V,p4w64s4u4x24f3h0m0,p4w64s4u2x16f1h0m0
timeout 120 python3 column_partials_probe.py --shapes 4096x8192,8192x8192 --dtypes bf16 --ops sum --variants $V --out $R > $R/sum.log 2>&1
echo "probe rc $?"; cat $R/column_partials_probe.txt
S="tier=strided"
T="$S;$S,strided_waves=1;$S,strided_waves=3;$S,strided_splits=48;$S,strided_splits=12;$S,strided_interleaved=False;$S,strided_chunk_major=False;$S,strided_row_bytes=256;$S,strided_merge=False"
timeout 150 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --tunings "$T" \
  --cases "(8192,8192)[::2] d0;(8192,8192).t() d1" > $R/breakdown_log_backward_bf16.txt 2>&1
grep "a call\|Error" $R/breakdown_log_backward_bf16.txt
