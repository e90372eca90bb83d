//! # WGSL Forge
//!
//! Write a GPU compute kernel once, as an annotated Rust-like function. `#[forge_kernel]`
//! generates, at compile time, the WGSL (validated by naga), a `Pod` params struct, the
//! binding layout, a typed runtime method and a CPU oracle that runs the same kernel with
//! WGSL semantics:
//!
//! ```
//! use wgsl_forge::prelude::*;
//!
//! /// y = A·x for a row-major m×n matrix A.
//! #[forge_kernel(workgroup = 64, threads = m)]
//! pub fn my_gemv(a: &[f32; m * n], x: &[f32; n], #[out] y: &mut [f32; m], m: u32, n: u32) {
//!     let row = global_index();
//!     if row < m {
//!         let mut acc = 0.0f32;
//!         for j in 0..n {
//!             acc += a[row * n + j] * x[j];
//!         }
//!         y[row] = acc;
//!     }
//! }
//!
//! # fn main() -> Result<(), ForgeError> {
//! let a = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
//! let x = [1.0, 1.0, 1.0];
//! let mut rt = ForgeRuntime::new(1 << 28, None)?;
//! let gpu = rt.my_gemv(&a, &x, 2, 3)?;          // the typed method, on the GPU
//! let cpu = my_gemv::cpu(&a, &x, 2, 3)?;        // the oracle, on the CPU
//! assert_eq!(gpu, vec![6.0, 15.0]);
//! assert_eq!(cpu, gpu);
//! # Ok(())
//! # }
//! ```
//!
//! The book (`docs/book/` in the repository: `mdbook build docs/book`) is the reference for
//! the kernel language, the runtime, certification and tuning, the backends and the CLI.
//!
//! # What the facade offers
//! - [`prelude`]: the macro, the runtime, the error and the built-in kernels' methods;
//! - [`runtime`]: [`ForgeRuntime`], its builder, device-resident tensors, host launches;
//! - [`group`]: several devices as one ([`group::DeviceGroup`]): sharded launches (the
//!   built-ins' sharded forms are `kernels::sharded`), collectives, tuning per device type;
//! - [`kernels`]: the built-in kernels;
//! - [`certify`], [`tune`] (with [`timing`] and the [`manifest`] cache it writes), [`emit`]
//!   (naga's translations) and [`oracle`] (the CPU oracle's options);
//! - [`error`](mod@error), with [`ForgeError`];
//! - at the root, the types that describe a kernel ([`Kernel`], [`Schedule`], [`Binding`],
//!   ...), which the certifier, the tuner and generic drivers take.
//!
//! The `forge` command line is the `forge-cli` package: `cargo run -p forge-cli --bin forge
//! -- certify`. A library user builds none of its dependencies.

pub use forge_core::vectors;
pub use forge_core::{
    backend, certify, emit, error, manifest, oracle, prints, roofline, sizes, timing, trace, tune,
};
// Several devices run a thread each: not in a browser, whose page has one.
#[cfg(not(target_arch = "wasm32"))]
pub use forge_core::group;
pub use forge_core::{
    f16, wgpu, Access, Backend, Binding, Cost, DynArgs, ElemType, Element, Feature, ForgeError,
    ForgeRuntime, GpuTensor, HardwareProfile, HostArg, HostBuffer, Input, InputCase, Kernel,
    KernelId, ManifestCache, OracleOptions, RuntimeBuilder, RuntimeStats, ScalarParam, ScalarType,
    ScalarValue, Schedule, StructField, StructLayout, Threads, Timing, Tolerance, TuneSpace,
    TuningManifest, WgpuParts,
};
pub use forge_kernels as kernels;
pub use forge_macros::{forge_fn, forge_kernel, forge_module, forge_struct};

/// The runtime: the device, launches on host data and on device-resident tensors, the
/// launch plan every launch is checked with, and the wgpu it runs on.
pub mod runtime {
    pub use forge_core::plan::{
        fold_groups, workgroup_bytes, FoldError, Grid, LaunchPlan, PORTABLE_WORKGROUP_BYTES,
    };
    pub use forge_core::runtime::launch::HostArg;
    pub use forge_core::runtime::{
        cuda_device_count, enumerate_adapters, group_adapters, nccl_version, Backend, ForgeRuntime,
        RuntimeBuilder, RuntimeStats, WgpuParts, DEFAULT_CAPACITY, ENV_ADAPTER, ENV_BACKEND,
        ENV_CACHE_DIR, ENV_CUDA_DEVICE, ENV_TRACE,
    };
    pub use forge_core::tensor::{Element, GpuTensor, RawTensor};
    pub use forge_core::topology::HardwareProfile;
    pub use forge_core::wgpu;
}

/// Everything a kernel author and a kernel user need: the macro, the runtime, the error,
/// the built-in kernels' methods, and a group of devices with the built-ins' sharded
/// forms.
pub mod prelude {
    #[cfg(not(target_arch = "wasm32"))]
    pub use forge_core::group::DeviceGroup;
    pub use forge_core::vectors::*;
    pub use forge_core::{
        f16, Feature, ForgeError, ForgeRuntime, GpuTensor, Kernel, OracleOptions, Schedule,
    };
    pub use forge_kernels::prelude::*;
    pub use forge_macros::{forge_fn, forge_kernel, forge_module, forge_struct};
}

#[doc(hidden)]
pub use forge_core::__private;

/// The README's code blocks, run as doc-tests so that it stays true.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
