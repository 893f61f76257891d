#!/usr/bin/env bash
# call 2 (carries .peer1 again, and .base_s71: the kernels before the prefetch): strided_staged's
# persistent teams asking L2 for their next tile's pieces (Tuning.staged_prefetch) against none and
# against the kernels before the change (base/, the default launch's cost of the new branch), forced
# tier alternated in one process behind an L2 flush, forward and backward, bf16 and float32; then
# the GPU tests of the prefetch, the wider tiles, the stagger and the teams.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
cp .peer1/ppart.aa /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
T=strided_staged
timeout 120 python3 -m fastsoftmax compile --match 'staged' > $R/compile.txt 2>&1
timeout 200 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,bwd --dtypes bf16,f32 \
  --baseline .base_s71/fastsoftmax/backends/cuda/kernels \
  --tiers base/$T,$T,$T:staged_prefetch=True \
  --shapes 1x8192x16384,32x4096x1024,1x65536x2048 > $R/prefetch_ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/prefetch_ab.txt | cut -c1-230
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest -q --tb=short -n 4 \
  tests/cuda/test_strided_gpu.py -k "prefetched or wider_tiles or stagger or teams or counters" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
wait
ls -la /tmp/ppart.aa > $R/kept.txt 2>&1
