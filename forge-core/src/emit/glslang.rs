//! glslang as a subprocess: compiles the GLSL or HLSL that naga writes to SPIR-V, so those
//! languages can run on Vulkan through passthrough (the `glsl` and `hlsl` backends). Layer 2
//! (offline work: no device).
//!
//! This module owns the one invocation of `glslangValidator` (Debian's `glslang-tools`):
//! the source goes to a file in a directory this process creates for the call (and removes
//! after, whatever happens), glslang writes the module next to it, and the words come
//! back. glslang's HLSL front end (`-D`) stands in for DXC, which is not packaged here.
//!
//! Options, and why:
//! - `-V`: SPIR-V for Vulkan semantics (not OpenGL's);
//! - `--target-env vulkan1.1` when the kernel uses subgroups (SPIR-V 1.3 carries the
//!   subgroup operations), `vulkan1.0` otherwise, so a module runs on any Vulkan that
//!   can run it;
//! - `-S comp`: the stage, whatever the file is called;
//! - HLSL: `-D -e main` (naga names the entry point as the WGSL does) and
//!   `--resource-set-binding 0`, so that register `tN`/`uN`/`bN` of space 0 becomes set 0
//!   binding `N`: the WGSL binding, which the runtime's bind group layout uses. naga gives
//!   every resource its own register number, so the three register classes never collide.

use crate::kernel::ENTRY_POINT;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The program run.
pub const GLSLANG: &str = "glslangValidator";

/// The Debian package that provides [`GLSLANG`].
pub const GLSLANG_PACKAGE: &str = "glslang-tools";

/// The language handed to glslang.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Language {
    /// GLSL 4.50, as naga writes it.
    Glsl,
    /// HLSL (shader model 6), through glslang's HLSL front end.
    Hlsl,
}

/// Why glslang produced no module.
#[derive(Debug, PartialEq, Eq)]
pub enum GlslangError {
    /// The program is not on `PATH`.
    Missing,
    /// glslang rejected the shader: its log.
    Rejected(String),
    /// The scratch files could not be written or read, or the program could not be run.
    Io(String),
}

/// The Vulkan version a module is compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VulkanEnv {
    /// SPIR-V 1.0: any Vulkan.
    Vulkan1_0,
    /// SPIR-V 1.3: needed for subgroup operations.
    Vulkan1_1,
}

impl VulkanEnv {
    fn flag(self) -> &'static str {
        match self {
            VulkanEnv::Vulkan1_0 => "vulkan1.0",
            VulkanEnv::Vulkan1_1 => "vulkan1.1",
        }
    }
}

/// Compiles `source` to SPIR-V words with [`GLSLANG`].
pub fn compile(source: &str, language: Language, env: VulkanEnv) -> Result<Vec<u32>, GlslangError> {
    compile_with(GLSLANG, source, language, env)
}

/// [`compile`] with the program named `program` (a test points it at one that is absent).
pub fn compile_with(
    program: &str,
    source: &str,
    language: Language,
    env: VulkanEnv,
) -> Result<Vec<u32>, GlslangError> {
    let scratch = Scratch::create().map_err(|e| GlslangError::Io(e.to_string()))?;
    let (file, extension) = match language {
        Language::Glsl => ("kernel.comp", "glsl"),
        Language::Hlsl => ("kernel.hlsl", "hlsl"),
    };
    let input = scratch.path.join(file);
    let output = scratch.path.join("kernel.spv");
    std::fs::write(&input, source).map_err(|e| {
        GlslangError::Io(format!("writing {}: {e}", crate::shown::shown_path(&input)))
    })?;

    let mut cmd = Command::new(program);
    cmd.args(["-V", "--target-env", env.flag(), "-S", "comp"]);
    if language == Language::Hlsl {
        cmd.args(["-D", "-e", ENTRY_POINT, "--resource-set-binding", "0"]);
    }
    cmd.arg("-o").arg(&output).arg(&input);
    let out = match cmd.output() {
        Ok(out) => out,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(GlslangError::Missing),
        Err(e) => return Err(GlslangError::Io(format!("running `{program}`: {e}"))),
    };
    if !out.status.success() {
        // glslang writes its diagnostics to stdout; the scratch path adds nothing.
        let log = String::from_utf8_lossy(&out.stdout).to_string()
            + &String::from_utf8_lossy(&out.stderr);
        let log = log.replace(&input.display().to_string(), file);
        return Err(GlslangError::Rejected(format!(
            "glslang ({extension}, {}) rejected the shader ({}):\n{}",
            env.flag(),
            out.status,
            log.trim()
        )));
    }
    let bytes = std::fs::read(&output).map_err(|e| {
        GlslangError::Io(format!(
            "reading {}: {e}",
            crate::shown::shown_path(&output)
        ))
    })?;
    words(&bytes).ok_or_else(|| {
        GlslangError::Io(format!(
            "glslang wrote {} bytes, not a SPIR-V module",
            bytes.len()
        ))
    })
}

/// The little-endian words of a SPIR-V file, or `None` when it is not one.
fn words(bytes: &[u8]) -> Option<Vec<u32>> {
    if bytes.len() < 20 || bytes.len() % 4 != 0 {
        return None;
    }
    let words: Vec<u32> = bytes
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    (words[0] == 0x0723_0203).then_some(words)
}

/// A directory made for one call (`create_dir` fails rather than reuse one that exists),
/// removed with everything in it when dropped.
struct Scratch {
    path: PathBuf,
}

impl Scratch {
    fn create() -> std::io::Result<Scratch> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir();
        let nanos = web_time::SystemTime::now()
            .duration_since(web_time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let mut last = None;
        for _ in 0..16 {
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let path = base.join(format!(
                "forge-glslang-{}-{n}-{nanos:x}",
                std::process::id()
            ));
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(Scratch { path }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => last = Some(e),
                Err(e) => return Err(with_path(e, &path)),
            }
        }
        Err(last.unwrap_or_else(|| std::io::Error::other("no scratch directory")))
    }
}

fn with_path(e: std::io::Error, path: &Path) -> std::io::Error {
    std::io::Error::new(
        e.kind(),
        format!("creating {}: {e}", crate::shown::shown_path(path)),
    )
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GLSL: &str = "#version 450 core\nlayout(local_size_x = 64) in;\n\
        layout(std430, binding = 0) buffer Y { uint y[]; };\n\
        void main() { y[gl_GlobalInvocationID.x] = gl_NumWorkGroups.x; }\n";

    #[test]
    fn compiles_glsl_to_a_module() {
        let words = compile(GLSL, Language::Glsl, VulkanEnv::Vulkan1_0)
            .unwrap_or_else(|e| panic!("{e:?} (install {GLSLANG_PACKAGE})"));
        assert_eq!(words[0], 0x0723_0203);
        // SPIR-V 1.0 for Vulkan 1.0, 1.3 for Vulkan 1.1.
        assert_eq!(words[1], 0x0001_0000);
        let words = compile(GLSL, Language::Glsl, VulkanEnv::Vulkan1_1).unwrap();
        assert_eq!(words[1], 0x0001_0300);
    }

    #[test]
    fn a_missing_program_is_reported_as_missing() {
        let err = compile_with(
            "glslangValidator-not-installed-here",
            GLSL,
            Language::Glsl,
            VulkanEnv::Vulkan1_0,
        )
        .expect_err("no such program");
        assert_eq!(err, GlslangError::Missing);
    }

    #[test]
    fn a_rejected_shader_carries_glslangs_log() {
        let bad = GLSL.replace("gl_NumWorkGroups.x", "undeclared_name");
        match compile(&bad, Language::Glsl, VulkanEnv::Vulkan1_0) {
            Err(GlslangError::Rejected(log)) => {
                assert!(log.contains("undeclared_name"), "{log}");
                assert!(log.contains("kernel.comp"), "{log}");
                assert!(!log.contains("forge-glslang-"), "no scratch path: {log}");
            }
            other => panic!("{other:?}"),
        }
        let hlsl = "[numthreads(1, 1, 1)] void main() { int x = missing; }";
        match compile(hlsl, Language::Hlsl, VulkanEnv::Vulkan1_0) {
            Err(GlslangError::Rejected(log)) => assert!(log.contains("missing"), "{log}"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn scratch_directories_are_removed() {
        let scratch = Scratch::create().unwrap();
        let path = scratch.path.clone();
        std::fs::write(path.join("f"), "x").unwrap();
        let other = Scratch::create().unwrap();
        assert_ne!(other.path, path);
        drop(scratch);
        assert!(!path.exists());
    }

    #[test]
    fn words_need_the_magic_number() {
        assert_eq!(words(&[0; 20]), None);
        assert_eq!(words(&[3, 2, 35, 7, 0]), None);
        let mut ok = vec![3, 2, 35, 7];
        ok.extend([0; 16]);
        assert_eq!(words(&ok).unwrap()[0], 0x0723_0203);
    }
}
