#!/usr/bin/env bash
# Sanitizers the eighty-third set did not finish or rerun: grid_row under racecheck with a 330 s limit (it ran past
# 150 s on 17 rows of 2^20 + 3 in uneven teams), and memcheck over every Triton tier with rows realigned
# after the walked kernels lost their row-block argument.
source benchmarks/call_prelude.sh s1
timeout 200 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 python3 benchmarks/sanitize_triton.py --tiers --realigned \
  > $R/memcheck_realigned.txt 2>&1; echo "triton memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|problems" $R/memcheck_realigned.txt | head -8
OUT=$R/sanitize SANITIZE_TIERS=grid_row SANITIZE_TOOLS="racecheck" SANITIZE_TIMEOUT=330 \
  bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS s"
tar xzf $R/sanitize/run.tar.gz -C $R/sanitize && rm $R/sanitize/run.tar.gz
grep -H -E "ERROR SUMMARY|wrong|exit [1-9]" $R/sanitize/sanitizer_*.txt | head -12
