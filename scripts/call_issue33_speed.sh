#!/usr/bin/env bash
# Issue 33's speed check, prepared in session 7 (no GPU came): the built-ins its rewrite
# touched (top-k, FFT, f16 GEMM) must run within 2% of their speed before it, on both
# backends of the H200, measured in one call. Carry `.gl` (the Vulkan loader's debs) and
# `.dev/bins.txz` holding `forge` built with `--features cuda` at HEAD and `forge_before`
# at 3b6725a (the last commit before the rewrite):
#   git worktree add /work/wt-before 3b6725a
#   (cd /work/wt-before && CARGO_TARGET_DIR=/work/target-dev cargo build --release -p forge-cli --features cuda --bin forge)
#   cp /work/target-dev/release/forge /tmp/b/forge_before   # then the same at HEAD as /tmp/b/forge
#   tar cJf .dev/bins.txz -C /tmp/b forge forge_before
# Run from the checkout's root: `bash scripts/call_issue33_speed.sh`. Each binary runs
# twice, alternating, so that a drift of the clocks shows; then, here,
# `scripts/before_after.py vk-forge_before-1.jsonl vk-forge-1.jsonl 0.02` (and the rest).
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
for round in 1 2; do
  for b in forge_before forge; do
    stamp "round $round vulkan $b"
    timeout 100 $D/$b $cap bench --json topk fft gemm_f16 > "$OUT/vk-$b-$round.jsonl" 2> /dev/null; stamp "rc=$?"
    stamp "round $round cuda $b"
    ( cuda_env; FORGE_BACKEND=cuda timeout 100 $D/$b $cap bench --json topk fft gemm_f16 > "$OUT/cuda-$b-$round.jsonl" 2> /dev/null ); stamp "rc=$?"
  done
done
pack
