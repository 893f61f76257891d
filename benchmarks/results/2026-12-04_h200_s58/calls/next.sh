#!/usr/bin/env bash
# prepared for the next set (not run): (1) the strided tier's GPU tests
# whole (calls 2-3 ran 56% and 84% of them before their 200 s ran out compiling), the new wide-tile test
# among them; (2) tiles of more threads across than a warp (the tuning strided_max_width, new, off) on
# the bf16 log-softmax backward, kernel by kernel against the warp-wide tiles: the stepped spans'
# partials of (8192, 8192)[:, ::2] over dim 0 read 134 MB in 47.4 us where Inductor's reduction takes
# 35.7 (c1/), its tile 128 bytes of span a row; (3) compute-sanitizer's memcheck and racecheck over the
# wide tiles' tuned run (sanitize.py strided@7). Nsight Compute over those partials is next2.sh's.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n1; mkdir -p $R/san
trap 'tar czf $OUT/n1.tar.gz -C $OUT n1 && rm -rf $R' EXIT
# the strided test file's kernel families compiled first on every CPU (one at a time, the tests spent
# most of calls 2-3's 200 s compiling)
timeout 150 python3 -m fastsoftmax compile --match '^fs_(strided|staged)_|_columns$' > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
timeout 240 python3 -m pytest -q tests/cuda/test_strided_gpu.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
cd benchmarks
S="tier=strided"
T="$S;$S,strided_max_width=64;$S,strided_max_width=128;$S,strided_max_width=256"
timeout 150 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --tunings "$T" \
  --cases "(8192,8192)[:, ::2] d0;(65536,2048) d0;(8192,8192)[::2] d0;(32,4096,2048)[..., ::2] d1" \
  > $R/wide_tiles_log_backward_bf16.txt 2>&1
grep "a call\|Error" $R/wide_tiles_log_backward_bf16.txt
cd ..
for tool in memcheck racecheck; do
  (( SECONDS > 520 )) && { echo "skipped $tool: time"; continue; }
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided@7 > $R/san/$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/$tool.txt
done
