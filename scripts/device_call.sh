#!/usr/bin/env bash
# One device call's common setup, sourced by the call scripts under .dev/: the Vulkan
# loader, the CUDA libraries (libcuda from the driver, NVRTC and cuda_fp16.h from the
# toolkit that matches it), a step timer. Run on the GPU machine, from the checkout's root.
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
t0=$SECONDS
stamp() { echo "[$((SECONDS - t0))s] $*" | tee -a "$OUT/log.txt"; }
cuda_env() {
  local drv tk=/usr/local/cuda-13.0 nv
  [ -d "$tk" ] || tk=$(dirname "$(dirname "$(readlink -f "$(command -v nvcc)")")")
  drv=$(ldconfig -p | awk '/libcuda\.so\.1 /{print $NF; exit}')
  [ -n "$drv" ] || drv=$(find / -name 'libcuda.so.1' -not -path '/proc/*' 2>/dev/null | head -1)
  nv=$tk/targets/x86_64-linux/lib
  ls "$nv"/libnvrtc.so* >/dev/null 2>&1 || nv=$(dirname "$(find / -name 'libnvrtc.so.13*' -not -path '/proc/*' 2>/dev/null | head -1)")
  export LD_LIBRARY_PATH="${drv%/*}:$nv${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  export CUDA_PATH=$tk
  [ -f "$tk/targets/x86_64-linux/include/cuda_fp16.h" ] && export FORGE_CUDA_INCLUDE=$tk/targets/x86_64-linux/include
  return 0
}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu --format=csv > "$OUT/gpu.txt" 2>&1
# Everything written under $OUT goes back as one archive (the tool brings back 8 files).
pack() { (cd "$OUT" && tar czf /tmp/all.tgz . && find . -type f -delete && mv /tmp/all.tgz all.tgz); }
# The call's time: `LIMIT` seconds (590 unless the caller sets less, for a session with
# little device time left); `left` prints what remains, `has N` says whether N seconds do.
LIMIT=${LIMIT:-590}
left() { echo "[left $((LIMIT - (SECONDS - t0)))s]"; }
has() { [ $((LIMIT - (SECONDS - t0))) -gt "$1" ]; }
# The binaries carried in `.dev/bins.txz`, where there are, unpacked into $D.
if [ -f .dev/bins.txz ]; then D=/tmp/fbin; mkdir -p $D; tar xJf .dev/bins.txz -C $D; fi
