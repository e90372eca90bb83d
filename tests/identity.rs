//! Kernel identity on the real adapter (lavapipe in CI): two kernels are the same only if
//! their names and their generated sources are the same. Two kernels named `step` in two
//! modules, and a user kernel named `gemv` beside the built-in one, run on one runtime
//! through every launch path (host slices, tensors, timing, the certifier's poisoned run),
//! are tuned into one cache, and never share a pipeline, a manifest or a winner.

use std::path::PathBuf;
use wgsl_forge::certify::{certify, CertOptions};
use wgsl_forge::prelude::*;
use wgsl_forge::timing::TimingOptions;
use wgsl_forge::tune::{tune, TuneOptions};
use wgsl_forge::{DynArgs, ElemType, HostBuffer, KernelId, ScalarType, ScalarValue};

mod a {
    use wgsl_forge::prelude::*;

    /// `y = x + 1`.
    #[forge_kernel(threads = n, tune(workgroup = [32, 64]), reference = step_reference)]
    pub fn step(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            y[i] = x[i] + 1.0f32;
        }
    }

    pub fn step_reference(x: &[f32], _n: u32) -> Result<Vec<f32>, ForgeError> {
        Ok(x.iter().map(|v| v + 1.0).collect())
    }
}

mod b {
    use wgsl_forge::prelude::*;

    /// `y = 10 x`.
    #[forge_kernel(threads = n, tune(workgroup = [32, 64]), reference = step_reference)]
    pub fn step(x: &[f32; n], #[out] y: &mut [f32; n], n: u32) {
        let i = global_index();
        if i < n {
            y[i] = x[i] * 10.0f32;
        }
    }

    pub fn step_reference(x: &[f32], _n: u32) -> Result<Vec<f32>, ForgeError> {
        Ok(x.iter().map(|v| v * 10.0).collect())
    }
}

mod user {
    use wgsl_forge::prelude::*;

    /// A user's kernel named like the built-in: `y[r] = sum of row r` (no `x`), with the
    /// built-in's declared workgroup, binding count and access, and scalars, so only its
    /// source tells it apart.
    #[forge_kernel(workgroup = 256, threads = m, ext = false)]
    pub fn gemv(a: &[f32; m * n], x: &[f32; n], #[out] y: &mut [f32; m], m: u32, n: u32) {
        let row = global_index();
        if row < m {
            let mut acc = 0.0f32;
            for j in 0..n {
                acc += a[row * n + j] + 0.0f32 * x[j];
            }
            y[row] = acc;
        }
    }
}

fn runtime(cache: Option<PathBuf>) -> ForgeRuntime {
    ForgeRuntime::new(64 << 20, cache).unwrap_or_else(|e| {
        panic!("a GPU adapter is required for these tests (lavapipe in CI): {e}")
    })
}

fn f32s(data: &[f32]) -> HostBuffer {
    HostBuffer::from_slice(ElemType::scalar(ScalarType::F32), data)
}

#[test]
fn same_named_kernels_have_their_own_identity() {
    let (ka, kb): (&dyn Kernel, &dyn Kernel) = (&a::step::Kernel, &b::step::Kernel);
    assert_eq!(ka.name(), kb.name());
    assert_ne!(ka.id(), kb.id());
    assert_eq!(
        ka.id(),
        KernelId::new("step", &a::step::wgsl(&ka.default_schedule()))
    );
    assert_eq!(
        ka.id().to_string(),
        format!("step@{}", &ka.id().hash()[..12])
    );
    assert_ne!(ka.id().file_stem(), kb.id().file_stem());
    // A kernel that is not one of them keeps its own identity too.
    let builtin: &dyn Kernel = &wgsl_forge::kernels::gemv::gemv::Kernel;
    assert_eq!(builtin.name(), user::gemv::NAME);
    assert_ne!(builtin.id(), user::gemv::Kernel.id());
}

#[test]
fn same_named_kernels_run_their_own_code_on_every_path() {
    let mut rt = runtime(None);
    let x = [1.0f32, 2.0, 3.0];
    // Host slices, alternating, on one runtime.
    for _ in 0..2 {
        assert_eq!(
            b::step::run(&mut rt, &x, 3).unwrap(),
            vec![10.0, 20.0, 30.0]
        );
        assert_eq!(a::step::run(&mut rt, &x, 3).unwrap(), vec![2.0, 3.0, 4.0]);
    }
    assert_eq!(b::step::cpu(&x, 3).unwrap(), vec![10.0, 20.0, 30.0]);
    assert_eq!(rt.stats().pipelines_compiled, 2, "one pipeline each");

    // Tensors: recorded in one encoder, submitted together.
    let input = rt.upload(&x).unwrap();
    let (ya, yb) = (rt.zeros::<f32>(3).unwrap(), rt.zeros::<f32>(3).unwrap());
    a::step::launch(&mut rt, &input, &ya, 3).unwrap();
    b::step::launch(&mut rt, &input, &yb, 3).unwrap();
    assert_eq!(rt.download(&ya).unwrap(), vec![2.0, 3.0, 4.0]);
    assert_eq!(rt.download(&yb).unwrap(), vec![10.0, 20.0, 30.0]);

    // Type-erased, as the certifier and the tuner run them.
    let args = DynArgs {
        scalars: vec![ScalarValue::U32(3)],
        buffers: vec![Some(f32s(&x)), None],
    };
    let schedule = Schedule::with_workgroup(32);
    let out = rt.run_dyn(&b::step::Kernel, &schedule, &args).unwrap();
    assert_eq!(out[0].to_f64(), vec![10.0, 20.0, 30.0]);

    // Timing: the timed buffers hold each kernel's own result.
    let opts = TimingOptions {
        warmup: 1,
        warmup_ns: 0.0,
        passes: 1,
        repeats: Some(1),
        read_back: true,
        ..TimingOptions::default()
    };
    for (k, want) in [
        (&a::step::Kernel as &dyn Kernel, [2.0, 3.0, 4.0]),
        (&b::step::Kernel, [10.0, 20.0, 30.0]),
    ] {
        let run = rt.time_kernel_with(k, &schedule, &args, &opts).unwrap();
        assert_eq!(run.outputs.unwrap()[0].to_f64(), want, "{}", k.id());
    }

    // Certification, poisoned run included: each kernel against its own oracle and
    // reference, after the other's pipelines are cached.
    for k in [&a::step::Kernel as &dyn Kernel, &b::step::Kernel] {
        for schedule in k.tune_space().candidates() {
            let report = certify(&mut rt, k, &schedule, &CertOptions::default()).unwrap();
            assert!(report.passed(), "{}: {:?}", k.id(), report.failures);
        }
    }
}

#[test]
fn a_user_kernel_named_like_a_builtin_keeps_apart() {
    let mut rt = runtime(None);
    let a = [1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0];
    let x = [1.0f32, 1.0, 2.0];
    assert_eq!(
        user::gemv::run(&mut rt, &a, &x, 2, 3).unwrap(),
        vec![6.0, 15.0]
    );
    assert_eq!(rt.gemv(&a, &x, 2, 3).unwrap(), vec![9.0, 21.0]);
    assert_eq!(
        user::gemv::run(&mut rt, &a, &x, 2, 3).unwrap(),
        vec![6.0, 15.0]
    );
    assert_eq!(user::gemv::cpu(&a, &x, 2, 3).unwrap(), vec![6.0, 15.0]);
}

#[test]
fn same_named_kernels_never_share_a_manifest_or_a_winner() {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let cache = std::env::temp_dir().join(format!("forge-identity-{}-{nanos}", std::process::id()));
    let mut rt = runtime(Some(cache.clone()));
    let quick = TuneOptions {
        problem: Some(vec![ScalarValue::U32(5000)]),
        timing: TimingOptions {
            warmup: 1,
            warmup_ns: 0.0,
            passes: 2,
            target_pass_ns: 1.0e5,
            max_repeats: 16,
            ..TimingOptions::default()
        },
        rounds: 1,
        ..TuneOptions::default()
    };
    let ra = tune(&mut rt, &a::step::Kernel, &quick).unwrap();
    // Tuning `a::step` tells the runtime nothing about `b::step`.
    assert!(rt.tuned_manifest(&a::step::Kernel).is_some());
    assert_eq!(rt.tuned_manifest(&b::step::Kernel), None);
    let rb = tune(&mut rt, &b::step::Kernel, &quick).unwrap();
    let (pa, pb) = (ra.stored.unwrap(), rb.stored.unwrap());
    assert_ne!(pa, pb);
    let mut files: Vec<String> = std::fs::read_dir(pa.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        // The merge locks (`.step-<hash>.lock`, kept beside their manifests) are not manifests.
        .filter(|name| name.ends_with(".json"))
        .collect();
    files.sort();
    let mut want = vec![
        format!("step-{}.json", &a::step::Kernel.id().hash()[..12]),
        format!("step-{}.json", &b::step::Kernel.id().hash()[..12]),
    ];
    want.sort();
    assert_eq!(files, want);
    // A fresh runtime reads each kernel's own manifest, and both still compute their own.
    let mut fresh = runtime(Some(cache.clone()));
    let ma = fresh
        .tuned_manifest(&a::step::Kernel)
        .expect("a's manifest");
    let mb = fresh
        .tuned_manifest(&b::step::Kernel)
        .expect("b's manifest");
    assert_eq!(ma.kernel_hash, a::step::Kernel.id().hash());
    assert_eq!(mb.kernel_hash, b::step::Kernel.id().hash());
    assert_eq!(a::step::run(&mut fresh, &[1.0], 1).unwrap(), vec![2.0]);
    assert_eq!(b::step::run(&mut fresh, &[1.0], 1).unwrap(), vec![10.0]);
    let _ = std::fs::remove_dir_all(&cache);
}
