#!/usr/bin/env bash
# prepared for the next set (not run): (1) compute-sanitizer's four
# tools over the strided tier's partials-only kernels (sanitize.py strided@3: the tuned run that
# forces them); (2) kernel by kernel, the float32 log-softmax backward with its partials stage on
# them against the two-stage kernel and the staged tiles over every dense and stepped long axis
# (call 12 found (8192, 8192).t() over dim 1 268.7 -> 253.7 us on the strided tier, auto's staged
# tiles 265.7, torch.compile 250-251; (65536, 2048) over dim 0 500.3 -> 494.5), and the other walks
# (forward, softmax backward) on the long axes
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/n1; mkdir -p $R/san
trap 'tar czf $OUT/n1.tar.gz -C $OUT n1 && rm -rf $R' EXIT
for tool in memcheck racecheck initcheck synccheck; do
  timeout 80 compute-sanitizer --tool $tool --report-api-errors no --print-limit 20 \
    python3 benchmarks/sanitize.py --tiers strided@3 > $R/san/$tool.txt 2>&1
  echo "$tool rc $?"; tail -n 2 $R/san/$tool.txt
done
cd benchmarks
S="tier=strided"
T="$S;$S,strided_partials_kernel=True;tier=strided_staged"
timeout 150 python3 kernel_breakdown.py --log --dtypes float32 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(8192,16384) d0;(1048576,128) d0;expand(1,4096,4096) d1;(8192,8192)[:, ::2] d0;(8192,8192)[::2] d0;(32,4096,1024) d1;(128,1024,1024) d1" \
  > $R/partials_log_backward_f32.txt 2>&1
grep "a call\|Error" $R/partials_log_backward_f32.txt
T="$S;$S,strided_partials_kernel=True"
timeout 150 python3 kernel_breakdown.py --no-compile --dtypes bfloat16,float32 --directions forward,backward --tunings "$T" \
  --cases "(8192,16384) d0;(8192,8192).t() d1;(8192,8192)[:, ::2] d0;(65536,2048) d0" > $R/partials_other_walks.txt 2>&1
grep "a call\|Error" $R/partials_other_walks.txt
# (3) the bf16 column sums of dy in Inductor's shape (c6/: 16 contiguous chunks, 128-byte rows of a
# tile) on the partials-only kernel, which alone did not move the pass (c12/)
P="$S,strided_partials_kernel=True"
T="$P;$P,strided_row_bytes=128;$P,strided_splits=16,strided_interleaved=False;$P,strided_row_bytes=128,strided_splits=16,strided_interleaved=False;$P,strided_row_bytes=256"
timeout 100 python3 kernel_breakdown.py --log --dtypes bfloat16 --directions backward --tunings "$T" \
  --cases "(8192,8192).t() d1;(8192,16384) d0" > $R/partials_shapes_bf16.txt 2>&1
grep "a call\|Error" $R/partials_shapes_bf16.txt
