#!/usr/bin/env bash
# Prepared for the next set. Triton's strided tiles with the reduced axis' length compiled in (TILE_FIXED_N,
# off): its GPU test and memcheck over the tile forms with it on, then kernel by kernel beside torch.compile
# on the channel class (the layouts regime's one loss, bf16 (16, 21, 513, 513) over dim 1 backward, among
# them): "auto", Triton forced off, on, and on with one piece a tile (TWO_PIECE_TILES "none"), bf16 and float32, both directions;
# then the layouts regime's channel class in bf16 with it on, for the table beside p2's; then the held realigned
# kernels at other elements a thread. About 500 s.
source benchmarks/call_prelude.sh f1
timeout 100 python3 -m pytest -q -p no:cacheprovider tests/test_strided_layouts.py -k "axis_length_compiled" \
  > $R/tests.txt 2>&1; echo "tests rc $? at $SECONDS s"; tail -1 $R/tests.txt
timeout 150 compute-sanitizer --tool memcheck --report-api-errors no --print-limit 20 \
  python3 benchmarks/sanitize_triton.py --fixed-n > $R/memcheck.txt 2>&1
echo "memcheck rc $? at $SECONDS s"; grep -E "ERROR SUMMARY|WRONG|problems" $R/memcheck.txt | head -4
T='backend=triton;backend=triton,triton.TILE_FIXED_N=True;backend=triton,triton.TILE_FIXED_N=True,triton.TWO_PIECE_TILES="none"'
CASES='(16,21,513,513) d1;(16,21,512,512) d1;(8,150,127,127) d1;(8,150,128,128) d1;(8,21,255,255) d1;(16,19,513,513) d1'
timeout 200 python3 benchmarks/kernel_breakdown.py --cases "$CASES" --dtypes bfloat16,float32 \
  --directions forward,backward --tunings "$T" > $R/breakdown.txt 2>&1; echo "breakdown rc $? at $SECONDS s"
grep -E "us a call" $R/breakdown.txt | cut -c1-160
PYTHONPATH=$PWD timeout 120 python3 - > $R/layouts_channel_fixed.txt 2>&1 <<'PY'
import fastsoftmax.backends.triton as tb
from fastsoftmax.benchmark import layouts
tb.TILE_FIXED_N = True
layouts.main(["--backward", "--dtypes", "bfloat16", "--classes", "channel", "--json", "/dev/null"])
PY
echo "layouts rc $? at $SECONDS s"; grep -E "^\(" $R/layouts_channel_fixed.txt | head -20
# Triton's held realigned kernels at 32 and 64 elements a thread (REALIGNED_HELD_ELEMS_PER_THREAD; 16 as
# planned) against the tile kernels on rows of 300-999, where they lose (p1); realigned_sass.txt has the
# SASS of each.
SHAPES=223696x300,149130x450,111848x600,86370x777,67176x999
timeout 240 python3 benchmarks/triton_offsets_probe.py --rounds 2 --shapes $SHAPES --variants unrealigned,realigned \
  --realigned-elems 32,64 > $R/realigned_elems.txt 2>&1; echo "probe rc $? at $SECONDS s"; cut -c1-170 $R/realigned_elems.txt
