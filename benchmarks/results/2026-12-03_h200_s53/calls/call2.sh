#!/usr/bin/env bash
# call 2 (carries .peerA2, after call 1): the strided tier reading 16-bit stepped inputs in 8-byte
# packs of their span (strided_stepped_packs=True, new instances) against single elements, the staged
# spans, auto and torch.compile, bf16, alternated in one process; the GPU tests of stepped inputs;
# compute-sanitizer's four tools over the new instances
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R/san
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
[[ -f /tmp/apart.aa ]] || echo "cold: call 1's file is gone" > $R/cold.txt
cp .peerA2/apart.ab /tmp/ &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest tests/cuda/test_strided_gpu.py -k "stepped or views" -q -n 8 \
  -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests.txt
cat $R/tests.txt
timeout 300 python3 benchmarks/step_span_probe.py --dtypes bfloat16 --rounds 2 \
  --impls staged,strided,strided_p4,auto,compile --out $R/step_p4.txt > $R/step_p4.log 2>&1
grep -v Warning $R/step_p4.txt
for tool in memcheck racecheck initcheck synccheck; do
  timeout 200 compute-sanitizer --tool $tool --error-exitcode 9 --report-api-errors no \
    python3 benchmarks/sanitize.py --tiers strided --tuning strided_stepped_packs=True --dtypes float16,bfloat16 \
    --shapes 3x4001x40:1,40001x48:0,4100x2056:0,6x333x40:1 > $R/san/$tool.txt 2>&1 &
done
wait
for tool in memcheck racecheck initcheck synccheck; do echo "$tool: $(tail -n 2 $R/san/$tool.txt | tr '\n' ' ')"; done
ls -la /tmp/apart.a* > $R/kept.txt 2>&1
