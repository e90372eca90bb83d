//! Compile-fail cases: each file in `tests/ui/` breaks one rule of the kernel language, and
//! its `.stderr` holds the error the macro must give. Regenerate with
//! `TRYBUILD=overwrite cargo test --test ui`, then read every changed `.stderr`: a message
//! is lower case, names the construct in backticks, points at the narrowest span and
//! suggests a fix.

#[test]
fn ui() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
