#!/usr/bin/env bash
# call 4: the log-softmax backwards torch.compile leads (call 3), kernel by kernel: auto against each
# CUDA strided tier forced and the Triton backend, beside torch.compile; bf16, and float32 on the two
# small-inner shapes it leads by most
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
cd benchmarks
V="tier=strided;tier=strided_staged;tier=strided_warp;backend=triton"
timeout 250 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --tunings "$V" \
  --cases "(8192,16384) d0;(64,65536,16) d1;(128,16384,32) d1;(16,1048576,2) d1;(8192,8192).t() d1;expand(1,4096,4096) d1" \
  > $R/log_backward_bf16.txt 2>&1
grep "a call\|Error" $R/log_backward_bf16.txt
timeout 60 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward \
  --tunings "backend=triton,triton.SCALAR_TILE_OFFSETS_64_MAX_N=0;backend=triton,triton.TWO_PIECE_TILES=none;backend=cuda" \
  --cases "(16,21,513,513) d1" > $R/log_backward_bf16_odd.txt 2>&1
grep "a call\|Error" $R/log_backward_bf16_odd.txt
timeout 100 python3 kernel_breakdown.py --log --dtypes float32 --directions backward --tunings "$V" \
  --cases "(64,65536,16) d1;(128,16384,32) d1" > $R/log_backward_f32.txt 2>&1
grep "a call\|Error" $R/log_backward_f32.txt
