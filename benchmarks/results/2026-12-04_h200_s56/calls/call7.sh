#!/usr/bin/env bash
# call 7: the GPU tests of the set's changes (the strided tier's deep partials, Triton's capped
# float32 scalar tiles and the few-class rule), compute-sanitizer's memcheck and initcheck over the
# strided tier (its problems, the tuned runs: the deep walk forced), and the float32 forward over few
# classes through auto, kernel by kernel
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R/san
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest tests/test_strided_layouts.py tests/cuda/test_strided_gpu.py \
  -k "deep or split or flat or long_axes or test_shapes or spread or triton or tile" -q -n 8 -p no:cacheprovider \
  -W ignore::RuntimeWarning 2>&1 | tail -n 5 > $R/tests.txt
cat $R/tests.txt
for tool in memcheck initcheck; do
  timeout 110 compute-sanitizer --tool $tool --print-limit 20 python3 benchmarks/sanitize.py --tiers strided > $R/san/$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/$tool.txt
done
cd benchmarks
timeout 100 python3 kernel_breakdown.py --dtypes float32 --directions forward \
  --cases "(8,21,255,255) d1;(16,21,255,255) d1;(4,21,513,513) d1;(16,21,513,513) d1;(8,19,255,255) d1" > $R/f32_forward_auto.txt 2>&1
grep "a call\|Error" $R/f32_forward_auto.txt
