#!/usr/bin/env bash
# Run right after call1.sh on the same machine, as run: every
# Triton tier under compute-sanitizer's initcheck and synccheck, the host probe, and the tile probe's
# sweep again (c2/sweep.txt). The widening probe (the one pass's host time a call now, for
# FUSED_WIDENING_MIN_NUMEL) did not fit and has not run.
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
for tool in initcheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize_triton.py --tiers > $R/san_tiers_$tool.txt 2>&1
  echo "$tool rc $?"; grep -E "ERROR SUMMARY|wrong results" $R/san_tiers_$tool.txt | tail -n 2
done
timeout 80 python3 benchmarks/host_probe.py --out $R/host_probe.txt > $R/host_probe.log 2>&1
echo "host rc $?"; tail -n 12 $R/host_probe.log | cut -c1-200
(( SECONDS < 200 )) && timeout $(( 300 - SECONDS )) python3 benchmarks/widening_tile_probe.py --sweep --out $R/sweep.txt > $R/sweep.log 2>&1
echo "sweep rc $?"
