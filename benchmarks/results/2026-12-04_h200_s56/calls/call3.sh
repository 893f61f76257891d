#!/usr/bin/env bash
# call 3, kernel by kernel (GPU time a call): (1) the decode shapes Quack leads on, under the cluster
# tier (auto) and under cluster_stream forced (its CTAs hold part of each slice in shared memory, so
# that a launch of float32 32 x 151936 fits one wave) at each cluster size and two CTAs an SM; (2) the
# float32 forward over few classes of odd H x W (rows at several 16-byte phases): auto (strided_warp's
# spread columns) against Triton's scalar tiles with and without a register cap of 40, over sizes that
# bound where the spread columns lead
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
cd benchmarks
S="tier=cluster_stream"
T="$S;$S,cluster_ctas=4;$S,cluster_ctas=8;$S,cluster_ctas=16;$S,cluster_stream_per_sm=2;$S,cluster_ctas=8,cluster_stream_per_sm=2"
timeout 150 python3 kernel_breakdown.py --no-compile --dtypes float32 --directions forward --tunings "$T" \
  --cases "(32,151936) d1;(8,128256) d1;(128,128256) d1" > $R/decode_f32.txt 2>&1
grep "a call\|Error" $R/decode_f32.txt
timeout 150 python3 kernel_breakdown.py --no-compile --dtypes bfloat16 --directions forward --tunings "$T" \
  --cases "(8,128256) d1;(32,151936) d1;(128,128256) d1" > $R/decode_bf16.txt 2>&1
grep "a call\|Error" $R/decode_bf16.txt
C="backend=triton,triton.SCALAR_TILE_F32_FORWARD_MAXNREG=40"
timeout 200 python3 kernel_breakdown.py --dtypes float32 --directions forward --tunings "backend=triton;$C" \
  --cases "(2,21,513,513) d1;(8,21,513,513) d1;(32,21,255,255) d1;(64,21,127,127) d1;(8,19,255,255) d1;(8,32,255,255) d1;(8,48,255,255) d1;(8,64,127,127) d1;(4,96,255,255) d1" > $R/f32_forward_cap.txt 2>&1
grep "a call\|Error" $R/f32_forward_cap.txt
