#!/usr/bin/env bash
# p4's flat form again with 32-bit column indices (as torch.compile's kernel computes them; p4's took 64-bit
# divisions a column), on the one loss's shape.
source benchmarks/call_prelude.sh p5
timeout 150 python3 benchmarks/flat_columns_probe.py --rounds 2 --blocks 2048x4,4096x8 --dtypes bfloat16 \
  --cases "(16,21,513,513) d1;(8,21,255,255) d1" > $R/flat_columns.txt 2>&1
echo "rc $? at $SECONDS s"; grep -E "^(bfloat16|float32) |max error|Error" $R/flat_columns.txt | cut -c1-220
