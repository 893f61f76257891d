#!/usr/bin/env bash
# prepared for the next set (not run): the 16-bit log-softmax backward's
# partials over a dy that steps by 2 along inner, on partials-only kernels reading its spans in packs
# of 2, 4 and 8 (the tuning strided_stepped_partials, new, off): its GPU test; kernel by kernel against
# the element-by-element partials (bf16 (8192, 8192)[:, ::2] over dim 0: 52-55 us for 134 MB of spans
# in c4/, the finish 4.0 TB/s; torch.compile ahead by 0.05 of copy in c7/); compute-sanitizer's four
# tools over its tuned runs (sanitize.py strided@4: packs of 2, strided@5: packs of 8)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n2; mkdir -p $R/san
trap 'tar czf $OUT/n2.tar.gz -C $OUT n2 && rm -rf $R' EXIT
timeout 120 python3 -m pytest -q -x tests/cuda/test_strided_gpu.py -k "stepped_partials" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
cd benchmarks
S="tier=strided"
T="$S;$S,strided_stepped_partials=2;$S,strided_stepped_partials=4;$S,strided_stepped_partials=8"
timeout 150 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --tunings "$T" \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1;(2048,128,2048)[..., ::2] d1" \
  > $R/stepped_partials_bf16.txt 2>&1
grep "a call\|Error" $R/stepped_partials_bf16.txt
cd ..
for part in 4 5; do
  for tool in memcheck racecheck initcheck synccheck; do
    timeout 80 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
      python3 benchmarks/sanitize.py --tiers strided@$part > $R/san/${tool}_$part.txt 2>&1
    echo "strided@$part $tool rc $?"; tail -n 2 $R/san/${tool}_$part.txt
  done
done
