#!/usr/bin/env bash
# Issue 35, item 2, on the GPU machine (the H200): what a kernel that never ends does on
# Vulkan and on CUDA, with and without a timeout. Run from the repository root, on a built
# tree (`cargo test --features cuda --test timeout --no-run` first). Writes the figures to
# $OUT/h35_timeout.txt (or ./h35_timeout.txt).
set -u
out="${OUT:-.}/h35_timeout.txt"
: > "$out"
run() {
    echo "==> $*" | tee -a "$out"
    local start end
    start=$(date +%s.%N)
    "$@" >> "$out" 2>&1
    local rc=$?
    end=$(date +%s.%N)
    echo "rc=$rc wall=$(echo "$end - $start" | bc) s" | tee -a "$out"
}
nvidia-smi --query-gpu=name,driver_version --format=csv >> "$out" 2>&1
# 1. With the timeout (2 s): Vulkan through WGSL and SPIR-V, then CUDA.
for backend in wgsl spirv cuda; do
    run env FORGE_BACKEND=$backend FORGE_SPIN_TIMEOUT=2 cargo test --features cuda --test timeout -- --ignored --nocapture --test-threads 1 a_kernel_that_never_ends
done
# 2. Without a timeout: the same kernel through the `forge`-less path, cut by `timeout 60`
#    (what a user without FORGE_TIMEOUT sees: a wait that does not end, or a lost device).
for backend in wgsl cuda; do
    run timeout -s KILL 60 env FORGE_BACKEND=$backend FORGE_SPIN_TIMEOUT=1000000 cargo test --features cuda --test timeout -- --ignored --nocapture --test-threads 1 a_kernel_that_never_ends
done
# 3. The GPU is free again once the process is gone.
run nvidia-smi --query-gpu=utilization.gpu,memory.used --format=csv
run env FORGE_BACKEND=cuda cargo test --features cuda --test timeout -- --test-threads 1 a_wait_past_the_timeout
