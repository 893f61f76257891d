#!/usr/bin/env bash
# call 2: the cluster tier's forward computing each row's cut (slice, first slot, slot count) only where
# a row's misalignment differs from the last row's (RowCut) against the kernels before (this set's
# merge_posts, scratch/base_kernels), alternated in one process behind an L2 flush. Then, beside each
# other: the cluster tier's GPU tests, compute-sanitizer over every part of the cluster tier (both of
# this set's changes) and racecheck over the four parts of cluster_stream@0 that call 1 cut at 200 s
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R/san $R/race
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/grid_row_probe.py --flush --baseline base=scratch/base_kernels --tiers cluster,base/cluster \
  --directions fwd,log --dtypes bf16,f32 \
  --shapes 2670x50264,2670x50257,2048x65536,1046x128256,512x262144,8192x16384,4096x32768,16384x12288,8x128256,32x151936,128x128256 \
  --out $R/cut > $R/cut_probe.txt 2>&1
sed -n '/summary/,$p' $R/cut_probe.txt
# the form that goes on to the tests and the sanitizer: the change where the geometric mean of its
# fractions over the base's is 1.005 or more, else the base's kernels (copied over the tree's here)
python3 - $R/cut_probe.txt > $R/verdict.txt <<'PY'
import math, re, sys
text = open(sys.argv[1]).read().split("==== summary ====")[-1]
pairs = [(float(a), float(b)) for a, b in re.findall(r" cluster ([0-9.]+) \(.*?\| base/cluster ([0-9.]+) ", text)]
g = math.exp(sum(math.log(a / b) for a, b in pairs) / max(1, len(pairs)))
print(f"{len(pairs)} pairs, geometric mean {g:.4f}: " + ("change" if g >= 1.005 else "base"))
PY
cat $R/verdict.txt
grep -q ": base" $R/verdict.txt && cp scratch/base_kernels/* fastsoftmax/backends/cuda/kernels/
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 230 python3 -m pytest tests/cuda/test_cuda_gpu.py -k cluster \
  -q -n 3 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 6 > $R/tests.txt &
for part in "2x1000003:-1 bfloat16" "2x1000003:-1 float16" "2x1000003:-1 float32" "3x300007:-1 float32"; do
  set -- $part
  ( timeout 380 compute-sanitizer --tool racecheck --error-exitcode 9 --report-api-errors no \
      python3 benchmarks/sanitize.py --tiers cluster_stream@0 --shapes $1 --dtypes $2 > "$R/race/racecheck_cluster_stream@0_${1%%:*}_$2.txt" 2>&1
    echo "racecheck cluster_stream@0 $1 $2: exit $?" >> $R/race/exits.txt ) &
done
OUT=$R/san SANITIZE_TIERS=cluster@0,cluster@1 SANITIZE_TOOLS="memcheck initcheck racecheck synccheck" \
  SANITIZE_SPLIT_TOOLS="racecheck synccheck" SANITIZE_JOBS=10 SANITIZE_TIMEOUT=200 \
  timeout 400 bash benchmarks/device_run.sh sanitize > $R/san/sanitize.log 2>&1
wait
grep "compute-sanitizer --tool" $R/san/sanitize.log
cat $R/race/exits.txt
tail -n 2 $R/tests.txt
