#!/usr/bin/env bash
# call 1: kernel cache; dy-first A/B (strided_staged log-softmax backward); huge rows by direction with the timer's flush; grid_row phases on the H200; ncu of window rows
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch,triton,cuda.core;print(torch.__version__,triton.__version__,cuda.core.__version__)" >> $R/device.txt
( time python3 -m fastsoftmax compile ) 2>&1 | tail -n 5 > $R/compile.txt
mkdir -p /tmp/dyfirst && cp -r fastsoftmax/backends/cuda/kernels /tmp/dyfirst/ && patch -p1 -d /tmp/dyfirst/kernels < benchmarks/results/2026-12-02_h200_s41/staged_log_dy_first.patch > $R/patch.txt 2>&1
timeout 150 python3 benchmarks/grid_row_probe.py --directions logbwd,bwd --dtypes bf16,f32 --shapes 1x8192x8192,32x4096x1024,8x150x16384,128x16384x32,64x65536x16 \
  --tiers strided_staged,dyfirst/strided_staged --baseline dyfirst=/tmp/dyfirst/kernels > $R/dyfirst_ab.txt 2>&1
timeout 80 python3 benchmarks/grid_row_probe.py --flush --directions fwd,log,bwd --dtypes bf16,f32 --shapes 1x16777216,1x4194304 --tiers grid_row > $R/huge_directions.txt 2>&1
timeout 100 python3 benchmarks/grid_row_probe.py --flush --directions fwd,bwd --dtypes bf16,f32 --shapes 1x16777216,1x4194304,1x67108864 --tiers grid_row,evict/grid_row --baseline evict=scratch/s42/evict/kernels > $R/evict_first_flush.txt 2>&1
timeout 60 python3 benchmarks/grid_row_probe.py --directions fwd --dtypes bf16,f32 --shapes 1x16777216 --tiers grid_row,evict/grid_row --baseline evict=scratch/s42/evict/kernels > $R/evict_first_noflush.txt 2>&1
timeout 60 python3 benchmarks/grid_row_phases.py --shapes 1x4194304,1x16777216 --dtypes bf16,f32 > $R/phases.txt 2>&1
PROFILE_TARGETS="2 1 --shape 22000x3001 --dtype bf16;2 1 --shape 22000x3000 --dtype bf16" OUT=$R/ncu timeout 120 bash benchmarks/device_run.sh profile > $R/ncu.log 2>&1
#!/usr/bin/env bash
# call 2: block_regs windows (one test a pack, edges after the loop) and the backward's 0 padding, A/B against the previous kernels; GPU tests of block_regs and the strided tiers (dy-first); sanitizer of strided_staged
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
P="python3 benchmarks/grid_row_probe.py --tiers block_regs,base/block_regs --baseline base=scratch/s42/base/kernels"
timeout 170 $P --directions fwd,log,bwd,logbwd --dtypes bf16,f16 --shapes 22000x3001,13421x5001,8193x8191,26843x2500,32768x2047,2048x32001,65000x1025,44739x3000,16384x8192 > $R/window_ab.txt 2>&1
timeout 60 $P --directions fwd,bwd --dtypes f32 --shapes 22000x3001,8193x8191,44739x3000 > $R/window_ab_f32.txt 2>&1
timeout 150 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "block_regs or window or short_rows" -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests_block_regs.txt
timeout 150 python3 -m pytest tests/cuda/test_strided_gpu.py -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests_strided.txt
export SANITIZE_TIERS=strided_staged SANITIZE_TIMEOUT=100 SANITIZE_JOBS=8
OUT=$R/san timeout 120 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# call 3: block_regs windows again (dy misaligned otherwise than y now element by element; register caps at 16 elements a thread), three ways in one process; GPU tests; sanitizer over block_regs' window runs
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r3; mkdir -p $R
trap 'tar czf $OUT/r3.tar.gz -C $OUT r3 && rm -rf $R' EXIT
K=fastsoftmax/backends/cuda/kernels
P="python3 benchmarks/grid_row_probe.py --tiers block_regs,nocap/block_regs,base/block_regs --baseline base=scratch/s42/base/kernels --baseline nocap=$K"
for pre in base nocap; do for c in 56 40; do P="$P --baseline-replace $pre|__maxnreg__($c)|__launch_bounds__(1024)"; done; done
timeout 150 $P --directions fwd,bwd,logbwd --dtypes bf16,f16 --shapes 22000x3001,8193x8191,26843x2500,32768x2047,65000x1025,65536x2048,16384x8192,32768x4096 > $R/window_ab.txt 2>&1
timeout 100 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "block_regs or window or short_rows or row_pitch" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests_block_regs.txt
export SANITIZE_TOOLS="memcheck racecheck" SANITIZE_TIERS=block_regs@1,block_regs@5 SANITIZE_TIMEOUT=90 SANITIZE_JOBS=4
OUT=$R/san timeout 100 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# peer call A: Quack's first part; compute-sanitizer's four tools over strided_staged (the dy-first log-softmax backward)
set -u
cp .peerA1/apart.aa /tmp/
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/ra; mkdir -p $R
trap 'tar czf $OUT/ra.tar.gz -C $OUT ra && rm -rf $R' EXIT
export SANITIZE_TIERS=strided_staged SANITIZE_TIMEOUT=170 SANITIZE_JOBS=8
OUT=$R/san timeout 185 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# peer call B: Quack's first part whole; initcheck and synccheck over block_regs' window and raw runs
set -u
cp .peerA2/apart.ab /tmp/ && cat /tmp/apart.aa /tmp/apart.ab > /tmp/a.tar.xz && mkdir -p /tmp/site && tar xJf /tmp/a.tar.xz -C /tmp/site
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/rb; mkdir -p $R
trap 'tar czf $OUT/rb.tar.gz -C $OUT rb && rm -rf $R' EXIT
ls /tmp/site > $R/site.txt
export SANITIZE_TOOLS="initcheck synccheck" SANITIZE_TIERS=block_regs@1,block_regs@5 SANITIZE_TIMEOUT=80 SANITIZE_JOBS=4
OUT=$R/san timeout 95 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# peer call C: Quack's second part; the decode launches alternated with Quack behind the timer's L2 zeroing; the main benchmark's row regimes through auto with Quack and Liger
set -u
mkdir -p /tmp/site && tar xJf .peerB/b.tar.xz -C /tmp/site && export FASTSOFTMAX_PEER_SITE=/tmp/site
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 70 python3 benchmarks/grid_row_probe.py --flush --directions fwd,bwd --dtypes bf16,f32 --shapes 32x151936,8x128256,128x128256,1x128256 \
  --tiers cluster,cluster:cluster_packs=4,cluster:cluster_threads=256,quack > $OUT/decode_flush.txt 2>&1
timeout 30 python3 benchmarks/grid_row_probe.py --directions fwd --dtypes bf16 --shapes 32x151936,128x128256,1x128256 --tiers cluster,quack > $OUT/decode_noflush.txt 2>&1
python3 -m fastsoftmax bench --no-compile --backends auto --peers quack,liger \
    --regimes bulk,decode,huge,backward --time-limit 260 --out $OUT 2>&1 | tail -n 200 > $OUT/bench.log
ls $OUT
#!/usr/bin/env bash
# call 4: 16-bit rows off 16-byte boundaries through "auto" and both kernel backends, forward and backward, after the window change
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 200 python3 -m fastsoftmax bench --no-peers --backends auto,cuda,triton --dtypes bf16,fp16 --directions forward,backward \
    --shapes 22000x3001,13421x5001,8193x8191,26843x2500,32768x2047,2048x32001,65000x1025 --out $OUT > $OUT/bench_window.log 2>&1
ls $OUT
