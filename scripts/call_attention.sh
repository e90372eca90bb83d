#!/usr/bin/env bash
# Issue 32's measurement of `attention`, one device call (under 600 s), from the checkout's
# root on the GPU machine. Carry `.gl` (the Vulkan loader's debs) and `.dev/bins.txz` with
# `forge` (the commit measured) and, optionally, `forge_before` (the one it is compared
# with), both built `--release --features cuda`:
#   ../shared/device/prepare && tar cJf .dev/bins.txz -C DIR forge forge_before
# In order, each step under its own time cap, the later ones only while time is left:
# 1. torch SDPA and cuBLAS HGEMM (scripts/tensor_anchors.py), the peers of the same call;
# 2. `forge certify --all-schedules attention_rows` on CUDA (36 schedules and the declared one; 47 took 71 s at 0401d75,
#    past 110 s at d6b160f, whose call lost it), then `attention` and `attention_rows` at
#    every schedule on Vulkan (`VK_CERTIFY=0` leaves it out);
# 3. `attention_rows`' every schedule timed on CUDA at the bench's shapes (`forge bench`),
#    and, with NCU=1, the winners under `ncu` at d = 64 and 128; `attention` timed on
#    Vulkan (`VK_BENCH=0` skips it, for a call with little time);
# 4. `forge_before`'s `attention_rows` timed on CUDA (the same shapes, every schedule), for
#    `scripts/before_after.py`, where it was carried.
set -u
source scripts/device_call.sh
cap="--capacity-mib 60000"
winners() { # the fastest schedule a shape of a bench's JSON lines, one line each
  python3 - "$1" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if '"kernel"' not in l: continue
    r = json.loads(l); print(r['kernel'], r['shape'], r['schedule'], round(r['us'], 1))
    for s, t in sorted(r['schedules'], key=lambda x: x[1])[:2]: print('    ', s, round(t, 1))
PY
}

# COLD=1: instead, the cold start of every schedule (`forge first-call --all-schedules`),
# as the first thing a fresh machine runs: `attention_rows` on CUDA, then `attention` and
# `attention_rows` on Vulkan (issue 32: at most 2 s a schedule). A warm machine keeps
# compiled kernels in the driver's caches (in session 10's call b, after certify and bench
# had compiled the same kernels, first calls took 60-114 ms).
# On a machine that has run them already, the caches are turned off: NVIDIA's shader disk
# cache (`__GL_SHADER_DISK_CACHE=0`), the runtime's pipeline cache, and the CUDA driver's
# JIT cache (`CUDA_CACHE_DISABLE=1`). forge keeps no cubins (NVRTC compiles each, every
# time), yet at 34b11d6 (call-b) a warm machine's CUDA first calls through the toolkit's
# NVRTC took 70-150 ms after a call that had compiled the same kernels, where a fresh
# machine took up to 2.11 s: the files the first CUDA run writes under $HOME, /tmp and
# /var/tmp are listed, to find what keeps them. With `forge_before` carried, its CUDA cold
# start is timed too, for the same schedules on the same machine.
if [ "${COLD:-0}" = 1 ]; then
  export __GL_SHADER_DISK_CACHE=0 FORGE_PIPELINE_CACHE=0 CUDA_CACHE_DISABLE=1
  touch /tmp/cold-mark; sleep 1
  stamp "cold start cuda attention_rows"
  ( cuda_env; FORGE_BACKEND=cuda timeout 240 $D/forge first-call --all-schedules attention_rows > "$OUT/first-call-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
  tail -n 3 "$OUT/first-call-rows-cuda.txt"
  echo "files written by it:"
  timeout 20 find "$HOME" /tmp /var/tmp -newer /tmp/cold-mark -type f -not -path "$OUT/*" 2>/dev/null | head -12
  if [ -x $D/forge_before ] && has 150; then
    stamp "cold start cuda attention_rows, forge_before"
    ( cuda_env; FORGE_BACKEND=cuda timeout 100 $D/forge_before first-call --all-schedules attention_rows > "$OUT/first-call-rows-cuda-before.txt" 2>&1 ); stamp "rc=$?"
    tail -n 3 "$OUT/first-call-rows-cuda-before.txt"
  fi
  # With `.dev/nvrtc.txz` carried (a libnvrtc other than the toolkit's, say PyPI's
  # nvidia-cuda-nvrtc: `tar cJf .dev/nvrtc.txz -C ~/.cache/forge-nvrtc/nvidia/cu13/lib
  # libnvrtc.so.13 libnvrtc-builtins.so.13.5`), the same cold start through it: the CUDA
  # cold start is NVRTC's compile, and the toolkit's NVRTC may not be the fastest.
  if [ -f .dev/nvrtc.txz ] && has 150; then
    mkdir -p /tmp/nvrtc-alt && tar xJf .dev/nvrtc.txz -C /tmp/nvrtc-alt
    ln -sf libnvrtc.so.13 /tmp/nvrtc-alt/libnvrtc.so
    # Which NVRTC each run loads: the release in the PTX it writes.
    for alt in "" /tmp/nvrtc-alt; do
      ( cuda_env; export LD_LIBRARY_PATH=$alt${alt:+:}$LD_LIBRARY_PATH; $D/forge emit attention_rows --backend ptx -o /tmp/v.ptx > /dev/null 2>&1; echo "NVRTC ${alt:-toolkit}: $(grep -m1 -i 'compilation tools' /tmp/v.ptx)" )
    done
    stamp "cold start cuda attention_rows, NVRTC from .dev/nvrtc.txz"
    ( cuda_env; export LD_LIBRARY_PATH=/tmp/nvrtc-alt:$LD_LIBRARY_PATH; FORGE_BACKEND=cuda timeout 100 $D/forge first-call --all-schedules attention_rows > "$OUT/first-call-rows-cuda-nvrtc-alt.txt" 2>&1 ); stamp "rc=$?"
    tail -n 3 "$OUT/first-call-rows-cuda-nvrtc-alt.txt"
  fi
  left; stamp "cold start vulkan attention attention_rows"
  timeout $((LIMIT - (SECONDS - t0) - 5)) $D/forge first-call --all-schedules attention attention_rows > "$OUT/first-call-vk.txt" 2>&1; stamp "rc=$?"
  tail -n 3 "$OUT/first-call-vk.txt"
  for f in "$OUT"/first-call-*.txt; do
    echo "slowest in ${f##*/}:"
    awk '$1 ~ /^attention/ {print $(NF-1), $0}' "$f" | sort -g -r | head -3 | cut -c1-150
  done
  pack; exit 0
fi

# CERTIFY_ONLY=1: the certifications alone (step 2), for a call with little time.
only=${CERTIFY_ONLY:-0}
# Certify logs each schedule's verdict as it goes (RUST_LOG=info), so a cap cut short
# still tells which passed.
export RUST_LOG=${RUST_LOG:-info}
if [ "$only" = 0 ]; then
  stamp "anchors"
  timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
  grep attention "$OUT/anchors.jsonl" | cut -c1-160
fi

left; stamp "certify cuda attention_rows"
( cuda_env; FORGE_BACKEND=cuda timeout $((LIMIT - 90 < 250 ? LIMIT - 90 : 250)) $D/forge $cap certify --all-schedules attention_rows > "$OUT/certify-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
tail -n 2 "$OUT/certify-rows-cuda.txt"; grep -h "FAIL" "$OUT/certify-rows-cuda.txt" | cut -c1-300 | head -5
grep -c "verdict=PASS" "$OUT/certify-rows-cuda.txt"

if [ "${VK_CERTIFY:-1}" = 1 ] && has 60; then
  left; stamp "certify vulkan attention attention_rows"
  timeout $((LIMIT - (SECONDS - t0) - 5 < 90 ? LIMIT - (SECONDS - t0) - 5 : 90)) $D/forge $cap certify --all-schedules attention attention_rows > "$OUT/certify-vk.txt" 2>&1; stamp "rc=$?"
  tail -n 2 "$OUT/certify-vk.txt"; grep -h "FAIL" "$OUT/certify-vk.txt" | cut -c1-300 | head -5
  grep -c "verdict=PASS" "$OUT/certify-vk.txt"
fi
[ "$only" = 1 ] && { pack; exit 0; }

left; stamp "bench cuda attention_rows"
( cuda_env; FORGE_BACKEND=cuda timeout 180 $D/forge $cap bench --json attention_rows > "$OUT/bench-rows-cuda.jsonl" 2> "$OUT/bench-rows-cuda.err" ); stamp "rc=$?"
winners "$OUT/bench-rows-cuda.jsonl"

if [ "${NCU:-0}" = 1 ] && has 30; then
  left; stamp "ncu attention_rows"
  for shape in "b2 h16 s4096 d64:bh=32,s=4096,d=64" "b2 h16 s4096 d128:bh=32,s=4096,d=128"; do
    name=${shape%%:*}; problem=${shape#*:}
    best=$(python3 -c "
import json
for l in open('$OUT/bench-rows-cuda.jsonl'):
    if '\"kernel\"' in l:
        r=json.loads(l)
        if r['shape']=='$name': print(r['schedule'].replace(' items=1 vec=1','').replace(' ',','))
")
    [ -n "$best" ] || continue
    echo "best $name: $best"
    ( cuda_env; FORGE_BACKEND=cuda timeout 40 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
      --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section InstructionStats \
      --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__inst_executed_pipe_tensor.sum,smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio,smsp__average_warps_issue_stalled_wait_per_issue_active.ratio,smsp__average_warps_issue_stalled_short_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__inst_executed_pipe_xu.sum \
      $D/forge --capacity-mib 8000 run attention_rows --problem "$problem,causal=0,scale=0.125" --schedule "$best" --repeat 2 > "$OUT/ncu-rows-${name##* }.txt" 2>&1 ); stamp "rc=$?"
    grep -E "Duration|Registers Per|Achieved Occupancy|hmma|inst_executed|Warp Cycles Per Issued|stalled" "$OUT/ncu-rows-${name##* }.txt" | head -14
  done
fi

if [ "${VK_BENCH:-1}" = 1 ] && has 150; then
  left; stamp "bench vulkan attention"
  timeout $((LIMIT - (SECONDS - t0) - 10 < 150 ? LIMIT - (SECONDS - t0) - 10 : 150)) $D/forge $cap bench --json 'attention$' > "$OUT/bench-att-vk.jsonl" 2> "$OUT/bench-att-vk.err"; stamp "rc=$?"
  winners "$OUT/bench-att-vk.jsonl"
fi

if [ -x $D/forge_before ] && has 100; then
  left; stamp "bench cuda attention_rows, forge_before"
  ( cuda_env; FORGE_BACKEND=cuda timeout $((LIMIT - (SECONDS - t0) - 8)) $D/forge_before $cap bench --json attention_rows > "$OUT/bench-rows-cuda-before.jsonl" 2> /dev/null ); stamp "rc=$?"
  winners "$OUT/bench-rows-cuda-before.jsonl"
fi
pack
