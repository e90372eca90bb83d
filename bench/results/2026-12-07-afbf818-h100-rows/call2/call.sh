#!/usr/bin/env bash
# Session 8, call 2 (the machine of call 1, still warm): issue 33's speed check, one round
# (`forge_before` at 3b6725a against `forge` at afbf818, `bench topk fft gemm_f16`, 70 s
# each: only gemm_f16 was reached), then `bench attention` on Vulkan (100 s, partial).
source scripts/device_call.sh; D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D; cap="--capacity-mib 60000"
for b in forge_before forge; do
  stamp "vk $b"; timeout 70 $D/$b $cap bench --json topk fft gemm_f16 > "$OUT/vk-$b.jsonl" 2>/dev/null; stamp "rc=$?"
  stamp "cuda $b"; ( cuda_env; FORGE_BACKEND=cuda timeout 70 $D/$b $cap bench --json topk fft gemm_f16 > "$OUT/cuda-$b.jsonl" 2>/dev/null ); stamp "rc=$?"
done
stamp "vk attention"; timeout 100 $D/forge $cap bench --json attention > "$OUT/bench-att-vk.jsonl" 2>/dev/null; stamp "rc=$?"
pack
