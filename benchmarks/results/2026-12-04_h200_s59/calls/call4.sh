#!/usr/bin/env bash
# The 16-bit log-softmax backward's partials kernel of packs of its own (the spans of a stepped dy; the
# narrow packs of a dense one) holds other resident blocks than the two-stage kernel whose waves its
# splits fill: call 3's Nsight Compute put the spans' kernel of (8192, 8192)[:, ::2] over dim 0 at 40
# registers, six blocks an SM, 2560 blocks (3.23 waves), against Inductor's reduction at full
# occupancy in one wave. Timed kernel by kernel in one process: the splits filling the waves of each
# kernel that walks the split grid (strided_fill_partials), the spans' kernel compiled for eight blocks
# an SM (strided_spans_blocks=8, 32 registers, no frame under NVRTC 13.5), both; then chunk counts
# forced around the rule's. The new paths' GPU tests first, compute-sanitizer over them (strided@8) last.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R/san
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
timeout 100 python3 -m fastsoftmax compile --match '^fs_(strided|staged)_|_columns$' > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
timeout 90 python3 -m pytest -q tests/cuda/test_strided_gpu.py -k "fill_the_partials or stepped_partials_spans" \
  > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
cd benchmarks
S="tier=strided"
T="$S;$S,strided_fill_partials=True;$S,strided_spans_blocks=8;$S,strided_fill_partials=True,strided_spans_blocks=8"
timeout 150 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --tunings "$T" \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1;(65536,2048) d0;(1048576,128) d0;(8192,16384) d0;(8192,8192)[::2] d0" \
  > $R/fill_partials_bf16.txt 2>&1
grep "a call\|Error" $R/fill_partials_bf16.txt
B="$S,strided_spans_blocks=8"
timeout 60 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --no-compile \
  --tunings "$S,strided_splits=20;$B,strided_splits=20;$B,strided_splits=30;$S,strided_splits=36;$B,strided_splits=36;$B,strided_splits=40" \
  --cases "(8192,8192)[:, ::2] d0" > $R/splits_spans_bf16.txt 2>&1
grep "a call\|Error" $R/splits_spans_bf16.txt
timeout 60 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --no-compile \
  --tunings "$S,strided_splits=99;$S,strided_splits=132;$S,strided_splits=198;$S,strided_splits=264" \
  --cases "(65536,2048) d0" > $R/splits_narrow_bf16.txt 2>&1
grep "a call\|Error" $R/splits_narrow_bf16.txt
cd ..
run_tool() {  # tool part seconds
  (( SECONDS + $3 > 560 )) && { echo "skipped $1 $2: time"; return; }
  timeout $3 compute-sanitizer --tool $1 --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers $2 --verbose > $R/san/$1_${2/@/_}.txt 2>&1
  echo "$1 $2 rc $?"; tail -n 1 $R/san/$1_${2/@/_}.txt
}
run_tool memcheck strided@8 50
run_tool synccheck strided@8 50
run_tool initcheck strided@8 50
run_tool racecheck strided@8 120
