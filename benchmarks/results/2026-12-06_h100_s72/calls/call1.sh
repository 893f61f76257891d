#!/usr/bin/env bash
# call 1: the seventy-first set's prepared calls 13 (Nsight Compute on the staged bf16 and float32
# forwards of (32, 4096, 1024) over dim 1) and 12 (grid_row's phases with the floor kernel's issue
# marked apart from its landing)
set -u
cd "$(dirname "$0")/../../../.."
bash benchmarks/results/2026-12-06_h100_s71/calls/call13.sh
bash benchmarks/results/2026-12-06_h100_s71/calls/call12.sh
