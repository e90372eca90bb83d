//! Cold start on the real adapter (lavapipe in CI): the driver's pipeline cache persisted
//! beside the manifests, and `warm_up`, which compiles ahead of the first call.
//!
//! A cache file that is truncated, edited or in the way must end in a warning and a fresh
//! compile, never a crash or a wrong result; results are checked against the oracle.

use std::path::{Path, PathBuf};
use wgsl_forge::kernels::{axpy::axpy, gemv::gemv};
use wgsl_forge::prelude::*;
use wgsl_forge::{DynArgs, ForgeError, HostBuffer, Kernel, ScalarValue};

/// A fresh empty directory under the system's temp dir.
fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("forge-cold-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn runtime(dir: &Path) -> ForgeRuntime {
    ForgeRuntime::builder()
        .cache_dir(dir)
        .pipeline_cache(true)
        .build()
        .expect("an adapter")
}

/// `axpy` on seeded inputs, checked against its oracle: the runtime still computes right
/// whatever state the cache file was in.
fn check_axpy(rt: &mut ForgeRuntime, n: u32) {
    let x: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin()).collect();
    let y0: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos()).collect();
    let mut y = y0.clone();
    axpy::run(rt, 1.25, &x, &mut y, n).unwrap();
    let elem = wgsl_forge::ElemType::scalar(wgsl_forge::ScalarType::F32);
    let args = DynArgs {
        scalars: vec![ScalarValue::F32(1.25), ScalarValue::U32(n)],
        buffers: vec![
            Some(HostBuffer::from_slice(elem, &x)),
            Some(HostBuffer::from_slice(elem, &y0)),
        ],
    };
    let want = axpy::Kernel
        .cpu_dyn(&axpy::Kernel.default_schedule(), &args)
        .unwrap();
    // The GPU may fuse the multiply-add; the oracle rounds twice: a few ulps apart.
    let want: &[f32] = bytemuck::cast_slice(want[0].bytes());
    for (i, (g, w)) in y.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-6 * (1.0 + w.abs()),
            "y[{i}] = {g}, oracle {w}"
        );
    }
}

/// The one cache file the runtime keeps, if any.
fn cache_file(rt: &ForgeRuntime) -> PathBuf {
    rt.pipeline_cache_path()
        .expect("lavapipe has PIPELINE_CACHE")
        .to_path_buf()
}

#[test]
fn a_second_runtime_loads_what_the_first_saved() {
    let dir = temp_dir("reload");
    let mut rt = runtime(&dir);
    let path = cache_file(&rt);
    assert!(
        path.starts_with(dir.join(rt.topology_hash())),
        "{}",
        path.display()
    );
    assert_eq!(rt.pipeline_cache_loaded_bytes(), Some(0));
    // Nothing compiled yet: nothing to write.
    assert!(!rt.save_pipeline_cache().unwrap());
    check_axpy(&mut rt, 1000);
    assert!(rt.save_pipeline_cache().unwrap());
    assert!(
        !rt.save_pipeline_cache().unwrap(),
        "a second save without new work writes"
    );
    let bytes = std::fs::read(&path).unwrap();
    // Our header: a 16-byte tag and a 32-byte sha256, then the driver's data.
    assert!(bytes.starts_with(b"forge-pipecache1"));
    drop(rt);

    let mut again = runtime(&dir);
    assert_eq!(again.pipeline_cache_loaded_bytes(), Some(bytes.len() - 48));
    check_axpy(&mut again, 4099);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn dropping_the_runtime_saves_new_pipelines() {
    let dir = temp_dir("drop");
    let mut rt = runtime(&dir);
    let path = cache_file(&rt);
    check_axpy(&mut rt, 77);
    assert!(!path.exists());
    drop(rt);
    assert!(std::fs::read(&path)
        .unwrap()
        .starts_with(b"forge-pipecache1"));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_damaged_cache_file_is_ignored_and_replaced() {
    let dir = temp_dir("damaged");
    let mut rt = runtime(&dir);
    let path = cache_file(&rt);
    check_axpy(&mut rt, 500);
    rt.save_pipeline_cache().unwrap();
    drop(rt);
    let good = std::fs::read(&path).unwrap();

    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() - 1].to_vec()),
        ("a data byte flipped", {
            let mut b = good.clone();
            *b.last_mut().unwrap() ^= 0x40;
            b
        }),
        ("another format", {
            let mut b = good.clone();
            b[0] = b'X';
            b
        }),
        ("garbage", vec![0xA5; 4096]),
        ("empty", Vec::new()),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&path, &bytes).unwrap();
        let mut rt = runtime(&dir);
        assert_eq!(
            rt.pipeline_cache_loaded_bytes(),
            Some(0),
            "{what}: it was trusted"
        );
        check_axpy(&mut rt, 1031);
        assert!(rt.save_pipeline_cache().unwrap(), "{what}");
        assert!(
            std::fs::read(&path)
                .unwrap()
                .starts_with(b"forge-pipecache1"),
            "{what}: not replaced by a good file"
        );
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_directory_in_the_way_is_an_error_and_left_alone() {
    let dir = temp_dir("inway");
    let mut rt = runtime(&dir);
    let path = cache_file(&rt);
    std::fs::create_dir_all(&path).unwrap();
    std::fs::write(path.join("keep.txt"), b"mine").unwrap();
    check_axpy(&mut rt, 64);
    let err = rt.save_pipeline_cache().unwrap_err();
    assert!(matches!(err, ForgeError::RefusedPath { .. }), "{err}");
    // Dropping logs the same refusal instead of panicking.
    drop(rt);
    assert_eq!(std::fs::read(path.join("keep.txt")).unwrap(), b"mine");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn turned_off_or_without_a_cache_dir_nothing_is_written() {
    let dir = temp_dir("off");
    let mut rt = ForgeRuntime::builder()
        .cache_dir(&dir)
        .pipeline_cache(false)
        .build()
        .unwrap();
    assert_eq!(rt.pipeline_cache_path(), None);
    assert_eq!(rt.pipeline_cache_loaded_bytes(), None);
    check_axpy(&mut rt, 100);
    assert!(!rt.save_pipeline_cache().unwrap());
    drop(rt);
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn warm_up_compiles_once_ahead_of_the_calls() {
    let mut rt = ForgeRuntime::builder().build().unwrap();
    let kernels: [&dyn Kernel; 2] = [&axpy::Kernel, &gemv::Kernel];
    let before = rt.stats().pipelines_compiled;
    assert_eq!(rt.warm_up(&kernels).unwrap(), 2);
    assert_eq!(rt.stats().pipelines_compiled, before + 2);
    // Cached now: neither warm-up nor the calls compile again.
    assert_eq!(rt.warm_up(&kernels).unwrap(), 0);
    check_axpy(&mut rt, 2048);
    let (m, n) = (37u32, 45u32);
    let a: Vec<f32> = (0..m * n).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
    let x: Vec<f32> = (0..n).map(|i| (i % 5) as f32 * 0.5).collect();
    let y = rt.gemv(&a, &x, m as usize, n as usize).unwrap();
    for r in 0..m as usize {
        let want: f64 = (0..n as usize)
            .map(|c| a[r * n as usize + c] as f64 * x[c] as f64)
            .sum();
        assert!(
            (y[r] as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()),
            "row {r}"
        );
    }
    assert_eq!(rt.stats().pipelines_compiled, before + 2);
}

#[test]
fn warm_up_names_a_missing_feature_and_compiles_the_rest() {
    let mut rt = ForgeRuntime::builder()
        .without_feature(wgsl_forge::Feature::Subgroups)
        .build()
        .unwrap();
    let w2a8 = &wgsl_forge::kernels::ternary_w2a8::ternary_gemv_w2a8::Kernel;
    assert!(w2a8.features().contains(&wgsl_forge::Feature::Subgroups));
    let kernels: [&dyn Kernel; 2] = [&axpy::Kernel, w2a8];
    let err = rt.warm_up(&kernels).unwrap_err();
    assert!(matches!(err, ForgeError::MissingFeature { .. }), "{err}");
    // Checked before anything compiles: the warm-up is refused as a whole, and a later
    // warm-up of what the device can run still works.
    assert_eq!(rt.warm_up(&kernels[..1]).unwrap(), 1);
    check_axpy(&mut rt, 10);
}
