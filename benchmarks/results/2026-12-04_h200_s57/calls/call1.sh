#!/usr/bin/env bash
# the fifty-sixth set's prepared call: compute-sanitizer over the partials-only strided kernels,
# the float32 log-softmax backward on them, and the bf16 column sums in Inductor's shape
exec bash benchmarks/results/2026-12-04_h200_s56/calls/next.sh
