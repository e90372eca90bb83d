//! Values of the `FORGE_*` variables that cannot be used (issue 35, items 5 and 6): one
//! that is not UTF-8, or not a word the variable takes, is a `ForgeError::BadEnvVar` that
//! names the variable, never a silent fallback to the default; a long one is cut in the
//! message. One test in its own binary, because it changes the process environment that
//! every runtime reads.

use forge_core::{ForgeError, ForgeRuntime};
use std::ffi::OsStr;

/// The variables a runtime's builder reads (`FORGE_CUDA_DEVICE` only on the CUDA backend).
const VARS: &[&str] = &[
    "FORGE_BACKEND",
    "FORGE_ADAPTER",
    "FORGE_TRACE",
    "FORGE_CACHE_DIR",
    "FORGE_PRINT",
    "FORGE_PIPELINE_CACHE",
];

fn set(name: &str, value: impl AsRef<OsStr>) {
    // This binary runs this one test, on one thread: nothing reads the environment meanwhile.
    std::env::set_var(name, value);
}

fn build_err() -> ForgeError {
    match ForgeRuntime::new(1 << 20, None) {
        Ok(_) => panic!("the runtime was built"),
        Err(e) => e,
    }
}

#[test]
fn unusable_values_are_errors_that_name_the_variable() {
    for var in VARS {
        std::env::remove_var(var);
    }
    // Not UTF-8: refused by name, the value shown escaped, whatever the variable.
    #[cfg(unix)]
    for var in VARS {
        use std::os::unix::ffi::OsStrExt;
        set(var, OsStr::from_bytes(b"a\xffb\x1b[2J"));
        match build_err() {
            ForgeError::BadEnvVar { var: v, reason } => {
                assert_eq!(v, *var);
                assert!(reason.contains("not valid UTF-8"), "{reason}");
                assert!(reason.contains("`a\\xffb\\u{1b}[2J` (7 bytes)"), "{reason}");
            }
            other => panic!("{var}: expected BadEnvVar, got {other:?}"),
        }
        std::env::remove_var(var);
    }
    // Words a variable does not take.
    for (var, word) in [
        ("FORGE_PRINT", "stdout"),
        ("FORGE_PIPELINE_CACHE", "sometimes"),
    ] {
        set(var, word);
        let e = build_err();
        assert!(
            matches!(e, ForgeError::BadEnvVar { var: v, .. } if v == var),
            "{e:?}"
        );
        assert!(e.to_string().contains(&format!("`{word}`")), "{e}");
        std::env::remove_var(var);
    }
    // The words they do take, in any case; blank is unset.
    for (var, word) in [
        ("FORGE_PRINT", "OFF"),
        ("FORGE_PRINT", " stderr "),
        ("FORGE_PIPELINE_CACHE", "no"),
        ("FORGE_PIPELINE_CACHE", "On"),
        ("FORGE_BACKEND", "  "),
    ] {
        set(var, word);
        let rt = ForgeRuntime::new(1 << 20, None);
        assert!(rt.is_ok(), "{var}={word:?}: {rt:?}");
        std::env::remove_var(var);
    }
    // Long values are cut in the message, which says their length.
    for (var, len) in [("FORGE_BACKEND", 100_000), ("FORGE_ADAPTER", 200_000)] {
        set(var, "x".repeat(len));
        let text = build_err().to_string();
        let adapters: usize = ForgeRuntime::enumerate_adapters()
            .iter()
            .map(|a| a.name.len() + 40)
            .sum();
        assert!(text.len() < 600 + adapters, "{var}: {} bytes", text.len());
        assert!(text.contains(&format!("[{len} bytes in all]")), "{text}");
        std::env::remove_var(var);
    }
    let dir = std::env::temp_dir().join(format!("forge-env-values-{}", std::process::id()));
    set(
        "FORGE_TRACE",
        dir.join("x".repeat(100_000)).join("trace.json"),
    );
    let text = build_err().to_string();
    assert!(text.len() < 600, "{} bytes: {text}", text.len());
    std::env::remove_var("FORGE_TRACE");
}
