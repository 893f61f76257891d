#!/usr/bin/env bash
# The layouts regime on the present tiers and rules (last run whole in the seventy-third and seventy-fourth
# sets): every class in bf16 with the backward beside torch.softmax and torch.compile, then the channel
# class in float32; each lists its losses.
source benchmarks/call_prelude.sh p2
timeout 380 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes bfloat16 --json $R/layouts_bf16.json \
  > $R/layouts_bf16.txt 2>&1; echo "bf16 rc $? at $SECONDS s"; sed -n '/^losses/,$p' $R/layouts_bf16.txt | head -40
timeout 130 python3 -m fastsoftmax.benchmark.layouts --backward --dtypes float32 --classes channel \
  --json $R/layouts_channel_f32.json > $R/layouts_channel_f32.txt 2>&1; echo "f32 rc $? at $SECONDS s"
sed -n '/^losses/,$p' $R/layouts_channel_f32.txt | head -20
