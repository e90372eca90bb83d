//! What the driver writes beside the expansion, for whoever works on the compiler or on a
//! kernel.
//!
//! `#[forge_kernel(debug)]`, or `FORGE_DEBUG=name` (several names comma-separated, or `*`
//! for every kernel), prints a kernel's expansion on the compiler's standard error, as
//! CubeCL's `debug` does: the generated Rust, pretty-printed, with its WGSL and CUDA sources
//! in it. Cargo shows it when it builds the crate.
//!
//! `FORGE_DUMP_DIR` writes every kernel's emitted WGSL and CUDA C, for every schedule, and
//! its generated Rust, so that a change to the compiler can be shown to keep them
//! byte-identical (`scripts/emit_compare.sh` records and compares). Unset or empty, nothing
//! is written and nothing changes.
//!
//! Each kernel gets a folder `<dir>/<name>-<hash>/`, the hash being that of the tokens the
//! macro was given (the attribute, the function, and the whole `#[forge_module]` around it),
//! so that two kernels of one name in different crates or modules do not collide, and the
//! same kernel seen twice writes the same files. Files are written to a temporary name and
//! renamed, so that crates expanding in parallel never leave a torn file.
//!
//! Cargo does not track a proc macro's environment: to expand again with either variable
//! set, touch the crate's sources (or `touch forge-macros/src/lib.rs`, which rebuilds every
//! crate that uses the macro).
//!
//! Part of the `driver` (layer 4).

use crate::model::{CudaSources, Kernel, Sources};
use proc_macro2::TokenStream;
use std::cell::Cell;
use std::path::PathBuf;

thread_local! {
    /// The hash of the `#[forge_module]` being expanded, 0 outside one.
    static MODULE: Cell<u64> = const { Cell::new(0) };
}

/// The folder to write to, when dumping is on.
pub fn dir() -> Option<PathBuf> {
    std::env::var_os("FORGE_DUMP_DIR")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
}

/// Runs `f` with the module's tokens as the context of the kernels' keys.
pub fn in_module<R>(module: &TokenStream, f: impl FnOnce() -> R) -> R {
    if dir().is_none() {
        return f();
    }
    let before =
        MODULE.with(|m| m.replace(fnv(fnv(OFFSET, b"module"), module.to_string().as_bytes())));
    let r = f();
    MODULE.with(|m| m.set(before));
    r
}

const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;

/// FNV-1a: a hash that is the same in every build and process, unlike std's.
fn fnv(mut h: u64, bytes: &[u8]) -> u64 {
    for b in bytes {
        h ^= *b as u64;
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

/// A kernel's folder name: its name (`<`, `>` and other non-word characters as `_`) and
/// the hash of its tokens and of the module around it.
pub fn key(name: &str, attr: &TokenStream, func: &syn::ItemFn) -> String {
    let module = MODULE.with(Cell::get);
    let mut h = fnv(OFFSET, &module.to_le_bytes());
    h = fnv(h, attr.to_string().as_bytes());
    h = fnv(h, b"\0");
    h = fnv(h, quote::quote!(#func).to_string().as_bytes());
    let name: String = name
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect();
    format!("{name}-{h:016x}")
}

/// Writes `<dir>/<key>/<file>`, atomically; a failure is reported on stderr and otherwise
/// ignored, since dumping must never break a build.
pub fn write(key: &str, file: &str, contents: &str) {
    let Some(dir) = dir() else { return };
    let folder = dir.join(key);
    let result = std::fs::create_dir_all(&folder).and_then(|()| {
        let tmp = folder.join(format!(".{file}.{}.tmp", std::process::id()));
        std::fs::write(&tmp, contents)?;
        std::fs::rename(&tmp, folder.join(file))
    });
    if let Err(e) = result {
        eprintln!("forge_kernel: cannot write {file} of {key} under FORGE_DUMP_DIR: {e}");
    }
}

/// The generated Rust, pretty-printed where it parses as a file.
pub fn rust(tokens: &TokenStream) -> String {
    match syn::parse2::<syn::File>(tokens.clone()) {
        Ok(f) => prettyplease::unparse(&f),
        Err(_) => tokens.to_string(),
    }
}

/// Whether `FORGE_DEBUG` names the kernel (or is `*`).
pub fn debug_named(name: &str) -> bool {
    std::env::var("FORGE_DEBUG")
        .is_ok_and(|v| v.split(',').any(|n| n.trim() == name || n.trim() == "*"))
}

/// Prints a kernel's expansion on standard error.
pub fn print(name: &str, tokens: &TokenStream) {
    eprintln!(
        "// ---- #[forge_kernel] expansion of `{name}` ----\n{}// ---- end of `{name}` ----",
        rust(tokens)
    );
}

/// Writes a kernel's WGSL and CUDA for every schedule under `FORGE_DUMP_DIR`: `s<i>.wgsl`
/// and `s<i>.cu` for schedule `i` of `Kernel::schedules` (listed in `schedules.txt`), and
/// `fallback.*`, the rolled loops of schedules outside the tuning space, where there is one.
pub fn sources(key: &str, kernel: &Kernel<'_>, wgsl: &Sources, cuda: &CudaSources, rolled: bool) {
    let knobs = &kernel.options.knobs;
    let list: String = wgsl
        .schedules
        .iter()
        .enumerate()
        .map(|(i, (s, _))| format!("s{i}: {}\n", s.describe(knobs)))
        .collect();
    write(key, "schedules.txt", &list);
    for (i, (s, b)) in wgsl.schedules.iter().enumerate() {
        let header = crate::emit_wgsl::schedule_header(s, knobs);
        let full = format!("{}{header}{}", wgsl.directives, wgsl.bodies[*b]);
        write(key, &format!("s{i}.wgsl"), &full);
    }
    if rolled {
        let body = &wgsl.bodies[wgsl.fallback];
        write(key, "fallback.wgsl", &format!("{}{body}", wgsl.directives));
    }
    if let Some(reason) = &cuda.refused {
        write(key, "cuda-refused.txt", reason);
        return;
    }
    write(key, "prelude.cu", &cuda.prelude);
    for (i, b) in cuda.schedules.iter().enumerate() {
        write(key, &format!("s{i}.cu"), &cuda.bodies[*b]);
    }
    if rolled && cuda.bodies.len() > 1 {
        write(key, "fallback.cu", &cuda.bodies[cuda.fallback]);
    }
}
