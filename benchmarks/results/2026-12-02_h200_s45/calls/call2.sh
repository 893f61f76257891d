#!/usr/bin/env bash
# call 2: GPU tests of the 16-bit backward's 8-CTA rule and of the window tiles' forced phase forms; inputs one element into their storage (offset views) on the staged tiles' two window forms and the strided tier; the dispatcher's backend choice on the layouts regime's view cases and its losses to torch.compile; Nsight Compute on the bf16 forward of rows of 50257 and 50264
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r2; mkdir -p $R
trap 'tar czf $OUT/r2.tar.gz -C $OUT r2 && rm -rf $R' EXIT
timeout 100 python3 -m pytest tests/cuda/test_cuda_gpu.py tests/cuda/test_strided_gpu.py -k "partial_slots or whole_packs or cluster_rows or window_tiles" -q -n 14 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
P="python3 benchmarks/grid_row_probe.py"
W=strided_staged:staged_window=True
timeout 130 $P --tiers strided_staged,$W:staged_input_phase=True,$W:staged_input_phase=False,strided --directions fwd,bwd --dtypes bf16,f32 --shapes 32x4096x1024o1,128x1024x1024o1,4096x64x512o1,32x4096x1024 > $R/offset_forms.txt 2>&1
C="offset (32,4096,1024) d1"; S="(32,4096,1024)[..., 1:] d1"; T="(8192,8192)[:, ::2] d0"; U="(16,21,513,513) d1"
timeout 120 python3 benchmarks/backend_preference_probe.py "$C:bfloat16:fwd;$C:bfloat16:bwd;$S:bfloat16:fwd;$S:bfloat16:bwd;$T:bfloat16:fwd;$T:bfloat16:bwd;$U:bfloat16:bwd;$C:float32:fwd;$C:float32:bwd" > $R/backend_views.txt 2>&1
PROFILE_TARGETS="3 1 --shape 2670x50257 --dtype bf16 --tier cluster;3 1 --shape 2670x50264 --dtype bf16 --tier cluster" OUT=$R/ncu timeout 150 bash benchmarks/device_run.sh profile > $R/ncu.log 2>&1
