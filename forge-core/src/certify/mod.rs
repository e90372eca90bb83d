//! Certification: checks a kernel's GPU results against its CPU oracle, the oracle against
//! the kernel's independent reference, and that the GPU writes every output element.
//! Layer 6 (procedures): built on the runtime.
//!
//! This module owns the test vectors ([`Distribution`], [`CertOptions`]), the comparison of
//! results ([`compare`]) and the report ([`CertReport`]). It drives any kernel through the
//! type-erased [`Kernel`] interface, so the CLI, the tests and the tuner certify every
//! kernel the same way.
//!
//! For each of [`Kernel::cert_cases`]:
//! 1. The case is skipped, and the report says so, when a binding would be empty, when
//!    `threads` is 0 or cannot be evaluated, or when its bindings would take more than
//!    [`CertOptions::max_case_bytes`] (software drivers such as lavapipe are slow and
//!    memory-bound).
//! 2. Every non-`#[out]` binding gets fresh data from a ChaCha8 generator seeded from the
//!    seed, the kernel's name, the case's index and the binding's name, drawn from the
//!    binding's [`Distribution`].
//! 3. Three checks, each over every element of every writable binding:
//!    - **GPU against the oracle** ([`ForgeRuntime::run_dyn`] against [`Kernel::cpu_dyn_with`]),
//!      within [`Kernel::tolerance`]. The oracle runs with race detection
//!      ([`CertOptions::detect_races`], on by default), so a data race fails the case even
//!      when the GPU happened to agree.
//!    - **The oracle against the reference** ([`Kernel::reference_dyn`]), where the kernel
//!      names one, within the same tolerance.
//!    - **Every output element is written.** A second GPU run starts every non-atomic
//!      `#[out]` binding filled with a NaN poison pattern instead of zeros. An element that
//!      still holds the pattern was never written; every other element must still match
//!      the oracle, so a kernel whose result depends on its outputs' initial contents fails
//!      too. Atomic `#[out]` bindings are accumulators that the contract zero-fills, so they
//!      start zeroed in this run as well.
//!
//! NaN never passes a comparison, not even against NaN ([`Tolerance::accepts`]).

use crate::error::{ForgeError, Result};
use crate::kernel::{
    Access, Binding, DynArgs, ElemType, HostBuffer, Kernel, KernelId, OracleOptions, ScalarParam,
    ScalarType, ScalarValue, Tolerance,
};
pub use crate::records::Verdict;
use crate::runtime::launch::{params_bytes, HostArg};
use crate::runtime::ForgeRuntime;
use crate::schedule::{Schedule, TuneSpace};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

/// The seed `forge certify` uses unless `--seed` says otherwise.
pub const DEFAULT_SEED: u64 = 0x5EED_F0D6E;

/// The default limit on one case's binding bytes: 64 MiB.
pub const DEFAULT_MAX_CASE_BYTES: u64 = 64 << 20;

/// The poison word that non-atomic `#[out]` bindings start with in the poisoned run: a
/// quiet f32 NaN with a recognisable payload. Integer outputs see the same bits.
pub const POISON_WORD: u32 = 0x7FF0_BAAD;

/// The f16 poison: a quiet f16 NaN with a payload.
pub const POISON_HALF: u16 = 0x7E5A;

/// How the values of one binding's test vector are drawn.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum Distribution {
    /// Depends on the element type: floats uniform in `[-1, 1)`; `u32` and `i32` uniform in
    /// `[0, 1000)`, small and non-negative, so integer data that a kernel uses as indices or
    /// counts stays meaningful.
    #[default]
    Default,
    /// Uniform in `[lo, hi)`. Integers draw whole numbers in that range, clamped to the type.
    Uniform {
        /// Inclusive lower bound.
        lo: f64,
        /// Exclusive upper bound; `hi <= lo` always gives `lo`.
        hi: f64,
    },
    /// Uniformly random bit patterns: every `u32`/`i32` value is possible. Floats get random
    /// bits too, redrawn while they are NaN or infinite.
    Bits,
    /// Every element is this value (converted to the element type).
    Constant(f64),
    /// Special values mixed with ordinary ones: each float is, with even odds, drawn as
    /// [`Distribution::Default`] draws it or taken from [`SPECIAL_F32`] ([`SPECIAL_F16`] for
    /// `f16`): NaN of both signs, both infinities, both zeros, subnormals, the smallest
    /// normal, the extremes, and values past the integer ranges. Integers are drawn as
    /// [`Distribution::Default`] draws them. The certifier uses it, instead of the default,
    /// for kernels that handle special values ([`Kernel::special_values`]).
    Special,
    /// A permutation of `0..len`, each value once: a scatter's destinations.
    Permutation,
    /// Sorted offsets: the first 0, the last `total`, never decreasing (CSR row pointers:
    /// `len - 1` rows over `total` entries, some rows empty).
    SortedOffsets {
        /// The last offset.
        total: u64,
    },
    /// Indices, each uniform in `0..len` (0 where `len` is 0): a gather's rows.
    Indices {
        /// How many elements they index.
        len: u64,
    },
}

/// The f32 special values of [`Distribution::Special`], as bits: quiet NaN of both signs,
/// ±infinity, ±0, the smallest and the largest subnormal and a negative one, the smallest
/// normal, ±`f32::MAX`, ±1e20 (past every integer type), 2^31 and 2^32 (just past `i32`
/// and `u32`).
pub const SPECIAL_F32: [u32; 17] = [
    0x7FC0_0000,
    0xFFC0_0000,
    0x7F80_0000,
    0xFF80_0000,
    0x0000_0000,
    0x8000_0000,
    0x0000_0001,
    0x007F_FFFF,
    0x8000_0001,
    0x0080_0000,
    0x7F7F_FFFF,
    0xFF7F_FFFF,
    0x60AD_78EC,
    0xE0AD_78EC,
    0x4F00_0000,
    0xCF00_0000,
    0x4F80_0000,
];

/// The f64 special values of [`Distribution::Special`], as bits: quiet NaN of both signs,
/// ±infinity, ±0, the smallest and the largest subnormal and a negative one, the smallest
/// normal, ±`f64::MAX`, ±1e300, 2^31 and 2^32.
pub const SPECIAL_F64: [u64; 16] = [
    0x7FF8_0000_0000_0000,
    0xFFF8_0000_0000_0000,
    0x7FF0_0000_0000_0000,
    0xFFF0_0000_0000_0000,
    0x0000_0000_0000_0000,
    0x8000_0000_0000_0000,
    0x0000_0000_0000_0001,
    0x000F_FFFF_FFFF_FFFF,
    0x8000_0000_0000_0001,
    0x0010_0000_0000_0000,
    0x7FEF_FFFF_FFFF_FFFF,
    0xFFEF_FFFF_FFFF_FFFF,
    0x7E37_E43C_8800_759C,
    0xFE37_E43C_8800_759C,
    0x41E0_0000_0000_0000,
    0x41F0_0000_0000_0000,
];

/// The f16 special values of [`Distribution::Special`], as bits: quiet NaN of both signs,
/// ±infinity, ±0, the smallest and the largest subnormal and a negative one, the smallest
/// normal, ±65504.
pub const SPECIAL_F16: [u16; 12] = [
    0x7E00, 0xFE00, 0x7C00, 0xFC00, 0x0000, 0x8000, 0x0001, 0x03FF, 0x8001, 0x0400, 0x7BFF, 0xFBFF,
];

/// What [`certify`] checks and with which data.
#[derive(Clone, Debug, PartialEq)]
pub struct CertOptions {
    /// The seed every test vector derives from.
    pub seed: u64,
    /// Cases whose bindings take more bytes than this are skipped.
    pub max_case_bytes: u64,
    /// Whether to run the poisoned-output check.
    pub poison: bool,
    /// Per-binding distributions; bindings not listed use [`Distribution::Default`].
    pub overrides: Vec<Override>,
    /// Run the oracle with race detection ([`OracleOptions::detect_races`]): a data race is
    /// a failure of the case.
    pub detect_races: bool,
}

/// A distribution for one binding of one kernel, replacing the default.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Override {
    /// The kernel's name.
    pub kernel: String,
    /// The binding's name.
    pub binding: String,
    /// Its distribution.
    pub dist: Distribution,
}

impl Default for CertOptions {
    fn default() -> Self {
        CertOptions::new(DEFAULT_SEED)
    }
}

impl CertOptions {
    /// Options with this seed and the defaults: 64 MiB per case, poisoning and race
    /// detection on, [`Distribution::Default`] everywhere.
    pub fn new(seed: u64) -> Self {
        CertOptions {
            seed,
            max_case_bytes: DEFAULT_MAX_CASE_BYTES,
            poison: true,
            overrides: Vec::new(),
            detect_races: true,
        }
    }

    /// Draws `binding` of `kernel` from `dist` instead of the default.
    ///
    /// ```
    /// use forge_core::certify::{CertOptions, Distribution};
    /// let opts = CertOptions::new(7).with_distribution("gather", "idx", Distribution::Uniform { lo: 0.0, hi: 16.0 });
    /// assert_eq!(opts.distribution("gather", "idx"), Distribution::Uniform { lo: 0.0, hi: 16.0 });
    /// assert_eq!(opts.distribution("gather", "x"), Distribution::Default);
    /// ```
    pub fn with_distribution(mut self, kernel: &str, binding: &str, dist: Distribution) -> Self {
        self.overrides
            .retain(|o| !(o.kernel == kernel && o.binding == binding));
        self.overrides.push(Override {
            kernel: kernel.to_string(),
            binding: binding.to_string(),
            dist,
        });
        self
    }

    /// The distribution `binding` of `kernel` is drawn from.
    pub fn distribution(&self, kernel: &str, binding: &str) -> Distribution {
        self.overrides
            .iter()
            .find(|o| o.kernel == kernel && o.binding == binding)
            .map(|o| o.dist)
            .unwrap_or_default()
    }
}

/// What [`certify`] found for one kernel and schedule.
///
/// A report is made by the certifier and read by its caller: `#[non_exhaustive]`, so that
/// a field added later breaks no one.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CertReport {
    /// The kernel's name.
    pub kernel: String,
    /// The schedule certified.
    pub schedule: Schedule,
    /// Cases that ran (skipped cases are not counted).
    pub cases: usize,
    /// The largest absolute error over every finite comparison.
    pub max_abs_err: f64,
    /// The largest error relative to the larger magnitude, over every finite comparison.
    pub max_rel_err: f64,
    /// Pass or fail.
    pub verdict: Verdict,
    /// One line per failed check: the kernel, the case, the check, the binding and element.
    pub failures: Vec<String>,
    /// One line per skipped case, with the reason.
    #[serde(default)]
    pub skipped: Vec<String>,
    /// The seed the test vectors came from.
    #[serde(default)]
    pub seed: u64,
    /// The adapter the GPU checks ran on.
    #[serde(default)]
    pub adapter: String,
    /// The emission backend (`wgsl`, `spirv`).
    #[serde(default)]
    pub backend: String,
    /// Whether the kernel handles special values ([`Kernel::special_values`]), so its
    /// default inputs were drawn from [`Distribution::Special`] and a NaN matched a NaN.
    #[serde(default)]
    pub special_values: bool,
}

impl CertReport {
    /// Whether the verdict is [`Verdict::Pass`].
    pub fn passed(&self) -> bool {
        self.verdict == Verdict::Pass
    }

    fn record(&mut self, cmp: &Comparison) {
        self.max_abs_err = self.max_abs_err.max(cmp.max_abs);
        self.max_rel_err = self.max_rel_err.max(cmp.max_rel);
    }

    /// Compares `got` with `want` for `binding` (the `check` named in a failure, the two
    /// sides by `names`), a NaN matching a NaN where the kernel handles special values,
    /// records its errors, and adds its failure line if it did not pass.
    fn check(
        &mut self,
        prefix: &str,
        check: &str,
        names: (&str, &str),
        binding: &Binding,
        (got, want): (&HostBuffer, &HostBuffer),
        (tol, scaled): (Tolerance, Option<&[f64]>),
    ) {
        let cmp = compare_with(got, want, tol, self.special_values, scaled);
        self.record(&cmp);
        self.failures
            .extend(explain(prefix, check, names, binding, &cmp, tol));
    }
}

/// One element that failed a comparison.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Mismatch {
    /// Element index in the binding.
    pub index: usize,
    /// Component within a vector element (0 for scalars).
    pub lane: usize,
    /// The value under test.
    pub got: f64,
    /// The value it should match.
    pub want: f64,
}

impl Mismatch {
    fn abs_err(&self) -> f64 {
        (self.got - self.want).abs()
    }
}

/// The result of comparing two buffers element by element.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Comparison {
    /// Components compared.
    pub compared: usize,
    /// Components outside the tolerance (NaN included).
    pub mismatches: usize,
    /// The first mismatch, by index.
    pub first: Option<Mismatch>,
    /// The mismatch with the largest absolute error (a NaN one if there is any).
    pub worst: Option<Mismatch>,
    /// The largest absolute error over pairs where both values are finite.
    pub max_abs: f64,
    /// The largest relative error over pairs where both values are finite.
    pub max_rel: f64,
    /// `Some((got, want))` when the buffers have different lengths, in elements.
    pub len_mismatch: Option<(usize, usize)>,
}

impl Comparison {
    /// Whether every component matched and the lengths agree.
    pub fn ok(&self) -> bool {
        self.mismatches == 0 && self.len_mismatch.is_none()
    }
}

/// Compares `got` with `want` component by component under `tol`. NaN never matches.
///
/// ```
/// use forge_core::certify::compare;
/// use forge_core::kernel::{ElemType, HostBuffer, ScalarType, Tolerance};
/// let f32s = ElemType::scalar(ScalarType::F32);
/// let got = HostBuffer::from_slice(f32s, &[1.0f32, 2.0, f32::NAN]);
/// let want = HostBuffer::from_slice(f32s, &[1.0f32, 2.000001, 3.0]);
/// let c = compare(&got, &want, Tolerance::FLOAT);
/// assert_eq!(c.mismatches, 1);
/// assert_eq!(c.first.unwrap().index, 2);
/// ```
pub fn compare(got: &HostBuffer, want: &HostBuffer, tol: Tolerance) -> Comparison {
    compare_with(got, want, tol, false, None)
}

/// [`compare`] for a kernel that handles special values ([`Kernel::special_values`]): a
/// NaN matches a NaN (of any sign and payload), and nothing else; infinities match only
/// themselves; every finite pair is held to `tol`.
///
/// ```
/// use forge_core::certify::compare_special;
/// use forge_core::kernel::{ElemType, HostBuffer, ScalarType, Tolerance};
/// let f32s = ElemType::scalar(ScalarType::F32);
/// let got = HostBuffer::from_slice(f32s, &[f32::NAN, f32::INFINITY, 1.0, f32::NAN]);
/// let want = HostBuffer::from_slice(f32s, &[-f32::NAN, f32::INFINITY, 1.0, 0.0]);
/// let c = compare_special(&got, &want, Tolerance::FLOAT);
/// assert_eq!((c.mismatches, c.first.unwrap().index), (1, 3));
/// ```
pub fn compare_special(got: &HostBuffer, want: &HostBuffer, tol: Tolerance) -> Comparison {
    compare_with(got, want, tol, true, None)
}

/// `scaled`, where the kernel's tolerance scales with its work (`Declarations::tolerance_terms`):
/// each component's further allowance, beside `tol`.
fn compare_with(
    got: &HostBuffer,
    want: &HostBuffer,
    tol: Tolerance,
    nan_matches_nan: bool,
    scaled: Option<&[f64]>,
) -> Comparison {
    let mut c = Comparison::default();
    if got.len() != want.len() || got.elem().width != want.elem().width {
        c.len_mismatch = Some((got.len(), want.len()));
    }
    let width = want.elem().width.max(1) as usize;
    let (g, w) = (components(got), components(want));
    for (j, (&a, &b)) in g.iter().zip(&w).enumerate() {
        c.compared += 1;
        if a.is_finite() && b.is_finite() {
            let abs = (a - b).abs();
            let mag = a.abs().max(b.abs());
            c.max_abs = c.max_abs.max(abs);
            if mag > 0.0 {
                c.max_rel = c.max_rel.max(abs / mag);
            }
        }
        let within_scaled = scaled
            .and_then(|s| s.get(j))
            .is_some_and(|&e| a.is_finite() && b.is_finite() && (a - b).abs() <= e);
        let agree =
            tol.accepts(a, b) || within_scaled || (nan_matches_nan && a.is_nan() && b.is_nan());
        if !agree {
            let m = Mismatch {
                index: j / width,
                lane: j % width,
                got: a,
                want: b,
            };
            c.mismatches += 1;
            c.first.get_or_insert(m);
            let worse = match &c.worst {
                None => true,
                Some(w) => {
                    !w.abs_err().is_nan() && (m.abs_err().is_nan() || m.abs_err() > w.abs_err())
                }
            };
            if worse {
                c.worst = Some(m);
            }
        }
    }
    c
}

/// The components of a buffer as f64, exactly `len * width` of them.
fn components(buf: &HostBuffer) -> Vec<f64> {
    let mut v = buf.to_f64();
    v.truncate(buf.len() * buf.elem().width.max(1) as usize);
    v
}

/// The raw bits of each component, exactly `len * width` of them.
fn component_bits(buf: &HostBuffer) -> Vec<u32> {
    let n = buf.len() * buf.elem().width.max(1) as usize;
    match buf.elem().scalar {
        ScalarType::F16 => bytemuck::cast_slice::<u32, u16>(buf.words())
            .iter()
            .take(n)
            .map(|h| *h as u32)
            .collect(),
        // A component is poisoned only if both its words are.
        ScalarType::F64 => buf
            .words()
            .chunks_exact(2)
            .take(n)
            .map(|w| if w[0] == w[1] { w[0] } else { !POISON_WORD })
            .collect(),
        _ => buf.words().iter().take(n).copied().collect(),
    }
}

/// Indices `(element, lane)` of the components of `buf` that still hold the poison pattern.
pub fn poisoned(buf: &HostBuffer) -> Vec<(usize, usize)> {
    let poison = match buf.elem().scalar {
        ScalarType::F16 => POISON_HALF as u32,
        _ => POISON_WORD,
    };
    let width = buf.elem().width.max(1) as usize;
    component_bits(buf)
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == poison)
        .map(|(j, _)| (j / width, j % width))
        .collect()
}

/// A buffer of `len` elements of `elem` filled with the poison pattern.
pub fn poison_buffer(elem: ElemType, len: usize) -> HostBuffer {
    let bytes = len * elem.size();
    let word = match elem.scalar {
        ScalarType::F16 => (POISON_HALF as u32) | ((POISON_HALF as u32) << 16),
        _ => POISON_WORD,
    };
    HostBuffer::from_exact(elem, len, vec![word; bytes.div_ceil(4)])
}

/// The generator for one binding of one case: independent of every other binding, so adding
/// a binding or a case never changes the data of another.
pub fn case_rng(seed: u64, kernel: &str, case: usize, binding: &str) -> ChaCha8Rng {
    let mut h = Sha256::new();
    h.update(b"wgsl-forge cert v1\0");
    h.update(seed.to_le_bytes());
    h.update(kernel.as_bytes());
    h.update([0]);
    h.update((case as u64).to_le_bytes());
    h.update(binding.as_bytes());
    ChaCha8Rng::from_seed(h.finalize().into())
}

/// Draws `len` elements of `elem` from `dist`.
pub fn generate(
    rng: &mut ChaCha8Rng,
    elem: ElemType,
    len: usize,
    dist: Distribution,
) -> HostBuffer {
    if let Some(values) = structured(rng, len * elem.width.max(1) as usize, dist) {
        return from_integers(elem, len, &values);
    }
    let n = len * elem.width.max(1) as usize;
    if elem.layout.is_some() {
        // A struct: each word drawn as its field's scalar.
        let width = elem.width.max(1) as usize;
        let words = (0..n)
            .map(|j| match elem.word_scalar(j % width) {
                ScalarType::F32 => draw_f32(rng, dist).to_bits(),
                ScalarType::I32 => {
                    draw_int(rng, dist, i32::MIN as i64, i32::MAX as i64) as i32 as u32
                }
                _ => draw_int(rng, dist, 0, u32::MAX as i64) as u32,
            })
            .collect();
        return HostBuffer::from_exact(elem, len, words);
    }
    let words: Vec<u32> = match elem.scalar {
        ScalarType::F32 => (0..n).map(|_| draw_f32(rng, dist).to_bits()).collect(),
        ScalarType::F16 => {
            let halves: Vec<half::f16> = (0..n).map(|_| draw_f16(rng, dist)).collect();
            let mut words = vec![0u32; n.div_ceil(2)];
            bytemuck::cast_slice_mut::<u32, half::f16>(&mut words)[..n].copy_from_slice(&halves);
            words
        }
        ScalarType::U32 | ScalarType::Bool => (0..n)
            .map(|_| draw_int(rng, dist, 0, u32::MAX as i64) as u32)
            .collect(),
        ScalarType::I32 => (0..n)
            .map(|_| draw_int(rng, dist, i32::MIN as i64, i32::MAX as i64) as i32 as u32)
            .collect(),
        ScalarType::F64 => (0..n)
            .flat_map(|_| {
                let bits = draw_f64(rng, dist).to_bits();
                [bits as u32, (bits >> 32) as u32]
            })
            .collect(),
    };
    HostBuffer::from_exact(elem, len, words)
}

/// The values of a structured distribution (a permutation, sorted offsets, indices), as
/// whole numbers; `None` for the others, which draw each element alone.
fn structured(rng: &mut ChaCha8Rng, n: usize, dist: Distribution) -> Option<Vec<u64>> {
    Some(match dist {
        Distribution::Permutation => {
            let mut v: Vec<u64> = (0..n as u64).collect();
            v.shuffle(rng);
            v
        }
        Distribution::SortedOffsets { total } => {
            // `n - 1` cut points in `0..=total`, sorted, between a first 0 and a last total.
            let mut v: Vec<u64> = (0..n).map(|_| rng.gen_range(0..=total)).collect();
            v.sort_unstable();
            if let Some(first) = v.first_mut() {
                *first = 0;
            }
            if let Some(last) = v.last_mut() {
                *last = total;
            }
            v
        }
        Distribution::Indices { len } => (0..n)
            .map(|_| if len == 0 { 0 } else { rng.gen_range(0..len) })
            .collect(),
        _ => return None,
    })
}

/// Whole numbers as elements of `elem` (floats hold them exactly up to 2^24).
fn from_integers(elem: ElemType, len: usize, values: &[u64]) -> HostBuffer {
    let words: Vec<u32> = match elem.scalar {
        ScalarType::F32 => values.iter().map(|&v| (v as f32).to_bits()).collect(),
        ScalarType::F64 => values
            .iter()
            .flat_map(|&v| {
                let b = (v as f64).to_bits();
                [b as u32, (b >> 32) as u32]
            })
            .collect(),
        ScalarType::F16 => {
            let halves: Vec<half::f16> = values
                .iter()
                .map(|&v| half::f16::from_f64(v as f64))
                .collect();
            let mut words = vec![0u32; halves.len().div_ceil(2)];
            bytemuck::cast_slice_mut::<u32, half::f16>(&mut words)[..halves.len()]
                .copy_from_slice(&halves);
            words
        }
        _ => values.iter().map(|&v| v as u32).collect(),
    };
    HostBuffer::from_exact(elem, len, words)
}

fn draw_f32(rng: &mut ChaCha8Rng, dist: Distribution) -> f32 {
    match dist {
        Distribution::Default => rng.gen_range(-1.0f32..1.0),
        Distribution::Uniform { lo, hi } if hi > lo => {
            let v = rng.gen_range(lo..hi) as f32;
            // Rounding to f32 can land on `hi`; keep the bound exclusive.
            if (v as f64) >= hi {
                lo as f32
            } else {
                v
            }
        }
        Distribution::Uniform { lo, .. } => lo as f32,
        Distribution::Bits => loop {
            let v = f32::from_bits(rng.gen());
            if v.is_finite() {
                break v;
            }
        },
        Distribution::Constant(c) => c as f32,
        Distribution::Special if rng.gen::<bool>() => {
            f32::from_bits(SPECIAL_F32[rng.gen_range(0..SPECIAL_F32.len())])
        }
        Distribution::Special => draw_f32(rng, Distribution::Default),
        // `generate` draws the structured ones whole.
        Distribution::Permutation
        | Distribution::SortedOffsets { .. }
        | Distribution::Indices { .. } => draw_f32(rng, Distribution::Default),
    }
}

/// `f64` values: the same distributions at full precision (`Bits` draws finite `f64`s).
fn draw_f64(rng: &mut ChaCha8Rng, dist: Distribution) -> f64 {
    match dist {
        Distribution::Default => rng.gen_range(-1.0f64..1.0),
        Distribution::Uniform { lo, hi } if hi > lo => rng.gen_range(lo..hi),
        Distribution::Uniform { lo, .. } => lo,
        Distribution::Bits => loop {
            let v = f64::from_bits(rng.gen());
            if v.is_finite() {
                break v;
            }
        },
        Distribution::Constant(c) => c,
        Distribution::Special if rng.gen::<bool>() => {
            f64::from_bits(SPECIAL_F64[rng.gen_range(0..SPECIAL_F64.len())])
        }
        Distribution::Special => draw_f64(rng, Distribution::Default),
        Distribution::Permutation
        | Distribution::SortedOffsets { .. }
        | Distribution::Indices { .. } => draw_f64(rng, Distribution::Default),
    }
}

/// Default f16 values are multiples of 2^-10 in `[-1, 1)`, exactly representable.
fn draw_f16(rng: &mut ChaCha8Rng, dist: Distribution) -> half::f16 {
    match dist {
        Distribution::Default => half::f16::from_f32(rng.gen_range(-1024i32..1024) as f32 / 1024.0),
        Distribution::Bits => loop {
            let h = half::f16::from_bits(rng.gen());
            if h.is_finite() {
                break h;
            }
        },
        Distribution::Special if rng.gen::<bool>() => {
            half::f16::from_bits(SPECIAL_F16[rng.gen_range(0..SPECIAL_F16.len())])
        }
        Distribution::Special => draw_f16(rng, Distribution::Default),
        other => half::f16::from_f32(draw_f32(rng, other)),
    }
}

fn draw_int(rng: &mut ChaCha8Rng, dist: Distribution, min: i64, max: i64) -> i64 {
    match dist {
        Distribution::Default => rng.gen_range(0..1000),
        Distribution::Uniform { lo, hi } => {
            let lo = (lo.ceil() as i64).clamp(min, max);
            let hi = (hi.ceil() as i64).clamp(min, max.saturating_add(1));
            if hi > lo {
                rng.gen_range(lo..hi)
            } else {
                lo
            }
        }
        Distribution::Bits => rng.gen::<u32>() as i64,
        Distribution::Constant(c) => (c as i64).clamp(min, max),
        // Integers are indices and counts more often than not: special floats only.
        Distribution::Special => draw_int(rng, Distribution::Default, min, max),
        // `generate` draws the structured ones whole.
        Distribution::Permutation
        | Distribution::SortedOffsets { .. }
        | Distribution::Indices { .. } => draw_int(rng, Distribution::Default, min, max),
    }
}

/// A kernel seen with its `#[out]` bindings as read_write inputs, so that
/// [`ForgeRuntime::launch_host`] uploads the poisoned contents instead of zeroing them. The
/// shader, its bind group layout (read_write storage either way) and so its cached pipeline
/// are the same as the kernel's.
struct PoisonView<'a> {
    inner: &'a dyn Kernel,
    layout: &'static [Binding],
}

impl<'a> PoisonView<'a> {
    fn new(inner: &'a dyn Kernel) -> Self {
        // `Kernel::layout` is `'static`: each kernel's rewritten layout is built once and
        // kept for the life of the process.
        static LAYOUTS: OnceLock<Mutex<HashMap<usize, &'static [Binding]>>> = OnceLock::new();
        let original = inner.layout();
        let key = original.as_ptr() as usize;
        let make = || -> &'static [Binding] {
            let rewritten: Vec<Binding> = original
                .iter()
                .map(|b| Binding {
                    access: if b.access == Access::Out {
                        Access::ReadWrite
                    } else {
                        b.access
                    },
                    ..*b
                })
                .collect();
            Box::leak(rewritten.into_boxed_slice())
        };
        let layout = match LAYOUTS.get_or_init(Default::default).lock() {
            Ok(mut map) => *map.entry(key).or_insert_with(make),
            Err(_) => make(),
        };
        PoisonView { inner, layout }
    }
}

impl Kernel for PoisonView<'_> {
    fn name(&self) -> &'static str {
        self.inner.name()
    }
    /// The kernel's own identity: the same shader, so the same compiled pipeline (its
    /// layout is read_write storage for `#[out]` and `&mut` bindings alike).
    fn id(&self) -> KernelId {
        self.inner.id()
    }
    fn wgsl(&self, schedule: &Schedule) -> String {
        self.inner.wgsl(schedule)
    }
    /// The same CUDA (its pointers are the same for `#[out]` and read_write bindings): the
    /// poisoned run on the CUDA backend compiles and launches the kernel's own.
    fn cuda(&self, schedule: &Schedule) -> Result<String> {
        self.inner.cuda(schedule)
    }
    fn features(&self) -> &'static [crate::kernel::Feature] {
        self.inner.features()
    }
    fn workgroup_free(&self) -> bool {
        self.inner.workgroup_free()
    }
    fn layout(&self) -> &'static [Binding] {
        self.layout
    }
    fn scalars(&self) -> &'static [ScalarParam] {
        self.inner.scalars()
    }
    fn default_schedule(&self) -> Schedule {
        self.inner.default_schedule()
    }
    fn tune_space(&self) -> TuneSpace {
        self.inner.tune_space()
    }
    fn cert_cases(&self) -> Vec<Vec<ScalarValue>> {
        self.inner.cert_cases()
    }
    fn tolerance(&self) -> Tolerance {
        self.inner.tolerance()
    }
    fn special_values(&self) -> bool {
        self.inner.special_values()
    }
    fn binding_lens_at(&self, schedule: &Schedule, scalars: &[ScalarValue]) -> Result<Vec<u64>> {
        self.inner.binding_lens_at(schedule, scalars)
    }
    fn grid_threads_at(
        &self,
        schedule: &Schedule,
        scalars: &[ScalarValue],
    ) -> Result<crate::schedule::Threads> {
        self.inner.grid_threads_at(schedule, scalars)
    }
    fn cpu_dyn(&self, schedule: &Schedule, args: &DynArgs) -> Result<Vec<HostBuffer>> {
        self.inner.cpu_dyn(schedule, args)
    }
    fn cpu_dyn_with(
        &self,
        s: &Schedule,
        a: &DynArgs,
        o: &OracleOptions,
    ) -> Result<Vec<HostBuffer>> {
        self.inner.cpu_dyn_with(s, a, o)
    }
}

/// Runs `kernel` on the GPU with every non-atomic `#[out]` binding starting as poison.
/// Returns the final contents of every writable binding, in layout order.
async fn run_poisoned(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    schedule: &Schedule,
    args: &DynArgs,
    lens: &[u64],
    threads: crate::schedule::Threads,
) -> Result<Vec<HostBuffer>> {
    let layout = kernel.layout();
    let mut data: Vec<Vec<u8>> = Vec::with_capacity(layout.len());
    for ((b, buf), &len) in layout.iter().zip(&args.buffers).zip(lens) {
        let host = match (b.access, buf) {
            (Access::Out, _) if b.elem.atomic => HostBuffer::zeroed(b.elem, len as usize)?,
            (Access::Out, _) => poison_buffer(b.elem, len as usize),
            (_, Some(buf)) => buf.clone(),
            (_, None) => {
                return Err(ForgeError::InvalidArgument {
                    kernel: kernel.name(),
                    message: format!("the certifier has no data for argument `{}`", b.name),
                })
            }
        };
        data.push(host.bytes().to_vec());
    }
    let params = params_bytes(args);
    let view = PoisonView::new(kernel);
    let mut host_args: Vec<HostArg<'_>> = layout
        .iter()
        .zip(data.iter_mut())
        .map(|(b, d)| match b.access {
            Access::Read => HostArg::In(d.as_slice()),
            _ => HostArg::InOut(d.as_mut_slice()),
        })
        .collect();
    rt.launch_host_async(&view, schedule, &params, threads, &mut host_args)
        .await?;
    drop(host_args);
    Ok(layout
        .iter()
        .zip(&data)
        .filter(|(b, _)| b.access.writable())
        .map(|(b, d)| HostBuffer::from_slice::<u8>(b.elem, d))
        .collect())
}

fn element(binding: &str, elem: ElemType, m: &Mismatch) -> String {
    if elem.width > 1 {
        format!("`{binding}[{}][{}]`", m.index, m.lane)
    } else {
        format!("`{binding}[{}]`", m.index)
    }
}

/// One failure line for a comparison that did not pass, or `None` when it passed.
fn explain(
    prefix: &str,
    check: &str,
    (got_name, want_name): (&str, &str),
    binding: &Binding,
    cmp: &Comparison,
    tol: Tolerance,
) -> Option<String> {
    if cmp.ok() {
        return None;
    }
    if let Some((got, want)) = cmp.len_mismatch {
        return Some(format!(
            "{prefix}: {check}: `{}` has {got} elements from the {got_name} but {want} from the {want_name}",
            binding.name
        ));
    }
    let worst = cmp.worst.or(cmp.first)?;
    let first = cmp.first.unwrap_or(worst);
    let mut line = format!(
        "{prefix}: {check}: {} of {} elements of `{}` differ beyond the tolerance (abs {:e}, rel {:e}); worst {}: {} {}, {} {} (abs err {:e})",
        cmp.mismatches,
        cmp.compared,
        binding.name,
        tol.abs,
        tol.rel,
        element(binding.name, binding.elem, &worst),
        got_name,
        worst.got,
        want_name,
        worst.want,
        worst.abs_err(),
    );
    if first != worst {
        line += &format!("; first {}", element(binding.name, binding.elem, &first));
    }
    Some(line)
}

/// The arguments of case `ci` (with `scalars`) of `kernel`, every binding's length and the
/// threads: test vectors drawn as the module docs say. `Err` says why the case cannot run
/// here: a size that cannot be evaluated, an empty binding, or more bytes than
/// [`CertOptions::max_case_bytes`].
fn case_args(
    kernel: &dyn Kernel,
    schedule: &Schedule,
    ci: usize,
    scalars: &[ScalarValue],
    opts: &CertOptions,
) -> std::result::Result<(DynArgs, Vec<u64>, crate::schedule::Threads), String> {
    let name = kernel.name();
    let layout = kernel.layout();
    let special = kernel.special_values();
    let (lens, threads) = match (
        kernel.binding_lens_at(schedule, scalars),
        kernel.grid_threads_at(schedule, scalars),
    ) {
        (Ok(l), Ok(t)) => (l, t),
        (Err(e), _) | (_, Err(e)) => return Err(e.to_string()),
    };
    if let Some((b, _)) = layout.iter().zip(&lens).find(|(_, l)| **l == 0) {
        return Err(format!("`{}` would be empty", b.name));
    }
    let bytes: u64 = layout
        .iter()
        .zip(&lens)
        .map(|(b, l)| l.saturating_mul(b.elem.size() as u64))
        .sum();
    if bytes > opts.max_case_bytes {
        return Err(format!(
            "its bindings take {bytes} bytes, over the certifier's limit of {} bytes",
            opts.max_case_bytes
        ));
    }
    let case = crate::kernel::InputCase {
        seed: opts.seed,
        case: ci,
        scalars,
        lens: &lens,
    };
    let made = kernel.declarations().make_inputs.map(|make| make(&case));
    let own = made.is_some();
    let mut buffers = match made {
        Some(buffers) => own_inputs(kernel, buffers, &lens)?,
        None => layout
            .iter()
            .zip(&lens)
            .map(|(b, &len)| match b.access {
                Access::Out => None,
                _ => {
                    let mut rng = case_rng(opts.seed, name, ci, b.name);
                    let dist = match input_distribution(kernel, b.name, &lens, opts) {
                        Distribution::Default if special => Distribution::Special,
                        dist => dist,
                    };
                    Some(generate(&mut rng, b.elem, len as usize, dist))
                }
            })
            .collect(),
    };
    if !own {
        indirect_count(kernel, ci, &threads, opts, &mut buffers);
    }
    let args = DynArgs {
        scalars: scalars.to_vec(),
        buffers,
    };
    Ok((args, lens, threads))
}

/// An indirect kernel (`indirect = count[0]`) is certified at counts within its bound, as
/// an earlier launch would write them: the bound itself, zero, and values between, by case.
fn indirect_count(
    kernel: &dyn Kernel,
    ci: usize,
    threads: &crate::schedule::Threads,
    opts: &CertOptions,
    buffers: &mut [Option<HostBuffer>],
) {
    let bound = u32::try_from(threads.total()).unwrap_or(u32::MAX);
    let count = match ci % 4 {
        0 => bound,
        1 => 0,
        _ => case_rng(opts.seed, kernel.name(), ci, "indirect count").gen_range(0..=bound),
    };
    put_indirect_count(kernel, opts, buffers, count);
}

/// Writes `count` into the drawn data of an indirect kernel's count (nothing for another
/// kernel): drawn at random, a count would run past the bound, which a host call refuses.
/// A distribution the options give for that binding stands, and so does its count.
pub(crate) fn put_indirect_count(
    kernel: &dyn Kernel,
    opts: &CertOptions,
    buffers: &mut [Option<HostBuffer>],
    count: u32,
) {
    let Some(at) = kernel.declarations().indirect else {
        return;
    };
    let Some(b) = kernel.layout().get(at.binding) else {
        return;
    };
    let name = kernel.name();
    if opts
        .overrides
        .iter()
        .any(|o| o.kernel == name && o.binding == b.name)
    {
        return;
    }
    if let Some(word) = buffers
        .get_mut(at.binding)
        .and_then(Option::as_mut)
        .and_then(|buf| buf.words_mut().get_mut(at.element as usize))
    {
        *word = count;
    }
}

/// Each writable binding's per-component allowance where the kernel's tolerance scales
/// with its work (`Declarations::tolerance_terms`): `2·terms·u·M`, `M` the oracle's result on the
/// absolute values of the inputs (`Σ|a_k·b_k|` for a dot product: the forward error bound
/// of a sum reordered, fused or split, `γ_n·Σ|terms|`, twice for the two sides compared).
/// `None` where the tolerance is fixed.
fn scaled_allowances(
    kernel: &dyn Kernel,
    schedule: &Schedule,
    scalars: &[ScalarValue],
    args: &DynArgs,
) -> Result<Option<Vec<Vec<f64>>>> {
    let Some(terms) = kernel
        .declarations()
        .tolerance_terms
        .map(|terms| terms(scalars))
    else {
        return Ok(None);
    };
    let terms = terms? as f64;
    let absolute = DynArgs {
        scalars: args.scalars.clone(),
        buffers: args
            .buffers
            .iter()
            .map(|b| b.as_ref().map(absolute))
            .collect(),
    };
    let magnitudes = kernel.cpu_dyn_with(schedule, &absolute, &OracleOptions::default())?;
    Ok(Some(
        magnitudes
            .iter()
            .map(|m| {
                let u = match m.elem().scalar {
                    ScalarType::F16 => 2f64.powi(-11),
                    ScalarType::F64 => 2f64.powi(-53),
                    _ => 2f64.powi(-24),
                };
                components(m)
                    .iter()
                    .map(|v| 2.0 * terms * u * v.abs())
                    .collect()
            })
            .collect(),
    ))
}

/// A buffer with every float component made non-negative (integers and structs as they
/// are): the inputs on which the oracle computes `Σ|terms|`.
fn absolute(buf: &HostBuffer) -> HostBuffer {
    let mut out = buf.clone();
    if buf.elem().layout.is_some() {
        return out;
    }
    let scalar = buf.elem().scalar;
    for (i, w) in out.words_mut().iter_mut().enumerate() {
        *w &= match scalar {
            ScalarType::F32 => 0x7fff_ffff,
            ScalarType::F16 => 0x7fff_7fff,
            // The high word of each f64 holds its sign.
            ScalarType::F64 if i % 2 == 1 => 0x7fff_ffff,
            _ => u32::MAX,
        };
    }
    out
}

/// The distribution `binding` of `kernel` is drawn from: the options' if they name one,
/// else the structure the kernel declares (`inputs(..)`) at this case's lengths, else the
/// default.
fn input_distribution(
    kernel: &dyn Kernel,
    binding: &str,
    lens: &[u64],
    opts: &CertOptions,
) -> Distribution {
    let name = kernel.name();
    if opts
        .overrides
        .iter()
        .any(|o| o.kernel == name && o.binding == binding)
    {
        return opts.distribution(name, binding);
    }
    let len_of = |other: &str| {
        kernel
            .layout()
            .iter()
            .position(|b| b.name == other)
            .and_then(|i| lens.get(i).copied())
            .unwrap_or(0)
    };
    match kernel
        .declarations()
        .inputs
        .iter()
        .find(|(b, _)| *b == binding)
    {
        Some((_, crate::kernel::Input::Permutation)) => Distribution::Permutation,
        Some((_, crate::kernel::Input::OffsetsOf(of))) => {
            Distribution::SortedOffsets { total: len_of(of) }
        }
        Some((_, crate::kernel::Input::IndicesOf(of))) => Distribution::Indices { len: len_of(of) },
        None => Distribution::Default,
    }
}

/// A kernel's own inputs (`inputs = path`), checked: one per binding, each non-`#[out]`
/// one of its element type and length.
fn own_inputs(
    kernel: &dyn Kernel,
    buffers: Vec<Option<HostBuffer>>,
    lens: &[u64],
) -> std::result::Result<Vec<Option<HostBuffer>>, String> {
    let layout = kernel.layout();
    if buffers.len() != layout.len() {
        return Err(format!(
            "its `inputs` function gave {} buffers for {} bindings",
            buffers.len(),
            layout.len()
        ));
    }
    buffers
        .into_iter()
        .zip(layout.iter().zip(lens))
        .map(|(buf, (b, &len))| match (b.access, buf) {
            (Access::Out, _) => Ok(None),
            (_, Some(buf)) if buf.elem() == b.elem && buf.len() as u64 == len => Ok(Some(buf)),
            (_, Some(buf)) => Err(format!(
                "its `inputs` function gave `{}` {} elements of `{}`, where the binding holds {len} of `{}`",
                b.name,
                buf.len(),
                buf.elem().wgsl(),
                b.elem.wgsl()
            )),
            (_, None) => Err(format!("its `inputs` function gave nothing for `{}`", b.name)),
        })
        .collect()
}

/// What `kernel` printed on the GPU and in the oracle for the same case: how
/// `forge certify --diff-prints` compares them line by line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PrintDiff {
    /// The case that ran: its index and scalars, as certification reports name cases.
    pub case: String,
    /// The GPU's lines ([`ForgeRuntime::take_prints`]).
    pub gpu: Vec<String>,
    /// The oracle's lines.
    pub oracle: Vec<String>,
}

impl PrintDiff {
    /// The first line where the two differ: its index and each side's line (`None` past
    /// that side's end), or `None` when they agree.
    pub fn first_difference(&self) -> Option<(usize, Option<&str>, Option<&str>)> {
        crate::prints::first_difference(&self.gpu, &self.oracle)
    }
}

/// Runs the first certification case of `kernel` that can run here, at `schedule`, on the
/// GPU and in the oracle, and returns both sides' print lines. The lines the runtime held
/// before stay for the next [`ForgeRuntime::take_prints`].
///
/// Errors: the kernel has no `debug_print!` ([`ForgeError::InvalidArgument`]), no case can
/// run here, or a run fails.
pub fn diff_prints(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    schedule: &Schedule,
    opts: &CertOptions,
) -> Result<PrintDiff> {
    if kernel.prints().is_none() {
        let name = kernel.name();
        return Err(ForgeError::InvalidArgument {
            kernel: name,
            message: format!("`{name}` has no `debug_print!`, so it prints nothing to compare"),
        });
    }
    let name = kernel.name();
    let mut skipped = Vec::new();
    for (ci, scalars) in kernel.cert_cases().iter().enumerate() {
        let case = format!(
            "case {ci} ({})",
            crate::kernel::describe_scalars(kernel, scalars)
        );
        let args = match case_args(kernel, schedule, ci, scalars, opts) {
            Ok((args, _, _)) => args,
            Err(why) => {
                skipped.push(format!("{case}: {why}"));
                continue;
            }
        };
        let (oracle, lines) = crate::oracle::prints::capture(|| kernel.cpu_dyn(schedule, &args));
        oracle?;
        let before = rt.take_prints();
        let ran = rt.run_dyn(kernel, schedule, &args);
        let gpu = rt.take_prints();
        rt.restore_prints(before);
        ran?;
        return Ok(PrintDiff {
            case,
            gpu,
            oracle: lines,
        });
    }
    Err(ForgeError::InvalidArgument {
        kernel: name,
        message: format!(
            "none of its certification cases can run here: {}",
            skipped.join("; ")
        ),
    })
}

/// Certifies `kernel` at `schedule` on `rt`'s adapter: see the module docs for the checks.
///
/// A check that fails, or a case whose run returns an error (an out-of-bounds index in the
/// oracle, a shader the driver rejects), is a line in [`CertReport::failures`]. Only a lost
/// device is returned as an error, since nothing after it could run.
pub fn certify(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    schedule: &Schedule,
    opts: &CertOptions,
) -> Result<CertReport> {
    // Entered once for the whole certification: the blocking form never yields.
    let _span = certify_span(kernel, schedule).entered();
    crate::blocking::block_on(
        "a blocking certification",
        certify_cases(rt, kernel, schedule, opts),
    )
}

/// [`certify`], awaited: the form a browser can use. The same checks, in the same order,
/// with the same report.
pub async fn certify_async(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    schedule: &Schedule,
    opts: &CertOptions,
) -> Result<CertReport> {
    use tracing::Instrument;
    // The same span, entered only while the certification runs, not while it waits (so
    // a trace may show it in several pieces).
    certify_cases(rt, kernel, schedule, opts)
        .instrument(certify_span(kernel, schedule))
        .await
}

/// The host span of one certification (a trace's `span` track where
/// `trace::SpanLayer` is installed), for both forms.
fn certify_span(kernel: &dyn Kernel, schedule: &Schedule) -> tracing::Span {
    tracing::info_span!("certify", kernel = kernel.name(), schedule = %schedule)
}

async fn certify_cases(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    schedule: &Schedule,
    opts: &CertOptions,
) -> Result<CertReport> {
    let name = kernel.name();
    // A kernel that needs what the device lacks is refused as a whole, by name, as a run
    // of it would be, rather than failing each case.
    if let Some(f) = kernel.features().iter().find(|f| !rt.supports(**f)) {
        return Err(ForgeError::MissingFeature {
            kernel: name,
            feature: f.wgpu_name(),
            used_for: f.used_for(),
            adapter: rt.adapter_info().name.clone(),
        });
    }
    let tol = kernel.tolerance();
    let layout = kernel.layout();
    let special = kernel.special_values();
    let mut report = CertReport {
        kernel: name.to_string(),
        schedule: *schedule,
        cases: 0,
        max_abs_err: 0.0,
        max_rel_err: 0.0,
        verdict: Verdict::Pass,
        failures: Vec::new(),
        skipped: Vec::new(),
        seed: opts.seed,
        adapter: rt.adapter_info().name.clone(),
        backend: rt.emission().to_string(),
        special_values: special,
    };
    let writable: Vec<&Binding> = layout.iter().filter(|b| b.access.writable()).collect();
    let poison_needed = opts.poison
        && layout
            .iter()
            .any(|b| b.access == Access::Out && !b.elem.atomic);

    let cases = kernel.cert_cases();
    for (ci, scalars) in cases.iter().enumerate() {
        let prefix = format!(
            "kernel `{name}` case {ci} ({}) [{schedule}]",
            crate::kernel::describe_scalars(kernel, scalars)
        );
        tracing::debug!(case = %prefix, "certifying");

        // 1. Sizes, and whether the case is worth running here; 2. test vectors.
        let (args, lens, threads) = match case_args(kernel, schedule, ci, scalars, opts) {
            Ok(c) => c,
            Err(why) => {
                report.skipped.push(format!("{prefix}: {why}"));
                continue;
            }
        };
        report.cases += 1;
        // The case in the trace, from here to the end of its checks, however it ends.
        let failures_before = report.failures.len();
        let mut event = rt.trace_event("certify", name);
        event.arg("case", || ci);
        event.arg("what", || prefix.as_str());

        // 3. The oracle first: without it nothing can be checked.
        let oracle_opts = OracleOptions::default().with_race_detection(opts.detect_races);
        let oracle = match kernel.cpu_dyn_with(schedule, &args, &oracle_opts) {
            Ok(o) => o,
            Err(e) => {
                report
                    .failures
                    .push(format!("{prefix}: the CPU oracle failed: {e}"));
                event.arg("passed", || false);
                continue;
            }
        };

        // A tolerance that scales with the work: each output's allowance beside `tol`.
        let scaled = match scaled_allowances(kernel, schedule, scalars, &args) {
            Ok(s) => s,
            Err(e) => {
                report
                    .failures
                    .push(format!("{prefix}: the tolerance's terms: {e}"));
                None
            }
        };
        let scaled_of = |i: usize| scaled.as_ref().and_then(|s| s.get(i)).map(Vec::as_slice);

        // GPU against the oracle.
        match rt.run_dyn_async(kernel, schedule, &args).await {
            Ok(gpu) => {
                for (i, ((b, g), o)) in writable.iter().zip(&gpu).zip(&oracle).enumerate() {
                    report.check(
                        &prefix,
                        "GPU vs oracle",
                        ("GPU", "oracle"),
                        b,
                        (g, o),
                        (tol, scaled_of(i)),
                    );
                }
            }
            Err(e @ ForgeError::DeviceLost(_)) => return Err(e),
            Err(e) => report
                .failures
                .push(format!("{prefix}: the GPU run failed: {e}")),
        }

        // The oracle against the reference.
        match kernel.reference_dyn(&args) {
            None => {}
            Some(Ok(reference)) => {
                for (i, ((b, o), r)) in writable.iter().zip(&oracle).zip(&reference).enumerate() {
                    report.check(
                        &prefix,
                        "oracle vs reference",
                        ("oracle", "reference"),
                        b,
                        (o, r),
                        (tol, scaled_of(i)),
                    );
                }
            }
            Some(Err(e)) => report
                .failures
                .push(format!("{prefix}: the reference failed: {e}")),
        }

        // Every output element written.
        if poison_needed {
            match run_poisoned(rt, kernel, schedule, &args, &lens, threads).await {
                Ok(gpu) => {
                    for (i, ((b, g), o)) in writable.iter().zip(&gpu).zip(&oracle).enumerate() {
                        if b.access == Access::Out && !b.elem.atomic {
                            // An element whose correct value happens to be the poison
                            // pattern (the oracle says so) was written all the same.
                            let legit: std::collections::HashSet<_> =
                                poisoned(o).into_iter().collect();
                            let left: Vec<_> = poisoned(g)
                                .into_iter()
                                .filter(|p| !legit.contains(p))
                                .collect();
                            if let Some(&(index, lane)) = left.first() {
                                let at = element(
                                    b.name,
                                    b.elem,
                                    &Mismatch {
                                        index,
                                        lane,
                                        got: 0.0,
                                        want: 0.0,
                                    },
                                );
                                report.failures.push(format!(
                                    "{prefix}: output element {at} was never written: it still holds the poison \
                                     pattern after the GPU run ({} of {} elements of `{}` unwritten)",
                                    left.len(),
                                    g.len() * b.elem.width as usize,
                                    b.name
                                ));
                                continue;
                            }
                        }
                        report.check(&prefix, "GPU with poisoned outputs vs oracle (does the kernel read an output before writing it?)", ("GPU", "oracle"), b, (g, o), (tol, scaled_of(i)));
                    }
                }
                Err(e @ ForgeError::DeviceLost(_)) => return Err(e),
                Err(e) => report
                    .failures
                    .push(format!("{prefix}: the poisoned GPU run failed: {e}")),
            }
        }
        event.arg("passed", || report.failures.len() == failures_before);
    }

    if report.cases == 0 {
        report.failures.push(format!(
            "kernel `{name}`: none of its {} certification cases could run here; declare a smaller `case(...)`",
            cases.len()
        ));
    }
    if !report.failures.is_empty() {
        report.verdict = Verdict::Fail;
    }
    Ok(report)
}

/// Certifies `kernel` with the schedule the runtime would run it with.
pub fn certify_default(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    opts: &CertOptions,
) -> Result<CertReport> {
    let schedule = rt.schedule_for(kernel);
    certify(rt, kernel, &schedule, opts)
}

/// [`certify_default`], awaited.
pub async fn certify_default_async(
    rt: &mut ForgeRuntime,
    kernel: &dyn Kernel,
    opts: &CertOptions,
) -> Result<CertReport> {
    let schedule = rt.schedule_for(kernel);
    certify_async(rt, kernel, &schedule, opts).await
}

#[cfg(test)]
mod tests {
    use super::*;

    const F32: ElemType = ElemType::scalar(ScalarType::F32);
    const U32: ElemType = ElemType::scalar(ScalarType::U32);

    #[test]
    fn compare_accepts_within_tolerance_and_tracks_errors() {
        let got = HostBuffer::from_slice(F32, &[1.0f32, 2.0, -3.0]);
        let want = HostBuffer::from_slice(F32, &[1.0f32, 2.00001, -3.0]);
        let c = compare(&got, &want, Tolerance::FLOAT);
        assert!(c.ok(), "{c:?}");
        assert_eq!(c.compared, 3);
        assert!(c.max_abs > 9e-6 && c.max_abs < 1.1e-5, "{}", c.max_abs);
        assert!(c.max_rel > 0.0);
    }

    #[test]
    fn compare_reports_first_and_worst() {
        let got = HostBuffer::from_slice(F32, &[1.1f32, 2.0, 3.0, 9.0]);
        let want = HostBuffer::from_slice(F32, &[1.0f32, 2.0, 3.0, 4.0]);
        let c = compare(&got, &want, Tolerance::FLOAT);
        assert_eq!(c.mismatches, 2);
        assert_eq!(c.first.unwrap().index, 0);
        assert_eq!(c.worst.unwrap().index, 3);
        assert_eq!(c.max_abs, 5.0);
    }

    #[test]
    fn nan_never_passes_and_is_the_worst() {
        let got = HostBuffer::from_slice(F32, &[f32::NAN, 5.0, 1.0]);
        let want = HostBuffer::from_slice(F32, &[f32::NAN, 1.0, 1.0]);
        let c = compare(
            &got,
            &want,
            Tolerance {
                abs: f64::INFINITY,
                rel: 1.0,
            },
        );
        assert_eq!(
            c.mismatches, 1,
            "NaN against NaN fails; 5 against 1 passes an infinite tolerance"
        );
        assert_eq!(c.worst.unwrap().index, 0);
        // Non-finite pairs do not pollute the error statistics.
        assert_eq!(c.max_abs, 4.0);
    }

    #[test]
    fn exact_tolerance_for_integers() {
        let got = HostBuffer::from_slice(U32, &[1u32, 2, u32::MAX]);
        let want = HostBuffer::from_slice(U32, &[1u32, 2, u32::MAX - 1]);
        let c = compare(&got, &want, Tolerance::EXACT);
        assert_eq!(c.mismatches, 1);
        assert_eq!(c.first.unwrap().index, 2);
    }

    #[test]
    fn vector_elements_name_their_lane() {
        let vec4 = ElemType::vector(ScalarType::F32, 4);
        let got = HostBuffer::from_slice(vec4, &[[0.0f32, 1.0, 2.0, 3.0], [4.0, 5.0, 6.5, 7.0]]);
        let want = HostBuffer::from_slice(vec4, &[[0.0f32, 1.0, 2.0, 3.0], [4.0, 5.0, 6.0, 7.0]]);
        let c = compare(&got, &want, Tolerance::EXACT);
        let m = c.first.unwrap();
        assert_eq!((m.index, m.lane), (1, 2));
        let b = Binding {
            binding: 0,
            name: "y",
            elem: vec4,
            access: Access::Out,
            len: "n",
        };
        let line = explain(
            "k",
            "GPU vs oracle",
            ("GPU", "oracle"),
            &b,
            &c,
            Tolerance::EXACT,
        )
        .unwrap();
        assert!(line.contains("`y[1][2]`"), "{line}");
    }

    #[test]
    fn length_mismatch_fails() {
        let got = HostBuffer::from_slice(F32, &[1.0f32, 2.0]);
        let want = HostBuffer::from_slice(F32, &[1.0f32, 2.0, 3.0]);
        let c = compare(&got, &want, Tolerance::FLOAT);
        assert!(!c.ok());
        assert_eq!(c.len_mismatch, Some((2, 3)));
    }

    #[test]
    fn explanation_names_binding_and_element() {
        let got = HostBuffer::from_slice(F32, &[1.0f32, 2.0, 3.0]);
        let want = HostBuffer::from_slice(F32, &[1.0f32, 2.5, 3.0]);
        let c = compare(&got, &want, Tolerance::FLOAT);
        let b = Binding {
            binding: 2,
            name: "y",
            elem: F32,
            access: Access::Out,
            len: "m",
        };
        let line = explain(
            "kernel `gemv` case 1 (m=3)",
            "GPU vs oracle",
            ("GPU", "oracle"),
            &b,
            &c,
            Tolerance::FLOAT,
        )
        .unwrap();
        assert!(line.contains("kernel `gemv`"), "{line}");
        assert!(line.contains("`y[1]`"), "{line}");
        assert!(line.contains("GPU 2, oracle 2.5"), "{line}");
        assert!(explain(
            "p",
            "c",
            ("a", "b"),
            &b,
            &compare(&got, &got, Tolerance::FLOAT),
            Tolerance::FLOAT
        )
        .is_none());
    }

    #[test]
    fn poison_is_detected_in_every_element_type() {
        for elem in [
            F32,
            U32,
            ElemType::scalar(ScalarType::I32),
            ElemType::scalar(ScalarType::F16),
            ElemType::vector(ScalarType::F32, 2),
        ] {
            let mut buf = poison_buffer(elem, 5);
            assert_eq!(poisoned(&buf).len(), 5 * elem.width as usize, "{elem:?}");
            // Overwrite component 0 with a real value: only the rest remain poisoned.
            match elem.scalar {
                ScalarType::F16 => {
                    bytemuck::cast_slice_mut::<u32, u16>(buf.words_mut())[0] = 0x3c00
                }
                _ => buf.words_mut()[0] = 0,
            }
            let left = poisoned(&buf);
            assert_eq!(left.len(), 5 * elem.width as usize - 1);
            assert_ne!(left[0], (0, 0));
        }
        // The poison is a NaN, so a comparison would reject it as well.
        assert!(f32::from_bits(POISON_WORD).is_nan());
        assert!(half::f16::from_bits(POISON_HALF).is_nan());
    }

    #[test]
    fn vectors_are_deterministic_and_independent_per_binding() {
        let draw = |seed, case, binding, n| {
            let mut rng = case_rng(seed, "k", case, binding);
            generate(&mut rng, F32, n, Distribution::Default)
        };
        let a1 = draw(1, 0, "a", 100);
        assert_eq!(a1, draw(1, 0, "a", 100));
        assert_ne!(a1, draw(1, 0, "b", 100), "another binding");
        assert_ne!(a1, draw(1, 1, "a", 100), "another case");
        assert_ne!(a1, draw(2, 0, "a", 100), "another seed");
        // A longer vector from the same generator starts with the same values.
        assert_eq!(draw(1, 0, "a", 200).words()[..100], a1.words()[..]);
    }

    #[test]
    fn default_distributions_by_type() {
        let mut rng = case_rng(3, "k", 0, "x");
        let f = generate(&mut rng, F32, 10_000, Distribution::Default).to_f64();
        assert!(f.iter().all(|v| (-1.0..1.0).contains(v)));
        assert!(
            f.iter().any(|v| *v < -0.9) && f.iter().any(|v| *v > 0.9),
            "covers the range"
        );
        let u = generate(&mut rng, U32, 10_000, Distribution::Default).to_f64();
        assert!(u
            .iter()
            .all(|v| (0.0..1000.0).contains(v) && v.fract() == 0.0));
        assert!(u.iter().any(|v| *v > 990.0));
        let i = generate(
            &mut rng,
            ElemType::scalar(ScalarType::I32),
            1000,
            Distribution::Default,
        )
        .to_f64();
        assert!(i.iter().all(|v| (0.0..1000.0).contains(v)));
        let h = generate(
            &mut rng,
            ElemType::scalar(ScalarType::F16),
            1001,
            Distribution::Default,
        );
        assert_eq!(h.words().len(), 501);
        assert!(h.to_f64().iter().all(|v| (-1.0..1.0).contains(v)));
    }

    #[test]
    fn other_distributions() {
        let mut rng = case_rng(3, "k", 0, "x");
        let i32s = ElemType::scalar(ScalarType::I32);
        let v = generate(
            &mut rng,
            i32s,
            1000,
            Distribution::Uniform { lo: -5.0, hi: 5.0 },
        )
        .to_f64();
        assert!(v.iter().all(|x| (-5.0..5.0).contains(x)));
        assert!(v.iter().any(|x| *x < 0.0));
        let v = generate(
            &mut rng,
            F32,
            1000,
            Distribution::Uniform { lo: 10.0, hi: 20.0 },
        )
        .to_f64();
        assert!(v.iter().all(|x| (10.0..20.0).contains(x)));
        let v = generate(&mut rng, U32, 10, Distribution::Constant(7.0)).to_f64();
        assert!(v.iter().all(|x| *x == 7.0));
        let v = generate(&mut rng, U32, 1000, Distribution::Bits).to_f64();
        assert!(v.iter().any(|x| *x > 1e9), "full range");
        let v = generate(&mut rng, F32, 1000, Distribution::Bits).to_f64();
        assert!(v.iter().all(|x| x.is_finite()));
    }

    #[test]
    fn special_values_are_mixed_in_and_reproducible() {
        let f32s = ElemType::scalar(ScalarType::F32);
        let draw = |seed| {
            generate(
                &mut case_rng(seed, "k", 0, "x"),
                f32s,
                4000,
                Distribution::Special,
            )
        };
        let a = draw(1);
        assert_eq!(a, draw(1));
        let bits: Vec<u32> = a.words().to_vec();
        // Every special value shows up, and so do ordinary values in [-1, 1).
        for s in SPECIAL_F32 {
            assert!(bits.contains(&s), "{s:#010x} never drawn");
        }
        let ordinary = bits
            .iter()
            .map(|b| f32::from_bits(*b))
            .filter(|v| (-1.0..1.0).contains(v) && v.is_normal())
            .count();
        assert!(
            (1500..2500).contains(&ordinary),
            "{ordinary} ordinary values of 4000"
        );
        // f16: every special value, bit for bit (drawn as `half::f16` bits, never widened).
        let halves = generate(
            &mut case_rng(1, "k", 0, "h"),
            ElemType::scalar(ScalarType::F16),
            4000,
            Distribution::Special,
        );
        let h: &[u16] = &bytemuck::cast_slice::<u32, u16>(halves.words())[..4000];
        for s in &SPECIAL_F16 {
            assert!(h.contains(s), "{s:#06x} never drawn");
        }
        // Integers stay the default's small non-negative values.
        let ints = generate(
            &mut case_rng(1, "k", 0, "i"),
            ElemType::scalar(ScalarType::U32),
            1000,
            Distribution::Special,
        );
        assert!(ints.words().iter().all(|w| *w < 1000));
    }

    #[test]
    fn only_special_comparison_lets_nan_match_nan() {
        let f32s = ElemType::scalar(ScalarType::F32);
        let nan = HostBuffer::from_slice(f32s, &[f32::NAN, f32::NEG_INFINITY]);
        let other_nan =
            HostBuffer::from_slice(f32s, &[f32::from_bits(0xFFC0_0001), f32::NEG_INFINITY]);
        assert_eq!(compare(&nan, &other_nan, Tolerance::FLOAT).mismatches, 1);
        assert!(compare_special(&nan, &other_nan, Tolerance::FLOAT).ok());
        let inf = HostBuffer::from_slice(f32s, &[f32::NAN, f32::INFINITY]);
        assert_eq!(compare_special(&nan, &inf, Tolerance::FLOAT).mismatches, 1);
    }

    #[test]
    fn overrides_pick_the_binding() {
        let o = CertOptions::new(1)
            .with_distribution("k", "a", Distribution::Bits)
            .with_distribution("k", "a", Distribution::Constant(1.0));
        assert_eq!(o.distribution("k", "a"), Distribution::Constant(1.0));
        assert_eq!(o.distribution("j", "a"), Distribution::Default);
    }

    #[test]
    fn report_serializes() {
        let r = CertReport {
            kernel: "gemv".into(),
            schedule: Schedule::with_workgroup(64),
            cases: 4,
            max_abs_err: 1e-6,
            max_rel_err: 2e-6,
            verdict: Verdict::Pass,
            failures: vec![],
            skipped: vec![],
            seed: 1,
            adapter: "llvmpipe".into(),
            backend: "wgsl".into(),
            special_values: false,
        };
        let json = serde_json::to_string(&r).unwrap();
        assert!(json.contains("\"verdict\":\"Pass\""), "{json}");
        let back: CertReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back, r);
    }
}
