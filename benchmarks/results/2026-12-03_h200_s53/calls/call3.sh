#!/usr/bin/env bash
# call 3 (carries .peerA1; calls 3-6 back to back carry the peers' archive for call 6's main run): a
# forced tier's host time a call beside auto's (dispatch.forced builds its plan every call: call 2's
# wall-clock A/B of forced tiers on the 170-us (8192, 8192)[:, ::2] backward may have timed the
# host), then the stepped cases kernel by kernel (the profiler's GPU time) under the strided tier,
# the staged spans, auto and torch.compile, bf16 both directions
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
cp .peerA1/apart.aa /tmp/ &
timeout 100 python3 benchmarks/forced_host_probe.py --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1" \
  --tiers strided,strided_staged > $R/forced_host.txt 2>&1
grep -v Warn $R/forced_host.txt | grep "a call"
timeout 200 python3 benchmarks/kernel_breakdown.py --dtypes bfloat16 --directions forward,backward \
  --cases "(8192,8192)[:, ::2] d0;(32,4096,2048)[..., ::2] d1;(2048,128,2048)[..., ::2] d1;(128,1024,1024)[..., ::2] d1" \
  --tunings "tier=strided;tier=strided_staged" > $R/breakdown_stepped.txt 2>&1
grep "a call" $R/breakdown_stepped.txt
wait
ls -la /tmp/apart.aa > $R/kept.txt 2>&1
