#!/usr/bin/env bash
# The cluster probe on the GPU (launch.holds_cluster: the facts' answers and each size's, with the time the
# first facts take), its GPU test, then the eighty-eighth set's k3.sh (the cluster backward's packs forced,
# Nsight Compute on fp16 and bf16 at 16385).
source benchmarks/call_prelude.sh a1
python3 benchmarks/results/2026-12-07_h100_s90/calls/probe.py 2>&1 | tee $R/probe.txt
timeout 120 python3 -m pytest -q tests/cuda/test_other_gpus.py > $R/probe_test.txt 2>&1; tail -n 2 $R/probe_test.txt
trap - EXIT
tar czf "$OUT/a1.tar.gz" -C "$OUT" a1 && rm -rf "$R"
bash benchmarks/results/2026-12-07_h100_s88/calls/k3.sh
