#!/usr/bin/env bash
# call 8: small inner sizes over long axes, strided_staged (the tier "auto" gives them) against the
# strided tier, forced and alternated behind an L2 flush, bf16 and float32, forward and backward (call
# 6: bf16 (4, 1048576, 8) forward 0.362 against 0.450); then the error tests on the GPU (a tensor
# subclass that does not compute fastsoftmax's ops named) and the streamed-chunk tests (the (3687000, 4)
# case added after call 6)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 60 python3 -m fastsoftmax compile --match '^fs_(staged|strided)_(softmax|logsoftmax|merge)' > $R/compile.txt 2>&1
timeout 110 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/ab --directions fwd,bwd --dtypes bf16,f32 \
  --tiers strided_staged,strided \
  --shapes 16x1048576x2,8x1048576x4,4x1048576x8,2x2097152x4,32x262144x4,16x262144x8,64x65536x16,128x65536x8 > $R/ab.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/ab.txt | cut -c1-200
timeout 120 python3 -m pytest -q --tb=short -n 4 tests/test_errors.py tests/cuda/test_strided_gpu.py -k "errors or subclass or streamed" \
  > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"
