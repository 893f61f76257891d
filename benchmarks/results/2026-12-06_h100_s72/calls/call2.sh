#!/usr/bin/env bash
# call 2: strided_staged's forward merging its row groups by warps (merge_in_warps) against the
# shared-memory trees ("tree": the same kernels with kWarpMerge false), forced tier alternated in one
# process behind an L2 flush; then the strided GPU tests, and the registers under this NVRTC
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
K=fastsoftmax/backends/cuda/kernels
OLD='constexpr bool kWarpMerge = P * sizeof(T) == 16 && !WINDOW;'
NEW='constexpr bool kWarpMerge = false;'
timeout 100 python3 -m fastsoftmax compile --match '^fs_staged_' > $R/compile.txt 2>&1; tail -n 1 $R/compile.txt
timeout 280 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,log --dtypes bf16,f32 \
  --baseline tree=$K --baseline-replace "tree|$OLD|$NEW" \
  --tiers strided_staged,tree/strided_staged \
  --shapes 1x8192x16384,32x4096x1024,128x1024x1024,4096x64x512,1x65536x2048,4x8192x4096 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-230
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 150 python3 -m pytest -q --tb=short -n 8 tests/cuda/test_strided_gpu.py \
  > $R/strided_tests.txt 2>&1
echo "strided: $(tail -n 1 $R/strided_tests.txt)"; grep -h "^FAILED" $R/strided_tests.txt | head
timeout 60 python3 benchmarks/register_report.py --match 'staged.*fwd' --replace "$OLD|$NEW" --against $K --changed \
  > $R/registers.txt 2>&1; tail -n 14 $R/registers.txt
