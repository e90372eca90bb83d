#!/usr/bin/env bash
# Probe call (session 4): bisect attention-lazy's Vulkan failure with variants attn_pa..pe,
# w2a8 WORDS=8 on both backends (+ compute-sanitizer), cold first-call, ncu gemm_f16 + p64.
set -u
source scripts/device_call.sh
left() { if [ $((SECONDS - t0)) -gt 520 ]; then stamp "out of time"; tail -n 3 "$OUT"/certify-*.txt; pack; exit 0; fi; }
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
K="attention attn_pa attn_pb attn_pc attn_pd attn_pe ternary_gemv_w2a8"
left; stamp "first-call vulkan (cold: fresh cache dir, no driver disk cache)"
( export __GL_SHADER_DISK_CACHE=0 FORGE_PIPELINE_CACHE=0; timeout 60 $D/forge --cache-dir /tmp/fc-vk first-call --all-schedules --json gemm_f16 attention > "$OUT/first-vk.jsonl" 2>&1 ); stamp "rc=$?"
left; stamp "first-call cuda"
( cuda_env; export FORGE_PIPELINE_CACHE=0; FORGE_BACKEND=cuda timeout 60 $D/forge --cache-dir /tmp/fc-cu first-call --all-schedules --json gemm_f16 attention > "$OUT/first-cuda.jsonl" 2>&1 ); stamp "rc=$?"
left; stamp "certify vulkan"
timeout 100 $D/forge $cap certify --all-schedules $K > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
left; stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 100 $D/forge $cap certify --all-schedules $K > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
left; stamp "sanitizers w2a8 WORDS=8 cuda"
for tool in racecheck synccheck memcheck; do
  ( cuda_env; FORGE_BACKEND=cuda timeout 30 compute-sanitizer --tool $tool $D/forge run ternary_gemv_w2a8 --problem m=33,k=1031,x_scale=0.125 --schedule wg=256,items=1,WORDS=8,RIF=2 > "$OUT/san-$tool.txt" 2>&1 ); stamp "$tool rc=$?"
done
left; stamp "bench cuda"
B="attention attn_pa attn_pb attn_pc attn_pd attn_pe"
( cuda_env; FORGE_BACKEND=cuda timeout 110 $D/forge $cap bench --json $B > "$OUT/bench-cuda.jsonl" 2> "$OUT/bench-cuda.err" ); stamp "rc=$?"
left; stamp "anchors"
timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
left; stamp "bench vulkan"
timeout 110 $D/forge $cap bench --json $B > "$OUT/bench-vk.jsonl" 2> "$OUT/bench-vk.err"; stamp "rc=$?"
left; stamp "ncu gemm_f16 4096"
( cuda_env; FORGE_BACKEND=cuda timeout 45 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats --section InstructionStats \
    --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,smsp__inst_executed_op_ldsm.sum \
    $D/forge --capacity-mib 8000 run gemm_f16 --problem m=4096,n=4096,k=4096 --schedule wg=128,items=4,KB=32,PAD=8,S=3 --repeat 2 > "$OUT/ncu-cuda-gemm_f16.txt" 2>&1 ); stamp "rc=$?"
left; stamp "ncu p64"
( cuda_env; FORGE_BACKEND=cuda timeout 45 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables --section LaunchStats --section Occupancy \
    $D/forge --capacity-mib 8000 run p64_project --problem record_count=16777216 --repeat 2 > "$OUT/ncu-cuda-p64.txt" 2>&1 ); stamp "rc=$?"
tail -n 3 "$OUT"/certify-*.txt
grep -h "FAIL" "$OUT"/certify-*.txt | cut -c1-220 | head -30
grep -h "ERROR\|Hazard\|error" "$OUT"/san-*.txt | head -10
pack
