#!/usr/bin/env bash
# The channel softmax over odd H x W (the layouts regime's one loss, p2/p3: bf16 (16, 21, 513, 513) over dim 1
# backward behind torch.compile) in torch.compile's own form -- tiles of consecutive columns of the flattened
# (outer x inner) axis, all n rows of each column held along a thread -- against the Triton backend's
# scalar tiles and torch.compile, alternated in one process (benchmarks/flat_columns_probe.py, 64-bit column
# indices).
source benchmarks/call_prelude.sh p4
timeout 280 python3 benchmarks/flat_columns_probe.py --rounds 2 --wide --blocks 2048x4,4096x8,8192x8 \
  --cases "(16,21,513,513) d1;(8,21,255,255) d1;(8,150,127,127) d1" > $R/flat_columns.txt 2>&1
echo "rc $? at $SECONDS s"; grep -E "^(bfloat16|float32) |max error|Error" $R/flat_columns.txt | cut -c1-220
