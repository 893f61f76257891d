#!/usr/bin/env bash
# call 3: (1) the cluster tier's size forced (4, 8, 16 CTAs) against its rule on the decode shapes and
# their neighbours, both directions, every dtype (call 1b found 8 CTAs ahead of the rule's 16 on the
# 8 x 128256 backward); (2) kernel by kernel, the 16-bit scalar tiles in two pieces (as shipped)
# against one (TWO_PIECE_TILES="none") beside torch.compile on the shapes the fifty-fourth set
# measured on an H200 (call 1: (16, 21, 513, 513) forward 165.0 us in two pieces, 141.1 in one,
# torch.compile 147.1); (3) the GPU test of the short-axis rule over an axis of 48
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c3; mkdir -p $R
trap 'tar czf $OUT/c3.tar.gz -C $OUT c3 && rm -rf $R' EXIT
timeout 150 python3 benchmarks/grid_row_probe.py --tiers cluster,cluster:cluster_ctas=4,cluster:cluster_ctas=8,cluster:cluster_ctas=16 \
  --directions fwd,bwd --dtypes bf16,f16,f32 \
  --shapes 1x128256,2x128256,4x128256,8x128256,16x128256,32x151936,128x128256,1x50257,8x50257,4x262144 \
  > $R/ctas_decode.txt 2>&1
echo "decode rc $?"; sed -n '/summary/,$p' $R/ctas_decode.txt | cut -c1-220
timeout 330 python3 benchmarks/kernel_breakdown.py --directions forward,backward \
  --cases "(16,21,513,513) d1;(16,19,513,513) d1;(16,40,513,513) d1;(16,33,257,257) d1;(8,150,127,127) d1" \
  --tunings "triton.TWO_PIECE_TILES='none'" > $R/two_pieces.txt 2>&1
echo "pieces rc $?"; grep "a call" $R/two_pieces.txt | cut -c1-200
timeout 90 python3 -m pytest -q -x tests/gpu/test_triton_gpu.py -k "short_16_bit_axes" > $R/short_axis_test.txt 2>&1
echo "short-axis test rc $?"; tail -n 3 $R/short_axis_test.txt
