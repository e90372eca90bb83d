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
            assert_eq!(valid, "wgsl, spirv, glsl, hlsl, cuda");
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
    // `cuda` without the `cuda` feature: an error that says how to build it, not wgpu.
    #[cfg(not(feature = "cuda"))]
    {
        set("FORGE_BACKEND", "cuda");
        match ForgeRuntime::new(1 << 20, None) {
            Err(
                e @ ForgeError::NotBuilt {
                    feature: "cuda", ..
                },
            ) => {
                assert!(e.to_string().contains("--features cuda"), "{e}");
            }
            other => panic!("expected NotBuilt, got {other:?}"),
        }
    }
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
    drop(rt);

    // The trace: FORGE_TRACE writes one where it is set, and nothing where it is not.
    let dir = std::env::temp_dir().join(format!("forge-env-trace-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("env.json");
    set("FORGE_TRACE", path.to_str().unwrap());
    let mut rt = ForgeRuntime::new(1 << 20, None).expect("a traced runtime");
    assert_eq!(rt.trace_path(), Some(path.as_path()));
    let t = rt.upload(&[5u32, 6, 7]).unwrap();
    assert_eq!(rt.download(&t).unwrap(), vec![5, 6, 7]);
    drop(t);
    drop(rt);
    let trace: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("written on drop")).unwrap();
    let names: Vec<&str> = trace["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["upload", "download"]);
    // The builder's path wins over the environment's.
    let other = dir.join("builder.json");
    let rt = ForgeRuntime::builder().trace(&other).build().unwrap();
    assert_eq!(rt.trace_path(), Some(other.as_path()));
    drop(rt);
    // A path that cannot be written is an error at build time.
    set("FORGE_TRACE", dir.to_str().unwrap());
    assert!(
        ForgeRuntime::new(1 << 20, None).is_err(),
        "a directory is no trace file"
    );
    std::env::remove_var("FORGE_TRACE");
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&dir).unwrap();
    let mut rt = ForgeRuntime::new(1 << 20, None).expect("runtime");
    assert_eq!(rt.trace_path(), None);
    let t = rt.upload(&[1u32]).unwrap();
    rt.download(&t).unwrap();
    assert!(!rt.flush_trace().unwrap());
    drop(t);
    drop(rt);
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        0,
        "nothing is written without a trace"
    );
    std::fs::remove_dir_all(&dir).unwrap();
}
