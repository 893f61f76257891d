#!/usr/bin/env bash
# call 3 (carries .peer3, right after call 2): the layouts regime's view class in bf16 (never run on
# the H100), forward and backward, beside torch.softmax and torch.compile; then, beside each other,
# the GPU tests of tests/gpu and compute-sanitizer's initcheck over the cluster tier's problems
# (the 16-bit backward's 4-CTA launches of rows of 49153-65536 among them)
set -u
DEADLINE=${DEADLINE:-250}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
[[ -f /tmp/ppart.aa && -f /tmp/ppart.ab ]] || echo "cold: calls 1-2's files are gone" > $R/cold.txt
cp .peer3/ppart.ac /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 130 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes view \
  --json $R/layouts_view_bf16.json > $R/layouts_view_bf16.txt 2>&1
echo "view rc $?"; sed -n '/^losses:/,$p' $R/layouts_view_bf16.txt | head -n 12
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout $(( DEADLINE - SECONDS )) python3 -m pytest -q --tb=short -n 4 tests/gpu \
  > $R/gpu_tests.txt 2>&1 &
timeout $(( DEADLINE - SECONDS - 5 )) compute-sanitizer --tool initcheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize.py --tiers cluster@0 --dtypes float16,bfloat16 > $R/san_cluster_initcheck.txt 2>&1
echo "initcheck rc $?"; grep -E "ERROR SUMMARY|wrong results|: ok" $R/san_cluster_initcheck.txt | tail -n 3
wait
echo "tests: $(tail -n 1 $R/gpu_tests.txt)"
ls -la /tmp/ppart.a* > $R/kept.txt 2>&1
