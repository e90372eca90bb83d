#!/usr/bin/env bash
# Probe call 2 (session 4): forward bisect from the kernel that passes on Vulkan (attn_q0 =
# main's attention), adding one feature of the lazy kernel each (q1..q6); w2a8 WORDS=8 through
# the SPIR-V and GLSL passthrough forms on Vulkan.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
Q="attn_q0 attn_q1 attn_q2 attn_q3 attn_q4 attn_q5 attn_q6"
stamp "certify vulkan q"
timeout 120 $D/forge $cap certify --all-schedules $Q > "$OUT/certify-vk-q.txt" 2>&1; stamp "rc=$?"
stamp "certify cuda q"
( cuda_env; FORGE_BACKEND=cuda timeout 120 $D/forge $cap certify --all-schedules $Q > "$OUT/certify-cuda-q.txt" 2>&1 ); stamp "rc=$?"
for b in spirv glsl hlsl; do
  stamp "certify w2a8 $b"
  FORGE_BACKEND=$b timeout 60 $D/forge $cap certify --all-schedules ternary_gemv_w2a8 > "$OUT/certify-w2a8-$b.txt" 2>&1; stamp "rc=$?"
done
grep -h -E "PASS|FAIL" "$OUT"/certify-vk-q.txt | grep -v "^FAIL kernel" | cut -c1-100
tail -n 2 "$OUT"/certify-*.txt
grep -h "FAIL kernel" "$OUT"/certify-w2a8-*.txt | grep -v poisoned | cut -c1-200 | head -8
pack
