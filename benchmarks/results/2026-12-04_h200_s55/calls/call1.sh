#!/usr/bin/env bash
# call 1: (1) the Triton kernels torch.compile generates for the segmentation heads it leads (bf16
# backward over 33-48 classes, float32 forward over 21 of small odd H x W) and the configuration its
# autotuning keeps; (2) Triton's 16-bit scalar tiles in the bf16 backward over 21-48 classes under
# other tile shapes (2048 elements over 4 and 8 warps, 8 and 16 warps over 4096, 8192 elements,
# 32-bit offsets), kernel by kernel beside torch.compile; (3) float32 scalar tiles of 32 and 64
# columns and of 16 warps against 128 columns over 8 warps, on the small 21-class forwards
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv > $R/device.txt
python3 -c "import torch, triton, cuda.core; print(torch.__version__, triton.__version__, cuda.core.__version__)" >> $R/device.txt
cat $R/device.txt
cd benchmarks
timeout 120 python3 inductor_kernels.py --dtypes bfloat16 --directions backward --source \
  --cases "(16,40,513,513) d1;(16,33,257,257) d1;(8,48,513,513) d1;(16,21,513,513) d1" > $R/inductor_bf16_backward.txt 2>&1
timeout 60 python3 inductor_kernels.py --dtypes float32 --directions forward --source \
  --cases "(8,21,255,255) d1;(16,21,255,255) d1" > $R/inductor_f32_forward.txt 2>&1
grep -E "kept|size hints|d1 " $R/inductor_*.txt
T=backend=triton
timeout 260 python3 kernel_breakdown.py --dtypes bfloat16 --directions backward \
  --cases "(16,40,513,513) d1;(16,33,257,257) d1;(8,48,513,513) d1;(16,21,513,513) d1" \
  --tunings "$T;$T,triton.SCALAR_TILE_ELEMS=2048,triton.SCALAR_TILE_PER_THREAD={2: 8, 4: 16};$T,triton.SCALAR_TILE_ELEMS=2048,triton.SCALAR_TILE_PER_THREAD={2: 16, 4: 16};$T,triton.SCALAR_TILE_PER_THREAD={2: 16, 4: 16};$T,triton.SCALAR_TILE_PER_THREAD={2: 8, 4: 16};$T,triton.SCALAR_TILE_ELEMS=8192;$T,triton.SCALAR_TILE_BACKWARD_16BIT_OFFSETS_64=False" \
  > $R/classes_backward_tiles.txt 2>&1
grep "a call" $R/classes_backward_tiles.txt
timeout 100 python3 kernel_breakdown.py --dtypes float32 --directions forward \
  --cases "(8,21,255,255) d1;(16,21,255,255) d1;(4,21,513,513) d1" \
  --tunings "$T;$T,triton.SCALAR_TILE_COLUMNS=64;$T,triton.SCALAR_TILE_COLUMNS=32;$T,triton.SCALAR_TILE_PER_THREAD={2: 32, 4: 8};$T,triton.SCALAR_TILE_COLUMNS=64,triton.SCALAR_TILE_PER_THREAD={2: 32, 4: 8}" \
  > $R/f32_forward_tiles.txt 2>&1
grep "a call" $R/f32_forward_tiles.txt
