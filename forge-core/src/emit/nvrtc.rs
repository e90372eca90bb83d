//! NVRTC: a kernel's CUDA C++ ([`crate::Kernel::cuda`]) compiled to PTX (`forge emit
//! --backend ptx`, no GPU needed) or to a cubin for one device architecture (what the CUDA
//! runtime loads). Layer 2 (offline work: no device). Behind the `cuda` feature.
//!
//! libnvrtc is loaded at run time, by `cudarc`, under its bare names (`libnvrtc.so`,
//! `libnvrtc.so.13`, ...), so `LD_LIBRARY_PATH` decides which one; a missing one is
//! [`ForgeError::MissingLibrary`] with where to get it. NVRTC has no `cuda_fp16.h` built
//! in: a kernel that uses `f16` finds it in the folder `FORGE_CUDA_INCLUDE` names, in a
//! CUDA toolkit's `include` (`CUDA_PATH`, `CUDA_HOME`, `/usr/local/cuda`), or else in the
//! headers NVRTC 13.3 and later bundle, unpacked once into the user's cache.

use crate::error::{ForgeError, Result};
use cudarc::nvrtc::{result, sys};
use std::ffi::{c_char, c_int, CStr, CString};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// Where to get NVRTC, for the error when it cannot be loaded.
const NVRTC_HINT: &str = "install NVRTC and put its folder on LD_LIBRARY_PATH: without a GPU, `python3 -m pip install --target ~/.cache/forge-nvrtc nvidia-cuda-nvrtc` then `export LD_LIBRARY_PATH=~/.cache/forge-nvrtc/nvidia/cu13/lib`; with a CUDA toolkit, its `lib64` (or `targets/x86_64-linux/lib`) folder";

/// What an architecture name must look like: `compute_90` (PTX) or `sm_90` / `sm_90a`
/// (machine code), so that a typo is an error that names the forms, not NVRTC's.
fn check_arch(arch: &str, kind: Output) -> Result<()> {
    let (prefix, what) = match kind {
        Output::Ptx => (
            "compute_",
            "PTX targets a virtual architecture such as `compute_90`",
        ),
        Output::Cubin => ("sm_", "a cubin targets a real architecture such as `sm_90`"),
    };
    let digits = arch
        .strip_prefix(prefix)
        .map(|rest| rest.trim_end_matches('a'))
        .unwrap_or("");
    if digits.len() >= 2 && digits.bytes().all(|b| b.is_ascii_digit()) {
        Ok(())
    } else {
        Err(ForgeError::InvalidArgument {
            kernel: "nvrtc",
            message: format!(
                "`{}` is not an architecture NVRTC can target here: {what}",
                crate::shown::shown(arch)
            ),
        })
    }
}

/// What NVRTC is asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Output {
    Ptx,
    Cubin,
}

/// NVRTC's version, `(13, 5)`, or [`ForgeError::MissingLibrary`] where it cannot be
/// loaded.
pub fn version() -> Result<(i32, i32)> {
    // cudarc panics on a missing library: it is looked for first.
    // SAFETY: loading a library by name runs its initialisers; libnvrtc's are NVIDIA's.
    if !unsafe { sys::is_culib_present() } {
        return Err(ForgeError::MissingLibrary {
            library: "libnvrtc",
            hint: NVRTC_HINT,
        });
    }
    let (mut major, mut minor): (c_int, c_int) = (0, 0);
    // SAFETY: two valid out-pointers.
    unsafe { sys::nvrtcVersion(&mut major, &mut minor) }
        .result()
        .map_err(|e| nvrtc_failed("nvrtcVersion", e))?;
    Ok((major, minor))
}

fn nvrtc_failed(call: &str, e: result::NvrtcError) -> ForgeError {
    ForgeError::ShaderCompile {
        kernel: "nvrtc",
        backend: "cuda".into(),
        message: format!("{call} failed: {e:?}"),
    }
}

/// Compiles `kernel`'s CUDA `source` to PTX for `arch` (`compute_90`, ...). NVRTC's log is
/// in the error when it rejects the source.
pub fn compile_ptx(kernel: &'static str, source: &str, arch: &str) -> Result<String> {
    check_arch(arch, Output::Ptx)?;
    let bytes = compile(kernel, source, arch, Output::Ptx)?;
    String::from_utf8(bytes).map_err(|_| ForgeError::ShaderCompile {
        kernel,
        backend: format!("ptx ({arch})"),
        message: "NVRTC returned PTX that is not UTF-8".into(),
    })
}

/// Compiles `kernel`'s CUDA `source` to a cubin for `arch` (`sm_90`, ...): machine code
/// that a driver older than this NVRTC loads, where it would refuse this NVRTC's PTX.
pub fn compile_cubin(kernel: &'static str, source: &str, arch: &str) -> Result<Vec<u8>> {
    check_arch(arch, Output::Cubin)?;
    compile(kernel, source, arch, Output::Cubin)
}

/// A program that is destroyed when dropped.
struct Program(sys::nvrtcProgram);

impl Drop for Program {
    fn drop(&mut self) {
        // SAFETY: the program was created by `nvrtcCreateProgram` and is destroyed once.
        let _ = unsafe { result::destroy_program(self.0) };
    }
}

fn compile(kernel: &'static str, source: &str, arch: &str, output: Output) -> Result<Vec<u8>> {
    let (major, minor) = version()?;
    let backend = format!("cuda (NVRTC {major}.{minor}, {arch})");
    let fail = |message: String| ForgeError::ShaderCompile {
        kernel,
        backend: backend.clone(),
        message,
    };
    let src = CString::new(source).map_err(|_| fail("the source holds a NUL byte".into()))?;
    let name = CString::new(format!("{}.cu", kernel.replace(['<', '>', '/', ' '], "_")))
        .map_err(|_| fail("the kernel's name holds a NUL byte".into()))?;
    let mut options = vec![
        format!("--gpu-architecture={arch}"),
        "--std=c++17".to_string(),
        // The language's float semantics: IEEE division and square root, subnormals kept.
        "--ftz=false".to_string(),
        "--prec-div=true".to_string(),
        "--prec-sqrt=true".to_string(),
    ];
    if source.contains("#include <cuda_fp16.h>") {
        let dir = fp16_include(major, minor).map_err(|m| fail(m.to_string()))?;
        options.push(format!("--include-path={}", dir.display()));
    }
    let program =
        Program(result::create_program(&src, Some(&name)).map_err(|e| fail(format!("{e:?}")))?);
    // SAFETY: the program is live; the options are NUL-free strings.
    let compiled = unsafe { result::compile_program(program.0, &options) };
    if let Err(e) = compiled {
        // SAFETY: the program is live.
        let log = unsafe { result::get_program_log(program.0) }
            .map(|raw| c_text(&raw))
            .unwrap_or_default();
        return Err(fail(format!(
            "NVRTC rejected the generated CUDA ({e:?}) with options {options:?}:\n{log}"
        )));
    }
    match output {
        // SAFETY: the program compiled.
        Output::Ptx => unsafe { result::get_ptx(program.0) }
            .map(|raw| c_text(&raw).into_bytes())
            .map_err(|e| fail(format!("nvrtcGetPTX: {e:?}"))),
        Output::Cubin => {
            let mut size = 0usize;
            // SAFETY: the program compiled; `size` is a valid out-pointer, and the buffer
            // holds the size NVRTC gave.
            unsafe {
                sys::nvrtcGetCUBINSize(program.0, &mut size)
                    .result()
                    .map_err(|e| fail(format!("nvrtcGetCUBINSize: {e:?}")))?;
                let mut cubin = vec![0u8; size];
                sys::nvrtcGetCUBIN(program.0, cubin.as_mut_ptr() as *mut c_char)
                    .result()
                    .map_err(|e| fail(format!("nvrtcGetCUBIN: {e:?}")))?;
                Ok(cubin)
            }
        }
    }
}

/// A NUL-terminated C string that NVRTC wrote, as text.
fn c_text(raw: &[c_char]) -> String {
    let bytes: Vec<u8> = raw
        .iter()
        .take_while(|c| **c != 0)
        .map(|c| *c as u8)
        .collect();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// The folder holding `cuda_fp16.h`: `FORGE_CUDA_INCLUDE`, a toolkit's `include`, or the
/// headers this NVRTC bundles, unpacked once per process.
fn fp16_include(major: i32, minor: i32) -> std::result::Result<PathBuf, String> {
    let has = |dir: &Path| dir.join("cuda_fp16.h").is_file();
    if let Some(dir) = crate::env::path("FORGE_CUDA_INCLUDE").map_err(|e| e.to_string())? {
        return if has(&dir) {
            Ok(dir)
        } else {
            Err(format!(
                "FORGE_CUDA_INCLUDE is `{}`, which holds no cuda_fp16.h",
                crate::shown::shown_path(&dir)
            ))
        };
    }
    let toolkits = ["CUDA_PATH", "CUDA_HOME"]
        .iter()
        .filter_map(|v| std::env::var_os(v).map(PathBuf::from))
        .chain([PathBuf::from("/usr/local/cuda")])
        .map(|root| root.join("include"));
    for dir in toolkits {
        if has(&dir) {
            return Ok(dir);
        }
    }
    static BUNDLED: OnceLock<std::result::Result<PathBuf, String>> = OnceLock::new();
    BUNDLED
        .get_or_init(|| install_bundled_headers(major, minor))
        .clone()
}

/// The headers NVRTC bundles (`nvrtcInstallBundledHeaders`, NVRTC 13.3 and later), in
/// `<cache>/forge/nvrtc-<version>-headers`: unpacked into a folder of this process's own,
/// then renamed into place, so that no process ever reads a half-written folder; a folder
/// already in place (with `cuda_fp16.h`) is used as it is.
fn install_bundled_headers(major: i32, minor: i32) -> std::result::Result<PathBuf, String> {
    let missing = format!(
        "the kernel uses f16, whose cuda_fp16.h NVRTC {major}.{minor} does not build in: set FORGE_CUDA_INCLUDE to a CUDA toolkit's include folder, or use NVRTC 13.3 or later, which bundles it"
    );
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir)
        .join("forge");
    let dir = cache.join(format!("nvrtc-{major}.{minor}-headers"));
    if dir.join("cuda_fp16.h").is_file() {
        return Ok(dir);
    }
    type Install = unsafe extern "C" fn(
        *const c_char,
        std::ffi::c_uint,
        *mut *const c_char,
    ) -> sys::nvrtcResult;
    // SAFETY: the library is loaded (`version` checked it); the symbol, where NVRTC has
    // it, has this signature (nvrtc.h of 13.3).
    let install: Install =
        match unsafe { sys::culib().get::<Install>(b"nvrtcInstallBundledHeaders\0") } {
            Ok(f) => *f,
            Err(_) => return Err(missing),
        };
    let fresh = cache.join(format!(
        ".nvrtc-{major}.{minor}-headers.{}",
        std::process::id()
    ));
    std::fs::create_dir_all(&fresh).map_err(|e| {
        format!(
            "cannot create {} for NVRTC's headers: {e}",
            crate::shown::shown_path(&fresh)
        )
    })?;
    let path = CString::new(fresh.to_string_lossy().into_owned())
        .map_err(|_| format!("{} holds a NUL byte", crate::shown::shown_path(&fresh)))?;
    let mut log: *const c_char = std::ptr::null();
    // SAFETY: a NUL-terminated path and a valid out-pointer for the log.
    let rc = unsafe { install(path.as_ptr(), 0, &mut log) };
    if rc != sys::nvrtcResult::NVRTC_SUCCESS {
        let log = if log.is_null() {
            String::new()
        } else {
            // SAFETY: NVRTC returns a NUL-terminated message.
            unsafe { CStr::from_ptr(log) }
                .to_string_lossy()
                .into_owned()
        };
        let _ = std::fs::remove_dir_all(&fresh);
        return Err(format!(
            "nvrtcInstallBundledHeaders into {} failed ({rc:?}): {log}",
            crate::shown::shown_path(&fresh)
        ));
    }
    if !fresh.join("cuda_fp16.h").is_file() {
        let _ = std::fs::remove_dir_all(&fresh);
        return Err(missing);
    }
    // Another process may have put its folder in place first: then ours goes.
    if std::fs::rename(&fresh, &dir).is_err() {
        let _ = std::fs::remove_dir_all(&fresh);
        if !dir.join("cuda_fp16.h").is_file() {
            return Err(format!(
                "cannot put NVRTC's headers in {}",
                crate::shown::shown_path(&dir)
            ));
        }
    }
    Ok(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_are_checked_before_nvrtc() {
        assert!(check_arch("compute_90", Output::Ptx).is_ok());
        assert!(check_arch("compute_100a", Output::Ptx).is_ok());
        assert!(check_arch("sm_90", Output::Cubin).is_ok());
        for (bad, kind) in [
            ("sm_90", Output::Ptx),
            ("compute_90", Output::Cubin),
            ("compute_", Output::Ptx),
            ("90", Output::Ptx),
            ("compute_9x", Output::Ptx),
        ] {
            let err = check_arch(bad, kind).expect_err(bad).to_string();
            assert!(err.contains(bad), "{err}");
        }
    }
}
