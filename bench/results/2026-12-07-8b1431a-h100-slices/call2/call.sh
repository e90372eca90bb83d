#!/usr/bin/env bash
# Session 9, call 2: issue 33's speed check, top-k, FFT and f16 GEMM at HEAD against
# 3b6725a (forge_before), on both backends in one call; then scripts/before_after.py here.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
left() { echo "[left $((590 - (SECONDS - t0)))s]"; }
for b in forge_before forge; do
  left; stamp "cuda $b"
  ( cuda_env; FORGE_BACKEND=cuda timeout 135 $D/$b $cap bench --json topk fft gemm_f16 > "$OUT/cuda-$b.jsonl" 2> /dev/null ); stamp "rc=$?"
done
for b in forge_before forge; do
  left; stamp "vulkan $b"
  timeout 135 $D/$b $cap bench --json topk fft gemm_f16 > "$OUT/vk-$b.jsonl" 2> /dev/null; stamp "rc=$?"
done
wc -l "$OUT"/*.jsonl
pack
