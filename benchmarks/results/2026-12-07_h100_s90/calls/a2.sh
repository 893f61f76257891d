#!/usr/bin/env bash
# On either GPU: a1.sh's probe and tests/cuda/test_other_gpus.py, then the cluster-using GPU tests (the
# cluster tier's in test_cuda_gpu.py, cluster_stream's, grid_row's) and the concurrency tests, within
# about 300 s.
source benchmarks/call_prelude.sh a2
python3 benchmarks/results/2026-12-07_h100_s90/calls/probe.py 2>&1 | tee $R/probe.txt
timeout 150 python3 -m pytest -q tests/cuda/test_other_gpus.py > $R/other_gpus.txt 2>&1; tail -n 3 $R/other_gpus.txt
timeout 300 python3 -m pytest -q -x tests/cuda/test_cluster_stream_gpu.py tests/cuda/test_grid_row_gpu.py \
  tests/gpu/test_concurrency.py "tests/cuda/test_cuda_gpu.py" -k "cluster or concurren or thread or graph or grid_row" \
  > $R/gpu_tests.txt 2>&1; echo "gpu tests rc $? at $SECONDS s"; tail -n 3 $R/gpu_tests.txt
