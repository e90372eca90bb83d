//! The book's code blocks, run as doc-tests: `build.rs` writes one module per chapter of
//! `src/`, its includes expanded, and rustdoc runs every Rust block in them
//! (`cargo test --doc -p forge-book`). This crate has no other content.

#[cfg(doctest)]
include!(concat!(env!("OUT_DIR"), "/chapters.rs"));
