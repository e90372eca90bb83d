#!/usr/bin/env bash
# One device call that checks a merged main on the GPU machine, both backends:
# - `forge certify --all-schedules` (every built-in) on Vulkan and on CUDA;
# - `tests/cuda_runtime.rs` whole, and forge-core's `tests/backend.rs` on CUDA;
# - issue 35 item 2: `tests/timeout.rs`'s ignored test, a kernel that never ends, on Vulkan
#   and on CUDA, with a 2 s timeout (what happens is printed: the error, the next call, the
#   drop, a fresh runtime).
# Expects .dev/bins.txz with forge (built with --features cuda) and the test binaries
# cuda_runtime, backend and timeout (release, --features cuda, --no-run).
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
stamp "certify vulkan"
timeout 170 $D/forge $cap certify --all-schedules > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 190 $D/forge $cap certify --all-schedules > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
stamp "cuda tests"
( cuda_env; timeout 150 $D/cuda_runtime --test-threads=1 > "$OUT/cudatest.txt" 2>&1 ); stamp "rc=$?"
if [ -x $D/backend ]; then
  stamp "backend tests on cuda"
  ( cuda_env; timeout 60 $D/backend --test-threads=1 > "$OUT/backendtest.txt" 2>&1 ); stamp "rc=$?"
fi
for b in wgsl cuda; do
  stamp "a kernel that never ends, $b"
  ( cuda_env; FORGE_BACKEND=$b FORGE_SPIN_TIMEOUT=2 timeout 60 $D/timeout --ignored --nocapture a_kernel_that_never_ends > "$OUT/spin-$b.txt" 2>&1 ); stamp "rc=$?"
done
# Issue 36 item 5: what holds ternary_gemv_w2a8 back on CUDA (half its Vulkan speed).
stamp "ncu cuda ternary_gemv_w2a8"
( cuda_env; FORGE_BACKEND=cuda timeout 90 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats \
    $D/forge --capacity-mib 8000 run ternary_gemv_w2a8 --problem m=16384,k=16384,x_scale=0.01 --schedule wg=256,items=1,WORDS=4,RIF=2 --repeat 2 > "$OUT/ncu-cuda-w2a8.txt" 2>&1 ); stamp "rc=$?"
tail -n 3 "$OUT"/certify-*.txt "$OUT"/cudatest.txt "$OUT"/backendtest.txt 2>/dev/null
grep -h "FAIL\|failed\|panicked" "$OUT"/certify-*.txt "$OUT"/cudatest.txt "$OUT"/backendtest.txt 2>/dev/null | head -20
cat "$OUT"/spin-*.txt | grep -v "^$" | tail -40
grep -E "Duration|DRAM Throughput|Memory Throughput|Registers|Achieved Occupancy|Warp Cycles|Stall|stall" "$OUT/ncu-cuda-w2a8.txt" | head -20
pack
