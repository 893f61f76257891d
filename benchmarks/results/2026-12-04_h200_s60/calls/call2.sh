#!/usr/bin/env bash
# prepared for the next set (not run). The spans' partials kernel at eight
# blocks an SM (the default since c4/): (1) float16, which takes the same constant, timed at five and
# eight beside bf16 (only bf16 was timed); (2) with tiles of more threads across than a warp
# (strided_max_width, c1/: 46.8 -> 44.1 us at 128 on its own), both together; (3) Nsight Compute at
# eight blocks beside Inductor's reduction, with the warps' stall reasons (SourceCounters), for what
# keeps 43.2 us from Inductor's 35.6 (c3/: 2.69 TB/s against 3.74 at five blocks, occupancy 67% against 79%).
# (4), the racecheck over the wide tiles (off by default), left out of this call
