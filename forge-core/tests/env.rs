//! The `FORGE_*` environment variables. One test in its own binary, because it changes
//! the process environment that every runtime reads.

use forge_core::Backend;
use forge_core::{ForgeError, ForgeRuntime};

fn set(name: &str, value: &str) {
    // This binary runs this one test, on one thread: nothing reads the environment meanwhile.
    std::env::set_var(name, value);
}

#[test]
fn environment_variables_select_and_fail_loudly() {
    // An unknown backend is an error, never a silent fallback to WGSL.
    set("FORGE_BACKEND", "metal");
    match ForgeRuntime::new(1 << 20, None) {
        Err(ForgeError::UnknownBackend { name, valid }) => {
            assert_eq!(name, "metal");
            assert_eq!(valid, "wgsl, spirv, glsl");
        }
        other => panic!("expected UnknownBackend, got {other:?}"),
    }
    // The builder overrides the environment.
    let rt = ForgeRuntime::builder()
        .emission(Backend::Wgsl)
        .capacity(1 << 20)
        .build()
        .expect("builder wins");
    assert_eq!(rt.emission(), Backend::Wgsl);
    drop(rt);
    set("FORGE_BACKEND", "SpirV");
    let rt = ForgeRuntime::new(1 << 20, None).expect("spirv from the environment");
    assert_eq!(rt.emission(), Backend::Spirv);
    drop(rt);
    std::env::remove_var("FORGE_BACKEND");

    // An adapter filter that matches nothing lists what was seen.
    set("FORGE_ADAPTER", "no-such-adapter-xyz");
    match ForgeRuntime::new(1 << 20, None) {
        Err(e @ ForgeError::NoAdapter { .. }) => {
            let text = e.to_string();
            assert!(text.contains("no-such-adapter-xyz"), "{text}");
            assert!(text.contains("FORGE_ADAPTER"), "{text}");
            let real = ForgeRuntime::enumerate_adapters();
            assert!(real.iter().any(|info| text.contains(&info.name)), "{text}");
        }
        other => panic!("expected NoAdapter, got {other:?}"),
    }
    // A matching substring, in any case, picks that adapter.
    let name = ForgeRuntime::enumerate_adapters()
        .first()
        .map(|i| i.name.clone())
        .expect("an adapter (lavapipe in CI)");
    let needle: String = name.chars().take(4).collect::<String>().to_uppercase();
    set("FORGE_ADAPTER", &needle);
    let rt = ForgeRuntime::new(1 << 20, None).expect("the filter matches");
    assert!(rt.adapter_info().name.to_uppercase().contains(&needle));
    drop(rt);
    // The builder's adapter overrides the environment's.
    let rt = ForgeRuntime::builder().adapter(name.clone()).build();
    assert!(rt.is_ok(), "{rt:?}");
    std::env::remove_var("FORGE_ADAPTER");

    // The cache directory: builder, then environment, then none.
    set("FORGE_CACHE_DIR", "/tmp/forge-env-cache");
    let rt = ForgeRuntime::new(1 << 20, None).expect("runtime");
    assert_eq!(
        rt.cache_dir(),
        Some(std::path::Path::new("/tmp/forge-env-cache"))
    );
    drop(rt);
    let rt = ForgeRuntime::new(1 << 20, Some("/tmp/forge-arg-cache".into())).expect("runtime");
    assert_eq!(
        rt.cache_dir(),
        Some(std::path::Path::new("/tmp/forge-arg-cache"))
    );
    drop(rt);
    std::env::remove_var("FORGE_CACHE_DIR");
    let rt = ForgeRuntime::new(1 << 20, None).expect("runtime");
    assert_eq!(rt.cache_dir(), None);
}
