#!/usr/bin/env bash
# The GPU checks of the sixty-fourth and sixty-fifth sets' changes, measured there on a CPU only
# (supersedes ../2026-12-05_cpu_s64/calls/call1.sh, which did not run): (1) the GPU tests of the
# Triton launch path (integer pointers, no empty hooks, looked-up scalar keys: every Triton test runs
# it), of the remembered plans of calls with dtype= or under autocast, of the one pass, of the thread
# and CUDA graph tests (calls with a float32 result among them) and of the distributed kernels on one
# GPU; (2) the Triton launch path's host time on whole calls, this tree's launch.py against the one
# before this set (launch_92bdadd.py), alternated in one process, and the host probe; (3) the widening
# probe again: the one pass's host time a call now that a repeated call takes a plan (32-137 us in
# 2026-12-05_h200_s63/c9/, before the plans and this launch path).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
python3 -c "import torch, triton; print(torch.__version__, triton.__version__)" >> $R/device.txt
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout -s INT 200 python3 -m pytest -q --tb=short -n 8 --dist worksteal \
  tests/test_triton_launch.py tests/gpu tests/test_repeated_calls.py tests/test_widening.py \
  tests/distributed/test_distributed_kernels.py > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
timeout 120 python3 benchmarks/triton_launch_probe.py --against benchmarks/results/2026-12-05_cpu_s65/calls/launch_92bdadd.py \
  --out $R/triton_launch.txt > $R/triton_launch.log 2>&1
echo "launch probe rc $?"; tail -n 10 $R/triton_launch.log | cut -c1-200
timeout 90 python3 benchmarks/host_probe.py --out $R/host_probe.txt > $R/host_probe.log 2>&1
echo "host probe rc $?"; tail -n 4 $R/host_probe.log | cut -c1-200
timeout 170 python3 benchmarks/widening_probe.py --out $R/widening.txt > $R/widening.log 2>&1
echo "widening rc $?"; tail -n 2 $R/widening.log | cut -c1-300
