#!/usr/bin/env bash
# call 1 (the sixty-eighth set's call 6): (1) both backends forced on 16-bit forwards over axes of 36-56 on 16-byte boundaries, wide
# inner sizes, 20-64 MiB (the sixty-eighth set's call 1 found Triton's wide tiles behind over an axis of 40: where does the
# padded tile stop paying?), "auto" beside both, alternated in one process, each output against
# float64 first (benchmarks/backend_preference_probe.py --explicit); (2) kernel
# by kernel, bf16 (16, 21, 513, 513) over dim 1 forward (the layouts regime's one forward loss to
# torch.compile, c2/): the scalar tile as shipped, under register caps (SCALAR_TILE_16BIT_FORWARD_MAXNREG),
# in one piece, and torch.compile; (3) the backward of 2670 x 50257 in bf16 and fp16 (the main run had
# fp16 at 0.858 of copy against bf16's 1.002); (4) kernel by kernel, bf16 (128, 40, 4096) forward: Triton's
# wide tile over 64 rows as planned, the same axis in two pieces (32 + 8, TWO_PIECE_TILES="all"), and the
# CUDA backend; (5) the cluster tier's 16-bit backward of rows of 50-64K columns at 4 CTAs against the 8
# its rule gives there (measured on an H200; this run's 2048 x 65536 bf16 backward was 0.950 against
# Quack's 0.974)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
J="(128,40,4096) d1:bfloat16:fwd;(512,40,1024) d1:float16:fwd;(256,36,2048) d1:bfloat16:fwd"
J="$J;(256,44,2048) d1:bfloat16:fwd;(128,44,4096) d1:float16:fwd;(256,48,2048) d1:bfloat16:fwd"
J="$J;(128,48,4096) d1:bfloat16:fwd;(256,52,2048) d1:bfloat16:fwd;(128,56,4096) d1:bfloat16:fwd"
timeout 90 python3 benchmarks/backend_preference_probe.py --explicit "$J" > $R/short_axes_fill.txt 2>&1
echo "fill rc $?"; grep -v Warn $R/short_axes_fill.txt | tail -n 10 | cut -c1-200
timeout 120 python3 benchmarks/kernel_breakdown.py --cases "(16,21,513,513) d1" --directions forward \
  --tunings "triton.SCALAR_TILE_16BIT_FORWARD_MAXNREG=40;triton.SCALAR_TILE_16BIT_FORWARD_MAXNREG=48;triton.SCALAR_TILE_16BIT_FORWARD_MAXNREG=64;triton.TWO_PIECE_TILES='none'" \
  > $R/breakdown_odd_forward.txt 2>&1
echo "breakdown rc $?"; grep "a call" $R/breakdown_odd_forward.txt | cut -c1-200
timeout 60 python3 benchmarks/backend_preference_probe.py --explicit "2670x50257:bfloat16:bwd;2670x50257:float16:bwd" \
  > $R/vocab_backward.txt 2>&1
echo "vocab rc $?"; grep -v Warn $R/vocab_backward.txt | tail -n 2 | cut -c1-200
timeout 90 python3 benchmarks/kernel_breakdown.py --cases "(128,40,4096) d1" --directions forward --no-compile \
  --tunings "backend=triton;backend=triton,triton.TWO_PIECE_TILES=all;backend=cuda" > $R/breakdown_axis40.txt 2>&1
echo "axis 40 rc $?"; grep "a call" $R/breakdown_axis40.txt | cut -c1-200
timeout 80 python3 benchmarks/grid_row_probe.py --tiers cluster,cluster:cluster_ctas=4,cluster:cluster_ctas=8 \
  --directions bwd --dtypes bf16,f16 --shapes 2048x65536,2670x50257,1024x65536 > $R/ctas_backward.txt 2>&1
echo "ctas rc $?"; tail -n 8 $R/ctas_backward.txt | cut -c1-200
