#!/usr/bin/env bash
# grid_row forced on 64-256 rows of 2^19-2^20 (its grid in teams, a row a team and round) against
# cluster_stream, which "auto" gives them (128 x 2^20 backward 0.72-0.79 of copy in the main run; 192 x
# 699051 for the main suite's 191 x 699051 at 0.82, which no count of teams divides); float32 rows of
# 8-96 (16-byte pitches) on the warp tier against flat_rows, both directions (rows of 36 forward: warp
# 0.919 of copy against flat_rows' 0.996 in c3/slower.txt); Triton's row kernels with 32- and 64-bit
# offsets over row lengths of 3-16384 (a1/: the backward of rows of 36-100 faster with 64-bit offsets,
# their forward slower, the bf16 forward of rows of 999 faster; the backward of rows of up to 1024 now
# takes 64-bit ones, triton_offsets_probe.py's "triton32" the 32-bit ones). First both backends on more than 2^31
# rows (2^31 + 3 rows of 2, bf16: the row index itself past 32 bits). About 420 s.
source benchmarks/call_prelude.sh a3
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/gpu/test_concurrency.py -k "more_than_2_to_the_31 and shape2" \
  > $R/rows31.txt 2>&1; echo "rows past 2^31 rc $? at $SECONDS s"; tail -3 $R/rows31.txt
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/teams --directions fwd,bwd --dtypes bf16,f32 \
  --tiers cluster_stream,grid_row --shapes 128x1048576,64x1048576,256x524288,192x699051 > $R/teams.txt 2>&1
echo "teams rc $? at $SECONDS s"; grep -E "^(bf16|f32) " $R/teams.txt | sort -u | cut -c1-160; grep -m3 -i "error\|refuse" $R/teams.txt
S=""; for n in 8 12 16 20 24 28 32 36 40 44 48 52 56 60 64 72 80 96; do S="$S,$((67108864 / n))x$n"; done
timeout 90 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/f32rows --directions fwd,bwd --dtypes f32 \
  --tiers warp,flat_rows --shapes ${S#,} > $R/f32rows.txt 2>&1
echo "f32rows rc $? at $SECONDS s"; grep -E "^f32 " $R/f32rows.txt | sort -u | cut -c1-140
T=""; for n in 3 8 16 127 200 256 500 999 1024 1025 2000 4096 16384; do T="$T,$((67108864 / n))x$n"; done
timeout 150 python3 benchmarks/triton_offsets_probe.py --rounds 2 --shapes ${T#,} > $R/offsets.txt 2>&1
echo "offsets rc $? at $SECONDS s"; cut -c1-160 $R/offsets.txt
