#!/usr/bin/env bash
# Session 5, call 2: attention with the rescale through `so` (OF knob): certify every schedule
# on both backends, bench before (ba660b4, forge_before), with so only (6ae41d5, forge_so) and with so and async K/V (forge) on both backends,
# torch SDPA in the same call, ncu of the CUDA winner's shape, cold starts.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
left() { echo "[left $((590 - (SECONDS - t0)))s]"; }
stamp "certify vulkan"
timeout 60 $D/forge $cap certify --all-schedules attention > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 90 $D/forge $cap certify --all-schedules attention > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
tail -n 2 "$OUT"/certify-*.txt; grep -h "FAIL" "$OUT"/certify-*.txt | cut -c1-200 | head -20
left; stamp "anchors"
timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
for b in forge forge_so forge_before; do
  left; stamp "bench cuda $b"
  ( cuda_env; FORGE_BACKEND=cuda timeout 75 $D/$b $cap bench --json attention > "$OUT/bench-cuda-$b.jsonl" 2> "$OUT/bench-cuda-$b.err" ); stamp "rc=$?"
  left; stamp "bench vulkan $b"
  timeout 75 $D/$b $cap bench --json attention > "$OUT/bench-vk-$b.jsonl" 2> "$OUT/bench-vk-$b.err"; stamp "rc=$?"
done
if [ $((SECONDS - t0)) -lt 470 ]; then
  left; stamp "ncu attention"
  ( cuda_env; FORGE_BACKEND=cuda timeout 40 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
    $D/forge --capacity-mib 8000 run attention --problem bh=32,s=4096,d=64,causal=0,scale=0.125 --schedule wg=128,KB=32,PAD=8,OF=8 --repeat 2 > "$OUT/ncu-attention.txt" 2>&1 ); stamp "rc=$?"
fi
if [ $((SECONDS - t0)) -lt 500 ]; then
  left; stamp "first-call cuda"
  ( cuda_env; export FORGE_PIPELINE_CACHE=0 CUDA_CACHE_DISABLE=1; FORGE_BACKEND=cuda timeout 40 $D/forge first-call --all-schedules --json attention > "$OUT/first-call-cuda.jsonl" 2>&1 ); stamp "rc=$?"
  left; stamp "first-call vulkan"
  ( export __GL_SHADER_DISK_CACHE=0 FORGE_PIPELINE_CACHE=0; timeout 30 $D/forge first-call --all-schedules --json attention > "$OUT/first-call-vk.jsonl" 2>&1 ); stamp "rc=$?"
fi
pack
