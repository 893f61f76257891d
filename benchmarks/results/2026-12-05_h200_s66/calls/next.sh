#!/usr/bin/env bash
# Not yet run: what this set's runs did not reach. (1) The backward's wide tiles: 32 elements a
# thread (as now) against 64 and others, the channel heads' bf16, one-pass (float32 y and dy to a bf16
# gradient) and float32 backwards, softmax and log-softmax; (2) both backends and torch.compile on the
# shapes whose Triton forward the forward's 64 a thread sped up, to tell whether "auto" (the CUDA
# kernels on most 16-bit strided problems) should take Triton's tiles there; (3) the widening probe
# (the one pass's host time a call since the plans: FUSED_WIDENING_MIN_NUMEL).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n; mkdir -p $R
trap 'tar czf $OUT/n.tar.gz -C $OUT n && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 120 python3 benchmarks/widening_tile_probe.py --sweep --backward --out $R/sweep_backward.txt > $R/sweep_backward.log 2>&1
echo "backward sweep rc $?"; tail -n 3 $R/sweep_backward.log | cut -c1-250
timeout 120 python3 benchmarks/widening_tile_probe.py --sweep --backward --log --out $R/sweep_backward_log.txt > $R/sweep_backward_log.log 2>&1
echo "log backward sweep rc $?"
timeout 150 python3 benchmarks/triton_tile_probe.py --cases "4096,64,512:1;512,32,1024:1;128,64,4096:1;16,21,512,512:1" \
  --dtypes bfloat16,float32 --blocks 64,128 --warps 2,4 > $R/tile_probe.txt 2>&1
echo "tile probe rc $?"; tail -n 4 $R/tile_probe.txt | cut -c1-250
timeout 170 python3 benchmarks/widening_probe.py --out $R/widening.txt > $R/widening.log 2>&1
echo "widening rc $?"; tail -n 2 $R/widening.log | cut -c1-300
