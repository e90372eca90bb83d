//! The layers of forge-macros, checked on its source, the twin of forge-core's
//! `tests/layers.rs` (see the crate docs in `src/lib.rs`):
//! - every source file's module docs say its layer (`layer N`), and a submodule's agree
//!   with its top-level module's;
//! - a module imports (names through `crate::`) only modules of lower layers, or of its own
//!   layer without a cycle between them; but the stages (layer 3) import no other stage:
//!   they meet only through the model, which the driver hands from one to the next;
//! - the emitters (and `back`, which they share) never name `Ctxt`: they take a checked
//!   model and report no errors, every rule being `check`'s;
//! - `lib.rs` holds the four entry points and the module list, nothing else.
//!
//! References are read from the code with comments stripped, so docs may link anywhere.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What may break the rules, and why. Each entry is (module, name it may refer to, why).
/// None does today; an entry here is a debt to pay back.
const EXCEPTIONS: &[(&str, &str, &str)] = &[];

/// The layer of the stages, which import no other module of their layer.
const STAGES: u32 = 3;

/// The modules that write code from a checked model.
const EMITTERS: &[&str] = &["back", "emit_wgsl", "emit_cuda", "emit_rust"];

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

/// Whether `name` occurs in `code` as a whole identifier.
fn names(code: &str, name: &str) -> bool {
    code.match_indices(name).any(|(at, _)| {
        let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
        !code[..at].ends_with(word) && !code[at + name.len()..].starts_with(word)
    })
}

/// What `lib.rs` holds besides its module list: every item that is not a `mod`, as its
/// keyword and name (`fn forge_kernel`).
fn lib_items(code: &str) -> Vec<String> {
    let mut items = Vec::new();
    let mut depth = 0usize;
    for line in code.lines() {
        let t = line.trim();
        if depth == 0 {
            let t = t.strip_prefix("pub ").unwrap_or(t);
            for kw in [
                "fn", "struct", "enum", "impl", "const", "static", "trait", "type", "use",
            ] {
                if let Some(rest) = t.strip_prefix(kw).and_then(|r| r.strip_prefix(' ')) {
                    items.push(format!("{kw} {}", ident_at(rest)));
                }
            }
        }
        depth += line.matches('{').count();
        depth = depth.saturating_sub(line.matches('}').count());
    }
    items
}

#[test]
fn modules_import_only_lower_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&src, &mut files);
    files.sort();
    // Each file's top-level module: `lower/stmt.rs` is in `lower`.
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
            (1..=5).contains(&layer[m]),
            "`{m}`: layer {} is not 1..5",
            layer[m]
        );
    }

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
            if !modules.contains(&name) || name == module || excepted(&module, &name) {
                continue;
            }
            let (from, to) = (layer[&module], layer[&name]);
            if to > from {
                problems.push(format!(
                    "{rel}: `{module}` (layer {from}) uses `crate::{name}`, of layer {to}"
                ));
            }
            if to == from && from == STAGES {
                problems.push(format!(
                    "{rel}: the stage `{module}` uses the stage `{name}`; stages meet only through the model, which the driver hands on"
                ));
            }
            if to == from {
                edges.insert((module.clone(), name));
            }
        }
        if EMITTERS.contains(&module.as_str()) && !excepted(&module, "Ctxt") && names(&code, "Ctxt")
        {
            problems.push(format!(
                "{rel}: the emitter `{module}` names `Ctxt`; emitters take a checked model and report no errors"
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

    // `lib.rs`: the four entry points and the modules, as serde_derive's and thiserror's.
    let lib = code(&std::fs::read_to_string(src.join("lib.rs")).expect("lib.rs"));
    let expected = [
        "use proc_macro",
        "fn forge_kernel",
        "fn forge_module",
        "fn forge_struct",
        "fn forge_fn",
    ];
    let items = lib_items(&lib);
    if items != expected {
        problems.push(format!(
            "lib.rs holds {items:?}; it holds the module list and the four entry points, {expected:?}, and the driver does the rest"
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
        declared_layer("//! Things. Layer 3 (the stages).\nuse x;"),
        Some(3)
    );
    assert_eq!(declared_layer("//! Part of `lower` (layer 3).\n"), Some(3));
    assert_eq!(
        declared_layer("//! No layer here.\n\nfn f() {} // layer 2\n"),
        None
    );
    assert!(names("let cx: &Ctxt = x;", "Ctxt"));
    assert!(!names("let cx: &CtxtLike = x;", "Ctxt"));
    assert_eq!(
        lib_items(&code(
            "mod a;\n\nuse proc_macro::TokenStream;\n\n/// Docs.\n#[proc_macro_attribute]\npub fn forge_kernel(a: T) -> T {\n    let x = 1;\n    fn inner() {}\n}\nstruct S;\n"
        )),
        vec!["use proc_macro", "fn forge_kernel", "struct S"]
    );
}
