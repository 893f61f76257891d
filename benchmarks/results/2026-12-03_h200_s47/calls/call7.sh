#!/usr/bin/env bash
# call 7: the rule of call 6 (16-bit forward rows of 33-96 columns over 4 lanes a row by default): GPU tests
# of the warp and flat_rows tiers beside compute-sanitizer over the warp tier (its 4-lane tuned runs now on
# rows 4 lanes hold); then the suite's 16-bit narrow forward rows on both kernel backends, merged into the
# dispatch table after this set's earlier points, and those shapes through "auto" on it
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/r7; mkdir -p $R
trap 'tar czf $OUT/r7.tar.gz -C $OUT r7 && rm -rf $R' EXIT
SANITIZE_TIERS=warp SANITIZE_TIMEOUT=180 SANITIZE_JOBS=4 OUT=$R/san timeout 190 bash benchmarks/device_run.sh sanitize > $R/sanitize.log 2>&1 &
timeout 200 python3 -m pytest tests/cuda -k "warp or flat" -q -n 12 -p no:cacheprovider -W ignore::RuntimeWarning 2>&1 | tail -n 15 > $R/tests.txt
wait
S=4194304x32,2097152x64,1398101x96,1048576x128
timeout 60 python3 -m fastsoftmax bench main --backends cuda,triton --no-peers --no-compile --shapes $S --directions forward --dtypes bf16,fp16 --time-limit 45 --out $R/narrow > $R/narrow.log 2>&1
T=fastsoftmax/dispatch_table_nvidia-h200.json
python3 -m fastsoftmax bench table --merge-main benchmarks/results/2026-12-02_h200_s41/main_nvidia-h200_2026-12-02T03-08-54.json,benchmarks/results/2026-12-02_h200_s42/main_nvidia-h200_2026-12-02T05-07-02.json,benchmarks/results/2026-12-03_h200_s47/main_nvidia-h200_2026-12-03T06-20-52.json,$(ls $R/narrow/main_*.json) --table-out $T > $R/merge.log 2>&1
cp $T $R/
timeout 60 python3 -m fastsoftmax bench main --backends auto --no-peers --no-compile --shapes $S --directions forward --dtypes bf16,fp16 --time-limit 45 --out $R/auto > $R/auto.log 2>&1
