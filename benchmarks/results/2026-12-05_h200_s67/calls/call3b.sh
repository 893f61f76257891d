#!/usr/bin/env bash
# A second run of call3.sh's backward sweep on the same machine, its shapes reordered past the one
# that stopped it (c3/sweep_backward_more2.txt; it stopped again at (128, 2048, 512), whose backward
# the tile tier does not hold: the probe then asked for that tier's plan to print it).
R=$OUT/c4; mkdir -p $R; nvidia-smi --query-gpu=name --format=csv > $R/device.txt
timeout 150 env PYTHONPATH=$PWD:$PWD/benchmarks python3 -c "
import widening_tile_probe as w
from probe_report import Report
w.SWEEP = [(4096, 32), (4096, 64)]
w.ROUNDS = 3
r = Report(); copy = r.gpu_header()
for cases in [[((512, 32, 1024), 1, False), ((128, 1024, 1024), 1, False)],
              [((4096, 64, 512), 1, False), ((128, 2048, 512), 1, False)],
              [((16, 21, 512, 512), 1, False), ((8, 150, 128, 128), 1, False)]]:
    w.CASES = cases
    w._sweep(False, copy, r.say, True)
    r.write('$R/sweep_backward_more2.txt')
" > $R/log.txt 2>&1; echo rc $?; tail -n 2 $R/log.txt | cut -c1-200
