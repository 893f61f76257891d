#!/usr/bin/env bash
# call 7 (prepared, with call 6): Nsight Compute over bf16 (16, 21, 513, 513) over dim 1 forward, the
# Triton scalar tile that "auto" runs against Inductor's persistent reduction (torch.compile): where the
# 0.72 against 0.80 of copy of the layouts regime (c2/) comes from (registers, occupancy, DRAM
# throughput), then the same under the register caps call 6 times
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
S=(--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis)
T=(python3 benchmarks/ncu_target.py --shape 16x21x513x513 --dim 1 --dtype bf16)
timeout 150 ncu --kernel-name regex:triton_ --launch-skip 1 --launch-count 1 "${S[@]}" "${T[@]}" --impl compile \
  > $R/ncu_odd_compile.txt 2>&1
echo "compile rc $?"
timeout 100 ncu --kernel-name regex:softmax_fwd --launch-skip 1 --launch-count 1 "${S[@]}" "${T[@]}" --backend triton \
  > $R/ncu_odd_triton.txt 2>&1
echo "triton rc $?"
for cap in 48 64; do
  timeout 100 ncu --kernel-name regex:softmax_fwd --launch-skip 1 --launch-count 1 "${S[@]}" \
    python3 -c "import runpy, sys, fastsoftmax.backends.triton as t; t.SCALAR_TILE_16BIT_FORWARD_MAXNREG = $cap; \
sys.argv = ['ncu_target.py', '--shape', '16x21x513x513', '--dim', '1', '--dtype', 'bf16', '--backend', 'triton']; \
runpy.run_path('benchmarks/ncu_target.py', run_name='__main__')" > $R/ncu_odd_triton_cap$cap.txt 2>&1
  echo "cap $cap rc $?"
done
grep -hE "^==|Duration|DRAM Throughput|Registers Per|Achieved Occupancy|Theoretical Occ" $R/ncu_odd_*.txt | head -n 40
