//! Issue 19, cases 1 to 4 and 12, and the fuzz target: bad input through the safe API is a
//! named `ForgeError` or a correct result, never a panic, a wrong `Ok` or a hang. On the
//! real adapter (lavapipe in CI).
//!
//! - Case 1: a tensor of another runtime is refused by every operation, and nothing of
//!   the other runtime's is touched.
//! - Case 2: output sizes whose bytes overflow are named errors (not one element, not
//!   `EmptyWork`); the oracle's allocations are capped.
//! - Case 3: a schedule the kernel does not declare is refused by `run_with`, `launch_with`
//!   and the oracle alike, unless the kernel cannot depend on its workgroup size;
//!   the built-in record functions check their own preconditions.
//! - Case 4: a `HostBuffer` always holds its elements.
//! - Case 12: a kernel that never finishes stops at the oracle's loop budget, naming the
//!   invocation (or the workgroup, for a loop the workgroup runs together).
//! - The fuzz target (proptest, `PROPTEST_CASES` cases, 48 by default): random sizes and
//!   schedules through the typed calls, `run_with`, `cpu_with`, `launch_with` and
//!   tensors.

use proptest::prelude::*;
use wgsl_forge::kernels::fft::fft_record;
use wgsl_forge::kernels::gemv::gemv;
use wgsl_forge::kernels::topk::{topk_global_record, TopkGlobalScratch};
use wgsl_forge::prelude::*;
use wgsl_forge::{DynArgs, ElemType, HostBuffer, OracleOptions, ScalarType, ScalarValue};

/// `y = a·x + y`: reads nothing of the schedule, so it runs at any workgroup size.
#[forge_kernel(workgroup = 64, threads = n, ext = false)]
pub fn saxpy(a: f32, x: &[f32; n], y: &mut [f32; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = a * x[i] + y[i];
    }
}

/// The sum of every 64 elements, through workgroup memory: it depends on `WG` (at a
/// workgroup of 32 it would read past its tile), so it runs only at the schedules it
/// declares.
#[forge_kernel(workgroup = 64, threads = n, tune(workgroup = [64, 128]), ext = false)]
pub fn group_sums(x: &[u32; n], #[out] sums: &mut [u32; n.div_ceil(64)], n: u32) {
    #[shared]
    let mut tile = [0u32; WG];
    let lid = local_index();
    let i = global_index();
    let mut v = 0u32;
    if i < n {
        v = x[i];
    }
    tile[lid] = v;
    workgroup_barrier();
    if lid % 64u32 == 0u32 {
        let mut s = 0u32;
        for j in 0..64u32 {
            s += tile[lid + j];
        }
        let c = i / 64u32;
        if c < (n + 63u32) / 64u32 {
            sums[c] = s;
        }
    }
}

/// An output of `m * n` elements, written once: its size is all that matters.
#[forge_kernel(threads = 1, ext = false)]
pub fn huge_out(#[out] y: &mut [f32; m * n], m: u32, n: u32) {
    if global_index() == 0 {
        y[0] = 1.0f32;
    }
}

/// Never finishes: a `loop` whose `break` is never reached.
#[forge_kernel(threads = n, ext = false)]
pub fn spins(#[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    let mut k = 0u32;
    loop {
        k += 1u32;
        if n == 0 {
            break;
        }
    }
    if i < n {
        y[i] = k;
    }
}

/// Never finishes either, in a loop the whole workgroup runs together (it holds a barrier).
#[forge_kernel(workgroup = 64, threads = n, ext = false)]
pub fn spins_together(#[out] y: &mut [u32; n], n: u32) {
    let i = global_index();
    loop {
        workgroup_barrier();
        if n == 0 {
            break;
        }
    }
    if i < n {
        y[i] = 1u32;
    }
}

/// A copy of any element type, one instance per type: what issue 35 (item 3) gave the wrong
/// type of data.
#[forge_kernel(threads = n, types(T = [f32, u32, i32]), ext = false)]
pub fn copyt<T>(x: &[T; n], #[out] y: &mut [T; n], n: u32) {
    let i = global_index();
    if i < n {
        y[i] = x[i];
    }
}

fn runtime() -> ForgeRuntime {
    ForgeRuntime::new(256 << 20, None)
        .unwrap_or_else(|e| panic!("a GPU adapter is required (lavapipe in CI): {e}"))
}

fn floats(n: usize, seed: u32) -> Vec<f32> {
    (0..n as u32)
        .map(|i| ((i.wrapping_mul(2654435761) ^ seed) % 2001) as f32 / 1000.0 - 1.0)
        .collect()
}

fn saxpy_reference(a: f32, x: &[f32], y: &[f32]) -> Vec<f32> {
    x.iter().zip(y).map(|(x, y)| a * x + y).collect()
}

fn group_sums_reference(x: &[u32]) -> Vec<u32> {
    x.chunks(64)
        .map(|c| c.iter().fold(0u32, |s, v| s.wrapping_add(*v)))
        .collect()
}

// ---- case 1: tensors of another runtime ------------------------------------------------------

#[test]
fn a_tensor_of_another_runtime_is_refused_and_nothing_else_changes() {
    let (mut rt1, mut rt2) = (runtime(), runtime());
    let (id1, id2) = (rt1.id(), rt2.id());
    assert_ne!(id1, id2);
    let n = 3usize;
    let (x1, y1) = (
        rt1.upload(&[1.0f32, 2.0, 3.0]).unwrap(),
        rt1.upload(&[10.0f32, 20.0, 30.0]).unwrap(),
    );
    // rt2's own tensors sit at the same wgpu ids in rt2's instance as rt1's in rt1's.
    let (x2, y2) = (
        rt2.upload(&[7.0f32, 8.0, 9.0]).unwrap(),
        rt2.upload(&[70.0f32, 80.0, 90.0]).unwrap(),
    );
    assert_eq!((x1.runtime_id(), y2.runtime_id()), (id1, id2));

    let foreign = |r: Result<(), ForgeError>| match r {
        Err(ForgeError::ForeignTensor {
            tensor_runtime,
            runtime,
            ..
        }) => assert_eq!((tensor_runtime, runtime), (id1, id2)),
        other => panic!("{other:?}"),
    };
    foreign(rt2.download(&x1).map(drop));
    foreign(rt2.write(&y1, &[0.0; 3]));
    foreign(rt2.clear(&y1));
    foreign(saxpy::launch(&mut rt2, 1.0, &x1, &y1, n as u32));
    // One foreign argument among own ones is enough, and the error names it.
    let err = saxpy::launch(&mut rt2, 1.0, &x2, &y1, n as u32).unwrap_err();
    assert!(err.to_string().contains("argument `y`"), "{err}");
    foreign(saxpy::launch(&mut rt2, 1.0, &x1, &y2, n as u32));

    // Nothing of either runtime changed, and both still work.
    assert_eq!(rt2.download(&y2).unwrap(), vec![70.0, 80.0, 90.0]);
    assert_eq!(rt1.download(&y1).unwrap(), vec![10.0, 20.0, 30.0]);
    saxpy::launch(&mut rt2, 2.0, &x2, &y2, n as u32).unwrap();
    assert_eq!(rt2.download(&y2).unwrap(), vec![84.0, 96.0, 108.0]);
    saxpy::launch(&mut rt1, 2.0, &x1, &y1, n as u32).unwrap();
    assert_eq!(rt1.download(&y1).unwrap(), vec![12.0, 24.0, 36.0]);
}

// ---- case 2: generated size arithmetic ------------------------------------------------------

#[test]
fn output_sizes_whose_bytes_overflow_are_named() {
    let mut rt = runtime();
    // m·n = 2^62 + 1: four bytes an element wrap to 4, which read as one element.
    let (m, n) = (1_380_655_685u32, 3_340_214_413u32);
    assert_eq!(m as u128 * n as u128, (1u128 << 62) + 1);
    // m = n = 2^31: 2^62 elements wrap to 0 bytes, which read as empty work.
    for (m, n) in [(m, n), (1 << 31, 1 << 31)] {
        for r in [huge_out::run(&mut rt, m, n), huge_out::cpu(m, n)] {
            match r {
                Err(ForgeError::BadExpression { what, expr, .. }) => {
                    assert_eq!((what, expr), ("y", "m * n"))
                }
                other => panic!("m = {m}, n = {n}: {other:?}"),
            }
        }
    }
    // 2^40 elements fit in u64 bytes but not in the adapter or the oracle: named limits,
    // checked before anything is allocated.
    let (m, n) = (1 << 20, 1 << 20);
    match huge_out::run(&mut rt, m, n) {
        Err(ForgeError::BindingTooLarge { arg, bytes, .. }) => {
            assert_eq!((arg, bytes), ("y", 4 << 40))
        }
        other => panic!("{other:?}"),
    }
    match huge_out::cpu(m, n) {
        Err(ForgeError::OracleTooLarge {
            requested, limit, ..
        }) => assert_eq!(
            (requested, limit),
            (4 << 40, OracleOptions::DEFAULT_MAX_BYTES)
        ),
        other => panic!("{other:?}"),
    }
    // The cap is the caller's to set.
    let small = OracleOptions::default().with_max_bytes(1000);
    assert!(matches!(
        huge_out::cpu_with_options(&huge_out::DEFAULT_SCHEDULE, &small, 16, 16),
        Err(ForgeError::OracleTooLarge {
            requested: 1024,
            ..
        })
    ));
    let y = huge_out::cpu_with_options(&huge_out::DEFAULT_SCHEDULE, &small, 15, 16).unwrap();
    assert_eq!((y.len(), y[0], y[1]), (240, 1.0, 0.0));
    assert_eq!(huge_out::run(&mut rt, 15, 16).unwrap(), y);
}

#[test]
fn the_tuner_checks_a_problem_before_it_draws_its_data() {
    let mut rt = runtime();
    // 70000 x 70000 floats is 19.6 GB: a named limit, at once.
    let problem = vec![ScalarValue::U32(70_000), ScalarValue::U32(70_000)];
    let start = std::time::Instant::now();
    let err = wgsl_forge::tune::check_problem_fits(&rt, &gemv::Kernel, &problem).unwrap_err();
    assert!(
        matches!(err, ForgeError::BindingTooLarge { arg: "a", .. }),
        "{err}"
    );
    let opts = wgsl_forge::tune::TuneOptions {
        problem: Some(problem),
        ..Default::default()
    };
    let err = wgsl_forge::tune::tune(&mut rt, &gemv::Kernel, &opts).unwrap_err();
    assert!(
        matches!(err, ForgeError::BindingTooLarge { arg: "a", .. }),
        "{err}"
    );
    assert!(start.elapsed().as_secs() < 5, "{:?}", start.elapsed());
}

// ---- case 3: schedules the kernel does not declare ---------------------------------------

fn schedule(workgroup: u32, items: u32, vector: u32) -> Schedule {
    // Field by field: `Schedule` may gain private fields (knobs).
    let mut s = Schedule::with_workgroup(workgroup);
    s.items = items;
    s.vector = vector;
    s
}

#[test]
fn a_schedule_outside_the_tuning_space_is_refused_everywhere() {
    let mut rt = runtime();
    // gemv at wg = 7, items = 3 returned a wrong `Ok([4.0, 0.0])`.
    let (m, n) = (2u32, 4u32);
    let a = [[1.0f32; 4]; 2];
    let x = [[1.0f32; 4]];
    let bad = schedule(7, 3, 1);
    let declared = |r: Result<Vec<f32>, ForgeError>| match r {
        Err(ForgeError::BadSchedule { kernel, reason, .. }) => {
            assert_eq!(kernel, "gemv");
            assert!(reason.contains("does not declare"), "{reason}");
        }
        other => panic!("{other:?}"),
    };
    declared(gemv::run_with(&mut rt, &bad, &a, &x, m, n));
    declared(gemv::cpu_with(&bad, &a, &x, m, n));
    assert_eq!(gemv::run(&mut rt, &a, &x, m, n).unwrap(), vec![4.0, 4.0]);
    assert_eq!(gemv::cpu(&a, &x, m, n).unwrap(), vec![4.0, 4.0]);

    // The oracle at wg = 0 gave `Ok`, at items = 0 a misleading `OutOfBounds`, and panicked
    // at u32::MAX.
    let x: Vec<u32> = (0..1000).collect();
    for s in [
        schedule(0, 1, 1),
        schedule(64, 0, 1),
        schedule(u32::MAX, 1, 1),
        schedule(64, u32::MAX, 1),
        schedule(64, 1, 0),
        schedule(32, 1, 1),
    ] {
        let (gpu, cpu) = (
            group_sums::run_with(&mut rt, &s, &x, 1000),
            group_sums::cpu_with(&s, &x, 1000),
        );
        for r in [gpu, cpu] {
            assert!(
                matches!(r, Err(ForgeError::BadSchedule { .. })),
                "{s}: {r:?}"
            );
        }
        let xs = rt.upload(&x).unwrap();
        let sums = rt.zeros::<u32>(16).unwrap();
        assert!(matches!(
            group_sums::launch_with(&mut rt, &s, &xs, &sums, 1000),
            Err(ForgeError::BadSchedule { .. })
        ));
    }
    // Every declared schedule gives the reference's sums.
    for s in group_sums::Kernel.tune_space().candidates() {
        assert_eq!(
            group_sums::run_with(&mut rt, &s, &x, 1000).unwrap(),
            group_sums_reference(&x),
            "{s}"
        );
        assert_eq!(
            group_sums::cpu_with(&s, &x, 1000).unwrap(),
            group_sums_reference(&x)
        );
    }
}

#[test]
fn a_workgroup_free_kernel_runs_at_any_workgroup_size_and_only_there() {
    let mut rt = runtime();
    assert!(saxpy::Kernel.workgroup_free());
    assert!(!group_sums::Kernel.workgroup_free() && !gemv::Kernel.workgroup_free());
    let n = 70_001usize;
    let (x, y) = (floats(n, 1), floats(n, 2));
    let want = saxpy_reference(0.5, &x, &y);
    // One invocation a workgroup folds 70001 workgroups past 65535.
    for wg in [1u32, 7, 64, 1024] {
        let s = schedule(wg, 1, 1);
        let mut gpu = y.clone();
        saxpy::run_with(&mut rt, &s, 0.5, &x, &mut gpu, n as u32).unwrap();
        let mut cpu = y.clone();
        saxpy::cpu_with(&s, 0.5, &x, &mut cpu, n as u32).unwrap();
        assert_eq!((&gpu, &cpu), (&want, &want), "wg = {wg}");
    }
    // Only the workgroup size may differ; and at most MAX_FREE_WORKGROUP.
    for s in [
        schedule(64, 2, 1),
        schedule(64, 1, 4),
        schedule(0, 1, 1),
        schedule(2048, 1, 1),
    ] {
        let mut buf = y.clone();
        assert!(matches!(
            saxpy::cpu_with(&s, 0.5, &x, &mut buf, n as u32),
            Err(ForgeError::BadSchedule { .. })
        ));
        assert!(matches!(
            saxpy::run_with(&mut rt, &s, 0.5, &x, &mut buf, n as u32),
            Err(ForgeError::BadSchedule { .. })
        ));
        assert_eq!(buf, y, "{s}: nothing was written");
    }
}

#[test]
fn the_builtin_record_functions_check_their_preconditions() {
    let mut rt = runtime();
    // topk_global_record with n = 5000, k = 3000 returned `Ok` with 2998 wrong values.
    let n = 5000usize;
    let vals = rt.upload(&vec![[1.0f32; 4]; n / 4]).unwrap();
    let scratch = TopkGlobalScratch::new(&mut rt, n).unwrap();
    let (ov, oi) = (
        rt.zeros::<f32>(3000).unwrap(),
        rt.zeros::<u32>(3000).unwrap(),
    );
    let err = topk_global_record(&mut rt, &vals, n as u32, 3000, &scratch, &ov, &oi).unwrap_err();
    assert!(err.to_string().contains("3000"), "{err}");
    // k past n, n past the values, outputs too short, a scratch too small.
    let small = TopkGlobalScratch::new(&mut rt, 100).unwrap();
    for (n, k, scratch) in [
        (8u32, 9u32, &scratch),
        (6000, 8, &scratch),
        (5000, 8, &small),
    ] {
        let r = topk_global_record(&mut rt, &vals, n, k, scratch, &ov, &oi);
        assert!(
            matches!(r, Err(ForgeError::InvalidArgument { .. })),
            "{n} {k}: {r:?}"
        );
    }
    let short = rt.zeros::<f32>(4).unwrap();
    assert!(topk_global_record(&mut rt, &vals, 5000, 8, &scratch, &short, &oi).is_err());
    assert!(!rt.has_pending(), "nothing was recorded");

    // fft_record(n = 4, batch = 2^62 + 1) wrapped `n * batch` and did one transform.
    let data = rt.upload(&[[1.0f32, 0.0]; 4]).unwrap();
    let out = rt.zeros::<[f32; 2]>(4).unwrap();
    for batch in [(1usize << 62) + 1, usize::MAX / 2, 1 << 31] {
        let r = fft_record(&mut rt, &data, None, &out, 4, batch, false, None);
        assert!(
            matches!(r, Err(ForgeError::InvalidArgument { .. })),
            "batch {batch}: {r:?}"
        );
    }
    fft_record(&mut rt, &data, None, &out, 4, 1, false, None).unwrap();
    assert_eq!(rt.download(&out).unwrap()[0], [4.0, 0.0]);
}

// ---- case 4: HostBuffer ---------------------------------------------------------------------

#[test]
fn a_host_buffer_always_holds_its_elements() {
    let f32s = ElemType::scalar(ScalarType::F32);
    // A length past the words is refused where the buffer is made, not where it is read.
    assert!(HostBuffer::from_words(f32s, 1 << 40, vec![0; 4]).is_err());
    assert!(HostBuffer::from_words(f32s, 3, vec![0; 4]).is_err());
    assert!(HostBuffer::zeroed(f32s, usize::MAX).is_err());
    let b = HostBuffer::from_words(f32s, 4, vec![1.0f32.to_bits(); 4]).unwrap();
    assert_eq!(b.bytes().len(), 16);
    assert_eq!(b.to_f64(), vec![1.0; 4]);
    // What time_kernel read past the words with: now the length it claims is its own.
    let mut rt = runtime();
    let args = DynArgs {
        scalars: vec![ScalarValue::F32(2.0), ScalarValue::U32(8)],
        buffers: vec![Some(b.clone()), Some(b)],
    };
    match rt.time_kernel(&saxpy::Kernel, &saxpy::DEFAULT_SCHEDULE, &args) {
        Err(ForgeError::LengthMismatch {
            expected, actual, ..
        }) => assert_eq!((expected, actual), (8, 4)),
        other => panic!("{other:?}"),
    }
}

// ---- issue 35, item 3: the oracle refuses what the GPU refuses ----------------------------

#[test]
fn cpu_dyn_refuses_the_arguments_that_run_dyn_refuses() {
    let mut rt = runtime();
    let n = 37usize;
    let data = |t: ScalarType| {
        let words: Vec<u32> = (0..n as u32).map(|i| (i * 7 + 3) ^ 0x3f80_0000).collect();
        HostBuffer::from_words(ElemType::scalar(t), n, words).unwrap()
    };
    let types = [ScalarType::F32, ScalarType::U32, ScalarType::I32];
    for kernel in copyt::KERNELS {
        let want = kernel.layout()[0].elem.scalar;
        let schedule = kernel.default_schedule();
        for given in types {
            let args = DynArgs {
                scalars: vec![ScalarValue::U32(n as u32)],
                buffers: vec![Some(data(given)), None],
            };
            let gpu = rt.run_dyn(*kernel, &schedule, &args);
            let oracle = kernel.cpu_dyn(&schedule, &args);
            if given == want {
                // The copy, bit for bit, on both.
                let (gpu, oracle) = (gpu.unwrap(), oracle.unwrap());
                assert_eq!(gpu[0].words(), data(given).words(), "{}", kernel.name());
                assert_eq!(oracle[0].words(), data(given).words(), "{}", kernel.name());
                continue;
            }
            // `u32` data given to `copyt<f32>` (and every other pair) ran as `Ok` in the
            // oracle: now both refuse it, with one message naming the binding and both types.
            let (Err(g), Err(o)) = (&gpu, &oracle) else {
                panic!(
                    "{} given {given:?}: GPU {gpu:?}, oracle {oracle:?}",
                    kernel.name()
                );
            };
            assert!(
                matches!(o, ForgeError::InvalidArgument { .. }),
                "{}: {o:?}",
                kernel.name()
            );
            assert_eq!(g.to_string(), o.to_string());
            let text = o.to_string();
            assert!(
                text.contains("`x`") && text.contains(ElemType::scalar(given).wgsl().as_str()),
                "{text}"
            );
        }
        // A buffer too many or too few: both refuse it, alike.
        for buffers in [vec![Some(data(want))], vec![Some(data(want)), None, None]] {
            let args = DynArgs {
                scalars: vec![ScalarValue::U32(n as u32)],
                buffers,
            };
            let gpu = rt.run_dyn(*kernel, &schedule, &args).unwrap_err();
            let oracle = kernel.cpu_dyn(&schedule, &args).unwrap_err();
            assert_eq!(gpu.to_string(), oracle.to_string());
        }
    }
}

// ---- case 12: kernels that never finish ------------------------------------------------------

#[test]
fn a_loop_that_never_ends_stops_at_the_budget_and_names_the_invocation() {
    let budget = OracleOptions::default().with_max_loop_iterations(10_000);
    match spins::cpu_with_options(&spins::DEFAULT_SCHEDULE, &budget, 5) {
        Err(ForgeError::LoopBudgetExceeded {
            kernel,
            whom,
            iterations,
        }) => assert_eq!(
            (kernel, whom.as_str(), iterations),
            ("spins", "invocation 0", 10_000)
        ),
        other => panic!("{other:?}"),
    }
    match spins_together::cpu_with_options(&spins_together::DEFAULT_SCHEDULE, &budget, 5) {
        Err(ForgeError::LoopBudgetExceeded { whom, .. }) => assert_eq!(whom, "workgroup 0"),
        other => panic!("{other:?}"),
    }
    // With the default budget it ends too, in seconds.
    let start = std::time::Instant::now();
    assert!(matches!(
        spins::cpu(1),
        Err(ForgeError::LoopBudgetExceeded { .. })
    ));
    assert!(start.elapsed().as_secs() < 120, "{:?}", start.elapsed());
    // A long loop that ends is not stopped: the budget counts one invocation at a time.
    let y = group_sums::cpu(&vec![1u32; 4096], 4096).unwrap();
    assert_eq!(y, vec![64; 64]);
}

// ---- the build keeps overflow checks on ----------------------------------------------------

#[test]
fn overflow_checks_are_on_in_tests() {
    let r = std::panic::catch_unwind(|| std::hint::black_box(u32::MAX) + std::hint::black_box(1));
    assert!(
        r.is_err(),
        "overflow checks are off: Cargo.toml's dev profile must keep `overflow-checks = true`"
    );
}

// ---- the fuzz target ------------------------------------------------------------------------

/// Sizes that cross the edges: empty, one, a workgroup, past 65535 workgroups, past what
/// memory holds, past u32 products.
fn size() -> impl Strategy<Value = u32> {
    prop_oneof![
        3 => 0u32..3000,
        1 => Just(0u32),
        1 => Just(1u32),
        1 => Just(65_537u32),
        1 => Just(u32::MAX),
        1 => Just(1u32 << 31),
    ]
}

fn axis() -> impl Strategy<Value = u32> {
    prop_oneof![
        Just(0u32),
        Just(1),
        Just(2),
        Just(3),
        Just(7),
        Just(64),
        Just(128),
        Just(1024),
        Just(1025),
        Just(u32::MAX),
    ]
}

fn any_schedule() -> impl Strategy<Value = Schedule> {
    prop_oneof![
        2 => Just(saxpy::DEFAULT_SCHEDULE),
        1 => Just(schedule(128, 1, 1)),
        4 => (axis(), axis(), axis()).prop_map(|(w, i, v)| schedule(w, i, v)),
    ]
}

/// Whether a call's outcome is right: the reference's values, or an error of a size or a
/// schedule (a named refusal); anything else fails the case.
fn judge<T: PartialEq + std::fmt::Debug>(what: &str, got: Result<T, ForgeError>, want: &Option<T>) {
    match (got, want) {
        (Ok(got), Some(want)) => assert_eq!(&got, want, "{what}: a wrong `Ok`"),
        (Ok(got), None) => panic!("{what}: `Ok({got:?})` where the call cannot be right"),
        (Err(e), _) => {
            let named = matches!(
                e,
                ForgeError::BadSchedule { .. }
                    | ForgeError::EmptyWork { .. }
                    | ForgeError::LengthMismatch { .. }
                    | ForgeError::BadExpression { .. }
                    | ForgeError::BindingTooLarge { .. }
                    | ForgeError::CapacityExceeded { .. }
                    | ForgeError::OracleTooLarge { .. }
                    | ForgeError::TooManyWorkgroups { .. }
                    | ForgeError::InvalidArgument { .. }
            );
            assert!(named, "{what}: an unexpected error: {e}");
            assert!(!e.to_string().is_empty());
        }
    }
}

/// Whether the kernel declares (or, being workgroup-free, accepts) the schedule.
fn accepts(k: &dyn wgsl_forge::Kernel, s: &Schedule) -> bool {
    let d = k.default_schedule();
    *s == d
        || k.tune_space().contains(s)
        || (k.workgroup_free() && (1..=1024).contains(&s.workgroup) && {
            let mut same = *s;
            same.workgroup = d.workgroup;
            same == d
        })
}

proptest! {
    #![proptest_config(ProptestConfig {
        cases: std::env::var("PROPTEST_CASES").ok().and_then(|c| c.parse().ok()).unwrap_or(48),
        ..ProptestConfig::default()
    })]

    #[test]
    fn sizes_and_schedules_give_a_named_error_or_the_right_result(
        n in size(),
        data_len in 0usize..3000,
        s in any_schedule(),
        a in -4.0f32..4.0,
    ) {
        // One runtime for every case; a static is never dropped, so it outlives the test
        // thread (wgpu's device must not be torn down in a thread's exit).
        static RT: std::sync::OnceLock<std::sync::Mutex<ForgeRuntime>> = std::sync::OnceLock::new();
        // The data holds `data_len` elements, which may or may not be `n`.
        let len = if n < 3000 && data_len % 3 == 0 { n as usize } else { data_len };
        let (x, y) = (floats(len, 3), floats(len, 4));
        let fits = len == n as usize && n > 0;
        let want_saxpy = (fits && accepts(&saxpy::Kernel, &s)).then(|| saxpy_reference(a, &x, &y));
        let xu: Vec<u32> = x.iter().map(|v| v.to_bits() >> 20).collect();
        let want_sums = (fits && accepts(&group_sums::Kernel, &s)).then(|| group_sums_reference(&xu));
        let mut guard = RT
            .get_or_init(|| std::sync::Mutex::new(runtime()))
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        (|| {
            let rt = &mut *guard;
            // The typed GPU call and the oracle, in place.
            let mut gpu = y.clone();
            judge("saxpy::run_with", saxpy::run_with(rt, &s, a, &x, &mut gpu, n).map(|()| gpu), &want_saxpy);
            let mut cpu = y.clone();
            judge("saxpy::cpu_with", saxpy::cpu_with(&s, a, &x, &mut cpu, n).map(|()| cpu), &want_saxpy);
            judge("group_sums::run_with", group_sums::run_with(rt, &s, &xu, n), &want_sums);
            judge("group_sums::cpu_with", group_sums::cpu_with(&s, &xu, n), &want_sums);
            // On tensors: an empty one is refused where it is made.
            if len > 0 {
                let (xt, yt) = (rt.upload(&x).unwrap(), rt.upload(&y).unwrap());
                let launched = saxpy::launch_with(rt, &s, a, &xt, &yt, n).and_then(|()| rt.download(&yt));
                judge("saxpy::launch_with", launched, &want_saxpy);
                if let Some(w) = &want_saxpy {
                    prop_assert_eq!(w.len(), len);
                } else {
                    // A refused launch wrote nothing.
                    prop_assert_eq!(rt.download(&yt).unwrap(), y.clone());
                }
            } else {
                let empty = matches!(rt.upload::<f32>(&[]), Err(ForgeError::EmptyWork { .. }));
                prop_assert!(empty, "an empty upload is `EmptyWork`");
            }
            Ok(())
        })()?;
    }
}
