#!/usr/bin/env python3
"""SASS of a kernel's CUDA C without a GPU: NVRTC (the wheel .ci/setup installs) compiles the
source on stdin to a cubin for --arch, and nvdisasm or cuobjdump (PyPI's
nvidia-cuda-nvdisasm / nvidia-cuda-cuobjdump wheels, or the toolkit's) prints its machine
code, or with --stats a count of each instruction's opcode, and the registers, shared
memory and spills (cuobjdump --dump-resource-usage).

    forge emit gemm_f16 --backend cuda --schedule wg=256,items=4,KB=32 \\
        | python3 scripts/sass.py --arch sm_90 --stats

Tools are found on PATH or under $FORGE_CUDA_TOOLS (a folder holding bin/nvdisasm)."""
import argparse, ctypes, glob, os, re, shutil, subprocess, sys, tempfile
from collections import Counter


def nvrtc():
    home = os.environ.get("FORGE_NVRTC_DIR", os.path.expanduser("~/.cache/forge-nvrtc"))
    for lib in sorted(glob.glob(f"{home}/nvidia/cu*/lib/libnvrtc.so*")) + ["libnvrtc.so"]:
        try:
            return ctypes.CDLL(lib), os.path.dirname(lib)
        except OSError:
            continue
    sys.exit("error: libnvrtc not found: run `bash .ci/setup`, or set FORGE_NVRTC_DIR")


def include_dir(libdir):
    # cuda_fp16.h sits beside the wheel's lib folder (include/), or in the toolkit.
    # forge-core unpacks the headers NVRTC 13.3+ bundles into ~/.cache/forge/nvrtc-*-headers.
    cache = os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache"))
    bundled = sorted(glob.glob(f"{cache}/forge/nvrtc-*-headers"))
    for d in [os.environ.get("FORGE_CUDA_INCLUDE", ""), os.path.join(os.path.dirname(libdir), "include")] + bundled:
        if d and os.path.exists(os.path.join(d, "cuda_fp16.h")):
            return d
    return None


def cubin(source, arch):
    lib, libdir = nvrtc()
    prog = ctypes.c_void_p()
    check = lambda rc, what: rc == 0 or sys.exit(f"error: NVRTC {what} failed ({rc})")
    check(lib.nvrtcCreateProgram(ctypes.byref(prog), source.encode(), b"kernel.cu", 0, None, None), "create")
    # The options forge-core's NVRTC build uses (emit/nvrtc.rs).
    opts = [f"--gpu-architecture={arch}".encode(), b"--std=c++17", b"--ftz=false", b"--prec-div=true", b"--prec-sqrt=true"]
    inc = include_dir(libdir)
    if inc:
        opts.append(f"--include-path={inc}".encode())
    arr = (ctypes.c_char_p * len(opts))(*opts)
    rc = lib.nvrtcCompileProgram(prog, len(opts), arr)
    size = ctypes.c_size_t()
    lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    lib.nvrtcGetProgramLog(prog, log)
    if rc != 0:
        sys.exit("error: NVRTC:\n" + log.value.decode(errors="replace"))
    lib.nvrtcGetCUBINSize(prog, ctypes.byref(size))
    out = ctypes.create_string_buffer(size.value)
    check(lib.nvrtcGetCUBIN(prog, out), "cubin")
    return out.raw


def tool(name):
    base = os.environ.get("FORGE_CUDA_TOOLS")
    if base and os.path.exists(os.path.join(base, "bin", name)):
        return os.path.join(base, "bin", name)
    return shutil.which(name) or sys.exit(f"error: {name} not found (pip install nvidia-cuda-{name}, set FORGE_CUDA_TOOLS)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--arch", default="sm_90")
    ap.add_argument("--stats", action="store_true", help="opcode counts and resource usage, not the listing")
    a = ap.parse_args()
    binary = cubin(sys.stdin.read(), a.arch)
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(binary)
        f.flush()
        sass = subprocess.run([tool("nvdisasm"), "-c", f.name], capture_output=True, text=True, check=True).stdout
        if not a.stats:
            print(sass)
            return
        usage = subprocess.run([tool("cuobjdump"), "--dump-resource-usage", f.name], capture_output=True, text=True)
        print(usage.stdout.strip())
    ops = Counter()
    for line in sass.splitlines():
        m = re.match(r"\s*/\*[0-9a-f]+\*/\s+(?:@!?U?P\w+\s+)?([A-Z][A-Z0-9_]*)(\.[\w.]+)?", line)
        if m:
            ops[m.group(1) + (m.group(2) or "")] += 1
    for op, n in ops.most_common(40):
        print(f"{n:6d} {op}")


if __name__ == "__main__":
    main()
