#!/usr/bin/env bash
# The measurements sessions 9 and 10 left open, as two device calls run back to back on one
# warm machine (`bash scripts/call_open_measurements.sh a`, then `... b`), each under 600 s.
# Carry `.gl` (the Vulkan loader's debs) and `.dev/bins.txz` with `forge` (HEAD) and
# `forge_before` (3b6725a), both built `--features cuda` (see call_issue33_speed.sh).
# a: issue 33's speed check of top-k on CUDA (HEAD against 3b6725a; the rows its CUDA runs
#    did not reach), then the cold start of every schedule of attention_rows on CUDA
#    (issue 32: <= 2 s a schedule). Then, here:
#    scripts/before_after.py cuda-topk-forge_before.jsonl cuda-topk-forge.jsonl 0.02
# b: (attention_rows and attention certified, timed against torch SDPA and profiled) is
#    now scripts/call_attention.sh.
# c: (the cold start of every schedule, first thing on a fresh machine) is now
#    `COLD=1 bash scripts/call_attention.sh`, on both backends and with the caches off.
set -u
source scripts/device_call.sh
cap="--capacity-mib 60000"
case "${1:-}" in
a)
  for b in forge_before forge; do
    stamp "cuda topk $b"
    ( cuda_env; FORGE_BACKEND=cuda timeout 200 $D/$b $cap bench --json topk > "$OUT/cuda-topk-$b.jsonl" 2> /dev/null ); stamp "rc=$?"
  done
  left; stamp "cold start cuda attention_rows"
  ( cuda_env; FORGE_BACKEND=cuda timeout 120 $D/forge first-call --all-schedules attention_rows > "$OUT/first-call-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
  tail -n 4 "$OUT/first-call-rows-cuda.txt"
  ;;
*) echo "usage: $0 a (b and c are scripts/call_attention.sh)"; exit 2 ;;
esac
pack
