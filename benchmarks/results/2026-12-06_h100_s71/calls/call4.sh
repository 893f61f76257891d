#!/usr/bin/env bash
# call 4 (run as one command line right after call 3, on the same machine): the softmax forward
# against the log-softmax forward (no exponential when writing), strided_staged forced, alternated in
# one process behind an L2 flush (the probe's --quick leaves the log-softmax out, so the full form)
export PYTHONPATH=$PWD; mkdir -p $OUT/c4
timeout 200 python3 benchmarks/grid_row_probe.py --flush --out $OUT/c4 --directions fwd,log --dtypes bf16,f32 \
  --tiers strided_staged --shapes 32x4096x1024,1x8192x16384 > $OUT/c4/log_vs_exp.txt 2>&1
sed -n '/==== summary/,$p' $OUT/c4/log_vs_exp.txt | cut -c1-200
