//! Targets: the shader forms a kernel can take. Layer 1 (values).
//!
//! This module owns [`Backend`], what the runtime hands to wgpu (WGSL, or SPIR-V through
//! passthrough: naga's own, or glslang's from naga's GLSL or HLSL), and [`Target`], every language [`crate::emit`] writes (those two, MSL,
//! HLSL and GLSL). Both parse their names with an error that lists the valid ones.

use crate::error::{ForgeError, Result};
use std::fmt;
use std::str::FromStr;

/// Which shader form the runtime hands to wgpu.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Backend {
    /// WGSL source (every wgpu backend).
    Wgsl,
    /// SPIR-V translated by naga, through passthrough (Vulkan only).
    Spirv,
    /// naga's GLSL, compiled to SPIR-V by glslang, through passthrough (Vulkan only).
    Glsl,
    /// naga's HLSL, compiled to SPIR-V by glslang's HLSL front end, through passthrough
    /// (Vulkan only; the workgroup counts travel as immediates).
    Hlsl,
    /// The kernel's CUDA C++, compiled by NVRTC and run through the CUDA driver, not wgpu
    /// (NVIDIA only; a build with the `cuda` feature: see `forge_core::device::cuda`).
    Cuda,
}

impl Backend {
    /// The valid names, as error messages list them.
    pub const VALID: &'static str = "wgsl, spirv, glsl, hlsl, cuda";

    /// Every executable backend, in the order of [`Backend::VALID`].
    pub const ALL: [Backend; 5] = [
        Backend::Wgsl,
        Backend::Spirv,
        Backend::Glsl,
        Backend::Hlsl,
        Backend::Cuda,
    ];

    /// The backends that run through wgpu: all but `cuda`.
    pub const WGPU: [Backend; 4] = [Backend::Wgsl, Backend::Spirv, Backend::Glsl, Backend::Hlsl];

    /// Parses `wgsl`, `spirv`, `glsl`, `hlsl` or `cuda` (case-insensitive, surrounding
    /// spaces ignored; `cuda` runs only in a build with the `cuda` feature, which the
    /// runtime's builder checks). A name that can only be emitted (`msl`, `ptx`: see [`Target`]) is
    /// [`ForgeError::BackendNotExecutable`]; anything else is [`ForgeError::UnknownBackend`].
    /// Both list the valid names; there is no silent fallback.
    ///
    /// ```
    /// use forge_core::Backend;
    /// assert_eq!(Backend::parse("SPIRV").unwrap(), Backend::Spirv);
    /// assert!(Backend::parse("metal").is_err());
    /// assert_eq!(Backend::parse("glsl").unwrap(), Backend::Glsl);
    /// assert_eq!(Backend::parse(" HLSL ").unwrap(), Backend::Hlsl);
    /// assert!(Backend::parse("msl").is_err(), "emitted, not executed on Linux");
    /// ```
    pub fn parse(name: &str) -> Result<Backend> {
        let wanted = name.trim().to_ascii_lowercase();
        match Backend::ALL.into_iter().find(|b| b.name() == wanted) {
            Some(b) => Ok(b),
            None if Target::parse(name).is_ok() => Err(ForgeError::BackendNotExecutable {
                name: name.trim().to_ascii_lowercase(),
                valid: Self::VALID,
            }),
            _ => Err(ForgeError::UnknownBackend {
                name: crate::shown::shown(name),
                valid: Self::VALID,
            }),
        }
    }

    /// The lower-case name: `wgsl`, `spirv`, `glsl` or `hlsl`.
    pub fn name(&self) -> &'static str {
        match self {
            Backend::Wgsl => "wgsl",
            Backend::Spirv => "spirv",
            Backend::Glsl => "glsl",
            Backend::Hlsl => "hlsl",
            Backend::Cuda => "cuda",
        }
    }

    /// Whether the runtime hands wgpu SPIR-V through passthrough for this backend, which
    /// needs a Vulkan adapter with `PASSTHROUGH_SHADERS`: `spirv`, `glsl` and `hlsl`.
    pub fn needs_passthrough(&self) -> bool {
        matches!(self, Backend::Spirv | Backend::Glsl | Backend::Hlsl)
    }

    /// Whether the emitted shader reads its workgroup counts from an immediate block the
    /// runtime sets per dispatch: HLSL has no `num_workgroups` builtin, so `hlsl` does.
    pub fn workgroup_counts_as_immediates(&self) -> bool {
        *self == Backend::Hlsl
    }
}

impl FromStr for Backend {
    type Err = ForgeError;

    fn from_str(s: &str) -> Result<Self> {
        Backend::parse(s)
    }
}

impl fmt::Display for Backend {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A shader language that a kernel can be emitted in.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Target {
    /// WGSL, as `#[forge_kernel]` generated it (validated, not rewritten).
    Wgsl,
    /// SPIR-V, a binary module.
    Spirv,
    /// Metal Shading Language.
    Msl,
    /// HLSL for DirectX 12.
    Hlsl,
    /// GLSL for OpenGL 4.5.
    Glsl,
    /// CUDA C++, from the kernel's model ([`crate::Kernel::cuda`]), not from its WGSL.
    Cuda,
    /// PTX: the CUDA C++ compiled by NVRTC (the `cuda` feature), no GPU needed.
    Ptx,
}

impl Target {
    /// The valid names, as error messages list them.
    pub const VALID: &'static str = "wgsl, spirv, msl, hlsl, glsl, cuda, ptx";

    /// Every target, in the order of [`Target::VALID`].
    pub const ALL: [Target; 7] = [
        Target::Wgsl,
        Target::Spirv,
        Target::Msl,
        Target::Hlsl,
        Target::Glsl,
        Target::Cuda,
        Target::Ptx,
    ];

    /// The targets naga translates the WGSL to (and the WGSL itself).
    pub const FROM_WGSL: [Target; 5] = [
        Target::Wgsl,
        Target::Spirv,
        Target::Msl,
        Target::Hlsl,
        Target::Glsl,
    ];

    /// Parses a target name (case-insensitive, surrounding spaces ignored). Anything else
    /// is [`ForgeError::UnknownBackend`], which lists the valid names.
    ///
    /// ```
    /// use forge_core::emit::Target;
    /// assert_eq!(Target::parse(" MSL ").unwrap(), Target::Msl);
    /// assert!(Target::parse("metal").is_err());
    /// ```
    pub fn parse(name: &str) -> Result<Target> {
        let wanted = name.trim().to_ascii_lowercase();
        Target::ALL
            .into_iter()
            .find(|t| t.name() == wanted)
            .ok_or_else(|| ForgeError::UnknownBackend {
                name: crate::shown::shown(name),
                valid: Self::VALID,
            })
    }

    /// The lower-case name.
    pub fn name(&self) -> &'static str {
        match self {
            Target::Wgsl => "wgsl",
            Target::Spirv => "spirv",
            Target::Msl => "msl",
            Target::Hlsl => "hlsl",
            Target::Glsl => "glsl",
            Target::Cuda => "cuda",
            Target::Ptx => "ptx",
        }
    }

    /// Where code in this language runs, in a phrase: `forge info` lists it for every
    /// target, so that an emitted language nobody executes says so.
    ///
    /// ```
    /// use forge_core::target::Target;
    /// assert!(Target::Msl.where_it_runs().starts_with("emit-only"));
    /// assert!(Target::Wgsl.where_it_runs().contains("FORGE_BACKEND=wgsl"));
    /// ```
    pub fn where_it_runs(&self) -> &'static str {
        match self {
            Target::Wgsl => "runs on every wgpu adapter (FORGE_BACKEND=wgsl, the default)",
            Target::Spirv => "runs by passthrough on Vulkan adapters (FORGE_BACKEND=spirv)",
            Target::Glsl => {
                "runs on Vulkan adapters, compiled to SPIR-V by glslangValidator (FORGE_BACKEND=glsl)"
            }
            Target::Hlsl => {
                "runs on Vulkan adapters, compiled to SPIR-V by glslangValidator's HLSL front end (FORGE_BACKEND=hlsl)"
            }
            Target::Msl => "emit-only on Linux: Metal runs on Apple platforms only",
            Target::Cuda => "runs on NVIDIA GPUs through the CUDA driver, compiled by NVRTC to a cubin (feature `cuda`; FORGE_BACKEND=cuda)",
            Target::Ptx => "emit-only: NVRTC's output, no GPU needed (feature `cuda`); the CUDA runtime loads cubins",
        }
    }

    /// The usual file extension, without the dot.
    pub fn extension(&self) -> &'static str {
        match self {
            Target::Wgsl => "wgsl",
            Target::Spirv => "spv",
            Target::Msl => "metal",
            Target::Hlsl => "hlsl",
            Target::Glsl => "comp",
            Target::Cuda => "cu",
            Target::Ptx => "ptx",
        }
    }
}

impl FromStr for Target {
    type Err = ForgeError;

    fn from_str(s: &str) -> Result<Self> {
        Target::parse(s)
    }
}

impl fmt::Display for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl From<Backend> for Target {
    /// The target that holds what the runtime runs for that backend.
    fn from(backend: Backend) -> Target {
        match backend {
            Backend::Wgsl => Target::Wgsl,
            Backend::Spirv => Target::Spirv,
            Backend::Glsl => Target::Glsl,
            Backend::Hlsl => Target::Hlsl,
            Backend::Cuda => Target::Cuda,
        }
    }
}
