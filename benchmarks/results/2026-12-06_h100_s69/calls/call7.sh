#!/usr/bin/env bash
# call 7 (right after call 6, as one command line): the channel heads of 21 classes' bf16 backward
# kernel by kernel: "auto" (Triton's scalar tile in two pieces), the CUDA backend, one piece, and a
# register cap of 64 for the softmax backward too
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1; mkdir -p $OUT/c7; timeout 100 python3 benchmarks/kernel_breakdown.py --directions backward --cases "(16,21,513,513) d1;(8,21,255,255) d1" --tunings "backend=cuda;triton.TWO_PIECE_TILES='none';triton.SCALAR_TILE_BACKWARD_MAXNREG={'log_softmax': 64, 'softmax': 64}" > $OUT/c7/backward_odd.txt 2>&1; echo "rc $?"; grep -E "a call|Error|error" $OUT/c7/backward_odd.txt | cut -c1-180
