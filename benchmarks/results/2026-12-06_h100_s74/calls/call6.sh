#!/usr/bin/env bash
# call 6: strided_staged's streamed chunks with the partial piece staged first (the whole staging left
# for the writes) against the kernels before (base/: ab_base/kernels, a copy of
# fastsoftmax/backends/cuda/kernels at 8fef547, untracked and not kept), forced
# and alternated behind an L2 flush; the strided tier beside it where "auto" takes that; then the
# streamed-chunk GPU tests and compute-sanitizer's four tools over the new streamed run
# (sanitize.py's strided_staged@11: (1, 4194304, 4) over dim 1, every dtype, both directions)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 60 python3 -m fastsoftmax compile --match '^fs_staged_(softmax|logsoftmax)_(fwd|bwd)_(bf16|f32)_p[0-9]+$' > $R/compile.txt 2>&1
san() {  # san TOOL SECONDS
  timeout $2 compute-sanitizer --tool $1 --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    --tiers strided_staged@11 > $R/san_streamed_$1.txt 2>&1
  echo "strided_staged@11 $1 rc $?: $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' $R/san_streamed_$1.txt | tail -n 1)" >> $R/san_summary.txt
}
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,log,bwd --dtypes bf16,f32 \
  --baseline ab_base/kernels --tiers strided_staged,base/strided_staged,strided \
  --shapes 1x4194304x4,1x3145728x4,1x16777216x8,1x1048576x128,1x2097152x16,4x1048576x8 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-220
san memcheck 200 & san racecheck 200 & san synccheck 200 & san initcheck 200 &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest -q --tb=short -n 4 tests/cuda/test_strided_gpu.py \
  -k "streamed or stepped_inputs_staged or test_shapes" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
wait
cat $R/san_summary.txt
