#!/usr/bin/env bash
# second call: the GPU tests of tests/gpu (the forward's plans now run a tier a function)
source benchmarks/call_prelude.sh c2
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 300 python3 -m pytest -q --tb=short -n 4 tests/gpu > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED" $R/tests.txt | head
