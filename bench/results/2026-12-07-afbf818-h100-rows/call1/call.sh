#!/usr/bin/env bash
# Session 8, call 1: attention_rows (the softmax on the accumulators' rows) and attention on
# both backends of the H200 against torch SDPA in the same call, certified at every schedule.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
left() { echo "[left $((590 - (SECONDS - t0)))s]"; }
stamp "certify cuda attention_rows"
( cuda_env; FORGE_BACKEND=cuda timeout 90 $D/forge $cap certify --all-schedules attention_rows > "$OUT/certify-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
stamp "certify vulkan attention_rows"
timeout 60 $D/forge $cap certify --all-schedules attention_rows > "$OUT/certify-rows-vk.txt" 2>&1; stamp "rc=$?"
tail -n 3 "$OUT"/certify-rows-*.txt; grep -h "FAIL" "$OUT"/certify-rows-*.txt | cut -c1-300 | head -10
left; stamp "anchors"
timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
grep attention "$OUT/anchors.jsonl" | cut -c1-200
left; stamp "bench cuda attention_rows"
( cuda_env; FORGE_BACKEND=cuda timeout 90 $D/forge $cap bench --json attention_rows > "$OUT/bench-rows-cuda.jsonl" 2> "$OUT/bench-rows-cuda.err" ); stamp "rc=$?"
left; stamp "bench vulkan attention_rows"
timeout 60 $D/forge $cap bench --json attention_rows > "$OUT/bench-rows-vk.jsonl" 2> "$OUT/bench-rows-vk.err"; stamp "rc=$?"
grep -h '"kernel"' "$OUT"/bench-rows-*.jsonl | cut -c1-260 | head -20
left; stamp "ncu attention_rows"
( cuda_env; FORGE_BACKEND=cuda timeout 45 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
  --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
  $D/forge --capacity-mib 8000 run attention_rows --problem bh=32,s=4096,d=64,causal=0,scale=0.125 --schedule wg=128,KB=32,PAD=8,ST=2 --repeat 2 > "$OUT/ncu-rows.txt" 2>&1 ); stamp "rc=$?"
grep -E "Duration|Registers|Achieved Occupancy|Compute \(SM\) Throughput|hmma|Memory Throughput" "$OUT/ncu-rows.txt" | head -12
if [ $((SECONDS - t0)) -lt 400 ]; then
  left; stamp "bench cuda attention"
  ( cuda_env; FORGE_BACKEND=cuda timeout 80 $D/forge $cap bench --json attention > "$OUT/bench-att-cuda.jsonl" 2> "$OUT/bench-att-cuda.err" ); stamp "rc=$?"
fi
if [ $((SECONDS - t0)) -lt 470 ]; then
  left; stamp "certify cuda attention"
  ( cuda_env; FORGE_BACKEND=cuda timeout 60 $D/forge $cap certify --all-schedules attention > "$OUT/certify-att-cuda.txt" 2>&1 ); stamp "rc=$?"
fi
if [ $((SECONDS - t0)) -lt 530 ]; then
  left; stamp "certify vulkan attention"
  timeout 50 $D/forge $cap certify --all-schedules attention > "$OUT/certify-att-vk.txt" 2>&1; stamp "rc=$?"
fi
if [ $((SECONDS - t0)) -lt 560 ]; then
  left; stamp "first-call cuda attention_rows"
  ( cuda_env; export FORGE_PIPELINE_CACHE=0 CUDA_CACHE_DISABLE=1; FORGE_BACKEND=cuda timeout 25 $D/forge first-call --all-schedules --json attention_rows > "$OUT/first-call-rows-cuda.jsonl" 2>&1 ); stamp "rc=$?"
fi
tail -n 2 "$OUT"/certify-att-*.txt 2>/dev/null
pack
