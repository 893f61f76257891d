#!/usr/bin/env bash
# after the review's mends: the GPU test of the long rows' plans in either alignment order, and block_regs' tests
source benchmarks/call_prelude.sh t1
timeout 150 python3 -m pytest -q --tb=short tests/cuda/test_cuda_gpu.py -k "long_rows_plan or short_rows_in_every_storage" \
  > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
