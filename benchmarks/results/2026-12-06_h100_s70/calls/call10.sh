#!/usr/bin/env bash
# call 10: (1) the view one element into its storage, bf16 (32, 4096, 1024) over dim 1 (0.45 forward,
# 0.50 backward in call 3, the dense tensor 0.77), kernel by kernel: strided_staged's window tiles at
# the inputs' one phase (reads unshifted, stores shifted) against each row at its own phase (the
# rule's form where the output's rows are on their boundaries: shifted reads, straight stores); and
# (32, 4096, 1024)[..., 1:] beside it. (2) grid_row against split_row on 1 x 2^26 16-bit forward
# again (call 8: 0.609 against 0.595)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c10; mkdir -p $R
trap 'tar czf $OUT/c10.tar.gz -C $OUT c10 && rm -rf $R' EXIT
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
timeout 150 python3 benchmarks/kernel_breakdown.py --directions forward,backward \
  --cases "offset (32,4096,1024) d1;(32,4096,1024)[..., 1:] d1" \
  --tunings "staged_input_phase=True;staged_input_phase=False" > $R/window_forms.txt 2>&1
echo "forms rc $?"; grep "a call\|Error" $R/window_forms.txt | cut -c1-200
timeout 60 python3 benchmarks/grid_row_probe.py --quick --flush --out $R --tiers split_row,grid_row --directions fwd \
  --dtypes bf16,f16 --shapes 1x67108864,1x67108871 > $R/grid_row_2_26.txt 2>&1
sed -n '/==== summary/,$p' $R/grid_row_2_26.txt | cut -c1-200
