#!/usr/bin/env bash
# call 1: the cluster backward of rows whose tensors share their offsets (whole packs, ends apart) against the cut at 16-byte boundaries; cluster sizes for it; GPU tests of the cluster tier; sanitizer; grid_row's cp.async groups interleaved with their reduction (prepared last set)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
cp .peerA1/apart.aa /tmp/ &
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch,triton,cuda.core;print(torch.__version__,triton.__version__,cuda.core.__version__)" >> $R/device.txt
P="python3 benchmarks/grid_row_probe.py"
T=cluster,cluster:cluster_alike=False
timeout 140 $P --tiers $T --directions bwd --dtypes bf16,f32 --shapes 2670x50257,2670x50257p50264,2670x50264,1024x131071,1024x131072,2048x65535,4096x16383,32x151936,128x128256,64x262143,8x128256 > $R/alike_bwd_ab.txt 2>&1
timeout 50 $P --tiers $T --directions logbwd --dtypes bf16,f16,f32 --shapes 2670x50257,1024x131071,2048x65535 > $R/alike_logbwd_ab.txt 2>&1
timeout 45 $P --tiers cluster,cluster:cluster_ctas=8,cluster:cluster_ctas=2 --directions bwd --dtypes bf16 --shapes 2670x50257,2048x65535 > $R/alike_ctas.txt 2>&1
timeout 25 $P --tiers cluster,cluster:cluster_ctas=16 --directions bwd --dtypes bf16 --shapes 1024x131071 >> $R/alike_ctas.txt 2>&1
timeout 120 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "cluster" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests_cluster.txt
mkdir -p /tmp/inter && cp -r fastsoftmax/backends/cuda/kernels /tmp/inter/ && patch -p1 -d /tmp/inter/kernels < benchmarks/results/2026-12-02_h200_s43/grid_row_interleaved_groups.patch > /dev/null
timeout 55 $P --flush --directions fwd,log --dtypes bf16,f32 --shapes 1x16777216,1x4194304,1x67108864,4x4194304 --tiers grid_row,inter/grid_row --baseline inter=/tmp/inter/kernels > $R/grid_row_interleaved.txt 2>&1
export SANITIZE_TIERS=cluster@0,cluster@1 SANITIZE_TIMEOUT=110 SANITIZE_JOBS=8
OUT=$R/san timeout 120 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
wait
#!/usr/bin/env bash
# call 2: the cluster forward of rows whose tensors share their offsets (whole packs, ends apart) against the cut at 16-byte boundaries; the backward again; GPU tests of the cluster and grid_row tiers; sanitizer over both
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
cp .peerA1/apart.aa /tmp/ &
P="python3 benchmarks/grid_row_probe.py"
T=cluster,cluster:cluster_alike=False
timeout 110 $P --tiers $T --directions fwd,log --dtypes bf16,f32 --shapes 2670x50257,2670x50257p50264,1024x131071,2048x65535,4096x16383,32x151936p151937,128x128255,64x262143,8x128255,256x524287 > $R/alike_fwd_ab.txt 2>&1
timeout 50 $P --tiers $T --directions bwd,logbwd --dtypes bf16,f32 --shapes 2670x50257,1024x131071,64x262143,8x128255 > $R/alike_bwd_ab.txt 2>&1
timeout 30 $P --tiers cluster,cluster:cluster_ctas=8 --directions bwd,fwd --dtypes bf16,f32 --shapes 2670x50257,2670x50264 > $R/ctas_50k.txt 2>&1
timeout 150 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "cluster or grid_row" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
export SANITIZE_TIERS=cluster@0,cluster@1,grid_row SANITIZE_TIMEOUT=140 SANITIZE_JOBS=12
OUT=$R/san timeout 150 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
wait
#!/usr/bin/env bash
# call 3: the landed rule (whole packs for the 16-bit backward, elsewhere where the boundary cut launches larger; the forward's row end read again after the exchange, caps without spills) against both cuts forced; GPU tests; sanitizer over grid_row (interleaved groups) and the cluster tier
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
trap 'tar czf $OUT/r3.tar.gz -C $OUT r3 && rm -rf $R' EXIT
P="python3 benchmarks/grid_row_probe.py"
T=cluster,cluster:cluster_alike=True,cluster:cluster_alike=False
timeout 100 $P --tiers $T --directions fwd,bwd --dtypes bf16,f32 --shapes 2670x50257,1024x131071,2048x65535,4096x16383,32x151936p151937,128x128255,64x262143,256x524287 > $R/rule_ab.txt 2>&1
timeout 25 $P --tiers $T --directions log,logbwd --dtypes bf16,f32 --shapes 2670x50257,1024x131071 > $R/rule_log_ab.txt 2>&1
export SANITIZE_TIERS=grid_row,cluster@0,cluster@1 SANITIZE_TIMEOUT=270 SANITIZE_JOBS=12
OUT=$R/san timeout 280 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
timeout 100 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "cluster or grid_row" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
wait
#!/usr/bin/env bash
# call 4: GPU tests of the landed cluster form and grid_row; cluster_stream's forward with its cp.async groups one by one (baseline edit) against all four first (this tree)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r4; mkdir -p $R
trap 'tar czf $OUT/r4.tar.gz -C $OUT r4 && rm -rf $R' EXIT
K=fastsoftmax/backends/cuda/kernels
timeout 45 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "whole_packs or partial_slots or grid_row or cluster_rows" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
timeout 35 python3 benchmarks/grid_row_probe.py --tiers cluster_stream,onebyone/cluster_stream --baseline onebyone=$K --baseline-replace "onebyone|kGroupsOneByOne = false|kGroupsOneByOne = true" --directions fwd --dtypes bf16,f32 --shapes 191x699051,128x1048576 > $R/cluster_stream_groups_ab.txt 2>&1
