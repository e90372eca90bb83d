#!/usr/bin/env bash
# The measurements sessions 9 and 10 left open, as two device calls run back to back on one
# warm machine (`bash scripts/call_open_measurements.sh a`, then `... b`), each under 600 s.
# Carry `.gl` (the Vulkan loader's debs) and `.dev/bins.txz` with `forge` (HEAD) and
# `forge_before` (3b6725a), both built `--features cuda` (see call_issue33_speed.sh).
# a: issue 33's speed check of top-k on CUDA (HEAD against 3b6725a; the rows its CUDA runs
#    did not reach), then the cold start of every schedule of attention_rows on CUDA
#    (issue 32: <= 2 s a schedule). Then, here:
#    scripts/before_after.py cuda-topk-forge_before.jsonl cuda-topk-forge.jsonl 0.02
# b: attention_rows on CUDA against torch SDPA in the same call (certified at every
#    schedule first, then timed, then `ncu` of the winners at d = 64 and 128), attention_rows
#    certified at every schedule on Vulkan, `attention` timed on Vulkan (the same torch
#    SDPA), and the cold starts of attention_rows on CUDA where time is left.
# c: the cold start of every schedule of attention_rows on CUDA, on a fresh machine.
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
left() { echo "[left $((590 - (SECONDS - t0)))s]"; }
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
b)
  stamp "anchors"
  timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
  grep attention "$OUT/anchors.jsonl" | cut -c1-160
  left; stamp "certify cuda attention_rows"
  ( cuda_env; FORGE_BACKEND=cuda timeout 100 $D/forge $cap certify --all-schedules attention_rows > "$OUT/certify-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
  tail -n 2 "$OUT/certify-rows-cuda.txt"; grep -h "FAIL" "$OUT/certify-rows-cuda.txt" | cut -c1-300 | head -5
  left; stamp "bench cuda attention_rows"
  ( cuda_env; FORGE_BACKEND=cuda timeout 200 $D/forge $cap bench --json attention_rows > "$OUT/bench-rows-cuda.jsonl" 2> "$OUT/bench-rows-cuda.err" ); stamp "rc=$?"
  python3 - "$OUT/bench-rows-cuda.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if '"kernel"' not in l: continue
    r=json.loads(l); print(r['kernel'], r['shape'], r['schedule'], round(r['us'],1))
    for s,t in sorted(r['schedules'], key=lambda x: x[1])[:3]: print('    ', s, round(t,1))
PY
  left; stamp "certify vulkan attention_rows"
  timeout 100 $D/forge $cap certify --all-schedules attention_rows > "$OUT/certify-rows-vk.txt" 2>&1; stamp "rc=$?"
  tail -n 2 "$OUT/certify-rows-vk.txt"
  left; stamp "bench vulkan attention"
  timeout 150 $D/forge $cap bench --json 'attention$' > "$OUT/bench-att-vk.jsonl" 2> "$OUT/bench-att-vk.err"; stamp "rc=$?"
  grep -c '"kernel":"attention"' "$OUT/bench-att-vk.jsonl"
  if [ $((SECONDS - t0)) -lt 540 ]; then
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
      echo "best $name: $best"
      ( cuda_env; FORGE_BACKEND=cuda timeout 40 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats --section InstructionStats \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__inst_executed_pipe_tensor.sum \
        $D/forge --capacity-mib 8000 run attention_rows --problem "$problem,causal=0,scale=0.125" --schedule "$best" --repeat 2 > "$OUT/ncu-rows-${name##* }.txt" 2>&1 ); stamp "rc=$?"
      grep -E "Duration|Registers Per|Achieved Occupancy|hmma|inst_executed|Warp Cycles Per Issued|local" "$OUT/ncu-rows-${name##* }.txt" | head -10
    done
    if [ $((SECONDS - t0)) -lt 480 ]; then
      left; stamp "cold start cuda attention_rows"
      ( cuda_env; FORGE_BACKEND=cuda timeout 100 $D/forge first-call --all-schedules attention_rows > "$OUT/first-call-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
      tail -n 3 "$OUT/first-call-rows-cuda.txt"
    fi
  fi
  ;;
c)
  # Cold: the first thing a fresh machine runs (in call b, after certify and bench had
  # compiled the same kernels, the first calls took 60-114 ms: something kept them).
  stamp "cold start cuda attention_rows"
  ( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/forge first-call --all-schedules attention_rows > "$OUT/first-call-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
  tail -n 3 "$OUT/first-call-rows-cuda.txt"
  awk '$1 == "attention_rows" {print $(NF-1), $0}' "$OUT/first-call-rows-cuda.txt" | sort -n -r | head -4 | cut -c1-140
  ;;
*) echo "usage: $0 a|b|c"; exit 2 ;;
esac
pack
