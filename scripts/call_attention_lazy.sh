#!/usr/bin/env bash
# The attention call that session 6 prepared and could not run (no machine came): a636e17's
# kernel (`forge`: the lazy reference maximum, the scaling skipped where a subgroup's factors
# are all 1, `XPAD` and `LAZY`, 36 schedules) against 04f7229's (`forge_before`), on Vulkan and
# CUDA, with torch SDPA in the same call: `forge certify --all-schedules attention` on both
# (the first run of cooperative matrices under a subgroup's vote on a GPU: `LAZY = 1`), ncu of
# `XPAD = 0` against 4 at one schedule, and cold starts.
# Carry `.gl` (the Vulkan loader's debs) and `.dev/bins.txz` (`forge` built with
# `--features cuda` at a636e17, `forge_before` at 04f7229; `forge_mid` optional); run from
# the checkout's root: `bash scripts/call_attention_lazy.sh`. Everything comes back in
# `$OUT/all.tgz`.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
left() { echo "[left $((590 - (SECONDS - t0)))s]"; }
stamp "certify vulkan"
timeout 90 $D/forge $cap certify --all-schedules attention > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
stamp "certify cuda"
( cuda_env; FORGE_BACKEND=cuda timeout 180 $D/forge $cap certify --all-schedules attention > "$OUT/certify-cuda.txt" 2>&1 ); stamp "rc=$?"
tail -n 2 "$OUT"/certify-*.txt; grep -h "FAIL" "$OUT"/certify-*.txt | cut -c1-200 | head -20
if grep -q FAIL "$OUT/certify-vk.txt"; then
  stamp "certify vulkan forge_mid"
  timeout 90 $D/forge_mid $cap certify --all-schedules attention > "$OUT/certify-vk-mid.txt" 2>&1; stamp "rc=$?"
  tail -n 2 "$OUT/certify-vk-mid.txt"
fi
left; stamp "anchors"
timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
for b in forge; do
  left; stamp "bench cuda $b"
  ( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/$b $cap bench --json attention > "$OUT/bench-cuda-$b.jsonl" 2> "$OUT/bench-cuda-$b.err" ); stamp "rc=$?"
  left; stamp "bench vulkan $b"
  timeout 150 $D/$b $cap bench --json attention > "$OUT/bench-vk-$b.jsonl" 2> "$OUT/bench-vk-$b.err"; stamp "rc=$?"
done
for x in 0 4; do
  if [ $((SECONDS - t0)) -lt 380 ]; then
    left; stamp "ncu attention XPAD=$x"
    ( cuda_env; FORGE_BACKEND=cuda timeout 40 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats \
      --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum \
      $D/forge --capacity-mib 8000 run attention --problem bh=32,s=4096,d=64,causal=0,scale=0.125 --schedule wg=64,KB=16,PAD=8,OF=4,XPAD=$x --repeat 2 > "$OUT/ncu-attention-xpad$x.txt" 2>&1 ); stamp "rc=$?"
  fi
done
if [ $((SECONDS - t0)) -lt 420 ]; then
  left; stamp "first-call cuda"
  ( cuda_env; export FORGE_PIPELINE_CACHE=0 CUDA_CACHE_DISABLE=1; FORGE_BACKEND=cuda timeout 40 $D/forge first-call --all-schedules --json attention > "$OUT/first-call-cuda.jsonl" 2>&1 ); stamp "rc=$?"
  left; stamp "first-call vulkan"
  ( export __GL_SHADER_DISK_CACHE=0 FORGE_PIPELINE_CACHE=0; timeout 30 $D/forge first-call --all-schedules --json attention > "$OUT/first-call-vk.jsonl" 2>&1 ); stamp "rc=$?"
fi
for b in forge_before forge_mid; do
  if [ $((SECONDS - t0)) -lt 470 ]; then
    left; stamp "bench cuda $b"
    ( cuda_env; FORGE_BACKEND=cuda timeout 60 $D/$b $cap bench --json attention > "$OUT/bench-cuda-$b.jsonl" 2> "$OUT/bench-cuda-$b.err" ); stamp "rc=$?"
  fi
  if [ $((SECONDS - t0)) -lt 530 ]; then
    left; stamp "bench vulkan $b"
    timeout 60 $D/$b $cap bench --json attention > "$OUT/bench-vk-$b.jsonl" 2> "$OUT/bench-vk-$b.err"; stamp "rc=$?"
  fi
done
pack
