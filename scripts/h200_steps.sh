#!/usr/bin/env bash
# One device call (copy this to .dev/h200.sh and carry .dev and .gl): the Vulkan loader,
# then the named steps, each under its own time limit, with
# elapsed times in $OUT/log.txt. Steps: bench:<bin>[:kernels] certify:<bin> anchors
set -u
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
t0=$SECONDS
stamp() { echo "[$((SECONDS - t0))s] $*" | tee -a "$OUT/log.txt"; }
limit=${LIMIT:-200}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
i=0
for step in "$@"; do
  i=$((i + 1))
  IFS=: read -r what bin kernels <<< "$step"
  stamp "start $step"
  case $what in
    bench)   timeout "$limit" ./.dev/"$bin"/forge --capacity-mib 60000 bench --json ${kernels//,/ } > "$OUT/bench-$bin-$i.jsonl" 2> "$OUT/bench-$bin-$i.err" ;;
    certify) timeout "$limit" ./.dev/"$bin"/forge --capacity-mib 60000 certify --all-schedules > "$OUT/certify-$bin.txt" 2>&1 ;;
    anchors) timeout "$limit" python3 .dev/torch_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err" ;;
    info)    ./.dev/"$bin"/forge info > "$OUT/info-$bin.txt" 2>&1 ;;
  esac
  stamp "end $step rc=$?"
done
tail -n 3 "$OUT"/certify-*.txt 2>/dev/null
