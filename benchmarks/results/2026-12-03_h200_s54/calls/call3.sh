#!/usr/bin/env bash
# call 3: the GPU tests of the public API (tests/gpu), of the Triton tiles (tests/test_strided_layouts.py
# on the GPU) and of the strided tier's split launches, with this set's rules (two-piece Triton tiles
# where threads hold whole columns; the strided tier's chunk count by the fuller last wave); then two
# segmentation shapes off the layouts regime (19 and 21 classes over odd H x W) kernel by kernel,
# auto against one piece and torch.compile
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n3; mkdir -p $R
trap 'tar czf $OUT/n3.tar.gz -C $OUT n3 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 330 python3 -m pytest tests/gpu tests/test_strided_layouts.py \
  tests/cuda/test_strided_gpu.py -k "not test_strided_gpu or split or stepped or chunk or merge or interleav or flat" \
  -q -n 16 --dist worksteal -p no:cacheprovider -p no:benchmark -W ignore::RuntimeWarning 2>&1 | tail -n 12 > $R/tests.txt
cat $R/tests.txt
timeout 150 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward \
  --cases "(16,19,513,513) d1;(8,21,255,255) d1" --tunings "backend=triton,triton.TWO_PIECE_TILES=none" \
  > $R/segmentation_more.txt 2>&1
grep "a call" $R/segmentation_more.txt
