#!/usr/bin/env bash
# Triton alone against torch.softmax in one process over more row lengths than a4.sh's (where "auto"
# falls back to Triton without the CUDA backend): rows whose length is no multiple of 16, from 20 to
# 50257, forward in bf16 and float32, 2^26 elements each. About 40 s.
source benchmarks/call_prelude.sh c1
S=""; for n in 20 36 44 130 200 300 500 700 1500 3000 5001 10001 32001 50257; do S="$S,$((67108864 / n))x$n"; done
timeout 50 python3 -m fastsoftmax bench --no-peers --no-compile --backends triton --out $R --shapes ${S#,} \
  --dtypes bf16,fp32 --directions forward > $R/fwd.log 2>&1; echo "fwd exit $? at $SECONDS s"
# each shape's header and Triton's line (its ratio to torch.softmax); the exact times are in the JSON
tr '\r' '\n' < $R/fwd.log | grep -E "^ *your shapes [a-z0-9]+ [0-9x]+$|fastsoftmax\[triton\]" | cut -c1-100
gzip -9n $R/*.json $R/*.csv 2>/dev/null
