//! The description of a kernel that the macro generates, and the type-erased interface
//! (`Kernel`) that the certifier, the tuner and the CLI use to drive any kernel
//! generically. Layer 1 (values).
//!
//! This module owns the kernel's identity ([`KernelId`]: its name and the hash of its
//! generated source), its bindings ([`Binding`], [`ElemType`], [`Access`]), its scalar
//! parameters, type-erased arguments and results ([`DynArgs`], [`HostBuffer`]), the
//! tolerance and the features its shader needs.

use crate::error::{ForgeError, Result};
use crate::roofline::Cost;
use crate::schedule::{Schedule, Threads, TuneSpace};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::fmt;

/// The entry point every generated kernel uses.
pub const ENTRY_POINT: &str = "main";

/// The entry point of every generated kernel's CUDA source ([`Kernel::cuda`]): C++ has its
/// own `main`.
pub const CUDA_ENTRY_POINT: &str = "fg_main";

/// The binding number of the `Params` uniform: the one after the storage bindings, which
/// are numbered from 0 in declaration order.
pub fn params_binding(layout: &[Binding]) -> u32 {
    layout.len() as u32
}

/// Which kernel a value belongs to: its name and the sha256 of its WGSL for the declared
/// schedule. Two kernels are the same only if both agree, so two different kernels never
/// share a compiled pipeline, a manifest or a tuned winner, whatever their names.
///
/// It keys the pipeline cache, the runtime's memo of manifests and the manifest's file
/// ([`KernelId::file_stem`]); it prints as `name@hash` with the hash's first
/// [`KernelId::SHORT`] hex digits, which is how the `forge` command line tells apart two
/// kernels of one name.
///
/// ```
/// use forge_core::kernel::KernelId;
/// let a = KernelId::new("step", "fn main() { x + 1 }");
/// let b = KernelId::new("step", "fn main() { x * 10 }");
/// assert_ne!(a, b);
/// assert_eq!(a.name(), "step");
/// assert_eq!(a.to_string(), format!("step@{}", &a.hash()[..12]));
/// assert!(a.matches("step") && a.matches(&a.to_string()) && !a.matches(&b.to_string()));
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct KernelId {
    name: &'static str,
    hash: [u8; 32],
}

impl KernelId {
    /// Hex digits of the hash in the short form: in `name@hash`, and in file names.
    pub const SHORT: usize = 12;

    /// The identity of a kernel named `name` whose declared schedule's WGSL is `source`.
    pub fn new(name: &'static str, source: &str) -> Self {
        KernelId {
            name,
            hash: Sha256::digest(source.as_bytes()).into(),
        }
    }

    /// The identity of `kernel`, from its name and its WGSL for the declared schedule.
    pub fn of(kernel: &(impl Kernel + ?Sized)) -> Self {
        KernelId::new(kernel.name(), &kernel.wgsl(&kernel.default_schedule()))
    }

    /// The kernel's name.
    pub fn name(&self) -> &'static str {
        self.name
    }

    /// The hex sha256 of the kernel's WGSL for the declared schedule: 64 digits. Manifests
    /// store it as `kernel_hash`.
    pub fn hash(&self) -> String {
        self.hash.iter().map(|b| format!("{b:02x}")).collect()
    }

    /// The first [`KernelId::SHORT`] hex digits of [`KernelId::hash`].
    pub fn short_hash(&self) -> String {
        let mut h = self.hash();
        h.truncate(Self::SHORT);
        h
    }

    /// Whether `text` names this kernel: its name alone, or `name@prefix` where `prefix`
    /// (at least 4 hex digits) starts its hash.
    pub fn matches(&self, text: &str) -> bool {
        match text.rsplit_once('@') {
            None => text == self.name,
            Some((name, prefix)) => {
                name == self.name
                    && prefix.len() >= 4
                    && self.hash().starts_with(&prefix.to_ascii_lowercase())
            }
        }
    }

    /// A file name for this kernel, without extension: the name with every byte outside
    /// `[A-Za-z0-9_]` written `%XX` (so `scale<f32>` is `scale%3Cf32%3E`), a `-`, and the
    /// short hash. Readable, safe on every file system, and different for different
    /// kernels: the escaping is one-to-one, and the name ends at the last `-`.
    ///
    /// ```
    /// use forge_core::kernel::KernelId;
    /// let id = KernelId::new("scale<f32>", "src");
    /// assert_eq!(id.file_stem(), format!("scale%3Cf32%3E-{}", id.short_hash()));
    /// assert_ne!(KernelId::new("a-b", "s").file_stem(), KernelId::new("a%2Db", "s").file_stem());
    /// ```
    pub fn file_stem(&self) -> String {
        file_stem(self.name, &self.hash())
    }
}

/// [`KernelId::file_stem`] from a kernel's name and its hex hash (as manifests store them):
/// the name escaped, a `-`, and the hash's first [`KernelId::SHORT`] digits.
pub fn file_stem(name: &str, hash: &str) -> String {
    let mut out = String::with_capacity(name.len() + 1 + KernelId::SHORT);
    for b in name.bytes() {
        if b.is_ascii_alphanumeric() || b == b'_' {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out.push('-');
    for c in hash.chars().take(KernelId::SHORT) {
        // A hash read from a file is not trusted to be hex.
        out.push(if c.is_ascii_hexdigit() {
            c.to_ascii_lowercase()
        } else {
            '_'
        });
    }
    out
}

impl fmt::Display for KernelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.name, self.short_hash())
    }
}

impl fmt::Debug for KernelId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "KernelId({self})")
    }
}

/// A scalar element type.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ScalarType {
    /// `f32`
    F32,
    /// `u32`
    U32,
    /// `i32`
    I32,
    /// `f16`, where the adapter has it.
    F16,
    /// `bool`: locals only, never in a binding.
    Bool,
    /// `f64`, where the adapter has it.
    F64,
}

impl ScalarType {
    /// The WGSL spelling.
    pub fn wgsl(&self) -> &'static str {
        match self {
            ScalarType::F32 => "f32",
            ScalarType::U32 => "u32",
            ScalarType::I32 => "i32",
            ScalarType::F16 => "f16",
            ScalarType::Bool => "bool",
            ScalarType::F64 => "f64",
        }
    }

    /// Size in bytes of one scalar in a storage buffer.
    pub fn size(&self) -> usize {
        match self {
            ScalarType::F16 => 2,
            ScalarType::F64 => 8,
            _ => 4,
        }
    }
}

/// The element type of a binding: a scalar, a vector of 2 or 4 scalars, possibly atomic, or
/// a `#[forge_struct]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct ElemType {
    /// The scalar (for a struct, `U32`: its words; [`ElemType::word_scalar`] has each
    /// word's own).
    pub scalar: ScalarType,
    /// 1 for a scalar, 2 or 4 for a vector (vec3 is not allowed in bindings: its stride
    /// is 16), and a struct's size in 32-bit words.
    pub width: u8,
    /// `Atomic<u32>` / `Atomic<i32>` / `Atomic<f32>`; the host sees plain numbers.
    pub atomic: bool,
    /// The fields of a `#[forge_struct]` element.
    #[serde(skip)]
    pub layout: Option<&'static StructLayout>,
}

/// The layout of a `#[forge_struct]`, as its WGSL and its `#[repr(C)]` host type share it
/// (the macro checks the two against naga's layout). Every component is 32 bits wide.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StructLayout {
    /// The struct's name.
    pub name: &'static str,
    /// Its fields in declaration order.
    pub fields: &'static [StructField],
}

/// A field of a [`StructLayout`]: a scalar, a vector or a fixed array of them.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct StructField {
    /// The field's name.
    pub name: &'static str,
    /// Its offset in bytes.
    pub offset: u32,
    /// The scalar of every component.
    pub scalar: ScalarType,
    /// How many components it has (a vector's width times an array's length).
    pub components: u32,
}

impl ElemType {
    /// A plain scalar element.
    pub const fn scalar(scalar: ScalarType) -> Self {
        ElemType {
            scalar,
            width: 1,
            atomic: false,
            layout: None,
        }
    }

    /// A vector of `width` scalars.
    pub const fn vector(scalar: ScalarType, width: u8) -> Self {
        ElemType {
            width,
            ..ElemType::scalar(scalar)
        }
    }

    /// An atomic scalar.
    pub const fn atomic(scalar: ScalarType) -> Self {
        ElemType {
            atomic: true,
            ..ElemType::scalar(scalar)
        }
    }

    /// A `#[forge_struct]` of `words` 32-bit words.
    pub const fn structure(layout: &'static StructLayout, words: u8) -> Self {
        ElemType {
            width: words,
            layout: Some(layout),
            ..ElemType::scalar(ScalarType::U32)
        }
    }

    /// Bytes per element.
    pub fn size(&self) -> usize {
        self.scalar.size() * self.width as usize
    }

    /// The scalar of component `c` of an element: `scalar`, or the field's for a struct.
    pub fn word_scalar(&self, c: usize) -> ScalarType {
        let Some(layout) = self.layout else {
            return self.scalar;
        };
        let at = (c * 4) as u32;
        layout
            .fields
            .iter()
            .find(|f| at >= f.offset && at < f.offset + 4 * f.components)
            .map(|f| f.scalar)
            .unwrap_or(ScalarType::U32)
    }

    /// The WGSL spelling of the element type.
    pub fn wgsl(&self) -> String {
        let s = self.scalar.wgsl();
        match (self.layout, self.atomic, self.width) {
            (Some(l), _, _) => l.name.to_string(),
            (_, true, _) => format!("atomic<{s}>"),
            (_, false, 1) => s.to_string(),
            // `HVec8`: WGSL has no eight-component vector; its 16 bytes are two `vec4<f16>`.
            (_, false, 8) => "array<vec4<f16>, 2>".to_string(),
            (_, false, w) => format!("vec{w}<{s}>"),
        }
    }
}

/// How a kernel accesses a binding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Access {
    /// `&[T; LEN]`: read-only storage, uploaded.
    Read,
    /// `&mut [T; LEN]`: read_write storage, uploaded and written back.
    ReadWrite,
    /// `#[out] &mut [T; LEN]`: read_write storage, allocated zeroed and returned.
    Out,
}

impl Access {
    /// Whether the kernel may write the binding.
    pub fn writable(&self) -> bool {
        !matches!(self, Access::Read)
    }
}

/// One storage binding of a kernel, as `LAYOUT` lists it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Binding {
    /// Binding number in group 0.
    pub binding: u32,
    /// Parameter name.
    pub name: &'static str,
    /// Element type.
    pub elem: ElemType,
    /// Access mode.
    pub access: Access,
    /// The LEN expression, as text.
    pub len: &'static str,
}

/// One scalar parameter of a kernel: a field of its `Params` uniform.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ScalarParam {
    /// Parameter name.
    pub name: &'static str,
    /// `u32`, `i32` or `f32`.
    pub ty: ScalarType,
}

/// A scalar argument value, type-erased.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub enum ScalarValue {
    /// A `u32`.
    U32(u32),
    /// An `i32`.
    I32(i32),
    /// An `f32`.
    F32(f32),
}

impl ScalarValue {
    /// The value as `u32` bits, as it sits in the `Params` uniform.
    pub fn bits(&self) -> u32 {
        match *self {
            ScalarValue::U32(v) => v,
            ScalarValue::I32(v) => v as u32,
            ScalarValue::F32(v) => v.to_bits(),
        }
    }
}

impl std::fmt::Display for ScalarValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScalarValue::U32(v) => write!(f, "{v}"),
            ScalarValue::I32(v) => write!(f, "{v}"),
            ScalarValue::F32(v) => write!(f, "{v}"),
        }
    }
}

/// The contents of one binding on the host, type-erased as 32-bit words.
/// `len` counts elements (an f16 element is half a word; a vec4 element is four words).
///
/// The fields are private so that the buffer always holds its elements: `words` has
/// exactly `ceil(len * elem.size() / 4)` words, so [`HostBuffer::bytes`] never slices
/// past them. Make one with [`HostBuffer::from_slice`], [`HostBuffer::zeroed`] or
/// [`HostBuffer::from_words`] (which checks the count).
///
/// ```
/// use forge_core::{ElemType, HostBuffer, ScalarType};
/// let f32s = ElemType::scalar(ScalarType::F32);
/// let b = HostBuffer::from_slice(f32s, &[1.0f32, 2.0]);
/// assert_eq!((b.len(), b.words().len(), b.bytes().len()), (2, 2, 8));
/// // Five f16s are ten bytes: three words, the last half padding.
/// let halves = HostBuffer::zeroed(ElemType::scalar(ScalarType::F16), 5).unwrap();
/// assert_eq!((halves.words().len(), halves.bytes().len()), (3, 10));
/// // A length the words cannot hold is an error, not a buffer that panics later.
/// assert!(HostBuffer::from_words(f32s, 3, vec![0; 2]).is_err());
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct HostBuffer {
    elem: ElemType,
    len: usize,
    words: Vec<u32>,
}

/// A structure that a binding's certification inputs must have, which independent random
/// values would not (`#[forge_kernel(inputs(dst = permutation, ..))]`): the certifier
/// draws it instead, so that a kernel that relies on valid inputs, as a real one does, is
/// certified without clamping its indices. More structures may come: a `match` on it
/// needs a `_` arm.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// A permutation of `0..len`: a scatter's destinations, which never collide.
    Permutation,
    /// Sorted offsets from 0, ending at the length of the named binding: CSR row pointers,
    /// embedding-bag offsets (`len` offsets bound `len - 1` ranges of it).
    OffsetsOf(&'static str),
    /// Indices into the named binding: each in `0..len` of it (CSR column indices, the
    /// rows a gather reads).
    IndicesOf(&'static str),
}

/// One certification case, as a kernel's own input generator
/// (`#[forge_kernel(inputs = path)]`) is given it: the seed to draw from, the case, its
/// scalars and every binding's length at the schedule being certified.
#[derive(Clone, Copy, Debug)]
pub struct InputCase<'a> {
    /// The certification seed.
    pub seed: u64,
    /// The case's index among the kernel's certification cases.
    pub case: usize,
    /// The case's scalars, in declaration order.
    pub scalars: &'a [ScalarValue],
    /// Every binding's length, in binding order.
    pub lens: &'a [u64],
}

impl HostBuffer {
    /// Wraps typed host data.
    pub fn from_slice<T: bytemuck::Pod>(elem: ElemType, data: &[T]) -> Self {
        let bytes: &[u8] = bytemuck::cast_slice(data);
        let len = bytes.len() / elem.size().max(1);
        // Whole elements only: a trailing part of one is not kept.
        let kept = len * elem.size();
        let mut words = vec![0u32; kept.div_ceil(4)];
        bytemuck::cast_slice_mut::<u32, u8>(&mut words)[..kept].copy_from_slice(&bytes[..kept]);
        HostBuffer { elem, len, words }
    }

    /// Words needed for `len` elements of `elem`, `None` when the count overflows.
    fn words_for(elem: ElemType, len: usize) -> Option<usize> {
        len.checked_mul(elem.size()).map(|b| b.div_ceil(4))
    }

    /// `len` elements of `elem` in `words` (little-endian, the last word zero-padded).
    /// Errors: `words` does not have exactly the words `len` elements take.
    pub fn from_words(elem: ElemType, len: usize, words: Vec<u32>) -> Result<Self> {
        match Self::words_for(elem, len) {
            Some(n) if n == words.len() => Ok(HostBuffer { elem, len, words }),
            need => Err(ForgeError::InvalidArgument {
                kernel: "HostBuffer::from_words",
                message: format!(
                    "{len} elements of `{}` take {} words, but {} were given",
                    elem.wgsl(),
                    need.map_or_else(|| "more than memory holds".to_string(), |n| n.to_string()),
                    words.len()
                ),
            }),
        }
    }

    /// For this crate's own constructions, whose word count is right by construction.
    pub(crate) fn from_exact(elem: ElemType, len: usize, words: Vec<u32>) -> Self {
        debug_assert_eq!(Self::words_for(elem, len), Some(words.len()));
        HostBuffer { elem, len, words }
    }

    /// `len` zeroed elements of `elem`. Errors: the size overflows.
    pub fn zeroed(elem: ElemType, len: usize) -> Result<Self> {
        let n = Self::words_for(elem, len).ok_or_else(|| ForgeError::InvalidArgument {
            kernel: "HostBuffer::zeroed",
            message: format!(
                "{len} elements of `{}` overflow the address space",
                elem.wgsl()
            ),
        })?;
        Ok(HostBuffer {
            elem,
            len,
            words: vec![0; n],
        })
    }

    /// The element type.
    pub fn elem(&self) -> ElemType {
        self.elem
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the buffer has no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The raw contents, little-endian, padded to a whole word.
    pub fn words(&self) -> &[u32] {
        &self.words
    }

    /// The raw contents, to change in place (their number is fixed).
    pub fn words_mut(&mut self) -> &mut [u32] {
        &mut self.words
    }

    /// The raw contents, owned.
    pub fn into_words(self) -> Vec<u32> {
        self.words
    }

    /// The contents as bytes, exactly `len * elem.size()` long.
    pub fn bytes(&self) -> &[u8] {
        &bytemuck::cast_slice(&self.words)[..self.len * self.elem.size()]
    }

    /// The contents as bytes, exactly `len * elem.size()` long, to change in place (what a
    /// readback fills).
    pub fn bytes_mut(&mut self) -> &mut [u8] {
        let n = self.len * self.elem.size();
        &mut bytemuck::cast_slice_mut(&mut self.words)[..n]
    }

    /// Every scalar component as `f64`, for comparisons (f16 is widened exactly).
    pub fn to_f64(&self) -> Vec<f64> {
        if self.elem.layout.is_some() {
            // A struct's words, each as its field's scalar.
            let width = self.elem.width.max(1) as usize;
            return self
                .words
                .iter()
                .enumerate()
                .map(|(j, w)| match self.elem.word_scalar(j % width) {
                    ScalarType::F32 => f32::from_bits(*w) as f64,
                    ScalarType::I32 => *w as i32 as f64,
                    _ => *w as f64,
                })
                .collect();
        }
        match self.elem.scalar {
            ScalarType::F32 => self
                .words
                .iter()
                .map(|w| f32::from_bits(*w) as f64)
                .collect(),
            ScalarType::U32 => self.words.iter().map(|w| *w as f64).collect(),
            ScalarType::I32 => self.words.iter().map(|w| *w as i32 as f64).collect(),
            ScalarType::F16 => {
                let n = self.len * self.elem.width as usize;
                // Widened exactly.
                bytemuck::cast_slice::<u32, half::f16>(&self.words)[..n]
                    .iter()
                    .map(|h| h.to_f64())
                    .collect()
            }
            ScalarType::Bool => self.words.iter().map(|w| (*w != 0) as u8 as f64).collect(),
            ScalarType::F64 => self
                .words
                .chunks_exact(2)
                .map(|w| f64::from_bits(w[0] as u64 | (w[1] as u64) << 32))
                .collect(),
        }
    }
}

/// Type-erased arguments of one call: the scalars in declaration order, and one entry per
/// binding in declaration order (`None` for `#[out]` bindings, which the callee allocates).
#[derive(Clone, Debug, PartialEq)]
pub struct DynArgs {
    /// Scalar values, in the order of [`Kernel::scalars`].
    pub scalars: Vec<ScalarValue>,
    /// Binding contents, in the order of [`Kernel::layout`].
    pub buffers: Vec<Option<HostBuffer>>,
}

impl DynArgs {
    /// Every binding's length at `schedule` (its LEN evaluated, which may name the
    /// schedule's constants) for these arguments, after checking that there are as many
    /// scalars as `kernel` takes and one buffer per binding.
    pub fn lens(&self, kernel: &dyn Kernel, schedule: &Schedule) -> Result<Vec<u64>> {
        let name = kernel.name();
        check_scalar_count(name, kernel.scalars().len(), self.scalars.len())?;
        check_arity(name, kernel.layout().len(), self.buffers.len(), "buffers")?;
        kernel.binding_lens_at(schedule, &self.scalars)
    }

    /// Checks that every non-`#[out]` binding has data of its element type and of its
    /// length in `lens` ([`DynArgs::lens`]).
    pub fn check_data(&self, kernel: &dyn Kernel, lens: &[u64]) -> Result<()> {
        let name = kernel.name();
        for ((b, buf), &len) in kernel.layout().iter().zip(&self.buffers).zip(lens) {
            if b.access == Access::Out {
                continue;
            }
            let Some(buf) = buf else {
                return Err(ForgeError::InvalidArgument {
                    kernel: name,
                    message: format!(
                        "argument `{}` needs data; only `#[out]` bindings take `None`",
                        b.name
                    ),
                });
            };
            if buf.elem().scalar != b.elem.scalar || buf.elem().width != b.elem.width {
                return Err(ForgeError::InvalidArgument {
                    kernel: name,
                    message: format!(
                        "argument `{}` holds `{}`, but the data given holds `{}`",
                        b.name,
                        b.elem.wgsl(),
                        buf.elem().wgsl()
                    ),
                });
            }
            if buf.len() as u64 != len {
                return Err(ForgeError::LengthMismatch {
                    kernel: name,
                    arg: b.name,
                    expr: b.len,
                    expected: len,
                    actual: buf.len(),
                });
            }
        }
        Ok(())
    }

    /// Every check a type-erased call makes of its arguments before it runs, on the GPU
    /// (`ForgeRuntime::run_dyn`) as in the oracle ([`Kernel::cpu_dyn`]), so that both
    /// refuse the same arguments with the same error: the counts, the lengths and the
    /// element types ([`DynArgs::lens`], [`DynArgs::check_data`]).
    pub fn check(&self, kernel: &dyn Kernel, schedule: &Schedule) -> Result<()> {
        let lens = self.lens(kernel, schedule)?;
        self.check_data(kernel, &lens)
    }
}

/// How closely the GPU must match the oracle, and the oracle the reference.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Tolerance {
    /// Allowed absolute error.
    pub abs: f64,
    /// Allowed error relative to the larger magnitude.
    pub rel: f64,
}

impl Tolerance {
    /// Exact equality: integer kernels.
    pub const EXACT: Tolerance = Tolerance { abs: 0.0, rel: 0.0 };
    /// Float reassociation and fma over short sums.
    pub const FLOAT: Tolerance = Tolerance {
        abs: 1e-5,
        rel: 1e-4,
    };
    /// The same for `f16` results: a few units in the last place of a half (2^-10
    /// relative), since each reassociated or fused step rounds to 11 bits.
    pub const HALF: Tolerance = Tolerance {
        abs: 2e-3,
        rel: 8e-3,
    };
    /// The same for `f64` results: reassociation and fma over long sums stay far below
    /// `1e-10` relative with 53-bit significands.
    pub const DOUBLE: Tolerance = Tolerance {
        abs: 1e-12,
        rel: 1e-10,
    };

    /// Whether `a` and `b` agree. NaN never agrees with anything, itself included, and an
    /// infinity agrees only with itself (a relative tolerance of an infinite magnitude
    /// would accept anything).
    ///
    /// ```
    /// use forge_core::Tolerance;
    /// let t = Tolerance::FLOAT;
    /// assert!(t.accepts(1.0, 1.00001) && t.accepts(f64::INFINITY, f64::INFINITY));
    /// assert!(!t.accepts(f64::INFINITY, 1.0) && !t.accepts(f64::NEG_INFINITY, f64::INFINITY));
    /// assert!(!t.accepts(f64::NAN, f64::NAN));
    /// ```
    pub fn accepts(&self, a: f64, b: f64) -> bool {
        if a.is_nan() || b.is_nan() {
            return false;
        }
        if a == b {
            return true;
        }
        if a.is_infinite() || b.is_infinite() {
            return false;
        }
        let diff = (a - b).abs();
        diff <= self.abs || diff <= self.rel * a.abs().max(b.abs())
    }
}

/// An optional device feature that a kernel's shader needs. `#[forge_kernel]` lists the
/// ones a kernel uses ([`Kernel::features`]); the runtime requests each from the adapter
/// where it has it, and refuses a kernel whose feature the device lacks with
/// [`ForgeError::MissingFeature`] before wgpu sees the shader.
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Feature {
    /// Subgroup operations and builtins (`subgroup_add`, `subgroup_size()`, ...).
    Subgroups,
    /// `f16` values.
    F16,
    /// `f64` values.
    F64,
    /// Cooperative matrices (`CoopA`, `CoopB`, `CoopC`: WGSL's `coop_mat16x16`), wgpu's
    /// experimental `EXPERIMENTAL_COOPERATIVE_MATRIX` (Vulkan's `VK_KHR_cooperative_matrix`).
    CooperativeMatrix,
}

impl Feature {
    /// The wgpu feature that provides it.
    pub fn wgpu(&self) -> wgpu::Features {
        match self {
            Feature::Subgroups => wgpu::Features::SUBGROUP,
            Feature::F16 => wgpu::Features::SHADER_F16,
            Feature::F64 => wgpu::Features::SHADER_F64,
            Feature::CooperativeMatrix => wgpu::Features::EXPERIMENTAL_COOPERATIVE_MATRIX,
        }
    }

    /// The wgpu feature's name, as error messages and `forge info` show it.
    pub fn wgpu_name(&self) -> &'static str {
        match self {
            Feature::Subgroups => "SUBGROUP",
            Feature::F16 => "SHADER_F16",
            Feature::F64 => "SHADER_F64",
            Feature::CooperativeMatrix => "EXPERIMENTAL_COOPERATIVE_MATRIX",
        }
    }

    /// What in a kernel needs it, for error messages.
    pub fn used_for(&self) -> &'static str {
        match self {
            Feature::Subgroups => "subgroup operations",
            Feature::F16 => "`f16` values",
            Feature::F64 => "`f64` values",
            Feature::CooperativeMatrix => "cooperative matrices (`CoopA`/`CoopB`/`CoopC`)",
        }
    }
}

/// How the CPU oracle runs: `<kernel>::cpu_with_options` and [`Kernel::cpu_dyn_with`] take
/// these; `cpu`, `cpu_with` and [`Kernel::cpu_dyn`] use the defaults.
///
/// Besides race detection, the options bound what one oracle run may take, so that a
/// problem too large for the host or a kernel that never finishes is a named error rather
/// than an abort or a hang:
/// - [`OracleOptions::max_bytes`] caps the outputs the oracle allocates
///   ([`ForgeError::OracleTooLarge`]); default [`OracleOptions::DEFAULT_MAX_BYTES`], 4 GiB;
/// - [`OracleOptions::max_loop_iterations`] caps the loop iterations one invocation (or,
///   for a loop the whole workgroup runs together, one workgroup) runs without a break from
///   other invocations ([`ForgeError::LoopBudgetExceeded`], naming the invocation); default
///   [`OracleOptions::DEFAULT_MAX_LOOP_ITERATIONS`], 2^30.
///
/// ```
/// use forge_core::OracleOptions;
/// let o = OracleOptions::default().with_max_bytes(1 << 20).with_max_loop_iterations(1000);
/// assert_eq!((o.max_bytes, o.max_loop_iterations, o.detect_races), (1 << 20, 1000, false));
/// ```
#[non_exhaustive]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OracleOptions {
    /// Report a data race as [`ForgeError::DataRace`]: two
    /// invocations touching one element of a writable binding or of workgroup memory, at
    /// least one of them writing, with nothing ordering them (see
    /// [`oracle::race`](crate::oracle::race) for the rules). Off by default: the shadow
    /// state costs time and memory. The certifier turns it on.
    pub detect_races: bool,
    /// The most bytes of outputs one run allocates.
    pub max_bytes: u64,
    /// The most loop iterations one invocation (or workgroup) runs in a row.
    pub max_loop_iterations: u64,
}

impl Default for OracleOptions {
    fn default() -> Self {
        OracleOptions {
            detect_races: false,
            max_bytes: Self::DEFAULT_MAX_BYTES,
            max_loop_iterations: Self::DEFAULT_MAX_LOOP_ITERATIONS,
        }
    }
}

impl OracleOptions {
    /// The default [`OracleOptions::max_bytes`]: 4 GiB.
    pub const DEFAULT_MAX_BYTES: u64 = 4 << 30;
    /// The default [`OracleOptions::max_loop_iterations`]: 2^30, seconds of work for the
    /// oracle in one invocation, far past what a kernel meant to run on a GPU loops.
    pub const DEFAULT_MAX_LOOP_ITERATIONS: u64 = 1 << 30;

    /// These options with race detection on or off.
    pub const fn with_race_detection(mut self, on: bool) -> Self {
        self.detect_races = on;
        self
    }

    /// These options with another [`OracleOptions::max_bytes`].
    pub const fn with_max_bytes(mut self, bytes: u64) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// These options with another [`OracleOptions::max_loop_iterations`].
    pub const fn with_max_loop_iterations(mut self, iterations: u64) -> Self {
        self.max_loop_iterations = iterations;
        self
    }
}

/// The type-erased interface to a kernel that `#[forge_kernel]` generates (as `<name>::Kernel`).
/// The certifier, the tuner and the CLI drive kernels through it.
pub trait Kernel: Sync {
    /// The kernel's name.
    fn name(&self) -> &'static str;
    /// The kernel's identity: its name and the hash of its generated source. Computed from
    /// [`Kernel::name`] and [`Kernel::wgsl`]; generated kernels compute it once.
    fn id(&self) -> KernelId {
        KernelId::of(self)
    }
    /// The WGSL source for a schedule.
    fn wgsl(&self, schedule: &Schedule) -> String;
    /// The CUDA C++ source for a schedule, which NVRTC compiles: a kernel
    /// `extern "C" __global__ void fg_main(...)` taking the bindings as pointers in
    /// declaration order and the scalar parameters as one struct by value (see
    /// [`CUDA_ENTRY_POINT`]). [`ForgeError::CannotEmit`] for a kernel that has no CUDA
    /// form; kernels that `#[forge_kernel]` did not generate have none.
    fn cuda(&self, _schedule: &Schedule) -> Result<String> {
        Err(ForgeError::CannotEmit {
            kernel: self.name(),
            target: "cuda",
            reason: "only kernels generated by #[forge_kernel] have a CUDA form".into(),
        })
    }
    /// The storage bindings, in binding order.
    fn layout(&self) -> &'static [Binding];
    /// The scalar parameters, in declaration order (the fields of `Params`).
    fn scalars(&self) -> &'static [ScalarParam];
    /// The declared schedule.
    fn default_schedule(&self) -> Schedule;
    /// The declared tuning space.
    fn tune_space(&self) -> TuneSpace;
    /// Whether the kernel's results cannot depend on the workgroup size: its body (and
    /// the helpers it calls) names no `WG`, `ITEMS`, `VEC`, local or workgroup index or
    /// id, workgroup memory, barrier or subgroup operation, only `global_index()` and
    /// `global_id()`. Such a kernel runs at any workgroup size the adapter allows (up to
    /// [`crate::plan::MAX_FREE_WORKGROUP`]), with the declared items and vector width;
    /// every other kernel runs only at its declared schedule or a point of its tuning
    /// space ([`crate::plan::check_declared`]). `#[forge_kernel]` works this out; the
    /// default is `false`.
    fn workgroup_free(&self) -> bool {
        false
    }
    /// Scalar values of the certification cases, each in the order of [`Kernel::scalars`].
    fn cert_cases(&self) -> Vec<Vec<ScalarValue>>;
    /// The tolerance policy.
    fn tolerance(&self) -> Tolerance {
        Tolerance::FLOAT
    }
    /// Whether the kernel handles special float inputs: NaN, infinities and subnormals.
    ///
    /// WGSL lets an implementation assume that no NaN or infinity occurs while a shader
    /// runs (the result is then indeterminate) and flush subnormal inputs and results of
    /// arithmetic to zero, so by default a kernel is certified on finite inputs only. A
    /// kernel that says it handles special values is certified on inputs drawn from
    /// `certify::Distribution::Special` (ordinary values mixed with NaN, infinities, signed
    /// zeros, subnormals and the extremes) as well: its GPU results must match the oracle
    /// there too (a NaN matches only a NaN), so a kernel whose result depends on what WGSL
    /// leaves open (`NaN as i32`, the logarithm of a subnormal) fails.
    fn special_values(&self) -> bool {
        false
    }
    /// What the kernel declares beyond its bindings, scalars and schedule: an indirect
    /// launch, a batch axis, structured certification inputs, a tolerance that scales with
    /// the work. One table, [`Declarations::NONE`] by default, so that each such
    /// declaration costs a kernel no function of its own.
    fn declarations(&self) -> &'static Declarations {
        &Declarations::NONE
    }
    /// The length of every binding for these scalars at `schedule`: a LEN may name `WG`,
    /// `ITEMS`, `VEC` and knobs (`&[f32; rows * WG]`), so the lengths can differ from one
    /// schedule to the next. `binding_lens`, on `dyn Kernel`, gives the declared
    /// schedule's.
    fn binding_lens_at(&self, schedule: &Schedule, scalars: &[ScalarValue]) -> Result<Vec<u64>>;
    /// The logical invocations per dimension for these scalars at `schedule`: `threads =
    /// (w, h)` gives `[w, h, 1]`, a 1-D kernel's is `[threads, 1, 1]`; `threads = rows * WG`
    /// launches one workgroup per row at every workgroup size.
    fn grid_threads_at(&self, schedule: &Schedule, scalars: &[ScalarValue]) -> Result<Threads>;
    /// Runs the CPU oracle. Returns the final contents of every writable binding, in layout
    /// order, as the runtime's `ForgeRuntime::run_dyn` returns the GPU's.
    fn cpu_dyn(&self, schedule: &Schedule, args: &DynArgs) -> Result<Vec<HostBuffer>>;
    /// Runs the CPU oracle with options, such as race detection. Kernels that have no such
    /// options run [`Kernel::cpu_dyn`].
    fn cpu_dyn_with(
        &self,
        schedule: &Schedule,
        args: &DynArgs,
        options: &OracleOptions,
    ) -> Result<Vec<HostBuffer>> {
        let _ = options;
        self.cpu_dyn(schedule, args)
    }
    /// The Rust that `#[forge_kernel]` generated, pretty-printed (for `forge expand`).
    fn expanded_rust(&self) -> &'static str {
        ""
    }
    /// The optional device features the kernel's shader needs.
    fn features(&self) -> &'static [Feature] {
        &[]
    }
    /// The declared cost of a call with these scalars (`cost(bytes = .., flops = ..)`), for
    /// rooflines: what `forge bench` and `forge tune` divide by the time. A kernel that
    /// declares none has an empty [`Cost`]; an expression that overflows is an error.
    fn cost(&self, _scalars: &[ScalarValue]) -> Result<Cost> {
        Ok(Cost::default())
    }
    /// The kernel's `debug_print!` formats and its print buffer's binding, for a kernel
    /// that prints; `None` (the default) for one that does not, which has no print buffer.
    fn prints(&self) -> Option<&'static crate::prints::PrintTable> {
        None
    }
    /// Runs the independent reference, where the kernel names one.
    fn reference_dyn(&self, _args: &DynArgs) -> Option<Result<Vec<HostBuffer>>> {
        None
    }
}

/// What a kernel declares beyond its bindings, scalars and schedule ([`Kernel::declarations`]).
/// `#[forge_kernel]` fills in what its options give; the rest is [`Declarations::NONE`]'s.
#[derive(Clone, Copy, Debug)]
pub struct Declarations {
    /// Where a launch reads its number of invocations (`#[forge_kernel(indirect =
    /// count[0])]`): `None` for a kernel whose `threads` the host knows.
    pub indirect: Option<Indirect>,
    /// The scalar parameter the kernel is batched along, if it declares one: the `u32`
    /// size that every output, and every input that is not shared by all, grows in
    /// proportion to, with that dimension outermost (rows of a row-major matrix, the
    /// `b·h` heads of attention). A [`crate::group::DeviceGroup`] splits a launch along
    /// it when no other dimension is named ([`crate::group::Split::declared`]); with
    /// `None`, a split names its dimension ([`crate::group::Split::along`]).
    pub batch_axis: Option<&'static str>,
    /// The bindings whose certification inputs have a structure (`#[forge_kernel(inputs(
    /// dst = permutation, row_ptr = offsets(col_idx), col_idx = indices(x)))]`), by name.
    /// A distribution given in `CertOptions` still wins.
    pub inputs: &'static [(&'static str, Input)],
    /// The kernel's own certification inputs (`#[forge_kernel(inputs = path)]`): one entry
    /// per binding in binding order, `None` for the `#[out]` ones (each of its case's
    /// length).
    pub make_inputs: Option<MakeInputs>,
    /// How many terms each output sums for these scalars (`tolerance(.., terms = k)`), for
    /// a tolerance that scales with the work: the certifier then also accepts an output
    /// within `2·terms·u·M` of the other side, `u` the unit roundoff of its type and `M`
    /// what the oracle gives on the absolute values of the inputs (`Σ|terms|` for a dot
    /// product, the forward error bound of a reordered or fused sum). `None`: the fixed
    /// tolerance only.
    pub tolerance_terms: Option<ToleranceTerms>,
}

/// A kernel's own certification inputs for a case ([`Declarations::make_inputs`]).
pub type MakeInputs = fn(&InputCase<'_>) -> Vec<Option<HostBuffer>>;

/// How many terms each output of a call with these scalars sums
/// ([`Declarations::tolerance_terms`]).
pub type ToleranceTerms = fn(&[ScalarValue]) -> Result<u64>;

impl Declarations {
    /// Nothing declared.
    pub const NONE: Declarations = Declarations {
        indirect: None,
        batch_axis: None,
        inputs: &[],
        make_inputs: None,
        tolerance_terms: None,
    };
}

impl dyn Kernel + '_ {
    /// [`Kernel::binding_lens_at`] the declared schedule.
    pub fn binding_lens(&self, scalars: &[ScalarValue]) -> Result<Vec<u64>> {
        self.binding_lens_at(&self.default_schedule(), scalars)
    }
    /// The number of logical invocations for these scalars at `schedule`: for a kernel with
    /// a 2-D or 3-D grid, all of them (the product of [`Kernel::grid_threads_at`],
    /// saturating).
    pub fn threads_at(&self, schedule: &Schedule, scalars: &[ScalarValue]) -> Result<u64> {
        self.grid_threads_at(schedule, scalars).map(|t| t.total())
    }
    /// [`threads_at`](#method.threads_at) the declared schedule.
    pub fn threads(&self, scalars: &[ScalarValue]) -> Result<u64> {
        self.threads_at(&self.default_schedule(), scalars)
    }
    /// [`Kernel::grid_threads_at`] the declared schedule.
    pub fn grid_threads(&self, scalars: &[ScalarValue]) -> Result<Threads> {
        self.grid_threads_at(&self.default_schedule(), scalars)
    }
}

impl std::fmt::Debug for dyn Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Kernel({})", self.name())
    }
}

/// `#[forge_kernel(indirect = count[0])]`: a launch of the kernel runs `count[0]`
/// invocations, read on the device when it runs (an earlier launch wrote them), and at most
/// the kernel's `threads`, its bound. A count past the bound runs the bound and is reported
/// ([`ForgeError::IndirectCount`]); results are not returned past it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Indirect {
    /// The binding, by index into [`Kernel::layout`]: a read-only `u32` binding.
    pub binding: usize,
    /// The element of it that holds the count.
    pub element: u32,
}

/// `name=value, ...` for a call's scalars, as reports name a case or a problem.
pub fn describe_scalars(kernel: &dyn Kernel, scalars: &[ScalarValue]) -> String {
    kernel
        .scalars()
        .iter()
        .zip(scalars)
        .map(|(p, v)| format!("{}={v}", p.name))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Checks that a call has one argument (buffer, tensor) per binding.
pub(crate) fn check_arity(
    kernel: &'static str,
    expected: usize,
    got: usize,
    what: &str,
) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(ForgeError::InvalidArgument {
            kernel,
            message: format!(
                "expected {expected} {what}, one per binding in layout order, got {got}"
            ),
        })
    }
}

/// Checks the number of scalars given to a dyn entry point.
pub fn check_scalar_count(kernel: &'static str, expected: usize, got: usize) -> Result<()> {
    if expected == got {
        Ok(())
    } else {
        Err(ForgeError::InvalidArgument {
            kernel,
            message: format!("expected {expected} scalar arguments, got {got}"),
        })
    }
}

// ---- Shared by every kernel's generated `Kernel` impl -------------------------------------
// Each of these is a few lines that every kernel's expansion would otherwise hold: an
// iterator chain, a `OnceLock` or a `vec!` of `vec!`s. Written there, each is a generic
// instance of its own per kernel (a closure type is a type), which the user's crate
// compiles and optimises again for every kernel; here it is compiled once, in this crate.

/// The binding lengths, as [`Kernel::binding_lens_at`] gives them.
pub fn lens_u64(lens: &[usize]) -> Vec<u64> {
    lens.iter().map(|l| *l as u64).collect()
}

/// The certification cases, from the table the macro wrote: one row of scalars per case.
pub fn cases(table: &[&[ScalarValue]]) -> Vec<Vec<ScalarValue>> {
    table.iter().map(|case| case.to_vec()).collect()
}

/// [`Kernel::id`], computed once: `cell` is the kernel's own.
pub fn cached_id(cell: &'static std::sync::OnceLock<KernelId>, kernel: &dyn Kernel) -> KernelId {
    *cell.get_or_init(|| KernelId::of(kernel))
}

/// A kernel's source for a schedule: what comes before the schedule's constants (the
/// WGSL directives, the CUDA prelude), the constants, and the schedule's body.
pub fn source(head: &str, constants: &str, body: &str) -> String {
    let mut s = String::with_capacity(head.len() + constants.len() + body.len());
    s.push_str(head);
    s.push_str(constants);
    s.push_str(body);
    s
}
