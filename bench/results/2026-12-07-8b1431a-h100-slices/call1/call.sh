#!/usr/bin/env bash
# Session 9, call 1: attention_rows with the head-dimension slice (FD) and Q in workgroup
# memory (QS) on CUDA against torch SDPA in the same call, certified at every schedule;
# ncu of the winner; gemm_f16's speed against 3b6725a (one turn of the staging loop).
set -u
source scripts/device_call.sh
D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D
cap="--capacity-mib 60000"
left() { echo "[left $((590 - (SECONDS - t0)))s]"; }
stamp "certify cuda attention_rows"
( cuda_env; FORGE_BACKEND=cuda timeout 100 $D/forge $cap certify --all-schedules attention_rows > "$OUT/certify-rows-cuda.txt" 2>&1 ); stamp "rc=$?"
tail -n 3 "$OUT"/certify-rows-cuda.txt; grep -h "FAIL" "$OUT"/certify-rows-*.txt | cut -c1-300 | head -10
left; stamp "anchors"
timeout 60 python3 scripts/tensor_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err"; stamp "rc=$?"
grep attention "$OUT/anchors.jsonl" | cut -c1-200
left; stamp "bench cuda attention_rows"
( cuda_env; FORGE_BACKEND=cuda timeout 330 $D/forge $cap bench --json attention_rows > "$OUT/bench-rows-cuda.jsonl" 2> "$OUT/bench-rows-cuda.err" ); stamp "rc=$?"
python3 - "$OUT/bench-rows-cuda.jsonl" <<'PY'
import json,sys
for l in open(sys.argv[1]):
    if '"kernel"' not in l: continue
    r=json.loads(l); print(r['kernel'], r['shape'], r['schedule'], round(r['us'],1))
    for s,t in sorted(r['schedules'], key=lambda x: x[1])[:4]: print('    ', s, round(t,1))
PY
if [ $((SECONDS - t0)) -lt 530 ]; then
left; stamp "ncu attention_rows"
best=$(python3 -c "
import json
for l in open('$OUT/bench-rows-cuda.jsonl'):
    if '\"kernel\"' in l:
        r=json.loads(l)
        if r['shape']=='b2 h16 s4096 d64': print(r['schedule'].replace(' items=1 vec=1','').replace(' ',','))
")
echo "best d64: $best"
( cuda_env; FORGE_BACKEND=cuda timeout 40 ncu --clock-control none -k regex:fg_main --launch-skip 1 --launch-count 1 \
  --section SpeedOfLight --section Occupancy --section WarpStateStats --section LaunchStats \
  --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum \
  $D/forge --capacity-mib 8000 run attention_rows --problem bh=32,s=4096,d=64,causal=0,scale=0.125 --schedule "$best" --repeat 2 > "$OUT/ncu-rows.txt" 2>&1 ); stamp "rc=$?"
grep -E "Duration|Registers|Achieved Occupancy|Compute \(SM\) Throughput|hmma|Memory Throughput|Block Limit" "$OUT/ncu-rows.txt" | head -14
fi
pack
