#!/usr/bin/env bash
# One device call for the tensor-core work (issue 31): cooperative matrices on CUDA checked
# (tests/cuda_runtime.rs, tests/language_coop.rs on Vulkan, `forge certify --all-schedules`
# on both backends), gemm_f16 timed on both with cuBLAS HGEMM measured in the same call,
# and one CUDA launch at 4096^3 profiled with ncu. Expects in .dev/: forge (built with
# --features cuda), cuda_runtime, language_coop and language_hvec8 (test binaries,
# --release --no-run).
# Usage there: bash scripts/call_tensor_cores.sh [KERNELS...] (default gemm_f16); BENCH_EXTRA
# names more kernels to bench on both backends (certified too); NCU_GEMM and NCU_ATT the
# schedules profiled.
set -u
source scripts/device_call.sh
# Binaries travel packed (.dev/bins.txz) to stay under the tool's 64 MiB.
D=.dev
if [ -f .dev/bins.txz ]; then D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D; fi
kernels="${*:-gemm_f16} ${BENCH_EXTRA:-}"
# Cold starts first, before anything compiles these pipelines: every schedule, each its own
# pipeline, with the driver's disk cache off (issue 31 item 5: each at most 2 s).
stamp "first-call vulkan"
( export __GL_SHADER_DISK_CACHE=0 FORGE_PIPELINE_CACHE=0; timeout 150 $D/forge first-call --all-schedules --json $kernels > "$OUT/first-call-vk.jsonl" 2>&1 ); stamp "rc=$?"
stamp "first-call cuda"
( cuda_env; export FORGE_PIPELINE_CACHE=0 CUDA_CACHE_DISABLE=1; FORGE_BACKEND=cuda timeout 150 $D/forge first-call --all-schedules --json $kernels > "$OUT/first-call-cuda.jsonl" 2>&1 ); stamp "rc=$?"
if [ -x $D/cuda_runtime ]; then
  stamp "cuda tests"
  ( cuda_env; timeout 200 $D/cuda_runtime --test-threads=1 cooperative every_builtin example_kernels > "$OUT/cudatest.txt" 2>&1 ); stamp "rc=$?"
fi
if [ -x $D/builtins_attention ]; then
  stamp "attention tests on vulkan"
  timeout 100 $D/builtins_attention > "$OUT/vkattention.txt" 2>&1; stamp "rc=$?"
fi
if [ -x $D/language_coop ]; then
  stamp "vulkan coop tests"
  timeout 60 $D/language_coop > "$OUT/vkcoop.txt" 2>&1; stamp "rc=$?"
fi
# HVec8 (16-byte loads of halves): cooperative loads from arrays of them on a driver that
# has cooperative matrices, which lavapipe has not.
if [ -x $D/language_hvec8 ]; then
  stamp "vulkan hvec8 tests"
  timeout 60 $D/language_hvec8 > "$OUT/vkhvec8.txt" 2>&1; stamp "rc=$?"
  stamp "cuda hvec8 tests"
  ( cuda_env; FORGE_BACKEND=cuda timeout 60 $D/language_hvec8 > "$OUT/cudahvec8.txt" 2>&1 ); stamp "rc=$?"
fi
stamp "certify vulkan"
timeout 150 $D/forge --capacity-mib 60000 certify --all-schedules $kernels > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/forge --capacity-mib 60000 certify --all-schedules $kernels > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
stamp "bench vulkan"
timeout 150 $D/forge --capacity-mib 60000 bench --json $kernels > "$OUT/bench-vk.jsonl" 2> "$OUT/bench-vk.err"; stamp "rc=$?"
stamp "bench cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/forge --capacity-mib 60000 bench --json $kernels > "$OUT/bench-cuda.jsonl" 2> "$OUT/bench-cuda.err" ); stamp "rc=$?"
# The same kernels from the binary before the change, when one travelled (forge_before).
if [ -x $D/forge_before ]; then
  stamp "bench cuda before"
  ( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/forge_before --capacity-mib 60000 bench --json ${BEFORE_KERNELS:-gemm_f16} > "$OUT/bench-cuda-before.jsonl" 2> "$OUT/bench-cuda-before.err" ); stamp "rc=$?"
fi
stamp "hgemm anchor"
timeout 90 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"
stamp "rc=$?"
# Unless named, profile the schedule the CUDA bench found fastest at 4096^3.
if [ -z "${NCU_GEMM:-}" ]; then
  NCU_GEMM=$(python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r.get("kernel") == "gemm_f16" and r.get("shape") == "4096^3":
        print(",".join(p for p in r["schedule"].split() if not p.startswith("vec=")))
' "$OUT/bench-cuda.jsonl" 2>/dev/null)
fi
stamp "ncu cuda gemm_f16 4096 at ${NCU_GEMM:-the declared schedule}"
( cuda_env; FORGE_BACKEND=cuda timeout 120 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats \
    $D/forge --capacity-mib 8000 run gemm_f16 --problem m=4096,k=4096,n=4096 ${NCU_GEMM:+--schedule $NCU_GEMM} --repeat 2 > "$OUT/ncu-cuda.txt" 2>&1 ); stamp "rc=$?"
stamp "ncu cuda attention"
( cuda_env; FORGE_BACKEND=cuda timeout 120 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section WarpStateStats --section Occupancy --section LaunchStats \
    $D/forge --capacity-mib 8000 run attention --problem bh=32,s=4096,d=64,causal=0,scale=0.125 ${NCU_ATT:+--schedule $NCU_ATT} --repeat 2 > "$OUT/ncu-cuda-attention.txt" 2>&1 ); stamp "rc=$?"
tail -n 4 "$OUT"/certify-*.txt "$OUT"/cudatest.txt "$OUT"/vkcoop.txt "$OUT"/vkhvec8.txt "$OUT"/cudahvec8.txt 2>/dev/null
grep -h slowest "$OUT"/first-call-*.jsonl
grep '"kernel"' "$OUT"/bench-*.jsonl | python3 -c '
import json,sys
for l in sys.stdin:
    f, l = l.split(":", 1)
    r=json.loads(l); print(f.split("/")[-1][6:-6], r["kernel"], r["shape"], r["schedule"], round(r["us"],1), r.get("tflops"))'
cat "$OUT/anchors.jsonl"
for f in "$OUT"/ncu-cuda*.txt; do echo "== $f"; grep -E "Duration|Throughput|Pipe|Registers|Shared Memory|Achieved Occupancy|Theoretical Occupancy|Warp Cycles|Stall|Error|error" "$f" | head -30; done
pack
