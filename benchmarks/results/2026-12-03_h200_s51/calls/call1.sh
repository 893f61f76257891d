#!/usr/bin/env bash
# call 1 (carries .peerA1): the 16-bit forward of rows of about 50K columns (bf16 2670 x 50257 0.87 of
# copy, 2670 x 50264 0.89-0.90, 2048 x 65536 0.96): the cluster tier's launch shapes (CTAs a cluster,
# threads, packs a thread) and the whole-pack cut alternated in one process behind an L2 flush, then
# Nsight Compute on the default launch of the three. Beside each other after that: compute-sanitizer's
# synccheck over the minimal cluster kernels at several CTAs an SM (--smem 0); racecheck over the
# persistent cluster_stream run's four unfinished parts, on fewer rows that still give every cluster
# several (17 x 300007 float32, 12 x 600011 each dtype); the public API's GPU tests (tests/gpu)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/d1; mkdir -p $R/san
trap 'tar czf $OUT/d1.tar.gz -C $OUT d1 && rm -rf $R' EXIT
cp .peerA1/apart.aa /tmp/ &
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch, triton, cuda.core; print(torch.__version__, triton.__version__, cuda.core.__version__)" >> $R/device.txt
C=cluster
T="$C,$C:cluster_alike=True,$C:cluster_threads=256,$C:cluster_threads=448:cluster_packs=4"
T="$T,$C:cluster_threads=512:cluster_packs=4,$C:cluster_ctas=8:cluster_threads=224:cluster_packs=4"
T="$T,$C:cluster_ctas=8:cluster_threads=128:cluster_packs=8,$C:cluster_ctas=8:cluster_threads=448:cluster_packs=2"
T="$T,$C:cluster_ctas=2:cluster_threads=448:cluster_packs=8,$C:cluster_ctas=2:cluster_threads=512:cluster_packs=8"
T="$T,$C:cluster_ctas=4:cluster_threads=128:cluster_packs=16,block_smem"
timeout 200 python3 benchmarks/grid_row_probe.py --flush --tiers "$T" --directions fwd --dtypes bf16 \
  --shapes 2670x50257,2670x50264,2048x65536 --out $R/fifty > $R/fifty_probe.txt 2>&1
for s in 2670x50257 2670x50264 2048x65536; do
  timeout 100 ncu --kernel-name regex:fs_ --launch-skip 3 --launch-count 1 --section SpeedOfLight --section Occupancy \
    --section LaunchStats --section MemoryWorkloadAnalysis --section WarpStateStats --section SchedulerStats \
    --section SourceCounters python3 benchmarks/ncu_target.py --shape $s --dtype bf16 --tier cluster --calls 6 \
    > $R/ncu_$s.txt 2>&1
done
{
  for smem in 0 default; do for c in 8 16; do echo "probe $smem $c"; done; done
  echo "racecheck cluster_stream@1 17x300007 float32"
  for d in float32 float16 bfloat16; do echo "racecheck cluster_stream@1 12x600011 $d"; done
} | xargs -P 10 -L 1 bash -c '
  if [[ $0 == probe ]]; then
    extra=(); [[ $1 == default ]] || extra=(--smem $1 --threads 256)
    timeout 150 compute-sanitizer --tool synccheck --error-exitcode 9 --report-api-errors no \
      python3 benchmarks/cluster_synccheck_probe.py --kernels barrier,exchange,split --clusters $2 --waves 1,4 "${extra[@]}" \
      > "'$R'/san/probe_$1_$2.txt" 2>&1
    echo "probe_$1_$2 exit $?" >> "'$R'/san/exits.txt"
  else
    name="$0_$1_$2_$3"
    timeout 330 compute-sanitizer --tool $0 --error-exitcode 9 --report-api-errors no \
      python3 benchmarks/sanitize.py --tiers $1 --shapes $2 --dtypes $3 --verbose > "'$R'/san/$name.txt" 2>&1
    echo "$name exit $?" >> "'$R'/san/exits.txt"
  fi' &
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 300 python3 -m pytest tests/gpu -q -n 4 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests_gpu.txt
wait
ls -la /tmp/apart.aa > $R/kept.txt 2>&1
