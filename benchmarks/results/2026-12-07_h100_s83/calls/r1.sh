#!/usr/bin/env bash
# Triton's realigned row kernels (rows cut at their own 16-byte boundaries: a head, whole vectors, a tail)
# on the GPU: their tests (tests/test_realigned_rows.py), memcheck over every Triton tier forced with rows
# realigned (sanitize_triton.py --tiers --realigned), then against the tiers' own kernels (which load rows
# of no multiple of 16 elements an element at a time) and torch.softmax, alternated in one process behind
# an L2 flush, on rows of 2^26 elements of 8-1025 columns and 2670 x 50257, both directions, with the trial
# tier flat_rows (dense short rows read as one run a program) beside them. About 360 s.
source benchmarks/call_prelude.sh r1
timeout 120 python3 -m pytest -q -p no:cacheprovider tests/test_realigned_rows.py > $R/tests.txt 2>&1
echo "tests rc $? at $SECONDS s"; tail -2 $R/tests.txt
timeout 100 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize_triton.py --tiers --realigned > $R/memcheck.txt 2>&1
echo "memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|problems" $R/memcheck.txt | head -8
S=""; for n in 8 60 65 72 100 127 999 1025; do S="$S,$((67108864 / n))x$n"; done
timeout 300 python3 benchmarks/triton_offsets_probe.py --rounds 2 --variants triton,realigned,flat_rows,torch \
  --shapes ${S#,},2670x50257 > $R/realign.txt 2>&1
echo "realign rc $? at $SECONDS s"; cut -c1-160 $R/realign.txt
