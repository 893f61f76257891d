#!/usr/bin/env bash
# once cluster_exchange.patch is applied to the tree: the cluster tier's sanitizer parts under the four tools on
# its kernels (racecheck a problem and dtype a process, the others a dtype a process, sixteen at once), none
# started after LIMIT - 70 s (LIMIT: a time limit in seconds, 400 by default)
source benchmarks/call_prelude.sh s2
grep -q mbarrier_wait_suspended fastsoftmax/backends/cuda/kernels/cluster_tier.cuh \
  || { echo "s2: apply benchmarks/results/2026-12-07_h100_s80/calls/cluster_exchange.patch first"; exit 2; }
mkdir -p $R/san
SANITIZE_TIERS=cluster SANITIZE_SPLIT_TOOLS=racecheck SANITIZE_DTYPE_TOOLS="memcheck initcheck synccheck" \
  SANITIZE_JOBS=16 SANITIZE_DEADLINE=$(( ${LIMIT:-400} - 70 - SECONDS )) OUT=$R/san timeout $(( ${LIMIT:-400} - SECONDS )) \
  bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
echo "sanitize rc $? at $SECONDS s"; cat $R/san/summary.txt 2>/dev/null | tail -12
