//! Fuzzing the type-erased calls (issue 35): `DynArgs` against `ForgeRuntime::run_dyn` (on
//! the real adapter, lavapipe in CI) and `Kernel::cpu_dyn` (the oracle, with a small loop
//! budget), for every built-in
//! kernel. See `tests/fuzz/mod.rs` for the campaign's settings (`FORGE_FUZZ_CASES`,
//! `FORGE_FUZZ_SECONDS`) and its persisted failures
//! (`tests/fuzz_dyn_args.proptest-regressions`).
//!
//! Inputs start from a kernel's certification case (its scalars, test vectors drawn as the
//! certifier draws them, at a schedule of its tuning space) and get random edits: a scalar
//! set to an edge value (0, 1, a neighbour, `u32::MAX`, `i32::MIN`) or to another type, a
//! scalar or a buffer too many or too few, a buffer one element short or long or empty, of
//! another element type, `None` where data is needed or data where an `#[out]` binding
//! takes none.
//!
//! Checked, for each input:
//! - neither call panics, and each error is a `ForgeError` whose message is short and
//!   escaped;
//! - arguments of the wrong shape (a count, a length, missing data, a scalar of another
//!   type) are refused by both;
//! - where both run, on arguments of the right types, they agree within the kernel's
//!   tolerance, at whatever size the edits made (0, 1, 65, ...).
//!
//! - a buffer of another element type, or a buffer too many or too few, is refused by both
//!   with the same message (issue 35, item 3: `cpu_dyn` ran them; the campaign found the
//!   second).
//!
//! Left out of the agreement on purpose: schedules the adapter cannot run.

mod fuzz;

use fuzz::{bounded_message, campaign, no_panic, Tally};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;
use rand::SeedableRng;
use std::sync::Mutex;
use wgsl_forge::certify::{compare, compare_special, generate, Distribution};
use wgsl_forge::prelude::*;
use wgsl_forge::{Access, DynArgs, ElemType, HostBuffer, OracleOptions, ScalarType, ScalarValue};

/// The most bytes of test data one case draws: sizes past it get no data (so the call is
/// refused for its shape, quickly) rather than a long oracle run.
const MAX_CASE_BYTES: u64 = 1 << 20;

fn kernels() -> Vec<&'static dyn Kernel> {
    wgsl_forge::kernels::registry::builtin()
}

#[derive(Clone, Debug)]
enum ScalarEdit {
    /// Scalar `i` set to an edge value of its type.
    Edge(usize, u32),
    /// Scalar `i` one more or one less.
    Nudge(usize, bool),
    /// Scalar `i` given as another type.
    Retype(usize),
    /// One scalar too many, or too few.
    Count(bool),
}

#[derive(Clone, Debug)]
enum BufferEdit {
    /// Buffer `i` one element longer or shorter.
    Nudge(usize, bool),
    /// Buffer `i` empty.
    Empty(usize),
    /// Buffer `i` of another element type (same length).
    Retype(usize, u8),
    /// Buffer `i` missing (`None`), or given where it is `#[out]`.
    Flip(usize),
    /// One buffer too many, or too few.
    Count(bool),
}

#[derive(Clone, Debug)]
struct Case {
    kernel: usize,
    case: usize,
    schedule: usize,
    seed: u64,
    scalars: Vec<ScalarEdit>,
    buffers: Vec<BufferEdit>,
}

fn case() -> impl Strategy<Value = Case> {
    let scalar_edit = prop_oneof![
        4 => (any::<usize>(), 0u32..12).prop_map(|(i, e)| ScalarEdit::Edge(i, e)),
        4 => (any::<usize>(), any::<bool>()).prop_map(|(i, up)| ScalarEdit::Nudge(i, up)),
        1 => any::<usize>().prop_map(ScalarEdit::Retype),
        1 => any::<bool>().prop_map(ScalarEdit::Count),
    ];
    let buffer_edit = prop_oneof![
        3 => (any::<usize>(), any::<bool>()).prop_map(|(i, up)| BufferEdit::Nudge(i, up)),
        1 => any::<usize>().prop_map(BufferEdit::Empty),
        1 => (any::<usize>(), any::<u8>()).prop_map(|(i, t)| BufferEdit::Retype(i, t)),
        1 => any::<usize>().prop_map(BufferEdit::Flip),
        1 => any::<bool>().prop_map(BufferEdit::Count),
    ];
    (
        0..kernels().len(),
        any::<usize>(),
        any::<usize>(),
        any::<u64>(),
        prop_oneof![2 => Just(Vec::new()), 3 => prop::collection::vec(scalar_edit, 1..3)],
        prop_oneof![3 => Just(Vec::new()), 1 => prop::collection::vec(buffer_edit, 1..3)],
    )
        .prop_map(|(kernel, case, schedule, seed, scalars, buffers)| Case {
            kernel,
            case,
            schedule,
            seed,
            scalars,
            buffers,
        })
}

/// An edge value of `ty` (the `e`th of a few).
fn edge(ty: ScalarType, e: u32, was: ScalarValue) -> ScalarValue {
    let w = match was {
        ScalarValue::U32(v) => v as i64,
        ScalarValue::I32(v) => v as i64,
        ScalarValue::F32(v) => v as i64,
    };
    let pick = [
        0i64,
        1,
        2,
        3,
        7,
        63,
        64,
        65,
        257,
        w.saturating_mul(2),
        u32::MAX as i64,
        i32::MIN as i64,
    ][e as usize % 12];
    match ty {
        ScalarType::U32 => ScalarValue::U32(pick as u32),
        ScalarType::I32 => ScalarValue::I32(pick as i32),
        _ => ScalarValue::F32(
            [
                0.0,
                1.0,
                -1.0,
                0.5,
                1e30,
                -1e-30,
                f32::NAN,
                f32::INFINITY,
                2.0,
                3.0,
                1e-3,
                -7.0,
            ][e as usize % 12],
        ),
    }
}

fn nudge(v: ScalarValue, up: bool) -> ScalarValue {
    match v {
        ScalarValue::U32(x) => ScalarValue::U32(if up {
            x.wrapping_add(1)
        } else {
            x.wrapping_sub(1)
        }),
        ScalarValue::I32(x) => ScalarValue::I32(if up {
            x.wrapping_add(1)
        } else {
            x.wrapping_sub(1)
        }),
        ScalarValue::F32(x) => ScalarValue::F32(if up { x * 2.0 } else { -x }),
    }
}

fn retype(v: ScalarValue) -> ScalarValue {
    match v {
        ScalarValue::U32(x) => ScalarValue::F32(x as f32),
        ScalarValue::I32(x) => ScalarValue::U32(x as u32),
        ScalarValue::F32(x) => ScalarValue::I32(x as i32),
    }
}

/// What the edits did, for what each call must do.
#[derive(Default, Debug)]
struct Shape {
    /// A count, a length, missing data or a scalar of another type: both calls must refuse
    /// it.
    wrong: bool,
    /// A buffer of another element type, or a buffer too many or too few: both calls must
    /// refuse it with the same message, since both run one check (`DynArgs::check`).
    retyped: bool,
    /// A float scalar far from the certification's range (1e30, NaN, infinity): results
    /// are only checked for not panicking, since no tolerance holds for them.
    extreme: bool,
}

/// The arguments of the case, and what its edits did.
fn args(k: &dyn Kernel, c: &Case) -> Option<(DynArgs, Shape)> {
    let cases = k.cert_cases();
    if cases.is_empty() {
        return None;
    }
    let mut scalars = cases[c.case % cases.len()].clone();
    let mut shape = Shape::default();
    let params = k.scalars();
    for e in &c.scalars {
        match e {
            ScalarEdit::Edge(i, v) if !scalars.is_empty() => {
                let i = i % scalars.len();
                let ty = params.get(i).map_or(ScalarType::U32, |p| p.ty);
                scalars[i] = edge(ty, *v, scalars[i]);
                if let ScalarValue::F32(x) = scalars[i] {
                    shape.extreme |=
                        !x.is_finite() || x.abs() > 1e6 || (x != 0.0 && x.abs() < 1e-6);
                }
            }
            ScalarEdit::Nudge(i, up) if !scalars.is_empty() => {
                let i = i % scalars.len();
                scalars[i] = nudge(scalars[i], *up);
            }
            ScalarEdit::Retype(i) if !scalars.is_empty() => {
                let i = i % scalars.len();
                scalars[i] = retype(scalars[i]);
            }
            ScalarEdit::Count(more) => {
                if *more {
                    scalars.push(ScalarValue::U32(1));
                } else {
                    scalars.pop();
                }
            }
            _ => {}
        }
    }
    // A scalar too many or too few, or of another type than its parameter (the oracle reads
    // each by its type): both must refuse. Judged on what the edits left.
    let typed = |v: &ScalarValue, t: ScalarType| {
        matches!(
            (v, t),
            (ScalarValue::U32(_), ScalarType::U32)
                | (ScalarValue::I32(_), ScalarType::I32)
                | (ScalarValue::F32(_), ScalarType::F32)
        )
    };
    if scalars.len() != params.len() || scalars.iter().zip(params).any(|(v, p)| !typed(v, p.ty)) {
        shape.wrong = true;
    }
    // The bindings at these scalars: drawn as the certifier draws them, where they can be
    // evaluated and are small; else no data (a shape both calls must refuse).
    let layout = k.layout();
    let lens: Option<Vec<u64>> = if shape.wrong {
        k.binding_lens(&cases[c.case % cases.len()]).ok()
    } else {
        k.binding_lens(&scalars).ok()
    };
    let bytes: u64 = lens.as_ref().map_or(u64::MAX, |l| {
        layout
            .iter()
            .zip(l)
            .map(|(b, n)| n.saturating_mul(b.elem.size() as u64))
            .fold(0u64, u64::saturating_add)
    });
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(c.seed);
    let dist = if k.special_values() {
        Distribution::Special
    } else {
        Distribution::Default
    };
    let mut buffers: Vec<Option<HostBuffer>> = layout
        .iter()
        .enumerate()
        .map(|(i, b)| match (b.access, &lens) {
            (Access::Out, _) => None,
            (_, Some(l)) if bytes <= MAX_CASE_BYTES => {
                Some(generate(&mut rng, b.elem, l[i] as usize, dist))
            }
            _ => None,
        })
        .collect();
    for e in &c.buffers {
        let n = buffers.len();
        match e {
            BufferEdit::Nudge(i, up) if n > 0 => {
                if let Some(b) = &buffers[i % n] {
                    let len = if *up {
                        b.len() + 1
                    } else {
                        b.len().saturating_sub(1)
                    };
                    buffers[i % n] = HostBuffer::zeroed(b.elem(), len).ok();
                }
            }
            BufferEdit::Empty(i) if n > 0 => {
                if let Some(b) = &buffers[i % n] {
                    buffers[i % n] = HostBuffer::zeroed(b.elem(), 0).ok();
                }
            }
            BufferEdit::Retype(i, t) if n > 0 => {
                if let Some(b) = &buffers[i % n] {
                    let ty = [
                        ScalarType::F32,
                        ScalarType::U32,
                        ScalarType::I32,
                        ScalarType::F16,
                    ][*t as usize % 4];
                    buffers[i % n] = HostBuffer::zeroed(ElemType::scalar(ty), b.len()).ok();
                }
            }
            BufferEdit::Flip(i) if n > 0 => {
                let i = i % n;
                if let Some(b) = layout.get(i).filter(|b| b.access == Access::Out) {
                    // Data for an `#[out]` binding is not looked at: no shape error.
                    buffers[i] = HostBuffer::zeroed(b.elem, 1).ok();
                } else {
                    buffers[i] = None;
                }
            }
            BufferEdit::Count(more) => {
                if *more {
                    buffers.push(None);
                } else {
                    buffers.pop();
                }
            }
            _ => {}
        }
    }
    // What the edits left, against what the kernel takes (edits may undo each other).
    if buffers.len() != layout.len() {
        shape.retyped = true;
    }
    for (i, b) in layout.iter().enumerate() {
        if b.access == Access::Out {
            continue;
        }
        match (buffers.get(i), &lens) {
            (Some(Some(buf)), Some(l)) => {
                let same_type =
                    buf.elem().scalar == b.elem.scalar && buf.elem().width == b.elem.width;
                if !same_type {
                    shape.retyped = true;
                } else if buf.len() as u64 != l[i] {
                    shape.wrong = true;
                }
            }
            // No data where data is needed (or sizes that cannot be evaluated).
            _ => shape.wrong = true,
        }
    }
    Some((DynArgs { scalars, buffers }, shape))
}

/// Where `got` and `want` (every writable binding of `k`) differ beyond `k`'s tolerance,
/// or `None` where they agree.
fn first_difference(k: &dyn Kernel, got: &[HostBuffer], want: &[HostBuffer]) -> Option<String> {
    let tol = k.tolerance();
    let writable = k.layout().iter().filter(|b| b.access.writable());
    for ((g, w), b) in got.iter().zip(want).zip(writable) {
        let cmp = if k.special_values() {
            compare_special(g, w, tol)
        } else {
            compare(g, w, tol)
        };
        if !cmp.ok() {
            return Some(format!(
                "`{}`: {} of {} elements, worst {:?}",
                b.name, cmp.mismatches, cmp.compared, cmp.worst
            ));
        }
    }
    (got.len() != want.len()).then(|| format!("{} outputs against {}", got.len(), want.len()))
}

fn error_message(what: &str, e: &ForgeError) -> Result<(), TestCaseError> {
    bounded_message(what, &e.to_string())
}

/// The most invocations a campaign's launch runs, in the oracle or on the GPU (see where it
/// is used).
const MAX_INVOCATIONS: u64 = 1 << 26;

#[test]
fn fuzz_dyn_args_against_run_dyn_and_cpu_dyn() {
    let rt = Mutex::new(
        ForgeRuntime::new(256 << 20, None).expect("a GPU adapter (lavapipe in CI) is required"),
    );
    let all = kernels();
    let tally = Tally::default();
    // The oracle's loop budget, far below its default (2^30 iterations an invocation, which
    // an edge value such as topk's `k = u32::MAX` reaches in every invocation): such a case
    // then ends at once, refused with `LoopBudgetExceeded`, instead of running for hours.
    // (The GPU's own loop limits are issue 35's items 1 and 2.)
    let oracle_options = OracleOptions::default().with_max_loop_iterations(1 << 16);
    // `FORGE_FUZZ_TRACE=1`: each launch's kernel and scalars on stderr before it runs, to
    // find the case of a launch that does not end.
    let trace = std::env::var_os("FORGE_FUZZ_TRACE").is_some();
    campaign(
        "DynArgs against run_dyn and cpu_dyn",
        file!(),
        case(),
        |c| {
            let k = all[c.kernel];
            let Some((args, shape)) = args(k, &c) else {
                return Ok(());
            };
            let space = k.tune_space().candidates();
            let schedule = if space.is_empty() || c.schedule % 3 == 0 {
                k.default_schedule()
            } else {
                space[c.schedule % space.len()]
            };
            // A launch past 2^26 invocations is run neither in the oracle nor on the GPU: it
            // is legal (the plan folds the workgroups into y and z), but both take minutes
            // over one (`topk_radix_hist` with `grid = u32::MAX`: 2^32 invocations, each
            // clearing its share of 2048 bins), and one such case kept a 3,000-case campaign,
            // then a 30-minute one, from ending. Arguments of the wrong shape still reach both.
            if k.threads_at(&schedule, &args.scalars)
                .is_ok_and(|t| t > MAX_INVOCATIONS)
                && !shape.wrong
                && !shape.retyped
            {
                tally.hit("a launch too large to run in a campaign");
                return Ok(());
            }
            let mut rt = rt.lock().unwrap_or_else(|p| p.into_inner());
            let oracle = no_panic("cpu_dyn", || {
                k.cpu_dyn_with(&schedule, &args, &oracle_options)
            })?;
            if let Err(e) = &oracle {
                error_message("cpu_dyn's error", e)?;
            }
            // A case where the oracle stopped the kernel as it ran (a loop past its budget, an
            // index out of bounds, a race) is not run on the GPU: what such a launch does is
            // undefined, and lavapipe took minutes over some of these (the oracle stops at the
            // first bad invocation, the GPU runs them all; a timeout, `RuntimeBuilder::timeout`,
            // would end the call but leave the runtime unusable for the rest of the campaign).
            if let Err(
                e @ (ForgeError::LoopBudgetExceeded { .. }
                | ForgeError::OutOfBounds { .. }
                | ForgeError::DataRace { .. }
                | ForgeError::NonUniform { .. }),
            ) = &oracle
            {
                let what = format!("{e:?}");
                tally.hit(format!(
                    "stopped by the oracle ({})",
                    what.split([' ', '{', '(']).next().unwrap_or("")
                ));
                return Ok(());
            }
            if trace {
                eprintln!("run_dyn {} at {schedule} {:?}", k.name(), args.scalars);
            }
            let gpu = no_panic("run_dyn", || rt.run_dyn(k, &schedule, &args))?;
            if let Err(e) = &gpu {
                if matches!(e, ForgeError::DeviceLost(_)) {
                    return Err(TestCaseError::fail(format!("the device was lost: {e}")));
                }
                error_message("run_dyn's error", e)?;
            }
            let runs_here = rt.cannot_run(k).is_none() && rt.check_schedule(k, &schedule).is_ok();
            if shape.wrong {
                tally.hit("wrong shape");
                prop_assert!(
                    oracle.is_err(),
                    "cpu_dyn ran arguments of the wrong shape: {:?}",
                    shape
                );
                prop_assert!(
                    gpu.is_err(),
                    "run_dyn ran arguments of the wrong shape: {:?}",
                    shape
                );
                return Ok(());
            }
            if shape.retyped {
                tally.hit("another type or count");
                match (&oracle, &gpu) {
                    (Err(o), Err(g)) => prop_assert_eq!(o.to_string(), g.to_string()),
                    _ => prop_assert!(
                        false,
                        "a buffer of another type or count ran: oracle {}, GPU {}",
                        oracle.is_ok(),
                        gpu.is_ok()
                    ),
                }
                return Ok(());
            }
            let variant = |r: &Result<Vec<HostBuffer>, ForgeError>| match r {
                Ok(_) => "ran".to_string(),
                Err(e) => format!("{e:?}")
                    .split([' ', '(', '{'])
                    .next()
                    .unwrap_or("")
                    .to_string(),
            };
            let said = format!(
                "not both ran (oracle {}, GPU {})",
                variant(&oracle),
                variant(&gpu)
            );
            let (Ok(gpu), Ok(oracle)) = (gpu, oracle) else {
                tally.hit(said);
                return Ok(());
            };
            if !runs_here || shape.extreme {
                return Ok(());
            }
            tally.hit("both ran");
            prop_assert_eq!(gpu.len(), oracle.len(), "outputs");
            let Some(differ) = first_difference(k, &gpu, &oracle) else {
                return Ok(());
            };
            // Off a certification case the scalars may be outside the kernel's domain (topk's
            // `k` past 8, say), where no result is defined and the GPU and the oracle may
            // differ. The independent reference decides: where it agrees with the oracle,
            // the result is defined and the GPU is wrong; where it does not (or there is
            // none), the input is outside the domain.
            if !c.scalars.is_empty() {
                let defined = match k.reference_dyn(&args) {
                    Some(Ok(reference)) => first_difference(k, &oracle, &reference).is_none(),
                    _ => false,
                };
                if !defined {
                    tally.hit("outside the kernel's domain");
                    return Ok(());
                }
            }
            Err(TestCaseError::fail(format!(
                "{} at {} ({:?}): the GPU and the oracle differ: {differ}",
                k.name(),
                schedule,
                args.scalars,
            )))
        },
    );
    eprintln!("DynArgs cases reached: {}", tally.summary());
}
