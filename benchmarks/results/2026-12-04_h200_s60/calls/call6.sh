#!/usr/bin/env bash
# strided_warp's realigned 16-byte packs (strided_warp.cuh's REALIGN, the tuning strided_warp_realign,
# new): rows at several 16-byte phases (odd H x W channel heads) in dense (n, inner) blocks, a lane's
# neighbouring columns read as the two 16-byte packs around them and shifted by the row's phase,
# written as the output's 16-byte packs between a row's lanes, the edges element by element.
# Why: the spread columns move one element an access there (bf16 (8, 150, 127, 127) over dim 1 0.49
# of copy forward, 0.53 backward in the fifty-fourth set's layouts run), and 16-bit axes up to 128
# rows and the 16-bit backward stay on Triton's scalar tiles.
# (0) the forms and the catalogue's strided_warp kernels compiled on every CPU; (1) their GPU tests;
# (2) kernel by kernel in one process: auto, spread and realigned, both directions; (3)
# compute-sanitizer's four tools over strided_warp@4 (the realigned part).
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c6; mkdir -p $R/san
trap 'tar czf $OUT/c6.tar.gz -C $OUT c6 && rm -rf $R' EXIT
timeout 100 python3 benchmarks/results/2026-12-04_h200_s60/calls/compile_forms.py realign > $R/compile.txt 2>&1
echo "compile rc $?"; tail -n 1 $R/compile.txt
timeout 100 python3 -m fastsoftmax compile --match '^fs_strided_warp_' >> $R/compile.txt 2>&1
echo "catalogue rc $?"; tail -n 1 $R/compile.txt
timeout -s INT 120 python3 -m pytest -q --tb=short tests/cuda/test_strided_gpu.py -k "realign or spread" \
  > $R/gpu_tests.txt 2>&1
echo "tests rc $?"; tail -n 3 $R/gpu_tests.txt
cd benchmarks
W="tier=strided_warp"
timeout 200 python3 kernel_breakdown.py --dtypes bfloat16,float32 --directions forward,backward --no-compile \
  --tunings "$W,strided_warp_spread=True;$W,strided_warp_realign=True;$W,strided_warp_spread=True" \
  --cases "(8,150,127,127) d1;(16,21,513,513) d1;(8,48,127,127) d1;(4,64,255,255) d1" \
  > $R/realign_odd_images.txt 2>&1
grep "a call\|Error" $R/realign_odd_images.txt
cd ..
for tool in memcheck initcheck synccheck racecheck; do
  (( SECONDS > 540 )) && { echo "skipped $tool: time"; continue; }
  timeout 80 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided_warp@4 > $R/san/${tool}_strided_warp_4.txt 2>&1
  echo "$tool strided_warp@4 rc $?"; tail -n 1 $R/san/${tool}_strided_warp_4.txt
done
