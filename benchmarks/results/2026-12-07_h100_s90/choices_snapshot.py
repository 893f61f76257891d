"""Every row tier choice, tier support answer, cluster shape and cluster tier length bound over the H100's and
an H200's limits (tiers.H100_LIMITS, and the same with an H200's bandwidth), as one JSON file, so that two
revisions can be compared without a GPU: run it in each (the repository root first on sys.path) and compare
the files.

    PYTHONPATH=$PWD python3 benchmarks/results/2026-12-07_h100_s90/choices_snapshot.py OUT.json
"""

import json, sys, torch
from fastsoftmax.backends.cuda import tiers, instances as I
out = {}
H = tiers.H100_LIMITS
import dataclasses
H200 = dataclasses.replace(H, sm_count=132, dram_gbps=4800.0)
ns = sorted(set([8, 64, 1000, 4096, 8192, 9216, 9217, 12000, 16384, 16385, 20000, 32768, 32769, 40000, 50257, 65536, 65537, 100000, 128256, 131072, 131073, 151936, 200000, 262144, 262145, 393216, 524160, 524288, 699051, 1048320, 1 << 20, (1 << 20) + 7, 1 << 22, 1 << 24]))
for L, name in ((H, "h100"), (H200, "h200")):
  for dt in (torch.float32, torch.float16, torch.bfloat16):
    for b in (False, True):
      for n in ns:
        for outer in (1, 2, 4, 8, 16, 31, 32, 64, 131, 132, 1000, 4096):
          for al in (True, False):
            for log in (False, True):
              k = f"{name} {dt} {b} {n} {outer} {al} {log}"
              out[k] = tiers.choose_tier(outer, n, 1, dt, b, L, aligned=al, log=log)
              for t in ("cluster", "cluster_stream", "grid_row", "block_regs"):
                out[k + " s " + t] = tiers.supports(t, outer, n, 1, dt, b, L)
          for al in (True, False):
            try:
              s = I.cluster_shape(n, dt, b, rows=outer, sm_count=132, aligned=al, high_bandwidth=(name == "h200"))
              out[f"shape {name} {dt} {b} {n} {outer} {al}"] = str(s)
            except ValueError as e:
              out[f"shape {name} {dt} {b} {n} {outer} {al}"] = "err " + str(e)
  for dt in (torch.float32, torch.bfloat16):
    for b in (False, True):
      for al in (False, True):
        out[f"max {dt} {b} {al}"] = I.cluster_max_cols(dt, b, al)
        for rows in (0, 1, 4, 32):
          out[f"pref {dt} {b} {al} {rows}"] = I.cluster_preferred_max_cols(dt, b, rows, al)
json.dump(out, open(sys.argv[1], "w"), indent=0, sort_keys=True)
print(len(out))
