#!/usr/bin/env bash
# call 2: compute-sanitizer's four tools over the Triton tile kernels (one piece and two, scalar and
# vector loads, rows); the segmentation-head shapes kernel by kernel against torch.compile as shipped
# after call 1 (bf16 and float32, forward and backward)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n2; mkdir -p $R/san
trap 'tar czf $OUT/n2.tar.gz -C $OUT n2 && rm -rf $R' EXIT
for tool in memcheck racecheck initcheck synccheck; do
  timeout 240 compute-sanitizer --tool $tool --error-exitcode 9 --report-api-errors no \
    python3 benchmarks/sanitize_triton.py > $R/san/$tool.txt 2>&1 &
done
wait  # the timings below on an otherwise idle GPU
for tool in memcheck racecheck initcheck synccheck; do echo "$tool: $(tail -n 2 $R/san/$tool.txt | tr '\n' ' ')"; done
timeout 300 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward \
  --cases "(16,21,513,513) d1;(8,150,127,127) d1;(16,21,512,512) d1;(8,150,128,128) d1" > $R/segmentation.txt 2>&1
grep "a call" $R/segmentation.txt
