#!/usr/bin/env bash
# call 4: the backward's flat finish over several outer indices of dense tensors (strided.
# STRIDED_FLAT_FINISH_OUTER, new): its GPU tests and the merged-finish tests beside them; kernel by kernel
# against the tiles' finish and auto (Triton's relay on the first two), log-softmax and softmax backward,
# float32 and bf16; compute-sanitizer's memcheck and initcheck over its tuned run (sanitize.py
# strided@6: the flat sweep has no shared memory, so racecheck and synccheck have nothing of it to see)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c4; mkdir -p $R/san
trap 'tar czf $OUT/c4.tar.gz -C $OUT c4 && rm -rf $R' EXIT
timeout 150 python3 -m pytest -q tests/cuda/test_strided_gpu.py \
  -k "outer_indices or merged_finish or flat_finish or stepped_partials" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
cd benchmarks
T="tier=strided,strided_flat_finish=False;tier=strided"
C="(128,16384,32) d1;(64,65536,16) d1;(32,4096,1024) d1"
timeout 150 python3 kernel_breakdown.py --log --dtypes float32,bfloat16 --directions backward --tunings "$T" \
  --cases "$C" > $R/flat_outer_log_backward.txt 2>&1
grep "a call\|Error" $R/flat_outer_log_backward.txt
timeout 90 python3 kernel_breakdown.py --no-compile --dtypes float32,bfloat16 --directions backward --tunings "$T" \
  --cases "$C" > $R/flat_outer_backward.txt 2>&1
grep "a call\|Error" $R/flat_outer_backward.txt
cd ..
for tool in memcheck initcheck; do
  (( SECONDS > 470 )) && { echo "skipped $tool: time"; continue; }
  timeout 60 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided@6 > $R/san/$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/$tool.txt
done
