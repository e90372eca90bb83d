#!/usr/bin/env bash
# One device call that checks a change of the runtime and measures the tensor-core kernels:
# - `forge certify --all-schedules` (every built-in) on Vulkan and on CUDA, with the new build;
# - `forge bench` of a subset (BEFORE_AFTER, default `gemv p64_project overhead`) with the
#   build before the change (.dev: forge-before) and after it (forge), on both backends,
#   alternating, so that each figure has its twin from the same minute;
# - `forge bench` of TC_KERNELS (default `gemm_f16 attention`) on CUDA with the new build;
# - the peers: cuBLAS HGEMM, torch SDPA and the copy, as torch_anchors.py measures them;
# - `tests/cuda_runtime.rs` (cooperative matrices, every built-in) and forge-core's
#   `tests/backend.rs` on CUDA where their binaries are in the pack.
# Expects .dev/bins.txz with forge, forge-before and optionally cuda_runtime and backend.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
before_after=${BEFORE_AFTER:-gemv p64_project overhead}
tc=${TC_KERNELS:-gemm_f16 attention}
if [ -x $D/cuda_runtime ]; then
  stamp "cuda tests"
  ( cuda_env; timeout 120 $D/cuda_runtime --test-threads=1 cooperative every_builtin > "$OUT/cudatest.txt" 2>&1 ); stamp "rc=$?"
fi
if [ -x $D/backend ]; then
  stamp "backend tests"
  ( cuda_env; timeout 90 $D/backend --test-threads=1 > "$OUT/backendtest.txt" 2>&1 ); stamp "rc=$?"
fi
# The device tool stops a call at its limit; past BUDGET seconds the remaining steps are
# skipped, so that what ran is packed and comes back.
budget=${BUDGET:-420}
late() { [ $((SECONDS - t0)) -gt "$budget" ] && { stamp "skipped: past ${budget}s"; return 0; }; return 1; }
stamp "anchors"
timeout 90 python3 scripts/anchors_tc.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
late || {
stamp "bench cuda tensor cores"
( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/forge $cap bench --json $tc > "$OUT/bench-cuda-tc.jsonl" 2> "$OUT/bench-cuda-tc.err" ); stamp "rc=$?"
}
late || {
stamp "certify vulkan"
timeout 150 $D/forge $cap certify --all-schedules > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 170 $D/forge $cap certify --all-schedules > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
}
for round in $(seq 1 "${ROUNDS:-2}"); do
  for bin in forge-before forge; do
    late && break 2
    stamp "bench vulkan $bin $round"
    timeout 60 $D/$bin $cap bench --json $before_after > "$OUT/ba-vk-$bin-$round.jsonl" 2>/dev/null; stamp "rc=$?"
    stamp "bench cuda $bin $round"
    ( cuda_env; FORGE_BACKEND=cuda timeout 60 $D/$bin $cap bench --json $before_after > "$OUT/ba-cuda-$bin-$round.jsonl" 2>/dev/null ); stamp "rc=$?"
  done
done
tail -n 3 "$OUT"/certify-*.txt "$OUT"/cudatest.txt "$OUT"/backendtest.txt 2>/dev/null
python3 scripts/before_after_rounds.py "$OUT" 2>&1 | tail -30
grep -h '"kernel"' "$OUT"/bench-cuda-tc.jsonl | python3 -c '
import json,sys
for l in sys.stdin:
    r=json.loads(l); print(r["kernel"], r["shape"], r["schedule"], round(r["us"],1), r.get("tflops"))'
cat "$OUT/anchors.jsonl"
pack
