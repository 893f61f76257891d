#!/usr/bin/env bash
# prepared for the next set (an H100): the one-team rule's GPU test through the public API (not yet run on
# a GPU), then what the rule leaves open, strided_staged against the strided tier, forced and alternated
# behind an L2 flush: 16-bit tiles streamed through one team (float16 and bf16; the rule keeps them
# staged, unmeasured), grids of three teams over wide-ish tiles (bf16 (32, 131072, 32) ran on the strided
# tier 0.596 against 0.561), float32 rows of 20-28 bytes one team would take (the rule keeps them
# staged, unmeasured), and the one-team backward (six measured in the seventy-fifth set, five ahead on
# the staged tiles)
source benchmarks/call_prelude.sh n1
timeout 90 python3 -m fastsoftmax compile --match '^fs_(staged|strided)' > $R/compile.txt 2>&1
timeout 90 python3 -m pytest -q --tb=short tests/cuda/test_strided_gpu.py -k "one_team" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"
timeout 100 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/streamed16 --directions fwd --dtypes bf16,f16 \
  --tiers strided_staged,strided --shapes 8x2097152x8,4x1048576x32,16x1048576x16,2x4194304x8 > $R/streamed16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/streamed16.txt | cut -c1-200
timeout 100 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/teams3 --directions fwd --dtypes bf16,f16 \
  --tiers strided_staged,strided --shapes 32x131072x32,16x131072x32,64x65536x32,32x262144x16,8x524288x8 > $R/teams3.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/teams3.txt | cut -c1-200
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/odd32 --directions fwd --dtypes f32 \
  --tiers strided_staged,strided --shapes 8x1048576x5,4x1048576x6,8x1048576x7 > $R/odd32.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/odd32.txt | cut -c1-200
timeout 100 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/bwd --directions bwd --dtypes bf16,f32 \
  --tiers strided_staged,strided --shapes 4x1048576x8,8x1048576x4,16x262144x8,32x131072x64,4x262144x32 > $R/bwd.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/bwd.txt | cut -c1-200
