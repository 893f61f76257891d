#!/usr/bin/env bash
# grid_row and cluster_stream asking L2 for their rows ahead of their loads (grid_row_tier.cuh's
# PREFETCH, the tuning grid_row_prefetch, new; bulk prefetches of the TMA unit): 1 the CTA's slots of a
# row past its registers as the row starts, 2 its slice of the next row once a row's reads are issued,
# 3 both. Why: c1/'s phases put float32 1 x 2^24's streamed statistics at 11 us for 179 KB an SM (half
# the SM's share of DRAM bandwidth: 4 slots of 16 bytes in flight a thread), and the copy groups ahead
# (c1/) did not move the bf16 shared groups' end (14.6 us, where the floor's data lands by 10.7).
# (0) the prefetch forms compiled on every CPU; (1) their GPU tests; (2) phases; (3) kernel by kernel
# in one process, both tiers, both directions; (4) compute-sanitizer over them.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R/san
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
timeout 120 python3 - > $R/compile.txt 2>&1 <<'PY'
import multiprocessing, time, torch
from concurrent.futures import ProcessPoolExecutor
from fastsoftmax.backends.cuda.instances import grid_row_instance
from fastsoftmax.backends.cuda.precompile import _compile_one
forms = [(t, s) for t, s in (("grid_row", 1), ("cluster_stream", 1), ("cluster_stream", 2))]
jobs = [("sm_90", grid_row_instance(d, b, l, t, s, prefetch=p)) for t, s in forms
        for d in (torch.float32, torch.float16, torch.bfloat16) for b in (False, True) for l in (False, True)
        for p in (0, 1, 2, 3)]
start = time.time()
with ProcessPoolExecutor(mp_context=multiprocessing.get_context("spawn")) as pool:
    errors = [e for e in pool.map(_compile_one, jobs) if e]
print(f"{len(jobs)} instances in {time.time() - start:.0f} s; errors: {errors}")
PY
echo "compile rc $?"; tail -n 1 $R/compile.txt
timeout -s INT 150 python3 -m pytest -q --tb=short tests/cuda/test_grid_row_gpu.py tests/cuda/test_cluster_stream_gpu.py -k prefetch \
  > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
timeout 60 python3 benchmarks/grid_row_phases.py --shapes 1x16777216 --dtypes bf16,f32 --prefetch 0,1 \
  > $R/phases.txt 2>&1
echo "phases rc $?"; grep "grid_row\|stream rest\|shared groups\|write" $R/phases.txt
cd benchmarks
G="tier=grid_row"; P=grid_row_prefetch
timeout 170 python3 kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward --no-compile \
  --tunings "$G;$G,$P=1;$G,$P=3;$G" \
  --cases "(1,16777216) d1;(1,67108864) d1;(4,4194304) d1" > $R/grid_row_prefetch.txt 2>&1
grep "a call\|Error" $R/grid_row_prefetch.txt
C="tier=cluster_stream"
timeout 170 python3 kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward --no-compile \
  --tunings "$C;$C,$P=1;$C,$P=3;$C,$P=2" \
  --cases "(128,1048576) d1;(191,699051) d1;(256,524288) d1" > $R/cluster_stream_prefetch.txt 2>&1
grep "a call\|Error" $R/cluster_stream_prefetch.txt
cd ..
for part in grid_row@1 grid_row@2 cluster_stream@6; do
  for tool in memcheck synccheck initcheck racecheck; do
    (( SECONDS > 560 )) && { echo "skipped $tool $part: time"; continue; }
    timeout 45 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
      python3 benchmarks/sanitize.py --tiers $part --dtypes bfloat16 > $R/san/${tool}_${part/@/_}.txt 2>&1
    echo "$tool $part rc $?"; tail -n 1 $R/san/${tool}_${part/@/_}.txt
  done
done
