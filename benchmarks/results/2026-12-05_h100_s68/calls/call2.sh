#!/usr/bin/env bash
# call 2 (carries .peer2, right after call 1: the second part of the peers' archives, kept in /tmp
# for call 4): the layouts regime in bf16, forward and backward, fastsoftmax ("auto") beside
# torch.softmax and torch.compile, every loss listed (a process a class of
# layout, until the time runs out)
set -u
export PYTHONPATH=$PWD PYTHONUNBUFFERED=1
R=$OUT/c2; mkdir -p $R
trap 'tar czf $OUT/c2.tar.gz -C $OUT c2 && rm -rf $R' EXIT
[[ -f /tmp/ppart.aa ]] || echo "cold: call 1's file is gone" > $R/cold.txt
cp .peer2/ppart.ab /tmp/ &
nvidia-smi --query-gpu=name,driver_version --format=csv > $R/device.txt
for cls in channel small_inner non_last_dim; do
  (( SECONDS > 200 )) && { echo "$cls skipped"; continue; }
  timeout $(( 280 - SECONDS )) python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --classes $cls \
    --json $R/layouts_${cls}_bf16.json > $R/layouts_${cls}_bf16.txt 2>&1
  echo "$cls rc $?"; sed -n '/^losses:/,$p' $R/layouts_${cls}_bf16.txt | head -n 12
done
wait
ls -la /tmp/ppart.a* > $R/kept.txt 2>&1
