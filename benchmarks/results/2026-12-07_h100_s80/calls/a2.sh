#!/usr/bin/env bash
# The cluster tier's row exchange, three edits of this tree's kernels (compiler.KernelVariant, in copies), each
# alternated with the kernels as they are ("cluster") in one process behind an L2 flush:
#   hint/  its waiting warps suspended on the mbarrier (try_wait's time hint, as Quack's wait) rather than polling
#          (the edit reaches the column kernels' waits too, which these rows do not run; the patch, the row
#          exchange's only)
#   both/  the hint, and 33-64 posts merged two a lane (bf16 rows of 128256 take 8 warps x 8 CTAs: 64 posts) rather
#          than in merge_posts' eight rounds (the source edit of both: cluster_exchange.patch here)
#   a128/  each CTA's slice cut at 128-byte lines of the row rather than 16-byte packs (the odd CTAs of bf16 rows of
#          128256 start 64 bytes into a line); the host still sizes slots for 16-byte cuts, so a row whose slices
#          would then need more fails the probe's check
source benchmarks/call_prelude.sh a2
K=fastsoftmax/backends/cuda/kernels
WAIT="b64 p, [%1], %2;|b64 p, [%1], %2, 10000000;"
MERGE="    float pm[kMost], ps[kMost];|    if (count <= 64) { const unsigned long long empty = (unsigned long long)__float_as_uint(neg_inf()); const unsigned long long a = lane < count ? posts[lane] : empty; const unsigned long long b = lane + 32 < count ? posts[lane + 32] : empty; const float am = __uint_as_float((unsigned)a), as = __uint_as_float((unsigned)(a >> 32)); const float bm = __uint_as_float((unsigned)b), bs = __uint_as_float((unsigned)(b >> 32)); const float m = group_max<32>(fmaxf(am, bm)); return MaxSum{m, group_sum<32>(rescaled_sum(am, as, m) + rescaled_sum(bm, bs, m))}; } float pm[kMost], ps[kMost];"
CUT="const i64 c = chunk(n + shift, ctas, unit);|const i64 c = chunk(n + shift, ctas, unit == P ? 8 * P : unit);"
probe() {  # NAME SECONDS TIERS ARGS...
  timeout $2 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/$1 --tiers $3 \
    --baseline hint=$K --baseline both=$K --baseline a128=$K --baseline-replace "hint|$WAIT" \
    --baseline-replace "both|$WAIT" --baseline-replace "both|$MERGE" --baseline-replace "a128|$CUT" \
    "${@:4}" > $R/$1.txt 2>&1
  echo "$1 rc $? at $SECONDS s"; sed -n '/==== summary/,$p' $R/$1.txt | cut -c1-220
}
probe fwd 200 cluster,hint/cluster,both/cluster,a128/cluster --dtypes bf16 --directions fwd \
  --shapes 1046x128256,1024x131072,8x128256,2670x50257
probe bwd 90 cluster,hint/cluster --dtypes bf16 --directions bwd --shapes 1024x131072,64x131072
