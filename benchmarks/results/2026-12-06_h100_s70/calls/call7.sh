#!/usr/bin/env bash
# call 7 (a fresh machine, after the rules of calls 1, 4 and 6 landed): each new rule against the
# choice it replaced, forced tier alternated in one process behind an L2 flush
# (benchmarks/grid_row_probe.py): cluster_stream's CTAs an SM (the rule against one and two) on the
# shapes it moved and on two it was not measured on (float32 256 x 393216 both ways); strided_staged's
# staggered first wave (the rule against none); then the strided tier's waves for inputs that step
# along inner (2, 4 and 8; more than 2 only on GPUs of much DRAM bandwidth an SM), kernel by kernel,
# on the one layouts loss to torch.compile in call 3; the non-last-dim regime through "auto" beside
# torch.compile; the cluster_stream GPU tests within the call's limit
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c7; mkdir -p $R
trap 'tar czf $OUT/c7.tar.gz -C $OUT c7 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
S=cluster_stream; T="--tiers $S,$S:cluster_stream_per_sm=1,$S:cluster_stream_per_sm=2"
probe() { timeout $1 python3 benchmarks/grid_row_probe.py --quick --flush "${@:2}"; }
probe 60 --out $R/s1 $T --directions fwd --dtypes bf16 --shapes 191x699051,160x786432 > $R/stream_rule_bf16_fwd.txt 2>&1
probe 60 --out $R/s2 $T --directions fwd --dtypes f32 --shapes 256x524288,256x393216,160x786432 > $R/stream_rule_f32_fwd.txt 2>&1
probe 70 --out $R/s3 $T --directions bwd --dtypes bf16 --shapes 128x1048576,191x699051,160x786432 > $R/stream_rule_bf16_bwd.txt 2>&1
probe 70 --out $R/s4 $T --directions bwd --dtypes f32 --shapes 256x524288,256x393216 > $R/stream_rule_f32_bwd.txt 2>&1
probe 90 --out $R/s5 --tiers strided_staged,strided_staged:staged_stagger_us=0 --directions fwd,bwd --dtypes bf16,f32 \
  --shapes 1x8192x16384,32x4096x1024,1x65536x2048 > $R/staged_stagger_rule.txt 2>&1
for f in $R/stream_rule_*.txt $R/staged_stagger_rule.txt; do echo "== $(basename $f)"; sed -n '/==== summary/,$p' $f | cut -c1-250; done
timeout 150 python3 benchmarks/kernel_breakdown.py --directions backward \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1" \
  --tunings "tier=strided,strided_waves=2;tier=strided,strided_waves=4;tier=strided,strided_waves=8;tier=strided_staged" \
  > $R/stepped_waves.txt 2>&1
echo "waves rc $?"; grep "a call" $R/stepped_waves.txt | cut -c1-200
(( SECONDS < 470 )) && timeout $(( 560 - SECONDS )) python3 -m fastsoftmax bench --compile --backends auto --peers compile \
  --regimes non_last_dim --time-limit $(( 540 - SECONDS )) --out $R/nonlast > $R/bench_nonlast.log 2>&1
echo "non-last rc $?"; sed -n '/geomean/,/speed-up/p' $R/bench_nonlast.log | head -n 6
(( SECONDS < 540 )) && FASTSOFTMAX_TEST_LOG=$R/failures.txt timeout $(( 585 - SECONDS )) python3 -m pytest -q --tb=short -n 4 \
  tests/cuda/test_cluster_stream_gpu.py > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt 2>/dev/null)"
