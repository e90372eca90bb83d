#!/usr/bin/env bash
# Issue 36, items 5 and 6: the kernels where CUDA trails Vulkan, profiled. One device call
# (under 600 s) from the checkout's root on the GPU machine; carry `.gl` and `.dev/bins.txz`
# with `forge` built `--release --features cuda` (see scripts/call_attention.sh).
# For each of p64_project, ternary_gemv_w2a8 and gemv_rows_vec4 (and gemv): `forge bench`
# on Vulkan and on CUDA (every schedule, with the device copy of each backend in the same
# run), then `ncu` of the CUDA winner of the registered ones (gemv_rows_vec4 is the bench's
# own, which `forge run` does not know): DRAM throughput, occupancy, the stall reasons.
set -u
source scripts/device_call.sh
cap="--capacity-mib 60000"
best() { # the fastest schedule of kernel $2 in bench lines $1, as `forge run` takes it
  python3 - "$1" "$2" <<'PY'
import json, sys
for l in open(sys.argv[1]):
    if '"kernel"' not in l: continue
    r = json.loads(l)
    if r['kernel'] == sys.argv[2]:
        print(r['schedule'].replace(' ', ',')); break
PY
}
for backend in vulkan cuda; do
  has 120 || break
  left; stamp "bench $backend"
  if [ $backend = cuda ]; then
    ( cuda_env; FORGE_BACKEND=cuda timeout 150 $D/forge $cap bench --json p64 ternary_gemv_w2a8 gemv > "$OUT/bench-$backend.jsonl" 2> "$OUT/bench-$backend.err" ); stamp "rc=$?"
  else
    timeout 150 $D/forge $cap bench --json p64 ternary_gemv_w2a8 gemv > "$OUT/bench-$backend.jsonl" 2> "$OUT/bench-$backend.err"; stamp "rc=$?"
  fi
  grep -h '"kernel"' "$OUT/bench-$backend.jsonl" | python3 -c "
import json, sys
for l in sys.stdin:
    r = json.loads(l); print(r['kernel'], r['shape'], r['schedule'], round(r['us'], 1), round(r['frac_copy'] or 0, 3))"
done
for spec in "p64_project:record_count=16777216" "ternary_gemv_w2a8:m=16384,k=16384,x_scale=0.5" "gemv:m=16384,n=16384"; do
  has 40 || break
  k=${spec%%:*}; problem=${spec#*:}
  sch=$(best "$OUT/bench-cuda.jsonl" "$k")
  [ -n "$sch" ] || { echo "no CUDA figure for $k"; continue; }
  left; stamp "ncu $k $sch"
  ( cuda_env; FORGE_BACKEND=cuda timeout 45 ncu --clock-control none -k regex:fg_main --launch-skip 2 --launch-count 1 \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --section Occupancy --section WarpStateStats --section LaunchStats \
    --metrics dram__throughput.avg.pct_of_peak_sustained_elapsed,smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio,smsp__average_warps_issue_stalled_lg_throttle_per_issue_active.ratio,smsp__inst_executed.sum \
    $D/forge --capacity-mib 8000 run "$k" --problem "$problem" --schedule "$sch" --repeat 3 > "$OUT/ncu-$k.txt" 2>&1 ); stamp "rc=$?"
  grep -E "Duration|DRAM Throughput|dram__throughput|Registers Per|Achieved Occupancy|Warp Cycles Per Issued|stalled|Block Size|Grid Size" "$OUT/ncu-$k.txt" | head -12
done
pack
