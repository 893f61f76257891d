#!/usr/bin/env bash
# call 5: the float32 log-softmax backward over long narrow blocks through auto after the dispatcher's
# rule (strided.flat_outer_log_backward: the CUDA strided tier and its flat finish over outer indices,
# rather than Triton's relay), kernel by kernel beside torch.compile; the stepped-span GPU test after
# its expectation was mended; the layouts regime's float32 log-softmax backward as time allows
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c5; mkdir -p $R
trap 'tar czf $OUT/c5.tar.gz -C $OUT c5 && rm -rf $R' EXIT
timeout 90 python3 -m pytest -q tests/cuda/test_strided_gpu.py -k "stepped_partials_spans" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 2 $R/gpu_tests.txt
cd benchmarks
timeout 100 python3 kernel_breakdown.py --log --dtypes float32 --directions backward \
  --cases "(128,16384,32) d1;(64,65536,16) d1;(32,65536,16) d1" > $R/auto_log_backward_f32.txt 2>&1
grep "a call\|Error" $R/auto_log_backward_f32.txt
cd ..
left=$(( 330 - SECONDS ))
(( left < 60 )) && { echo "no time for the layouts"; exit 0; }
timeout $left python3 -m fastsoftmax.benchmark.layouts --log-only --backward-only --dtypes float32 \
  --json $R/layouts_log_backward_float32.json > $R/layouts_log_backward_float32.txt 2>&1
echo "layouts rc $?"; sed -n '/^losses:/,$p' $R/layouts_log_backward_float32.txt | grep -v "under the goal"
