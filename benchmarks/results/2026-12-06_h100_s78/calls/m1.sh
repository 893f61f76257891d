#!/usr/bin/env bash
# main run, first call (carries the peers' parts 1-2, kept in /tmp for m3.sh on the same machine): the GPU tests
# of the changed rules (block_regs' 16-bit rows raw by default, the warp's long rows at low fills), then tests/gpu
bash benchmarks/peers_parts.sh keep > $OUT/kept1.txt 2>&1
source benchmarks/call_prelude.sh m1
timeout 150 python3 -m pytest -q --tb=short tests/cuda/test_cuda_gpu.py \
  -k "warp_long or long_rows_plan or short_rows_in_every_storage or block_regs" > $R/tests_cuda.txt 2>&1
echo "tests: $(tail -n 1 $R/tests_cuda.txt)"; grep -h "^FAILED" $R/tests_cuda.txt | head
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 240 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
tail -2 $OUT/kept1.txt
