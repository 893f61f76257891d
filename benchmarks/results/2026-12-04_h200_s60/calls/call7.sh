#!/usr/bin/env bash
# The public API under torch's other modes, on the GPU (new, CPU-tested under Triton's interpreter
# only): forward-mode AD and torch.func's transforms (tests/test_transforms.py), torch.jit.trace
# recording the kernels as op calls, autocast computing 16-bit inputs in float32 as torch's CUDA
# autocast does, modules without a dim, NumPy integer dims (tests/test_functional.py), compiled
# transforms (tests/test_compile.py), and the same bits call after call on every regime and backend
# (tests/gpu/test_determinism.py, new), and out= written by the kernels where it lies (tests/test_out.py,
# added in the sixty-second set). Run it first: these are correctness checks.
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 300 python3 -m pytest -q --tb=short -n 8 --dist worksteal \
  tests/test_transforms.py tests/test_widening.py tests/test_compile.py tests/gpu/test_determinism.py \
  tests/test_out.py "tests/test_functional.py" -k "not every_tier" > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 5 $R/gpu_tests.txt
# out= under CUDA graph capture and on another GPU than the current one (sixty-second set)
timeout -s INT 120 python3 -m pytest -q --tb=short tests/gpu/test_concurrency.py -k "out or another_gpu" > $R/gpu_out_tests.txt 2>&1
echo "out tests rc $?"; tail -n 3 $R/gpu_out_tests.txt
