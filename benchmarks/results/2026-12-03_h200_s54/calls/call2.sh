#!/usr/bin/env bash
# call 2: compute-sanitizer's four tools over the Triton tile kernels (one piece and two, scalar and
# vector loads, rows); the segmentation-head shapes kernel by kernel, auto (two pieces in the scalar
# tiles of whole columns only) against the Triton backend with two pieces in every strided tile and in
# none, beside torch.compile; the strided tier's chunk rule (the fuller last wave, now the default)
# against rounded up, kernel by kernel, on split launches of bf16; the layouts regime's channel class
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n2; mkdir -p $R/san
trap 'tar czf $OUT/n2.tar.gz -C $OUT n2 && rm -rf $R' EXIT
for tool in memcheck racecheck initcheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 --report-api-errors no \
    python3 benchmarks/sanitize_triton.py > $R/san/$tool.txt 2>&1 &
done
wait  # the timings below on an otherwise idle GPU
for tool in memcheck racecheck initcheck synccheck; do echo "$tool: $(tail -n 2 $R/san/$tool.txt | tr '\n' ' ')"; done
timeout 200 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward \
  --cases "(16,21,513,513) d1;(8,150,127,127) d1;(16,21,512,512) d1;(8,150,128,128) d1" \
  --tunings "backend=triton,triton.TWO_PIECE_TILES=all;backend=triton,triton.TWO_PIECE_TILES=none" > $R/segmentation.txt 2>&1
grep "a call" $R/segmentation.txt
timeout 100 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16 --directions forward,backward --no-compile \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1;(32,4096,1024)[..., 1:] d1;offset (32,4096,1024) d1;(8192,8192).t() d1" \
  --tunings "tier=strided;tier=strided,strided_whole_waves=False" > $R/chunk_rule.txt 2>&1
grep "a call" $R/chunk_rule.txt
timeout 130 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16,float32 --classes channel \
  --json $R/layouts_channel.json > $R/layouts_channel.txt 2>&1
sed -n '/^losses:/,$p' $R/layouts_channel.txt
