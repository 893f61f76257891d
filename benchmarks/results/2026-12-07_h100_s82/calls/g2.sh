#!/usr/bin/env bash
# The eighty-second set's tier changes on the GPU: the backward of up to 256 long rows in grid_row's teams
# (and rows no count of teams divides, 191 and 17, with some teams idle in the last round), first their
# GPU tests, then grid_row's kernels under memcheck, racecheck and synccheck (sanitize.py's grid_row parts:
# 17 rows of 2^20 + 3 in uneven teams among them), then grid_row forced against cluster_stream on rows no
# count of teams divides (191 x 699051, 17 x 2^20, 31 x 699051; the 16-bit forward of 17 rows takes 17
# teams), both directions, alternated behind an L2 flush. About 420 s on an H100.
source benchmarks/call_prelude.sh g2
timeout 200 python3 -m pytest -q -p no:cacheprovider tests/cuda/test_grid_row_gpu.py tests/cuda/test_cluster_stream_gpu.py \
  -k "teams or automatically" > $R/tests.txt 2>&1; echo "tests rc $? at $SECONDS s"; tail -3 $R/tests.txt
OUT=$R/sanitize SANITIZE_TIERS=grid_row SANITIZE_TOOLS="memcheck racecheck synccheck" SANITIZE_TIMEOUT=150 \
  bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1; echo "sanitize rc $? at $SECONDS s"
tar xzf $R/sanitize/run.tar.gz -C $R/sanitize && rm $R/sanitize/run.tar.gz
grep -H -E "ERROR SUMMARY|wrong|exit [1-9]" $R/sanitize/sanitizer_*.txt | head -12
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/teams --directions fwd,bwd --dtypes bf16,f32 \
  --tiers cluster_stream,grid_row --shapes 191x699051,17x1048576,31x699051 > $R/teams.txt 2>&1
echo "teams rc $? at $SECONDS s"; grep -E "^(bf16|f32) " $R/teams.txt | sort -u | cut -c1-160
