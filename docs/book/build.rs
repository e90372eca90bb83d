//! Writes every chapter of the book, with mdBook's `{{#include}}` and `{{#rustdoc_include}}`
//! expanded, into OUT_DIR, and `chapters.rs`, one doc-test module per chapter: rustdoc reads
//! the markdown as it is, so an included example must be pasted in before it can run.
//!
//! Only what the book uses is supported: `{{#include PATH}}`, `{{#include PATH:ANCHOR}}` and
//! `{{#rustdoc_include PATH:ANCHOR}}` (the whole file, the lines outside the anchor hidden
//! with `# `, as mdBook shows them), PATH relative to the chapter.
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

fn main() {
    let root = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").unwrap()).join("src");
    let out = PathBuf::from(std::env::var("OUT_DIR").unwrap());
    println!("cargo::rerun-if-changed=src");
    let mut chapters = Vec::new();
    collect(&root, &mut chapters);
    chapters.sort();
    let mut modules = String::new();
    for chapter in &chapters {
        let relative = chapter.strip_prefix(&root).unwrap();
        let text = fs::read_to_string(chapter).unwrap();
        let expanded = expand(&text, chapter.parent().unwrap());
        let target = out.join("book").join(relative);
        fs::create_dir_all(target.parent().unwrap()).unwrap();
        fs::write(&target, expanded).unwrap();
        let name: String = relative
            .with_extension("")
            .to_string_lossy()
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .collect();
        writeln!(
            modules,
            "#[doc = include_str!({:?})]\npub mod {name} {{}}",
            target.display()
        )
        .unwrap();
    }
    fs::write(out.join("chapters.rs"), modules).unwrap();
}

fn collect(dir: &Path, into: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            collect(&path, into);
        } else if path.extension().is_some_and(|e| e == "md") {
            into.push(path);
        }
    }
}

fn expand(text: &str, dir: &Path) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let trimmed = line.trim();
        let directive = trimmed
            .strip_prefix("{{#include ")
            .map(|rest| (rest, false))
            .or_else(|| {
                trimmed
                    .strip_prefix("{{#rustdoc_include ")
                    .map(|rest| (rest, true))
            });
        let Some((rest, hide_outside)) = directive else {
            out.push_str(line);
            out.push('\n');
            continue;
        };
        let spec = rest
            .strip_suffix("}}")
            .expect("an include directive ends with }}")
            .trim();
        let (file, anchor) = match spec.rsplit_once(':') {
            Some((file, anchor)) => (file, Some(anchor)),
            None => (spec, None),
        };
        let path = dir.join(file);
        println!("cargo::rerun-if-changed={}", path.display());
        let source =
            fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let mut inside = anchor.is_none();
        for source_line in source.lines() {
            // Module docs of an example are its file's docs, not the block's: `//!` would be
            // an inner attribute in the middle of the doc-test.
            if source_line.starts_with("//!") {
                continue;
            }
            if let Some(a) = anchor {
                if source_line.contains(&format!("ANCHOR: {a}")) {
                    inside = true;
                    continue;
                }
                if source_line.contains(&format!("ANCHOR_END: {a}")) {
                    inside = false;
                    continue;
                }
            }
            if source_line.contains("ANCHOR: ") || source_line.contains("ANCHOR_END: ") {
                continue;
            }
            if inside {
                out.push_str(source_line);
                out.push('\n');
            } else if hide_outside {
                out.push_str(if source_line.trim().is_empty() {
                    "#"
                } else {
                    "# "
                });
                if !source_line.trim().is_empty() {
                    out.push_str(source_line);
                }
                out.push('\n');
            }
        }
    }
    out
}
