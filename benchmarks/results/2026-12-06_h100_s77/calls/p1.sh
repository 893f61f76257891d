#!/usr/bin/env bash
# the warp tier's long 16-bit forward rows (instances.WARP_LONG_COLS_16BIT) against block_regs on fewer rows
# (2^23-2^27 elements: where a warp a row leaves the grid short of waves), the one-team backward over
# wider inner sizes (16-bit 32-64 columns, 64-128 bytes, where strided led in n1/bwd) and the 16-bit
# one-team forward with tiles streamed, log-softmax too (after the GPU tests of the warp's long rows); both tiers forced and alternated behind an L2 flush
source benchmarks/call_prelude.sh p1
timeout 90 python3 -m pytest -q --tb=short tests/cuda/test_cuda_gpu.py -k "warp_long or long_rows_plan" > $R/tests.txt 2>&1
echo "tests: $(tail -n 1 $R/tests.txt)"; grep -h "^FAILED\|Error" $R/tests.txt | head
timeout 120 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/warp --directions fwd,log --dtypes bf16,f16 \
  --tiers block_regs,warp \
  --shapes 32768x3000,16384x3000,8192x3000,4096x3000,2048x3000,1024x3000,128x3000,16384x1536,4096x1536,4096x1152,8192x1280,12288x2304,8192x2560,512x2048 \
  > $R/warp.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/warp.txt | cut -c1-200
timeout 150 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/bwd --directions bwd,logbwd --dtypes bf16,f32 \
  --tiers strided_staged,strided \
  --shapes 4x262144x32,8x262144x32,16x262144x32,2x1048576x32,16x131072x64,32x131072x64,64x65536x64,4x524288x16,8x524288x16,16x262144x16 \
  > $R/bwd.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/bwd.txt | cut -c1-200
timeout 80 python3 benchmarks/grid_row_probe.py --quick --flush --out $R/fwd16 --directions fwd,log --dtypes bf16 \
  --tiers strided_staged,strided --shapes 8x1048576x16,4x524288x64,16x524288x32,4x2097152x16 > $R/fwd16.txt 2>&1
echo "probe rc $?"; sed -n '/==== summary/,$p' $R/fwd16.txt | cut -c1-200
