#!/usr/bin/env bash
# call 1: the kernel cache, the H200 dispatch table, the block_regs_waves question, its test and sanitizer run
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch,triton,cuda.core;print(torch.__version__,triton.__version__,cuda.core.__version__)" >> $R/device.txt
( time python3 -m fastsoftmax compile ) 2>&1 | tail -n 5 > $R/compile.txt
( time timeout 200 python3 -m fastsoftmax bench table --table-out device --out $R ) > $R/table.log 2>&1
cp fastsoftmax/dispatch_table_nvidia-h200.json $R/ 2>/dev/null
timeout 110 python3 benchmarks/grid_row_probe.py --directions fwd,bwd --dtypes bf16 --shapes 44739x3000,65536x2048,32768x4096 \
  --tiers block_regs,block_regs:block_regs_waves=1,block_regs:block_regs_waves=2,block_regs:block_regs_waves=4 > $R/waves.txt 2>&1
timeout 60 python3 -m pytest tests/cuda/test_cuda_gpu.py -k in_turn -q -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 8 > $R/tests_in_turn.txt
export SANITIZE_TIERS=block_regs SANITIZE_TIMEOUT=110 SANITIZE_JOBS=4
OUT=$R/san bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# peer call 1: Quack's first part; kernel cache; block_regs short-row storages probe; racecheck of block_regs in parts
set -u
cp .peerA1/apart.aa /tmp/
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/ra; mkdir -p $R
trap 'tar czf $OUT/ra.tar.gz -C $OUT ra && rm -rf $R' EXIT
( time python3 -m fastsoftmax compile ) 2>&1 | tail -n 5 > $R/compile.txt
S="block_regs,block_regs:short_row_storage_16bit='staged',block_regs:short_row_storage_16bit='raw',block_regs:block_regs_elems=16:short_row_storage_16bit='staged',block_regs:block_regs_elems=64"
timeout 150 python3 benchmarks/grid_row_probe.py --directions fwd --dtypes bf16 --shapes 44739x3000,65536x2048,32768x4096,16384x8192,26843x2500 --tiers "$S" > $R/short_storage.txt 2>&1
export SANITIZE_TOOLS=racecheck SANITIZE_TIERS=block_regs@0,block_regs@1,block_regs@2,block_regs@3,block_regs@4,block_regs@5 SANITIZE_TIMEOUT=240 SANITIZE_JOBS=6
OUT=$R/san bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# peer call 2: Quack's first part whole; GPU tests of the new tuning; other sanitizer tools on the new parts; ncu of block_regs at 3000
set -u
cp .peerA2/apart.ab /tmp/ && cat /tmp/apart.aa /tmp/apart.ab > /tmp/a.tar.xz && mkdir -p /tmp/site && tar xJf /tmp/a.tar.xz -C /tmp/site
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/rb; mkdir -p $R
trap 'tar czf $OUT/rb.tar.gz -C $OUT rb && rm -rf $R' EXIT
ls /tmp/site > $R/site.txt
timeout 150 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "short_rows_held or in_turn or block_regs_every or public_api_around" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
export SANITIZE_TOOLS="memcheck initcheck synccheck" SANITIZE_TIERS=block_regs@4,block_regs@5 SANITIZE_TIMEOUT=150 SANITIZE_JOBS=6
OUT=$R/san bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
PROFILE_TARGETS="2 1 --shape 44739x3000 --dtype bf16;2 1 --shape 44739x3000 --dtype bf16 --tier block_regs --tuned short_row_storage_16bit=staged" \
  OUT=$R/ncu timeout 150 bash benchmarks/device_run.sh profile > $R/ncu.log 2>&1
#!/usr/bin/env bash
# peer call 3: Quack's second part; the main benchmark's row regimes, auto and both kernel backends, with Quack and Liger; ncu of Quack at 3000
set -u
mkdir -p /tmp/site && tar xJf .peerB/b.tar.xz -C /tmp/site && export FASTSOFTMAX_PEER_SITE=/tmp/site
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -m fastsoftmax bench --no-compile --backends auto,cuda,triton --peers quack,liger \
    --regimes bulk,decode,huge,backward,host --time-limit 420 --out $OUT 2>&1 | tail -n 200 > $OUT/bench.log
PROFILE_TARGETS="2 1 --shape 44739x3000 --dtype bf16 --impl quack" NCU_KERNEL="regex:(?i)softmax" \
  OUT=$OUT/ncuq timeout 100 bash benchmarks/device_run.sh profile > $OUT/ncuq.log 2>&1
ls $OUT
#!/usr/bin/env bash
# call D: the raw short-row rule checked: storages alternated (both 16-bit types, softmax and log-softmax), auto after, GPU tests, sanitizer over block_regs' default problems
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/rd; mkdir -p $R
trap 'tar czf $OUT/rd.tar.gz -C $OUT rd && rm -rf $R' EXIT
timeout 130 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "short_rows_held or in_turn or block_regs" -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
timeout 120 python3 benchmarks/grid_row_probe.py --directions fwd,log --dtypes bf16,f16 --shapes 44739x3000,32768x4096,16384x8192,22369x6000,26843x2500,30000x3001 \
  --tiers "block_regs:short_row_storage_16bit='float',block_regs" > $R/short_storage_check.txt 2>&1
timeout 100 python3 -m fastsoftmax bench --no-peers --backends auto,cuda,triton --dtypes bf16,fp16 --directions forward \
    --shapes 44739x3000,65536x2048,32768x4096,16384x8192,1398101x96,26843x2500 --out $R > $R/bench_after.log 2>&1
export SANITIZE_TIERS=block_regs@0 SANITIZE_TIMEOUT=200 SANITIZE_JOBS=4
OUT=$R/san timeout 230 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# call E: rows held in their window (16 elements a thread) under the raw rule, and the cluster tier's kept exponentials against its raw form
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/re; mkdir -p $R
trap 'tar czf $OUT/re.tar.gz -C $OUT re && rm -rf $R' EXIT
P="timeout 110 python3 benchmarks/grid_row_probe.py"
$P --directions fwd,log --dtypes bf16 --shapes 26843x2500,30000x3001,13421x5001,8193x8191,65000x1025 \
  --tiers block_regs,block_regs:block_regs_elems=32,block_regs:block_regs_elems=8 > $R/window_elems.txt 2>&1
$P --directions fwd --dtypes bf16,f16 --shapes 8192x16384,5461x12288,2670x50257,1024x65536,523x128256,4096x32768 \
  --tiers cluster,cluster:cluster_kept=True,cluster:cluster_kept=False > $R/cluster_kept.txt 2>&1
#!/usr/bin/env bash
# call F: the window rule through the CUDA backend's own choice, against both element counts forced; GPU tests of block_regs
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/rf; mkdir -p $R
trap 'tar czf $OUT/rf.tar.gz -C $OUT rf && rm -rf $R' EXIT
timeout 100 python3 benchmarks/grid_row_probe.py --directions fwd,log --dtypes bf16,f16 --shapes 47000x1500,32000x2047,26843x2500,22000x3001,16000x4001,13421x5001,11000x6001,8193x8191 \
  --tiers block_regs,block_regs:block_regs_elems=16,block_regs:block_regs_elems=32 > $R/window_rule.txt 2>&1
timeout 100 python3 -m pytest tests/cuda/test_cuda_gpu.py -k "block_regs or window or short_rows" -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 6 > $R/tests.txt
