#!/usr/bin/env bash
# the 16-bit log-softmax backward's partials on the narrow-pack partials-only kernel (8-byte packs,
# 64 x 4 threads, 8 blocks an SM): GPU tests, kernel by kernel against the two-stage kernel's own
# partials in one process, and compute-sanitizer's four tools over the strided tier's problems with
# the partials-only kernels forced (sanitize.py strided@3) and by default
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R/san
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
timeout 100 python3 -m pytest -q -x tests/cuda/test_strided_gpu.py -k "partials or dense_log_backward" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
cd benchmarks
S="tier=strided"
T="$S,strided_partials_kernel=False;$S"
timeout 150 python3 kernel_breakdown.py --log --dtypes bfloat16,float16 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(8192,8192)[::2] d0;(8192,16384) d0;(65536,2048) d0;(1048576,128) d0;expand(1,4096,4096) d1;(32,4096,1024) d1" \
  > $R/narrow_partials_log_backward.txt 2>&1
grep "a call\|Error" $R/narrow_partials_log_backward.txt
cd ..
for tool in memcheck racecheck initcheck synccheck; do
  timeout 75 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided@3 > $R/san/$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/$tool.txt
done
