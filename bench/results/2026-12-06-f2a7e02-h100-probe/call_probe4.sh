#!/usr/bin/env bash
# Probe call 4 (session 4, short): the branch-free-vote attention (and attn_r2, attn_q7), w2a8
# with a branch-free atomic at WORDS 4 and 8: certify on both backends; bench attention with SDPA.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
stamp "certify vulkan"
timeout 60 $D/forge $cap certify --all-schedules attention attn_r2 attn_q7 ternary_gemv_w2a8 > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
grep -h -E "PASS|FAIL" "$OUT"/certify-vk.txt | grep -v "^FAIL kernel" | cut -c1-100
stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 60 $D/forge $cap certify --all-schedules attention ternary_gemv_w2a8 > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
A=""
grep -E "^attn_r2 .*FAIL" "$OUT/certify-vk.txt" >/dev/null || A=attn_r2
grep -E "^attention .*FAIL" "$OUT/certify-vk.txt" >/dev/null || A=attention
if [ -n "$A" ]; then
  stamp "bench cuda $A"
  ( cuda_env; FORGE_BACKEND=cuda timeout 45 $D/forge $cap bench --json $A > "$OUT/bench-cuda.jsonl" 2> "$OUT/bench-cuda.err" ); stamp "rc=$?"
  stamp "anchors"
  timeout 30 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
  stamp "bench vulkan $A"
  timeout 45 $D/forge $cap bench --json $A > "$OUT/bench-vk.jsonl" 2> "$OUT/bench-vk.err"; stamp "rc=$?"
fi
if [ $((SECONDS - t0)) -lt 170 ]; then
  stamp "bench w2a8"
  ( cuda_env; FORGE_BACKEND=cuda timeout 20 $D/forge $cap bench --json ternary_gemv_w2a8 > "$OUT/bench-w2a8-cuda.jsonl" 2>&1 ); stamp "rc=$?"
  timeout 20 $D/forge $cap bench --json ternary_gemv_w2a8 > "$OUT/bench-w2a8-vk.jsonl" 2>&1; stamp "rc=$?"
fi
tail -n 2 "$OUT"/certify-*.txt
pack
