#!/usr/bin/env bash
# prepared for the next set (not run): the forward of grid_row and cluster_stream with another number of
# their shared-memory slots' copy groups in flight before the first is reduced (the tuning
# grid_row_groups_ahead, new; the kernels' own: grid_row 1, one by one; cluster_stream all 4 first), and
# with the last of them issued only once the register slots' loads are (grid_row_groups_late, new), so
# that it is in flight while the registers are reduced (c2/'s phases: 5.4-7.4 us).
# Why: c2/'s phases of bf16 1 x 2^24 put the shared groups' reduction at 7.4-14.6 us where the floor
# kernel's data has landed by 10.7; one group of about 39 KB an SM in flight at a time leaves the
# SM's share of DRAM bandwidth short of what its latency needs, and the forty-fourth set's all-at-once
# (ahead 4) lost because the loads then take the whole issue phase before any reduction starts.
# (1) GPU tests of the new forms; (2) the phases at 1, 2, 3 ahead, 1 and 2 with the last late; (3)
# kernel by kernel in one process, huge rows (grid_row) and long rows (cluster_stream); (4)
# compute-sanitizer over both.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n2; mkdir -p $R/san
trap 'tar czf $OUT/n2.tar.gz -C $OUT n2 && rm -rf $R' EXIT
timeout 90 python3 -m pytest -q tests/cuda/test_grid_row_gpu.py tests/cuda/test_cluster_stream_gpu.py -k ahead \
  > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
timeout 100 python3 benchmarks/grid_row_phases.py --shapes 1x16777216 --dtypes bf16,f32 --ahead 0,1L,2,2L,3 \
  > $R/phases.txt 2>&1
echo "phases rc $?"; grep "grid_row\|shared groups\|write" $R/phases.txt
cd benchmarks
G="tier=grid_row"
L=grid_row_groups_late=True
timeout 130 python3 kernel_breakdown.py --dtypes bfloat16,float32 --directions forward --no-compile \
  --tunings "$G;$G,grid_row_groups_ahead=2;$G,grid_row_groups_ahead=2,$L;$G,$L;$G,grid_row_groups_ahead=3;$G" \
  --cases "(1,16777216) d1;(1,16777223) d1;(1,67108864) d1;(4,4194304) d1" > $R/grid_row_ahead.txt 2>&1
grep "a call\|Error" $R/grid_row_ahead.txt
C="tier=cluster_stream"
timeout 120 python3 kernel_breakdown.py --dtypes bfloat16,float32 --directions forward --no-compile \
  --tunings "$C;$C,grid_row_groups_ahead=1;$C,grid_row_groups_ahead=2;$C,grid_row_groups_ahead=2,$L;$C,$L" \
  --cases "(128,1048576) d1;(191,699051) d1;(256,524288) d1" > $R/cluster_stream_ahead.txt 2>&1
grep "a call\|Error" $R/cluster_stream_ahead.txt
cd ..
for part in grid_row@1 grid_row@2 cluster_stream@6; do
  for tool in memcheck racecheck synccheck initcheck; do
    (( SECONDS > 540 )) && { echo "skipped $tool $part: time"; continue; }
    timeout 40 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
      python3 benchmarks/sanitize.py --tiers $part --dtypes bfloat16 > $R/san/${tool}_${part/@/_}.txt 2>&1
    echo "$tool $part rc $?"; tail -n 1 $R/san/${tool}_${part/@/_}.txt
  done
done
