#!/usr/bin/env bash
# 16-bit inputs with a float32 result (dtype=torch.float32, or CUDA autocast, which since this set
# computes them in float32 as torch's autocast does): one pass on the Triton kernels against the cast
# first and "auto"'s float32 kernels, torch beside them (benchmarks/widening_probe.py, new). Decides
# functional.FUSED_WIDENING (off) and, since the sixty-second set, the rows at which "auto" hands a
# float16 call to torch's fused kernel (functional.TORCH_WIDENS_MIN_ROWS, estimated; torch fuses float16
# only): the probe times the cast and auto apart. Its GPU tests run in call7.sh (tests/test_widening.py).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c8; mkdir -p $R
trap 'tar czf $OUT/c8.tar.gz -C $OUT c8 && rm -rf $R' EXIT
timeout 540 python3 benchmarks/widening_probe.py --out $R/widening.txt > $R/widening.log 2>&1
echo "probe rc $?"; tail -n 4 $R/widening.log
