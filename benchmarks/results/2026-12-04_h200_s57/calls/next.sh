#!/usr/bin/env bash
# prepared for the next set (not run): (1) broadcast walks keep the 16-bit
# partials on the two-stage kernel (strided.separate_partials' rereads, landed after call 8): the kernels
# auto launches for bf16 expand(1, 4096, 4096) over dim 1 and its time against the strided tier with and
# without the partials-only kernel; (2) compute-sanitizer's four tools over the strided tier's default
# problems (the narrow-pack partials now by default for the 16-bit log-softmax backward; call 6 sanitized
# them through the tuned run strided@3); (3) the layouts regime's bf16 log-softmax backward after (1);
# (4) the float32 (128, 16384, 32) log-softmax backward over dim 1 (0.67 of copy against torch.compile's
# 0.71 in c4) under each tier
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n1; mkdir -p $R/san
trap 'tar czf $OUT/n1.tar.gz -C $OUT n1 && rm -rf $R' EXIT
bash benchmarks/results/2026-12-04_h200_s57/calls/call8.sh > $R/expand_kernels.txt 2>&1; cat $R/expand_kernels.txt
cd benchmarks
S="tier=strided"
timeout 60 python3 kernel_breakdown.py --log --no-compile --dtypes bfloat16 --directions backward \
  --tunings "$S;$S,strided_partials_kernel=False;$S,strided_partials_kernel=True" --cases "expand(1,4096,4096) d1" \
  > $R/expand_log_backward_bf16.txt 2>&1
grep "a call\|Error" $R/expand_log_backward_bf16.txt
cd ..
for tool in memcheck initcheck synccheck; do
  timeout 90 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided@0 > $R/san/$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/$tool.txt
done
timeout 130 compute-sanitizer --tool racecheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize.py --tiers strided@0 > $R/san/racecheck.txt 2>&1
echo "racecheck rc $?"; tail -n 2 $R/san/racecheck.txt
timeout 200 python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes bfloat16 \
  --json $R/layouts_log_backward_bfloat16.json > $R/layouts_log_backward_bfloat16.txt 2>&1
sed -n '/^losses:/,$p' $R/layouts_log_backward_bfloat16.txt | grep -v "under the goal"
cd benchmarks
timeout 100 python3 kernel_breakdown.py --log --dtypes float32 --directions backward \
  --tunings "tier=strided;tier=strided_staged;tier=strided_warp;tier=strided,strided_partials_kernel=False" \
  --cases "(128,16384,32) d1;(64,65536,16) d1" > $R/narrow_axis_log_backward_f32.txt 2>&1
grep "a call\|Error" $R/narrow_axis_log_backward_f32.txt
