#!/usr/bin/env bash
# call 4, after the rules' changes (the 16-bit backward of rows of 49153-65536 at 4 CTAs off GPUs of
# much DRAM bandwidth an SM; the 16-bit scalar tiles' forward in one piece there unless the second
# would be at most an eighth of the first): (1) the GPU tests
# of both rules; (2) compute-sanitizer over the cluster backward at its new size; (3) the cluster size
# forced against the rule on decode rows, each call on its own tensor set (grid_row_probe gave every
# tier of an iteration the same set: the tiers after the first read inputs L2 still held, call 3)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
timeout 120 python3 -m pytest -q tests/gpu/test_triton_gpu.py tests/cuda/test_cuda_gpu.py \
  -k "the_gpus_class or short_16_bit or (rows_backward and cluster and 6553) or cluster_backward_rows_with_partial" \
  -p no:cacheprovider > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 4 $R/gpu_tests.txt
for tool in memcheck synccheck; do
  (( SECONDS > 200 )) && { echo "$tool skipped"; continue; }
  timeout $(( 230 - SECONDS < 60 ? 230 - SECONDS : 60 )) compute-sanitizer --tool $tool --error-exitcode 9 \
    --report-api-errors no python3 benchmarks/sanitize.py --tiers cluster@0 --shapes 12x65536,9x50257 \
    --dtypes float16,bfloat16 > $R/sanitizer_$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/sanitizer_$tool.txt
done
(( SECONDS < 235 )) && timeout $(( 275 - SECONDS )) python3 benchmarks/grid_row_probe.py \
  --tiers cluster,cluster:cluster_ctas=8,cluster:cluster_ctas=16 --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 1x128256,8x128256,32x151936,128x128256 > $R/ctas_decode_rotated.txt 2>&1
echo "decode rc $?"; sed -n '/summary/,$p' $R/ctas_decode_rotated.txt | cut -c1-200
