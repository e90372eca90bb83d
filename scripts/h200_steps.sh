#!/usr/bin/env bash
# One device call (copy this to .dev/h200.sh and carry .dev and .gl): the Vulkan loader,
# then the named steps, each under its own time limit, with
# elapsed times in $OUT/log.txt. Steps: bench:<bin>[:kernels] certify:<bin>[:kernels] anchors info:<bin>
# phases:<bin> (`forge-cli/examples/topk_fft_phases`, copied as .dev/<bin>/topk_fft_phases)
# firstcall:<bin> (cold start: `forge first-call` in fresh processes, caches off and on).
# certify-cuda:<bin>[:kernels] bench-cuda:<bin>[:kernels]: certify / bench with FORGE_BACKEND=cuda
# (a forge built with --features cuda), libcuda and the toolkit's NVRTC 13.0 on LD_LIBRARY_PATH;
# cudatest:<bin> runs .dev/<bin>/cuda_runtime (tests/cuda_runtime.rs, built with --no-run);
# backendtest:<bin> runs .dev/<bin>/backend (forge-core/tests/backend.rs, built with
# `cargo test --release -p forge-core --features cuda --test backend --no-run`): every
# backend's half, CUDA's included.
# Everything written under $OUT comes back as $OUT/all.tgz.
set -u
# The loader, the CUDA libraries (cuda_env), the step timer (stamp), the archive (pack).
source "$(dirname "$0")/../scripts/device_call.sh" 2>/dev/null || source scripts/device_call.sh
limit=${LIMIT:-200}
i=0
for step in "$@"; do
  i=$((i + 1))
  # A step may end in @SECONDS, its own time limit in place of $LIMIT.
  limit=${LIMIT:-200}
  case $step in *@*) limit=${step##*@}; step=${step%@*} ;; esac
  IFS=: read -r what bin kernels <<< "$step"
  stamp "start $step"
  case $what in
    bench)   timeout "$limit" ./.dev/"$bin"/forge --capacity-mib 60000 bench --json --plot "$OUT/roofline-$bin-$i.svg" ${kernels//,/ } > "$OUT/bench-$bin-$i.jsonl" 2> "$OUT/bench-$bin-$i.err" ;;
    certify) timeout "$limit" ./.dev/"$bin"/forge --capacity-mib 60000 certify --all-schedules ${kernels//,/ } > "$OUT/certify-$bin.txt" 2>&1 ;;
    phases)  timeout "$limit" ./.dev/"$bin"/topk_fft_phases > "$OUT/phases-$bin-$i.txt" 2>&1 ;;
    certify-cuda) ( cuda_env; FORGE_BACKEND=cuda timeout "$limit" ./.dev/"$bin"/forge --capacity-mib 60000 certify --all-schedules ${kernels//,/ } > "$OUT/certify-cuda-$bin.txt" 2>&1 ) ;;
    bench-cuda) ( cuda_env; FORGE_BACKEND=cuda timeout "$limit" ./.dev/"$bin"/forge --capacity-mib 60000 bench --json ${kernels//,/ } > "$OUT/bench-cuda-$bin-$i.jsonl" 2> "$OUT/bench-cuda-$bin-$i.err" ) ;;
    cudatest) ( cuda_env; timeout "$limit" ./.dev/"$bin"/cuda_runtime --test-threads=1 > "$OUT/cudatest-$bin.txt" 2>&1 ) ;;
    backendtest) ( cuda_env; timeout "$limit" ./.dev/"$bin"/backend --test-threads=1 > "$OUT/backendtest-$bin.txt" 2>&1 ) ;;
    anchors) timeout "$limit" python3 .dev/torch_anchors.py > "$OUT/anchors.jsonl" 2> "$OUT/anchors.err" ;;
    info)    ./.dev/"$bin"/forge info > "$OUT/info-$bin.txt" 2>&1 ;;
    firstcall)
      # Fresh processes on one cache directory: our pipeline cache off twice, then on
      # (the first run fills it, the second loads it), then loaded with --warm-up; the
      # driver's own disk cache off throughout. Last, the driver's cache alone.
      c=$(mktemp -d)
      {
        for run in ours-off:0 ours-off:0 ours-fill:1 ours-loaded:1 ours-loaded-warm-up:1; do
          IFS=: read -r tag pc <<< "$run"
          extra=""; [ "$tag" = ours-loaded-warm-up ] && extra=--warm-up
          echo "{\"run\":\"$tag\"}"
          __GL_SHADER_DISK_CACHE=0 FORGE_PIPELINE_CACHE=$pc timeout 120 ./.dev/"$bin"/forge --cache-dir "$c" --capacity-mib 8000 first-call --json $extra
        done
        d=$(mktemp -d)
        for tag in driver-cache-fill driver-cache-loaded; do
          echo "{\"run\":\"$tag\"}"
          __GL_SHADER_DISK_CACHE=1 __GL_SHADER_DISK_CACHE_PATH="$d" FORGE_PIPELINE_CACHE=0 timeout 120 ./.dev/"$bin"/forge --cache-dir "$c" --capacity-mib 8000 first-call --json
        done
      } > "$OUT/first-call-$bin.jsonl" 2>&1 ;;
  esac
  stamp "end $step rc=$?"
done
tail -n 3 "$OUT"/certify-*.txt 2>/dev/null
# The device tool brings back at most eight files a call: everything goes back as one
# archive (`tar xzf all.tgz` here).
pack
