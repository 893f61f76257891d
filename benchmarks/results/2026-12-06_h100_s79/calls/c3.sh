#!/usr/bin/env bash
# after the dispatch table's new measurement: the main suite's shapes whose backend it changed, through
# "auto" and both kernel backends named, in one process each (no peers); then the row tiers forced on the
# CUDA points the new table found slower
source benchmarks/call_prelude.sh c3
bench() { timeout 100 python3 -m fastsoftmax bench --no-peers --no-compile --backends auto,triton,cuda --out $R "$@"; }
bench --shapes 8388608x16,4194304x32,2097152x64,1398101x96,131072x1024,32768x4096,16384x8192 --dtypes bf16,fp16 \
  --directions forward > $R/rows16.log 2>&1; echo "rows16 exit $? at $SECONDS s"
bench --shapes 8388608x16 --dtypes fp32 --directions backward > $R/f32bwd.log 2>&1; echo "f32bwd exit $? at $SECONDS s"
bench --shapes 4096x64x512@1 --dtypes fp16 --directions backward > $R/f16strided.log 2>&1; echo "f16 exit $? at $SECONDS s"
bench --shapes 128x1024x1024@1 --dtypes fp32 --directions forward > $R/f32strided.log 2>&1; echo "f32 exit $? at $SECONDS s"
gzip -9n $R/*.json $R/*.csv 2>/dev/null; ls $R
# the CUDA points the new table found slower than the old one: the row tiers forced on them, alternated
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/slower --directions fwd,bwd --dtypes f32 \
  --tiers warp,flat_rows,block_regs --shapes 466033x144,1864135x36 > $R/slower.txt 2>&1
echo "probe rc $? at $SECONDS s"; grep -E "^f32" $R/slower.txt | cut -c1-160
