#!/usr/bin/env bash
# for an H200: the seventy-ninth set's c1 measures the dispatch table of whichever model "auto" reads on the GPU it
# runs on, here dispatch_table_nvidia-h200.json (measured 2026-12-02/03): the long rows' GPU test, the grid, then
# its main points retimed nearest ties first for what time is left
bash benchmarks/results/2026-12-06_h100_s79/calls/c1.sh
