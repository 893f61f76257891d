#!/usr/bin/env bash
# call 2: cluster_stream with the first wave's odd clusters waiting before their first row
# (kStreamStaggerNs / kStreamStaggerBelow, compiled in through the probe's kernel copies) against the
# kernels as they are, alternated in one process behind an L2 flush; the cluster size of 16-bit rows
# near the point where half the cluster still holds them; tests/gpu (cut by call 1's time limit)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
K=fastsoftmax/backends/cuda/kernels
python3 - > $R/resident.txt 2>&1 <<'PY'
import torch
from fastsoftmax.backends.cuda import BACKEND, plans, tiers
for dtype, n, bwd in [(torch.bfloat16, 1 << 20, False), (torch.bfloat16, 1 << 19, False), (torch.float32, 1 << 19, False),
                      (torch.bfloat16, 1 << 19, True), (torch.bfloat16, 1 << 20, True)]:
    for per_sm in (1, 2):
        k, s = plans.cluster_stream_launch(BACKEND.kernel, dtype, n, bwd, False, 0, 0, per_sm)
        print(dtype, n, "bwd" if bwd else "fwd", "per_sm", per_sm, "C", s.ctas, "threads", s.threads, "resident clusters", k.resident_clusters())
PY
B=""
for v in "s4 4000 16" "s8 8000 16" "s12 12000 16" "s8b8 8000 8" "s8b32 8000 32"; do
  set -- $v
  B="$B --baseline $1=$K --baseline-replace $1|kStreamStaggerNs = 0|kStreamStaggerNs = $2 --baseline-replace $1|kStreamStaggerBelow = 0|kStreamStaggerBelow = $3"
done
timeout 200 python3 benchmarks/grid_row_probe.py --flush $B \
  --tiers cluster_stream,s4/cluster_stream,s8/cluster_stream,s12/cluster_stream,s8b8/cluster_stream,s8b32/cluster_stream \
  --directions fwd,bwd --dtypes bf16,f32 --shapes 128x1048576,256x524288,191x699051 --out $R/stagger > $R/stagger_probe.txt 2>&1
timeout 100 python3 benchmarks/grid_row_probe.py --flush \
  --tiers cluster_stream,cluster_stream:cluster_ctas=8,cluster_stream:cluster_stream_per_sm=1 \
  --directions fwd,bwd --dtypes bf16 --shapes 200x655360,180x720896,160x786432,320x393216,256x458752 --out $R/size > $R/size_probe.txt 2>&1
FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout 200 python3 -m pytest tests/gpu -q -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests_gpu.txt
