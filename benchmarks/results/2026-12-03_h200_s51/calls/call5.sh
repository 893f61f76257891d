#!/usr/bin/env bash
# call 5: (1) cluster_stream's forward at one CTA an SM against two, forced, alternated in one process
# behind an L2 flush, over the row lengths "auto" gives it (float32 from 2^18, bf16 from 2^19): call 2
# had float32 256 x 524288 at 0.856 with one against 0.803 with the rule's two; (2) rows of about 50K
# 16-bit columns on cluster_stream (registers and shared memory) against the cluster tier (registers
# only); (3) Nsight Compute's per-instruction counts of the cluster tier's bf16 forward on 2670 x 50264
# (about 20 instructions an element, issue 0.76 of cycles in call 1); (4) the minimal cluster exchange
# that synccheck stopped on in call 1 (58 clusters of 16 at several CTAs an SM) without a sanitizer,
# under memcheck and again under synccheck; beside those, the GPU tests of cluster_stream and the
# public API's (tests/gpu) on the float32 forward's rule of this set (one CTA an SM where a cluster
# of 8 or fewer holds the row: the probe's first column is that rule)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/d5; mkdir -p $R/san
trap 'tar czf $OUT/d5.tar.gz -C $OUT d5 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
S=cluster_stream
timeout 200 python3 benchmarks/grid_row_probe.py --flush --tiers "$S,$S:cluster_stream_per_sm=1,$S:cluster_stream_per_sm=2" \
  --directions fwd --dtypes f32,bf16 \
  --shapes 512x300007,256x393216,128x524288,256x524288,512x524288,192x699051,128x786432,128x1048576 \
  --out $R/per_sm > $R/stream_per_sm.txt 2>&1
timeout 100 python3 benchmarks/grid_row_probe.py --flush --tiers "cluster,$S,$S:cluster_stream_per_sm=2" \
  --directions fwd --dtypes bf16 --shapes 2670x50264,2670x50257,2048x65536 --out $R/fifty > $R/fifty_stream.txt 2>&1
timeout 150 ncu --kernel-name regex:fs_ --launch-skip 3 --launch-count 1 --section SourceCounters --section InstructionStats \
  --section ComputeWorkloadAnalysis --page source --print-source sass --csv \
  python3 benchmarks/ncu_target.py --shape 2670x50264 --dtype bf16 --tier cluster --calls 6 > $R/ncu_sass_50264.csv 2> $R/ncu_sass_50264.err
timeout 100 ncu --kernel-name regex:fs_ --launch-skip 3 --launch-count 1 --section InstructionStats --section ComputeWorkloadAnalysis \
  python3 benchmarks/ncu_target.py --shape 2670x50264 --dtype bf16 --tier cluster --calls 6 > $R/ncu_pipes_50264.txt 2>&1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 240 python3 -m pytest tests/cuda/test_cluster_stream_gpu.py tests/cuda/test_grid_row_plan.py tests/gpu \
  -q -n 6 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 12 > $R/tests.txt &
P="python3 benchmarks/cluster_synccheck_probe.py --kernels exchange,split --clusters 16 --waves 1,4 --smem 0 --threads 256"
timeout 60 $P > $R/san/plain.txt 2>&1; echo "plain exit $?" >> $R/san/exits.txt
for tool in memcheck synccheck; do
  timeout 150 compute-sanitizer --tool $tool --error-exitcode 9 --report-api-errors no $P > $R/san/$tool.txt 2>&1
  echo "$tool exit $?" >> $R/san/exits.txt
done
wait
