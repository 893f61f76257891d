#!/usr/bin/env bash
# call 1: grid_row phases on the H200 beside the floor kernel; log-softmax backward over long axes, strided vs strided_staged; rows of 50257; decode cluster size; racecheck over strided_staged's tuned runs
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch,triton,cuda.core;print(torch.__version__,triton.__version__,cuda.core.__version__)" >> $R/device.txt
timeout 70 python3 benchmarks/grid_row_phases.py --shapes 1x4194304,1x16777216 --dtypes bf16,f32 > $R/phases.txt 2>&1
timeout 110 python3 benchmarks/grid_row_probe.py --directions logbwd,bwd --dtypes bf16,f32 --shapes 1x8192x8192,32x4096x1024,64x65536x16,8x150x16384 --tiers strided,strided_staged > $R/logbwd_strided.txt 2>&1
timeout 70 python3 benchmarks/grid_row_probe.py --directions fwd,bwd --dtypes bf16,f16 --shapes 2670x50257,2670x50256,2670x50264 --tiers cluster,cluster:cluster_packs=4,cluster:cluster_ctas=2 > $R/rows_50257.txt 2>&1
timeout 60 python3 benchmarks/grid_row_probe.py --flush --directions fwd,bwd --dtypes bf16,f16 --shapes 1x128256,8x128256,128x128256,32x151936 --tiers cluster,cluster:cluster_ctas=8 > $R/decode_ctas.txt 2>&1
export SANITIZE_TOOLS=racecheck SANITIZE_TIERS=strided_staged@1,strided_staged@2,strided_staged@3,strided_staged@4,strided_staged@5,strided_staged@6 SANITIZE_TIMEOUT=200 SANITIZE_JOBS=6
OUT=$R/san timeout 215 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# call 2: rows of 50257: the realign buffer's shared memory alone (A/B), Nsight Compute of the backward at 50257 and 50256; grid_row phases with the floor kernel
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
timeout 90 python3 scratch/s43/smem_ab.py --directions fwd,bwd --dtypes bf16 --shapes 2670x50257,2670x50256 --tiers cluster,cluster:cluster_threads=224 > $R/smem_ab.txt 2>&1
timeout 70 python3 benchmarks/grid_row_phases.py --shapes 1x4194304,1x16777216 --dtypes bf16,f32 > $R/phases.txt 2>&1
PROFILE_TARGETS="3 1 --shape 2670x50257 --dtype bf16 --backward --tier cluster;3 1 --shape 2670x50256 --dtype bf16 --backward --tier cluster" OUT=$R/ncu timeout 150 bash benchmarks/device_run.sh profile > $R/ncu.log 2>&1
#!/usr/bin/env bash
# call 3: rows of 50257 backward: rows on 16-byte boundaries at n = 50257 (pitch 50264) against the dense misaligned rows; Nsight Compute memory tables and source counters of both
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
trap 'tar czf $OUT/r3.tar.gz -C $OUT r3 && rm -rf $R' EXIT
timeout 90 python3 benchmarks/grid_row_probe.py --directions fwd,bwd --dtypes bf16 --shapes 2670x50257,2670x50257p50264,2670x50264,2670x50256p50257,1024x131071,1024x131072 --tiers cluster,cluster_stream > $R/pitch.txt 2>&1
export NCU_SECTIONS="SpeedOfLight MemoryWorkloadAnalysis_Tables SourceCounters InstructionStats WarpStateStats"
PROFILE_TARGETS="3 1 --shape 2670x50257 --dtype bf16 --backward --tier cluster;3 1 --shape 2670x50256 --dtype bf16 --backward --tier cluster" OUT=$R/ncu timeout 150 bash benchmarks/device_run.sh profile > $R/ncu.log 2>&1
#!/usr/bin/env bash
# call 4: cluster backward walked as the forward (straight-line whole slots, edges apart) with a 112-register cap at 64/32 elements, three ways in one process; GPU tests of the cluster tier; sanitizer over it
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r4; mkdir -p $R
trap 'tar czf $OUT/r4.tar.gz -C $OUT r4 && rm -rf $R' EXIT
K=fastsoftmax/backends/cuda/kernels
P="python3 benchmarks/grid_row_probe.py --tiers cluster,nocap/cluster,base/cluster --baseline base=scratch/s43/base_kernels --baseline nocap=$K"
for pre in base nocap; do P="$P --baseline-replace $pre|__maxnreg__(112)|__launch_bounds__(512)"; done
timeout 150 $P --directions bwd --dtypes bf16,f32 --shapes 2670x50257,2670x50264,2670x50257p50264,1024x131071,1024x131072,32x151936,8x128256,128x128256,4096x16383,4096x16384,64x262143,64x262144,2048x65535 > $R/bwd_ab.txt 2>&1
timeout 50 $P --directions logbwd --dtypes bf16,f16 --shapes 2670x50257,1024x131071,1024x131072,32x151936 > $R/logbwd_ab.txt 2>&1
timeout 160 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "cluster" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests_cluster.txt
export SANITIZE_TIERS=cluster SANITIZE_TIMEOUT=140 SANITIZE_JOBS=8
OUT=$R/san timeout 150 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# call 5: cluster backward: edges gathered after both tensors' whole loads (this tree) vs each tensor's edges placed as read (straight) vs the set's start (base); twice the cluster for rows whose edge slots add a warp; tests; sanitizer
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
trap 'tar czf $OUT/r5.tar.gz -C $OUT r5 && rm -rf $R' EXIT
P="python3 benchmarks/grid_row_probe.py --baseline base=scratch/s43/base_kernels --baseline straight=scratch/s43/straight_kernels"
T=cluster,straight/cluster,base/cluster
timeout 110 $P --tiers $T --directions bwd --dtypes bf16,f32 --shapes 2670x50257,2670x50264,2670x50257p50264,1024x131071,1024x131072,32x151936,8x128256,128x128256,4096x16383,2048x65535,1x128256 > $R/bwd_ab.txt 2>&1
timeout 35 $P --tiers $T --directions logbwd --dtypes bf16,f32 --shapes 2670x50257,1024x131071,32x151936 > $R/logbwd_ab.txt 2>&1
timeout 25 $P --tiers cluster,cluster:cluster_ctas=16 --directions bwd,fwd --dtypes bf16,f32 --shapes 1024x131071,1024x131072 > $R/ctas16.txt 2>&1
timeout 25 $P --tiers cluster,cluster:cluster_ctas=8 --directions bwd,fwd --dtypes bf16 --shapes 2048x65535,2048x65536,2670x50257 > $R/ctas8.txt 2>&1
timeout 25 $P --tiers cluster,cluster:cluster_ctas=4 --directions bwd,fwd --dtypes bf16 --shapes 4096x16383,4096x16384 > $R/ctas4.txt 2>&1
timeout 80 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "cluster" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 5 > $R/tests_cluster.txt
export SANITIZE_TIERS=cluster SANITIZE_TIMEOUT=90 SANITIZE_JOBS=8
OUT=$R/san timeout 100 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# call 6: the landed form (float32 edges gathered, 16-bit placed as read; twice the cluster for misaligned 16-bit backward rows from 4 CTAs) against the set's start; GPU tests; racecheck over the cluster tier
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r6; mkdir -p $R
trap 'tar czf $OUT/r6.tar.gz -C $OUT r6 && rm -rf $R' EXIT
P="python3 benchmarks/grid_row_probe.py --baseline base=scratch/s43/base_kernels"
timeout 70 $P --tiers cluster,base/cluster --directions bwd --dtypes bf16,f32 --shapes 2670x50257,2670x50264,1024x131071,1024x131072,2048x65535,32x151936,128x128256,4096x16383 > $R/final_ab.txt 2>&1
timeout 25 $P --tiers cluster,base/cluster:cluster_ctas=4 --directions bwd --dtypes bf16 --shapes 2670x50257,2048x65535 > $R/final_vs_start_4.txt 2>&1
timeout 60 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "cluster" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 5 > $R/tests_cluster.txt
export SANITIZE_TOOLS="racecheck memcheck" SANITIZE_TIERS=cluster SANITIZE_TIMEOUT=110 SANITIZE_JOBS=8
OUT=$R/san timeout 115 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
