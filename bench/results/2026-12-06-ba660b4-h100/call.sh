#!/usr/bin/env bash
# Session 5, call 1: gemm_f16 with tile knobs TM x TN (256x128 new) and `keep`: certify every
# schedule on both backends, bench both with cuBLAS HGEMM in the same call, ncu the old and the
# new CUDA tile at 4096^3, cold starts of every schedule.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
left() { echo "[left $((590 - (SECONDS - t0)))s]"; }
stamp "certify vulkan"
timeout 90 $D/forge $cap certify --all-schedules gemm_f16 > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 120 $D/forge $cap certify --all-schedules gemm_f16 > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
tail -n 2 "$OUT"/certify-*.txt; grep -h "FAIL" "$OUT"/certify-*.txt | cut -c1-200 | head -20
left; stamp "bench cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 130 $D/forge $cap bench --json gemm_f16 > "$OUT/bench-cuda.jsonl" 2> "$OUT/bench-cuda.err" ); stamp "rc=$?"
left; stamp "anchors"
timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
left; stamp "bench vulkan"
timeout 120 $D/forge $cap bench --json gemm_f16 > "$OUT/bench-vk.jsonl" 2> "$OUT/bench-vk.err"; stamp "rc=$?"
for sch in wg=256,TM=256,TN=128,KB=32,PAD=8,S=3 wg=128,TM=128,TN=128,KB=32,PAD=8,S=3; do
  left; stamp "ncu gemm_f16 4096 $sch"
  ( cuda_env; FORGE_BACKEND=cuda timeout 40 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,lts__t_bytes.sum \
    $D/forge --capacity-mib 8000 run gemm_f16 --problem m=4096,n=4096,k=4096 --schedule $sch --repeat 2 > "$OUT/ncu-$sch.txt" 2>&1 ); stamp "rc=$?"
done
if [ $((SECONDS - t0)) -lt 440 ]; then
  left; stamp "first-call cuda"
  ( cuda_env; export FORGE_PIPELINE_CACHE=0 CUDA_CACHE_DISABLE=1; FORGE_BACKEND=cuda timeout 70 $D/forge first-call --all-schedules --json gemm_f16 > "$OUT/first-call-cuda.jsonl" 2>&1 ); stamp "rc=$?"
fi
if [ $((SECONDS - t0)) -lt 520 ]; then
  left; stamp "first-call vulkan"
  ( export __GL_SHADER_DISK_CACHE=0 FORGE_PIPELINE_CACHE=0; timeout 60 $D/forge first-call --all-schedules --json gemm_f16 > "$OUT/first-call-vk.jsonl" 2>&1 ); stamp "rc=$?"
fi
grep -h '"TFLOP\|winner\|best' "$OUT"/bench-*.jsonl | cut -c1-300 | head -12
cat "$OUT/anchors.jsonl" | head -4
pack
