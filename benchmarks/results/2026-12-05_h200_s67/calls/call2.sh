#!/usr/bin/env bash
# The second device call: every Triton tier under compute-sanitizer's racecheck, initcheck and
# synccheck at 64 elements a thread; the backward's wide tiles at 32 against 64 elements a thread on nine more shapes; the widening probe
# (the one pass's host time a call, for functional.FUSED_WIDENING_MIN_NUMEL).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
DEADLINE=${DEADLINE:-570}
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
for tool in racecheck initcheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize_triton.py --tiers > $R/san_tiers_$tool.txt 2>&1
  echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong results" $R/san_tiers_$tool.txt | tail -n 2
done
# the backward's wide tiles at 32 (as now) against 64 elements a thread on nine more shapes over dim 1
timeout 150 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -c "
import widening_tile_probe as w
from probe_report import Report
w.SWEEP = [(4096, 32), (4096, 64)]
r = Report(); copy = r.gpu_header()
for cases in [[((64, 512, 1024), 1, False), ((128, 64, 4096), 1, False), ((32, 256, 2048), 1, False)],
              [((16, 1024, 256), 1, False), ((512, 32, 1024), 1, False), ((8, 2048, 128), 1, False)],
              [((128, 1024, 1024), 1, False), ((4096, 64, 512), 1, False), ((128, 2048, 512), 1, False)]]:
    w.CASES = cases
    w._sweep(False, copy, r.say, True)
r.write('$R/sweep_backward_more.txt')
" > $R/sweep_backward_more.log 2>&1
echo "backward sweep (more shapes) rc $?"; tail -n 2 $R/sweep_backward_more.log | cut -c1-250
(( SECONDS < DEADLINE - 60 )) && timeout $(( DEADLINE - SECONDS )) python3 benchmarks/widening_probe.py --out $R/widening.txt > $R/widening.log 2>&1
echo "widening rc $?"; tail -n 2 $R/widening.log | cut -c1-300
