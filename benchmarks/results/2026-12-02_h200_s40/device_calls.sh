#!/usr/bin/env bash
# call 1: first part of peer part A, the kernel cache, the pending GPU tests
set -u
cp .peerA1/apart.aa /tmp/
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r1; mkdir -p $R
trap 'tar czf $OUT/r1.tar.gz -C $OUT r1 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $R/device.txt
python3 -c "import torch,triton,cuda.core;print(torch.__version__,triton.__version__,cuda.core.__version__)" >> $R/device.txt
( time python3 -m fastsoftmax compile ) 2>&1 | tail -n 5 > $R/compile.txt
timeout 150 python3 -m pytest tests/cuda/test_strided_gpu.py -k "sees_the_function or stepped" -q -n 8 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests_stepped.txt
#!/usr/bin/env bash
# call 2: peer part A whole, the last set's pending probes and sanitizer run
set -u
cp .peerA2/apart.a* /tmp/ && cat /tmp/apart.aa /tmp/apart.ab /tmp/apart.ac > /tmp/a.tar.xz && mkdir -p /tmp/site && tar xJf /tmp/a.tar.xz -C /tmp/site
ls /tmp/site | head -3
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
timeout 120 python3 benchmarks/step_span_probe.py --short --log --dtypes bfloat16 --rounds 2 > $R/step_span_log_bf16.txt 2>&1
timeout 150 python3 -m fastsoftmax.benchmark.layouts --backward --log --dtypes bfloat16 --classes view,small_inner --json $R/layouts_log_bf16.json > $R/layouts_log_bf16.txt 2>&1
export SANITIZE_TIERS=strided_warp SANITIZE_TIMEOUT=120 SANITIZE_JOBS=4
OUT=$R/san bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1
#!/usr/bin/env bash
# call 3: peer part B, then the main benchmark's row regimes with Quack and Liger in the same run
set -u
ls /tmp/site | head -3
mkdir -p /tmp/site && tar xJf .peerB/b.tar.xz -C /tmp/site && export FASTSOFTMAX_PEER_SITE=/tmp/site
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
python3 -m fastsoftmax bench --no-compile --backends auto --peers quack,liger \
    --regimes bulk,decode,huge,backward,host --time-limit 470 --out $OUT 2>&1 | tail -n 150 > $OUT/bench.log
ls $OUT
#!/usr/bin/env bash
# call 4: the row shapes the H200 run found behind Quack, their tiers and tunings alternated in one process
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r4; mkdir -p $R
trap 'tar czf $OUT/r4.tar.gz -C $OUT r4 && rm -rf $R' EXIT
P="timeout 110 python3 benchmarks/grid_row_probe.py --directions fwd"
$P --dtypes bf16 --shapes 8192x16384,4096x32768 --tiers cluster,cluster:cluster_ctas=4,cluster:cluster_threads=512,cluster:cluster_threads=128,block_regs,block_smem > $R/rows_16k.txt 2>&1
$P --dtypes bf16 --shapes 44739x3000,65536x2048 --tiers block_regs,block_regs:block_regs_elems=8,block_regs:block_regs_elems=16,cluster,cluster:cluster_threads=256,cluster:cluster_ctas=4,block_smem > $R/rows_3k.txt 2>&1
$P --dtypes bf16 --shapes 2670x50257 --tiers cluster,cluster:cluster_ctas=8,cluster:cluster_threads=448,cluster:cluster_ctas=2,cluster_stream > $R/rows_50257.txt 2>&1
$P --dtypes f32 --shapes 1342177x100,1398101x96 --tiers warp,flat_rows,block_regs > $R/rows_f32_100.txt 2>&1
$P --dtypes bf16 --shapes 32x151936,8x128256 --tiers cluster,cluster:cluster_threads=320,cluster:cluster_threads=512,cluster:cluster_ctas=8,cluster:cluster_kept=True > $R/decode.txt 2>&1
#!/usr/bin/env bash
# call 5: sweeps behind the H200 rules: the cluster tier's packs a thread (K), flat_rows against the
# warp tier past 96 columns, block_regs' elements a thread
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r5; mkdir -p $R
trap 'tar czf $OUT/r5.tar.gz -C $OUT r5 && rm -rf $R' EXIT
P="timeout 100 python3 benchmarks/grid_row_probe.py"
K="cluster,cluster:cluster_packs=4,cluster:cluster_packs=8,cluster:cluster_packs=16"
$P --directions fwd --dtypes bf16 --shapes 6553x10240,5461x12288,4096x16384,3276x20480,2730x24576,2048x32768,1335x50257,1024x65536,523x128256 --tiers $K > $R/cluster_k_bf16_fwd.txt 2>&1
$P --directions fwd --dtypes f32 --shapes 5461x12288,4096x16384,2048x32768,1024x65536,523x128256,256x262144 --tiers $K > $R/cluster_k_f32_fwd.txt 2>&1
$P --directions bwd --dtypes bf16,f32 --shapes 4096x16384,2048x32768,1024x65536,512x131072,256x262144 --tiers cluster,cluster:cluster_packs=2,cluster:cluster_packs=4,cluster:cluster_packs=8 > $R/cluster_k_bwd.txt 2>&1
$P --directions fwd,bwd --dtypes bf16,f32 --shapes 699050x96,671088x100,599186x112,528416x127,524288x128,419430x160,349525x192,335544x200,263172x255,262144x256 --tiers warp,flat_rows > $R/narrow.txt 2>&1
$P --directions fwd --dtypes bf16 --shapes 32768x2048,22369x3000,16384x4096,10922x6144,8192x8192 --tiers block_regs,block_regs:block_regs_elems=16,block_regs:block_regs_elems=32,block_regs:block_regs_elems=64,cluster:cluster_packs=2 > $R/block_regs_elems.txt 2>&1
#!/usr/bin/env bash
# call 6: the new row rules through "auto", and the GPU tests that cover them
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r6; mkdir -p $R
trap 'tar czf $OUT/r6.tar.gz -C $OUT r6 && rm -rf $R' EXIT
timeout 200 python3 -m pytest tests/cuda/test_cuda_gpu.py tests/cuda/test_strided_gpu.py -k "hold_as_the_device_rule or sees_the_function or cluster or flat_rows" -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
timeout 150 python3 -m fastsoftmax bench --no-peers --backends auto --dtypes bf16,fp32 --directions forward \
    --shapes 8192x16384,10922x12288,13107x10240,1342177x100,1056832x127,1198372x112 --out $R > $R/bench_fwd.log 2>&1
timeout 100 python3 -m fastsoftmax bench --no-peers --backends auto --dtypes bf16 --directions backward \
    --shapes 671088x200,526344x255,699050x192 --out $R > $R/bench_bwd.log 2>&1
P="timeout 60 python3 benchmarks/grid_row_probe.py --directions fwd"
$P --dtypes bf16 --shapes 8192x16384,10922x12288,2048x32768 --tiers cluster,cluster:cluster_packs=4,cluster:cluster_packs=8 > $R/cluster_k_ab_again.txt 2>&1
#!/usr/bin/env bash
# call 7: the backend preference on the H200's bulk rows (table, cuda, triton alternated in one process)
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
timeout 170 python3 benchmarks/backend_preference_probe.py "65536x2048:bfloat16:fwd;44739x3000:bfloat16:fwd;32768x4096:bfloat16:fwd;16384x8192:bfloat16:fwd;131072x1024:bfloat16:fwd;262144x512:bfloat16:fwd;44739x3000:float16:fwd;65536x2048:bfloat16:bwd;44739x3000:bfloat16:bwd;32768x4096:bfloat16:bwd;44739x3000:float32:fwd;65536x2048:float32:fwd" 2>&1 | grep -v -i warn > $OUT/backend_preference_rows.txt
