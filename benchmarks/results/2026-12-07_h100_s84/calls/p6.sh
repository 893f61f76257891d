#!/usr/bin/env bash
# p5's flat backward with the inner size and outer stride compile-time constants as well, as
# torch.compile's kernels take a tensor's sizes.
source benchmarks/call_prelude.sh p6
timeout 120 python3 benchmarks/flat_columns_probe.py --rounds 2 --blocks 2048x4,4096x8 --dtypes bfloat16 \
  --directions backward --fixed --cases "(16,21,513,513) d1;(8,21,255,255) d1" > $R/flat_columns.txt 2>&1
echo "rc $? at $SECONDS s"; grep -E "^(bfloat16|float32) |max error|Error" $R/flat_columns.txt | cut -c1-220
