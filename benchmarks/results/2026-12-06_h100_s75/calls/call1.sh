#!/usr/bin/env bash
# call 1: the last set's prepared call 8 (small inner sizes over long axes: strided_staged, which "auto"
# gives them, against the strided tier, forced and alternated behind an L2 flush; the error tests and
# the streamed-chunk tests on the GPU), then compute-sanitizer over strided_staged's problems and tuned
# runs (sanitize.py's parts @0-@10 and its window, stepped and folded runs) under memcheck, racecheck
# and synccheck: the streamed chunks' change moved the SASS of every strided_staged instance and only
# @11 has run under the sanitizer since. Racecheck takes each part a dtype at a time, 14 processes at once,
# each cut at a shared deadline
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 90 python3 -m fastsoftmax compile --match '^fs_(staged|strided|cluster_stream)|_columns$' > $R/compile.txt 2>&1
echo "compile rc $?: $(tail -n 1 $R/compile.txt)"
timeout 110 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,bwd --dtypes bf16,f32 \
  --tiers strided_staged,strided \
  --shapes 16x1048576x2,8x1048576x4,4x1048576x8,2x2097152x4,32x262144x4,16x262144x8,64x65536x16,128x65536x8 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-200
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest -q --tb=short -n 2 tests/test_errors.py \
  tests/cuda/test_strided_gpu.py -k "errors or subclass or streamed" > $R/tests.txt 2>&1 &
export DEADLINE=$(( $(date +%s) + 330 )) R
parts="strided_staged@0 strided_staged@1 strided_staged@2 strided_staged@3 strided_staged@4 strided_staged@5"
parts="$parts strided_staged@6 strided_staged@7 strided_staged@8 strided_staged@9 strided_staged@10"
parts="$parts strided_window strided_stepped strided_folded"
{
  for p in $parts; do for d in float32 float16 bfloat16; do echo "racecheck $p $d"; done; done
  for p in $parts; do echo "memcheck $p -"; echo "synccheck $p -"; done
} | xargs -P 14 -L 1 bash -c '
  left=$(( DEADLINE - $(date +%s) )); (( left > 10 )) || { echo "$0 $1 $2 not started" >> $R/san_summary.txt; exit 0; }
  args=(--tiers $1); [[ $2 == - ]] || args+=(--dtypes $2)
  f=$R/san_$0_${1//@/_}_$2.txt
  timeout $left compute-sanitizer --tool $0 --report-api-errors no --print-limit 20 python3 benchmarks/sanitize.py \
    "${args[@]}" > $f 2>&1
  echo "$0 $1 $2 rc $?: $(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" $f | tail -n 1)" >> $R/san_summary.txt'
wait
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
sort $R/san_summary.txt
