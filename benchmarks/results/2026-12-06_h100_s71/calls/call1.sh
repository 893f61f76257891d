#!/usr/bin/env bash
# call 1 (carries .peer1, the first of six parts of the peers' archives, kept in /tmp for the main
# run): strided_staged's tiles of wider rows (Tuning.staged_tile_cols: two and four 128-byte lines
# of each row against one) on the non-last-dim shapes under their goal, forced tier alternated in
# one process behind an L2 flush, forward and backward; the same at one CTA an SM and at three
# on (1, 8192, 16384); block_regs' settings on bf16 rows of 3000 and the warp tier against
# block_regs on rows of 1000 (where Quack led by 0.007-0.019); then the wider tiles' GPU tests.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
cp .peer1/ppart.aa /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
P="python3 benchmarks/grid_row_probe.py --quick --flush"
T=strided_staged
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 100 python3 -m pytest -q --tb=short -n 4 \
  tests/cuda/test_strided_gpu.py -k "wider_tiles or stagger or cluster_teams" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"
timeout 90 $P --out $R/bf16 --directions fwd,bwd --dtypes bf16 \
  --tiers $T,$T:staged_tile_cols=128,$T:staged_tile_cols=256 \
  --shapes 1x8192x16384,32x4096x1024,1x65536x2048 > $R/tiles_bf16.txt 2>&1
sed -n '/==== summary/,$p' $R/tiles_bf16.txt | cut -c1-230
timeout 90 $P --out $R/f32 --directions fwd,bwd --dtypes f32 \
  --tiers $T,$T:staged_tile_cols=64,$T:staged_tile_cols=128 \
  --shapes 1x8192x16384,32x4096x1024,1x65536x2048 > $R/tiles_f32.txt 2>&1
sed -n '/==== summary/,$p' $R/tiles_f32.txt | cut -c1-230
timeout 50 $P --out $R/teams --directions fwd,bwd --dtypes bf16 \
  --tiers $T,$T:staged_ctas_per_sm=1,$T:staged_ctas_per_sm=1:staged_tile_cols=128,$T:staged_ctas_per_sm=3 \
  --shapes 1x8192x16384 > $R/teams.txt 2>&1
sed -n '/==== summary/,$p' $R/teams.txt | cut -c1-230
timeout 45 $P --out $R/rows --directions fwd --dtypes bf16 \
  --tiers "block_regs,block_regs:block_regs_elems=16,block_regs:block_regs_elems=64,block_regs:short_row_storage_16bit='staged',warp" \
  --shapes 44739x3000,134217x1000 > $R/rows.txt 2>&1
sed -n '/==== summary/,$p' $R/rows.txt | cut -c1-230
wait
ls -la /tmp/ppart.aa > $R/kept.txt 2>&1
