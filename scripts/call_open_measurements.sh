#!/usr/bin/env bash
# The measurements session 9 left open, for one device call (about 500 s): issue 33's speed
# check of top-k on CUDA (the rows its CUDA runs did not reach: HEAD against 3b6725a), the
# Vulkan certification of attention_rows' schedules (knobs FD, QS, QB), attention on Vulkan
# at s = 1024, and the cold start of attention_rows on CUDA (issue 32: <= 2 s a schedule).
# Carry `.gl` (the Vulkan loader's debs) and `.dev/bins.txz` with `forge` (HEAD) and
# `forge_before` (3b6725a), both built `--features cuda` (see call_issue33_speed.sh). Then,
# here: scripts/before_after.py cuda-topk-forge_before.jsonl cuda-topk-forge.jsonl 0.02.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
for b in forge_before forge; do
  stamp "cuda topk $b"
  ( cuda_env; FORGE_BACKEND=cuda timeout 120 $D/$b $cap bench --json topk > "$OUT/cuda-topk-$b.jsonl" 2> /dev/null ); stamp "rc=$?"
done
stamp "certify vulkan attention_rows"
timeout 90 $D/forge $cap certify --all-schedules attention_rows > "$OUT/certify-rows-vk.txt" 2>&1; stamp "rc=$?"
tail -n 2 "$OUT/certify-rows-vk.txt"
stamp "cold start cuda attention_rows"
( cuda_env; FORGE_BACKEND=cuda timeout 80 $D/forge first-call --all-schedules attention_rows > "$OUT/first-call-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
stamp "bench vulkan attention"
timeout 150 $D/forge $cap bench --json attention > "$OUT/bench-att-vk.jsonl" 2> /dev/null; stamp "rc=$?"
timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "anchors rc=$?"
pack
