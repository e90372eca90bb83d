//! The layers of forge-core, checked on its source (see the crate docs, "Layers"):
//! - every source file's module docs say its layer (`layer N`), and a submodule's agree
//!   with its top-level module's;
//! - a module imports (names through `crate::`) only modules of lower layers, or of its own
//!   layer without a cycle between them;
//! - nothing below the runtime (layer 5) names `ForgeRuntime`;
//! - the layers are the crate docs': values, offline work, the backend seam, the devices,
//!   the runtime, the procedures (1 to 6).
//!
//! References are read from the code with comments stripped, so docs may link anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What may break the rules, and why. Each entry is (module, name it may refer to, why).
/// None does today; an entry here is a debt to pay back.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

fn sources(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("read src") {
        let path = entry.expect("entry").path();
        if path.is_dir() {
            sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The code of a file without comments (line, block and doc comments) and without the
/// contents of string literals, so that neither prose nor messages count as references.
fn code(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'/' if b.get(i + 1) == Some(&b'/') => {
                while i < b.len() && b[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                let mut depth = 0;
                while i < b.len() {
                    if b[i] == b'/' && b.get(i + 1) == Some(&b'*') {
                        depth += 1;
                        i += 2;
                    } else if b[i] == b'*' && b.get(i + 1) == Some(&b'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'"' => {
                // A raw string's `r#` prefix was already copied; its body has no escapes
                // that matter here, and an escaped quote never ends a plain string.
                out.push('"');
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                out.push('"');
                i += 1;
            }
            b'\'' if b.get(i + 2) == Some(&b'\'') || (b.get(i + 1) == Some(&b'\\')) => {
                // A char literal ('x' or '\n'): skipped whole, so '"' opens no string.
                i += 1;
                while i < b.len() && b[i] != b'\'' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
            }
            c => {
                out.push(c as char);
                i += 1;
            }
        }
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The first path segment of every `crate::` path in `code`, with `crate::{a, b::c}`
/// groups opened.
fn crate_refs(code: &str) -> Vec<String> {
    let mut refs = Vec::new();
    let mut rest = code;
    while let Some(at) = rest.find("crate::") {
        let before = rest[..at].chars().last();
        rest = &rest[at + "crate::".len()..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$' || c == ':') {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 1;
            let mut item = String::new();
            let mut items = Vec::new();
            for c in group.chars() {
                match c {
                    '{' => depth += 1,
                    '}' => depth -= 1,
                    ',' if depth == 1 => {
                        items.push(std::mem::take(&mut item));
                        continue;
                    }
                    _ => {}
                }
                if depth == 0 {
                    break;
                }
                if depth == 1 {
                    item.push(c);
                }
            }
            items.push(item);
            refs.extend(
                items
                    .iter()
                    .map(|i| ident_at(i.trim()).to_string())
                    .filter(|i| !i.is_empty()),
            );
        } else {
            refs.push(ident_at(rest).to_string());
        }
    }
    refs
}

/// The names lib.rs re-exports at the crate root, by the module they come from.
fn root_reexports(lib: &str, modules: &BTreeSet<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let code = code(lib);
    for stmt in code.split(';') {
        let stmt = stmt.trim();
        let Some(path) = stmt.strip_prefix("pub use ") else {
            continue;
        };
        let module = ident_at(path).to_string();
        if !modules.contains(&module) {
            continue;
        }
        let tail = &path[module.len()..];
        let names: Vec<&str> = match (tail.find('{'), tail.rfind('}')) {
            (Some(a), Some(b)) => tail[a + 1..b].split(',').collect(),
            _ => vec![tail.rsplit("::").next().unwrap_or("")],
        };
        for name in names {
            let name = name.trim().rsplit("::").next().unwrap_or("").trim();
            if !name.is_empty() {
                out.insert(name.to_string(), module.clone());
            }
        }
    }
    out
}

/// The layer a file's module docs give: the first `layer N` with a digit.
fn declared_layer(text: &str) -> Option<u32> {
    let docs: String = text
        .lines()
        .take_while(|l| l.starts_with("//!") || l.trim().is_empty())
        .collect::<Vec<_>>()
        .join(" ")
        .to_ascii_lowercase();
    docs.match_indices("layer ").find_map(|(at, _)| {
        docs[at + "layer ".len()..]
            .chars()
            .next()
            .and_then(|c| c.to_digit(10))
    })
}

#[test]
fn modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    // Each file's top-level module: `device/pipeline.rs` is in `device`.
    let top = |path: &Path| -> String {
        let rel = path.strip_prefix(&src).expect("under src");
        let first = rel.components().next().expect("a component");
        first
            .as_os_str()
            .to_string_lossy()
            .trim_end_matches(".rs")
            .to_string()
    };
    let modules: BTreeSet<String> = files
        .iter()
        .map(|p| top(p))
        .filter(|m| m != "lib")
        .collect();

    let mut problems = Vec::new();
    let mut layer: BTreeMap<String, u32> = BTreeMap::new();
    // Top-level files first, so that submodules can be checked against them.
    let mut ordered: Vec<&PathBuf> = files.iter().collect();
    ordered.sort_by_key(|p| p.strip_prefix(&src).map_or(0, |r| r.components().count()));
    for path in &ordered {
        let module = top(path);
        if module == "lib" {
            continue;
        }
        let text = std::fs::read_to_string(path).expect("read");
        let rel = path.strip_prefix(&src).unwrap().display().to_string();
        match (declared_layer(&text), layer.get(&module)) {
            (None, _) => problems.push(format!(
                "{rel}: its module docs do not say its layer (`layer N`)"
            )),
            (Some(n), None) => {
                layer.insert(module.clone(), n);
            }
            (Some(n), Some(&m)) if n != m => problems.push(format!(
                "{rel}: its docs say layer {n}, but its module `{module}` is layer {m}"
            )),
            _ => {}
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    for m in &modules {
        assert!(
            (1..=7).contains(&layer[m]),
            "`{m}`: layer {} is not 1..7",
            layer[m]
        );
    }

    let lib = std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs");
    let reexports = root_reexports(&lib, &modules);
    let runtime_layer = layer["runtime"];
    // The seam sits between the offline work and the devices, and the runtime above both:
    // the runtime reaches a device only through the seam's trait.
    assert!(
        layer["backend"] < layer["device"] && layer["device"] < runtime_layer,
        "the backend seam (layer {}) must sit below the devices (layer {}), and they below the runtime (layer {runtime_layer})",
        layer["backend"],
        layer["device"]
    );
    let excepted =
        |m: &str, name: &str| EXCEPTIONS.iter().any(|(em, en, _)| *em == m && *en == name);
    let mut edges: BTreeSet<(String, String)> = BTreeSet::new();
    for path in &files {
        let module = top(path);
        if module == "lib" {
            continue;
        }
        let rel = path.strip_prefix(&src).unwrap().display().to_string();
        let code = code(&std::fs::read_to_string(path).expect("read"));
        for name in crate_refs(&code) {
            let target = if modules.contains(&name) {
                name.clone()
            } else if let Some(m) = reexports.get(&name) {
                m.clone()
            } else {
                // `crate::f16` and the like: re-exports of other crates.
                continue;
            };
            if target == module || excepted(&module, &name) {
                continue;
            }
            if layer[&target] > layer[&module] {
                problems.push(format!(
                    "{rel}: `{module}` (layer {}) uses `crate::{name}`, of `{target}` (layer {})",
                    layer[&module], layer[&target]
                ));
            }
            if layer[&target] == layer[&module] {
                edges.insert((module.clone(), target));
            }
        }
        if layer[&module] < runtime_layer
            && !excepted(&module, "ForgeRuntime")
            && code.match_indices("ForgeRuntime").any(|(at, _)| {
                !code[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_')
            })
        {
            problems.push(format!(
                "{rel}: `{module}` (layer {}) names `ForgeRuntime`; nothing below the runtime may",
                layer[&module]
            ));
        }
    }

    // No cycle among the modules of one layer.
    let mut state: BTreeMap<&str, u8> = BTreeMap::new(); // 1: on the path, 2: done
    fn visit<'a>(
        m: &'a str,
        edges: &'a BTreeSet<(String, String)>,
        state: &mut BTreeMap<&'a str, u8>,
        path: &mut Vec<&'a str>,
        problems: &mut Vec<String>,
    ) {
        match state.get(m) {
            Some(2) => return,
            Some(1) => {
                let start = path.iter().position(|p| *p == m).unwrap_or(0);
                problems.push(format!(
                    "import cycle: {} -> {m}",
                    path[start..].join(" -> ")
                ));
                return;
            }
            _ => {}
        }
        state.insert(m, 1);
        path.push(m);
        for (_, to) in edges.iter().filter(|(from, _)| from == m) {
            visit(to, edges, state, path, problems);
        }
        path.pop();
        state.insert(m, 2);
    }
    for m in &modules {
        visit(m, &edges, &mut state, &mut Vec::new(), &mut problems);
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// The files of the CUDA backend itself, where `cfg(feature = "cuda")` belongs.
const CUDA_BACKEND_FILES: &[&str] = &[
    "device/cuda.rs",
    "device/cuda_absent.rs",
    "emit/nvrtc.rs",
    "emit/nvrtc_absent.rs",
];

/// The runtime is written once over the backend seam: of the runtime and the procedures,
/// only the builder, which opens a device, names a device implementation; and the `cuda`
/// feature appears only in the CUDA backend's own files and where a device is declared or
/// opened (at most 6 times outside them).
#[test]
fn the_runtime_is_written_once_over_the_seam() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    let mut problems = Vec::new();
    let mut cuda_cfgs = Vec::new();
    for path in &files {
        let rel = path
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(path).expect("read");
        let code = code(&text);
        let above_devices = ["runtime/", "timing/", "certify/", "tune/", "group/"]
            .iter()
            .any(|d| rel.starts_with(d));
        if above_devices
            && rel != "runtime/builder.rs"
            && crate_refs(&code).iter().any(|r| r == "device")
        {
            problems.push(format!(
                "{rel} names `crate::device`: above the devices, only the runtime's builder may; use the seam (`crate::backend`)"
            ));
        }
        if !CUDA_BACKEND_FILES.contains(&rel.as_str()) {
            // The feature's name is a string literal, which `code` empties: count it in the text.
            let n = text
                .lines()
                .filter(|l| !l.trim_start().starts_with("//") && l.contains("feature = \"cuda\""))
                .count();
            if n > 0 {
                cuda_cfgs.push(format!("{rel}: {n}"));
            }
        }
    }
    let total: usize = cuda_cfgs
        .iter()
        .filter_map(|c| c.rsplit(": ").next()?.parse::<usize>().ok())
        .sum();
    if total > 6 {
        problems.push(format!(
            "{total} `cfg(feature = \"cuda\")` outside the CUDA backend's files ({}); at most 6",
            cuda_cfgs.join(", ")
        ));
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn the_checker_sees_references() {
    let refs = crate_refs(&code(
        "use crate::a::B;\nuse crate::{c, d::{E, F}};\n// crate::comment\nlet s = \"crate::string\";\nx::crate::no;\n",
    ));
    assert_eq!(refs, vec!["a", "c", "d"]);
    assert_eq!(
        declared_layer("//! Things. Layer 3 (the device).\nuse x;"),
        Some(3)
    );
    assert_eq!(
        declared_layer("//! Part of the runtime (layer 4).\n"),
        Some(4)
    );
    assert_eq!(
        declared_layer("//! Part of the device layer (layer 3).\n"),
        Some(3)
    );
    assert_eq!(
        declared_layer("//! No layer here.\n\nfn f() {} // layer 2\n"),
        None
    );
    let modules: BTreeSet<String> = ["runtime", "kernel"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let map = root_reexports(
        "pub use runtime::{Backend, ForgeRuntime};\npub use kernel::Kernel;\npub use half::f16;",
        &modules,
    );
    assert_eq!(map.get("ForgeRuntime").map(String::as_str), Some("runtime"));
    assert_eq!(map.get("Kernel").map(String::as_str), Some("kernel"));
    assert!(!map.contains_key("f16"));
}
