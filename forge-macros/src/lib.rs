//! `#[forge_kernel]`: a small compiler from an annotated Rust-like function to WGSL, a
//! `Pod` params struct, a binding layout, a typed runtime method and a CPU oracle.
//!
//! It is laid out in layers, each importing only the layers below it (the test
//! `tests/layers.rs` holds it so, and no module imports another in a cycle):
//! 1. the model: `model`, the typed tree every stage reads or writes, with the one walker
//!    (`Visit`, `Fold`) that every pass goes through; and `ctxt`, where errors collect;
//! 2. shared facts: `types` (what a type is and how it is laid out), `names` (how names are
//!    spelled in WGSL and CUDA), `consts` (the one constant evaluator, and `f16`
//!    literals), `paths` (the runtime items the generated Rust names), `validate` (naga's
//!    view of the WGSL) and `back` (the function structure the WGSL and CUDA emitters
//!    share);
//! 3. the stages, side by side, none importing another: `parse` (options and signature),
//!    `lower` (the body into the model), `inline` (helpers that take arrays by reference
//!    or hold barriers), `check` (every rule), `unroll` (one schedule made concrete), and
//!    the emitters `emit_wgsl`, `emit_cuda` and `emit_rust` (the items, with the CPU
//!    oracle);
//! 4. `driver`, which runs the stages in order for a kernel or a `#[forge_module]`, and
//!    answers `#[forge_kernel(debug)]`, `FORGE_DEBUG` and `FORGE_DUMP_DIR`.
//!
//! See the `wgsl-forge` crate for the language and the generated items.

mod back;
mod check;
mod consts;
mod ctxt;
mod driver;
mod emit_cuda;
mod emit_rust;
mod emit_wgsl;
mod inline;
mod lower;
mod model;
mod names;
mod parse;
mod paths;
mod types;
mod unroll;
mod validate;

#[cfg(test)]
mod tests;

use proc_macro::TokenStream;

/// Compiles a kernel function into a module of generated items. See the `wgsl-forge` crate
/// documentation for the kernel language, the options and what is generated.
///
/// `#[forge_kernel(debug, ..)]` prints the expansion (the generated Rust, with the WGSL and
/// CUDA sources in it) on the compiler's standard error while the crate builds; so does
/// `FORGE_DEBUG=name` for every kernel of that name (cargo does not rebuild a crate when
/// the variable changes: touch the file, or `cargo clean -p` the crate).
#[proc_macro_attribute]
pub fn forge_kernel(attr: TokenStream, item: TokenStream) -> TokenStream {
    driver::kernel(attr.into(), item.into()).into()
}

/// Groups kernels with the `#[forge_fn]` device functions, the `#[forge_struct]` structs and
/// the `const` items they share: every kernel of the module can use every one declared in
/// it. Helpers take scalars, vectors, structs and arrays by value, and local and workgroup
/// arrays by reference (`t: &mut [f32; 256]`); they may hold barriers and subgroup
/// operations and read builtins (such a helper is inlined at each call), cannot read
/// bindings, and may call only helpers declared before them (WGSL has no recursion).
///
/// See `wgsl_forge::forge_module` for an example that runs.
#[proc_macro_attribute]
pub fn forge_module(attr: TokenStream, item: TokenStream) -> TokenStream {
    driver::expand_module(attr.into(), item.into()).into()
}

/// Marks a struct inside a `#[forge_module]` as one the module's kernels and helpers use:
/// a binding's element, a local, a helper's argument or result, a workgroup array's
/// element. It must be `#[repr(C)]` and `Clone + Copy`, with named fields of 32-bit scalars
/// (`f32`, `u32`, `i32`), vectors of them (`Vec4`, `UVec2`, ...) and fixed arrays of those.
/// The macro implements `Pod`, `Zeroable` and `Element` for it, and checks at compile time
/// that its layout is WGSL's (as naga lays the WGSL struct out), naming the padding to add
/// where it is not. On its own, outside a `#[forge_module]`, it is an error.
#[proc_macro_attribute]
pub fn forge_struct(_attr: TokenStream, item: TokenStream) -> TokenStream {
    driver::lone_struct(item.into()).into()
}

/// Marks a device function inside a `#[forge_module]`. `#[forge_module]` consumes it; on
/// its own it is an error, since a kernel macro cannot see functions declared elsewhere.
#[proc_macro_attribute]
pub fn forge_fn(_attr: TokenStream, item: TokenStream) -> TokenStream {
    driver::lone_fn(item.into()).into()
}
