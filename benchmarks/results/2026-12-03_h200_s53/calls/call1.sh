#!/usr/bin/env bash
# call 1 (carries .peerA1): Nsight Compute over the bf16 backward of (8192, 8192)[:, ::2] over dim 0
# (y and dy stepped, as the layouts regime times it; 172-178 us against torch.compile's 150): "auto"
# (the staged spans), the strided tier forced, and Inductor's three kernels. Then the last prepared
# probes: the bf16 forward at 2640 rows (20 whole waves of the resident clusters) against 2670, the
# cluster tier alone behind an L2 flush; the layouts regime's view class in bf16
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c1; mkdir -p $R
trap 'tar czf $OUT/c1.tar.gz -C $OUT c1 && rm -rf $R' EXIT
cp .peerA1/apart.aa /tmp/ &
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch, triton, cuda.core; print(torch.__version__, triton.__version__, cuda.core.__version__)" >> $R/device.txt
S=(--section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis
   --section WarpStateStats --section SchedulerStats)
T=(python3 benchmarks/ncu_target.py --shape 8192x4096 --dim 0 --dtype bf16 --step-inner --backward --calls 3)
timeout 80 ncu --profile-from-start off --kernel-name regex:fs_ --launch-count 1 "${S[@]}" "${T[@]}" > $R/ncu_step_auto.txt 2>&1
timeout 80 ncu --profile-from-start off --kernel-name regex:fs_ --launch-count 3 "${S[@]}" "${T[@]}" --tier strided \
  > $R/ncu_step_strided.txt 2>&1
timeout 120 ncu --profile-from-start off --kernel-name regex:triton_ --launch-count 3 "${S[@]}" "${T[@]}" --impl compile \
  > $R/ncu_step_compile.txt 2>&1
timeout 110 python3 benchmarks/grid_row_probe.py --flush --tiers cluster --directions fwd --dtypes bf16,f32 \
  --shapes 2640x50264,2670x50264,2640x50257,2670x50257,1980x65536,2048x65536 --out $R/tail > $R/tail_probe.txt 2>&1
sed -n '/summary/,$p' $R/tail_probe.txt
timeout 200 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes view \
  --json $R/layouts_view_bf16.json > $R/layouts_view_bf16.txt 2>&1
sed -n '/^losses:/,$p' $R/layouts_view_bf16.txt
wait
ls -la /tmp/apart.aa > $R/kept.txt 2>&1
