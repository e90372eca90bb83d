#!/usr/bin/env bash
# One device call that checks a merged main and times what changed, both backends:
# - `forge certify --all-schedules` of every built-in on Vulkan and on CUDA (a change to the
#   CUDA prelude reaches every kernel);
# - `forge bench` of the kernels named (default: gemm_f16 attention ternary_gemv_w2a8) on
#   CUDA, then Vulkan;
# - the peers in the same call: cuBLAS HGEMM, torch SDPA and a device copy, as
#   shared/anchors/torch_anchors.py measures them;
# - ncu of attention on CUDA at the schedule the bench found fastest at b2 h16 s4096 d64.
# Expects .dev/bins.txz with forge (built with --features cuda).
# Usage there: bash scripts/call_round.sh [KERNELS...]
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
kernels="${*:-gemm_f16 attention ternary_gemv_w2a8}"
stamp "certify vulkan"
timeout 120 $D/forge $cap certify --all-schedules > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/forge $cap certify --all-schedules > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
stamp "bench cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/forge $cap bench --json $kernels > "$OUT/bench-cuda.jsonl" 2> "$OUT/bench-cuda.err" ); stamp "rc=$?"
stamp "anchors"
timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"
stamp "rc=$?"
stamp "bench vulkan"
timeout 150 $D/forge $cap bench --json $kernels > "$OUT/bench-vk.jsonl" 2> "$OUT/bench-vk.err"; stamp "rc=$?"
NCU_ATT=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("kernel") == "attention" and r.get("shape") == "b2 h16 s4096 d64":
        print(",".join(p for p in r["schedule"].split() if not p.startswith("vec=")))
' "$OUT/bench-cuda.jsonl" 2>/dev/null)
stamp "ncu cuda attention at ${NCU_ATT:-the declared schedule}"
( cuda_env; FORGE_BACKEND=cuda timeout 60 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats \
    $D/forge --capacity-mib 8000 run attention --problem bh=32,s=4096,d=64,causal=0,scale=0.125 ${NCU_ATT:+--schedule $NCU_ATT} --repeat 2 > "$OUT/ncu-cuda-attention.txt" 2>&1 ); stamp "rc=$?"
tail -n 3 "$OUT"/certify-*.txt
grep -h "FAIL" "$OUT"/certify-*.txt | head -20
grep '"kernel"' "$OUT"/bench-*.jsonl | python3 -c '
import json,sys
for l in sys.stdin:
    f, l = l.split(":", 1)
    r=json.loads(l); print(f.split("/")[-1][6:-6], r["kernel"], r["shape"], r["schedule"], round(r["us"],1), r.get("tflops"), r.get("gbps"))'
cat "$OUT/anchors.jsonl"
grep -E "Duration|Throughput|Pipe|Registers|Shared Memory|Achieved Occupancy|Theoretical Occupancy|Warp Cycles|Stall|Bank" "$OUT/ncu-cuda-attention.txt" | head -30
pack
