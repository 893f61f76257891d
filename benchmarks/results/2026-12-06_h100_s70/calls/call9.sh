#!/usr/bin/env bash
# call 9: call 8's cluster_stream column on bf16 backward 128 x 2^20 (0.712) read like two CTAs an SM
# where call 7's rule had run one (0.796): the device facts the rule reads (DRAM bandwidth from the
# driver's memory clock and bus width, the class), the CTAs an SM it gives, and the rule against
# both forced, forward then backward, alternated in one process behind an L2 flush
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c9; mkdir -p $R
trap 'tar czf $OUT/c9.tar.gz -C $OUT c9 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.memory --format=csv > $R/device.txt
python3 -c "
import torch
from fastsoftmax.backends.cuda.launch import device_facts
from fastsoftmax.backends.cuda import instances, plans
f = device_facts(0)
print('dram_gbps', f.dram_gbps, 'high_bandwidth_per_sm', f.high_bandwidth_per_sm, 'sms', f.sm_count, 'smem', f.smem_per_sm, f.smem_per_block)
b = plans.cluster_stream_budget(f, 2)
for n, rows in ((1 << 20, 128), (699051, 191), (524288, 256)):
    for dt in (torch.bfloat16, torch.float32):
        for bw in (False, True):
            print(n, rows, dt, 'bwd' if bw else 'fwd', 'per_sm', instances.cluster_stream_per_sm(n, dt, bw, rows, b, f.high_bandwidth_per_sm))
" > $R/facts.txt 2>&1; cat $R/facts.txt
S=cluster_stream
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R --directions fwd,bwd --dtypes bf16,f32 \
  --tiers $S,$S:cluster_stream_per_sm=1,$S:cluster_stream_per_sm=2 --shapes 128x1048576,256x524288 > $R/rule_both_orders.txt 2>&1
sed -n '/==== summary/,$p' $R/rule_both_orders.txt | cut -c1-250
