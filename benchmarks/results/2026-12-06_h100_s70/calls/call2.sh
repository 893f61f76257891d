#!/usr/bin/env bash
# call 2 (carries .peer2, right after call 1): the layouts regime's one loss left on the H100, bf16
# (16, 21, 513, 513) over dim 1 backward, and its neighbours, kernel by kernel: Triton's scalar tile
# as planned (two pieces, 128 columns over 4 warps, 64-bit offsets) against 32-bit offsets (their
# 64-bit choice was measured on an H200), tiles of 256 columns over 8 warps and of 64 over 2, and 16
# elements a thread; then strided_staged's staggered first wave (persistent teams, clusters) under
# compute-sanitizer's memcheck, synccheck and racecheck, until DEADLINE
set -u
DEADLINE=${DEADLINE:-250}
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
[[ -f /tmp/ppart.aa ]] || echo "cold: call 1's file is gone" > $R/cold.txt
cp .peer2/ppart.ab /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 110 python3 benchmarks/kernel_breakdown.py --directions backward \
  --cases "(16,21,513,513) d1;(16,19,513,513) d1;(8,21,255,255) d1" \
  --tunings "triton.SCALAR_TILE_OFFSETS_64_MAX_N=0;triton.SCALAR_TILE_ELEMS=8192;triton.SCALAR_TILE_ELEMS=2048;triton.SCALAR_TILE_PER_THREAD={2: 16, 4: 16}" \
  > $R/backward_tiles.txt 2>&1
echo "tiles rc $?"; grep "a call" $R/backward_tiles.txt | cut -c1-200
for tool in memcheck synccheck racecheck; do
  (( SECONDS > DEADLINE - 25 )) && { echo "$tool skipped"; continue; }
  timeout $(( DEADLINE - SECONDS )) compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided_staged@7,strided_staged@8 > $R/san_stagger_$tool.txt 2>&1
  echo "$tool rc $?"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|wrong results|: ok" $R/san_stagger_$tool.txt | tail -n 3
done
wait
ls -la /tmp/ppart.a* > $R/kept.txt 2>&1
