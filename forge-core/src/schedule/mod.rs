//! Schedules: the tunable launch parameters of a kernel (workgroup size or shape, items per
//! invocation, vector width, and the kernel's own knobs), the space a kernel declares
//! with `tune(...)`, and the logical extent of one launch ([`Threads`]). Layer 1 (values).

use crate::shown::shown;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::collections::BTreeMap;
use std::fmt;

/// The most knobs one kernel declares (`knobs(TILE = 64, ..)`).
pub const MAX_KNOBS: usize = 6;

/// The longest knob name, in bytes.
pub const MAX_KNOB_NAME: usize = 23;

/// A knob's name, stored inline so that a [`Schedule`] stays `Copy` and a manifest read
/// back needs no `'static` names.
#[derive(Clone, Copy)]
struct KnobName {
    len: u8,
    bytes: [u8; MAX_KNOB_NAME],
}

impl KnobName {
    const EMPTY: KnobName = KnobName {
        len: 0,
        bytes: [0; MAX_KNOB_NAME],
    };

    /// The name, or `None` when it is too long.
    const fn new(name: &str) -> Option<KnobName> {
        let b = name.as_bytes();
        if b.len() > MAX_KNOB_NAME {
            return None;
        }
        let mut out = KnobName::EMPTY;
        let mut i = 0;
        while i < b.len() {
            out.bytes[i] = b[i];
            i += 1;
        }
        out.len = b.len() as u8;
        Some(out)
    }

    fn as_str(&self) -> &str {
        // Built from a `&str`, so the bytes are UTF-8.
        std::str::from_utf8(&self.bytes[..self.len as usize]).unwrap_or("")
    }

    const fn is(&self, name: &str) -> bool {
        let b = name.as_bytes();
        if b.len() != self.len as usize {
            return false;
        }
        let mut i = 0;
        while i < b.len() {
            if b[i] != self.bytes[i] {
                return false;
            }
            i += 1;
        }
        true
    }
}

/// A schedule's knobs: named `u32` values, at most [`MAX_KNOBS`], kept inline so that
/// [`Schedule`] stays `Copy`. Set and read them through [`Schedule::with_knob`] and
/// [`Schedule::knob`]. Two sets are equal when they hold the same names and values, in
/// whatever order they were set.
#[derive(Clone, Copy)]
pub struct Knobs {
    /// `count` of them, in the order they were set.
    names: [KnobName; MAX_KNOBS],
    values: [u32; MAX_KNOBS],
    count: u8,
}

impl Knobs {
    /// No knob.
    pub const NONE: Knobs = Knobs {
        names: [KnobName::EMPTY; MAX_KNOBS],
        values: [0; MAX_KNOBS],
        count: 0,
    };

    /// The knobs, as `(name, value)`, in the order they were set.
    pub fn iter(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        (0..self.count as usize).map(|i| (self.names[i].as_str(), self.values[i]))
    }

    /// How many there are.
    pub fn len(&self) -> usize {
        self.count as usize
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The knobs sorted by name: what equality, hashing and ordering compare.
    fn sorted(&self) -> Vec<(&str, u32)> {
        let mut k: Vec<(&str, u32)> = self.iter().collect();
        k.sort();
        k
    }
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs::NONE
    }
}

impl PartialEq for Knobs {
    fn eq(&self, other: &Self) -> bool {
        self.sorted() == other.sorted()
    }
}

impl Eq for Knobs {}

impl std::hash::Hash for Knobs {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.sorted().hash(state);
    }
}

impl PartialOrd for Knobs {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Knobs {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.sorted().cmp(&other.sorted())
    }
}

impl fmt::Debug for Knobs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

/// One point in a kernel's tuning space. The generated WGSL sees these as the `u32`
/// constants `WG`, `ITEMS`, `VEC` and one per knob (`TILE`); a kernel with a 2-D or 3-D
/// grid also sees its workgroup's shape as `WG_X`, `WG_Y` and `WG_Z`, and `WG` is then
/// their product, the invocations of one workgroup.
///
/// A 1-D kernel's schedule has `workgroup_y` and `workgroup_z` at `None`; a 2-D kernel's
/// has `workgroup_y` set, a 3-D kernel's both. The dimensions are part of the schedule:
/// `wg=64` (1-D) and `wg=64x1` (2-D) are different schedules, of different kernels.
///
/// A kernel's declared schedule ([`Kernel::default_schedule`](crate::Kernel)) carries every
/// knob of the kernel with its default; a schedule without some knob runs that kernel with
/// the knob's default. Two schedules are equal when their values and their knobs are,
/// whatever the order the knobs were set in. `Schedule { workgroup: 128, ..declared }`
/// changes one value and keeps the rest, knobs included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Schedule {
    /// Workgroup size in x (`WG` in a 1-D kernel, `WG_X` in a 2-D or 3-D one).
    pub workgroup: u32,
    /// Workgroup size in y (`WG_Y`), for a kernel with a 2-D or 3-D grid.
    pub workgroup_y: Option<u32>,
    /// Workgroup size in z (`WG_Z`), for a kernel with a 3-D grid.
    pub workgroup_z: Option<u32>,
    /// Logical items handled by each invocation (`ITEMS`).
    pub items: u32,
    /// Vector width (`VEC`).
    pub vector: u32,
    /// The kernel's knobs (`TILE = 128`).
    pub knobs: Knobs,
}

impl Default for Schedule {
    /// A workgroup of 64, one item, vector width one, no knobs: the macro's defaults.
    fn default() -> Self {
        Schedule::new(64, 1, 1)
    }
}

impl Schedule {
    /// A schedule with these values and no knobs.
    pub const fn new(workgroup: u32, items: u32, vector: u32) -> Self {
        Schedule {
            workgroup,
            workgroup_y: None,
            workgroup_z: None,
            items,
            vector,
            knobs: Knobs::NONE,
        }
    }

    /// This schedule with a workgroup of this shape: `[x]`, `[x, y]` or `[x, y, z]`, for a
    /// kernel with a 1-D, 2-D or 3-D grid. Other lengths leave the schedule as it is.
    ///
    /// ```
    /// use forge_core::Schedule;
    /// let s = Schedule::with_workgroup(64).with_shape(&[32, 8]);
    /// assert_eq!((s.workgroup_shape(), s.dims(), s.invocations()), ([32, 8, 1], 2, 256));
    /// assert_eq!(s.to_string(), "wg=32x8 items=1 vec=1");
    /// ```
    pub const fn with_shape(mut self, shape: &[u32]) -> Self {
        match *shape {
            [x] => (self.workgroup, self.workgroup_y, self.workgroup_z) = (x, None, None),
            [x, y] => (self.workgroup, self.workgroup_y, self.workgroup_z) = (x, Some(y), None),
            [x, y, z] => {
                (self.workgroup, self.workgroup_y, self.workgroup_z) = (x, Some(y), Some(z))
            }
            _ => {}
        }
        self
    }

    /// The workgroup's extent in x, y and z, 1 in the dimensions the grid lacks.
    pub const fn workgroup_shape(&self) -> [u32; 3] {
        let y = match self.workgroup_y {
            Some(y) => y,
            None => 1,
        };
        let z = match self.workgroup_z {
            Some(z) => z,
            None => 1,
        };
        [self.workgroup, y, z]
    }

    /// The grid's dimensions: 1, 2 or 3 (a `workgroup_z` without a `workgroup_y` counts
    /// as 3, and [`crate::plan::check_schedule`] refuses it).
    pub const fn dims(&self) -> usize {
        match (self.workgroup_y, self.workgroup_z) {
            (None, None) => 1,
            (Some(_), None) => 2,
            _ => 3,
        }
    }

    /// The invocations of one workgroup (`WG`): the product of its shape.
    pub const fn invocations(&self) -> u64 {
        let [x, y, z] = self.workgroup_shape();
        x as u64 * y as u64 * z as u64
    }

    /// A schedule with the given workgroup size, one item and vector width one.
    pub const fn with_workgroup(workgroup: u32) -> Self {
        Schedule::new(workgroup, 1, 1)
    }

    /// This schedule with knob `name` set to `value`: the knob is replaced where the
    /// schedule has it, and added otherwise.
    ///
    /// # Panics
    /// When the schedule has [`MAX_KNOBS`] knobs already, or `name` is longer than
    /// [`MAX_KNOB_NAME`] bytes; the macro checks both for the knobs a kernel declares.
    pub const fn with_knob(mut self, name: &str, value: u32) -> Self {
        let k = &mut self.knobs;
        let mut i = 0;
        while i < k.count as usize {
            if k.names[i].is(name) {
                k.values[i] = value;
                return self;
            }
            i += 1;
        }
        assert!(
            (k.count as usize) < MAX_KNOBS,
            "a schedule holds at most MAX_KNOBS knobs"
        );
        let Some(n) = KnobName::new(name) else {
            panic!("a knob name is at most MAX_KNOB_NAME bytes")
        };
        k.names[k.count as usize] = n;
        k.values[k.count as usize] = value;
        k.count += 1;
        self
    }

    /// The value of one of the constants this schedule fixes in a kernel's source
    /// ([`Schedule::wgsl_header`]): `WG`, `ITEMS`, `VEC`, `WG_X`/`WG_Y`/`WG_Z`, or a knob.
    /// LEN and `threads` expressions that name them are evaluated with it.
    ///
    /// ```
    /// use forge_core::Schedule;
    /// let s = Schedule::new(128, 2, 1).with_knob("ROWS", 4);
    /// assert_eq!(s.constant("WG"), Some(128));
    /// assert_eq!(s.constant("ROWS"), Some(4));
    /// assert_eq!(s.constant("TILE"), None);
    /// ```
    pub fn constant(&self, name: &str) -> Option<u32> {
        let [x, y, z] = self.workgroup_shape();
        match name {
            "WG" => Some(self.invocations().min(u32::MAX as u64) as u32),
            "ITEMS" => Some(self.items),
            "VEC" => Some(self.vector),
            "WG_X" => Some(x),
            "WG_Y" => Some(y),
            "WG_Z" => Some(z),
            _ => self.knob(name),
        }
    }

    /// The value of knob `name`, where the schedule sets it.
    pub fn knob(&self, name: &str) -> Option<u32> {
        self.knobs().find(|(n, _)| *n == name).map(|(_, v)| v)
    }

    /// The knobs, as `(name, value)`, in the order they were set.
    pub fn knobs(&self) -> impl Iterator<Item = (&str, u32)> + '_ {
        self.knobs.iter()
    }

    /// This schedule's values, with exactly the knobs of `declared` (a kernel's declared
    /// schedule): each as this schedule sets it, or else at `declared`'s value. This is the
    /// schedule a kernel runs with when it is given this one.
    pub fn with_knobs_of(&self, declared: &Schedule) -> Schedule {
        let mut out = Schedule {
            knobs: Knobs::NONE,
            ..*self
        };
        for (name, default) in declared.knobs() {
            out = out.with_knob(name, self.knob(name).unwrap_or(default));
        }
        out
    }

    /// Invocations per workgroup times items per invocation: the logical threads one
    /// workgroup covers.
    pub fn threads_per_group(&self) -> u64 {
        self.invocations().saturating_mul(self.items as u64)
    }

    /// Workgroups needed to cover `threads` logical invocations of a 1-D grid.
    pub fn groups_for(&self, threads: u64) -> u64 {
        threads.div_ceil(self.threads_per_group().max(1))
    }

    /// Workgroups needed in each dimension to cover a grid of `threads`: x covers
    /// `WG_X·ITEMS` threads a workgroup, y and z their extent.
    ///
    /// ```
    /// use forge_core::{Schedule, Threads};
    /// let s = Schedule::with_workgroup(1).with_shape(&[16, 4]);
    /// assert_eq!(s.groups_per_dim(Threads([33, 4, 1])), [3, 1, 1]);
    /// assert_eq!(Schedule::new(64, 2, 1).groups_per_dim(Threads::from(1000)), [8, 1, 1]);
    /// ```
    pub fn groups_per_dim(&self, threads: Threads) -> [u64; 3] {
        let [x, y, z] = self.workgroup_shape();
        let per = [x as u64 * self.items as u64, y as u64, z as u64];
        let t = threads.0;
        [0, 1, 2].map(|d| t[d].div_ceil(per[d].max(1)))
    }

    /// This schedule with the settings in `text` changed. `text` is written as schedules are
    /// printed, `wg=256 items=2 vec=1 TILE=128`, with spaces or commas between the settings
    /// (`wg=256,items=2,vec=1`); a setting left out keeps this schedule's value, so
    /// `wg=128` changes only the workgroup size. A 2-D or 3-D workgroup is written
    /// `wg=16x16` or `wg=8x8x4`, with as many extents as this schedule has dimensions. A knob is set by its name, and must be one
    /// of this schedule's (start from the kernel's declared schedule, which has them all).
    /// The error says what is wrong.
    ///
    /// ```
    /// use forge_core::Schedule;
    /// let declared = Schedule::new(256, 8, 1).with_knob("TILE", 64);
    /// let s = declared.with_settings("wg=64,items=2,TILE=128").unwrap();
    /// assert_eq!(s, Schedule::new(64, 2, 1).with_knob("TILE", 128));
    /// assert_eq!(s.to_string(), "wg=64 items=2 vec=1 TILE=128");
    /// assert_eq!(declared.with_settings(&s.to_string()).unwrap(), s);
    /// assert!(declared.with_settings("wg=0").is_err());
    /// assert!(declared.with_settings("threads=4").is_err());
    /// assert!(declared.with_settings("CHUNK=4").is_err());
    /// ```
    pub fn with_settings(&self, text: &str) -> Result<Schedule, String> {
        let mut out = *self;
        let mut seen: Vec<&str> = Vec::new();
        let parts = text
            .split(|c: char| c == ',' || c.is_whitespace())
            .filter(|p| !p.is_empty());
        for part in parts {
            // How messages quote what was given: escaped and cut.
            let (shown_part, shown_key) =
                (shown(part), shown(part.split('=').next().unwrap_or("")));
            let (key, value) = part.split_once('=').ok_or_else(|| {
                format!("`{shown_part}` is not `key=value`; write e.g. `wg=256,items=2,vec=1`")
            })?;
            let is_knob = self.knob(key).is_some();
            if !matches!(key, "wg" | "items" | "vec") && !is_knob {
                let mut known = vec!["`wg`".to_string(), "`items`".into(), "`vec`".into()];
                known.extend(self.knobs().map(|(n, _)| format!("`{n}`")));
                let last = known.pop().unwrap_or_default();
                return Err(format!(
                    "unknown setting `{shown_key}`; the settings are {} and {last}",
                    known.join(", ")
                ));
            }
            if seen.contains(&key) {
                return Err(format!("`{shown_key}` is given twice"));
            }
            seen.push(key);
            if key == "wg" {
                out = out.with_shape(&parse_shape(part, value, self.dims())?);
                continue;
            }
            // Knobs may be 0 (a knob can switch a variant off); the axes may not.
            let v = match value.parse::<u32>() {
                Ok(v) if v > 0 || is_knob => v,
                _ if is_knob => {
                    return Err(format!("`{shown_part}`: the value must be a whole number"))
                }
                _ => {
                    return Err(format!(
                        "`{shown_part}`: the value must be a whole number of at least 1"
                    ))
                }
            };
            match key {
                "items" => out.items = v,
                "vec" => out.vector = v,
                _ => out = out.with_knob(key, v),
            }
        }
        if seen.is_empty() {
            return Err("no setting given; write e.g. `wg=256,items=2,vec=1`".into());
        }
        Ok(out)
    }

    /// The WGSL constant declarations that fix this schedule in a kernel's source: `WG`
    /// (the invocations of a workgroup), `ITEMS`, `VEC`, then `WG_X`, `WG_Y` and `WG_Z`
    /// for a 2-D or 3-D schedule, then the knobs.
    pub fn wgsl_header(&self) -> String {
        let mut h = format!(
            "const WG: u32 = {}u;\nconst ITEMS: u32 = {}u;\nconst VEC: u32 = {}u;\n",
            self.invocations().min(u32::MAX as u64),
            self.items,
            self.vector
        );
        if self.dims() > 1 {
            let [x, y, z] = self.workgroup_shape();
            h.push_str(&format!(
                "const WG_X: u32 = {x}u;\nconst WG_Y: u32 = {y}u;\nconst WG_Z: u32 = {z}u;\n"
            ));
        }
        for (name, v) in self.knobs() {
            h.push_str(&format!("const {name}: u32 = {v}u;\n"));
        }
        h
    }

    /// The CUDA constant declarations that fix this schedule in a kernel's CUDA source
    /// (`Kernel::cuda`), the same values as [`Schedule::wgsl_header`]'s, as
    /// `static constexpr unsigned`s.
    ///
    /// ```
    /// use forge_core::Schedule;
    /// let h = Schedule::new(128, 2, 1).cuda_header();
    /// assert!(h.starts_with("static constexpr unsigned WG = 128u;\n"));
    /// assert!(h.contains("static constexpr unsigned ITEMS = 2u;\n"));
    /// ```
    pub fn cuda_header(&self) -> String {
        self.wgsl_header()
            .lines()
            .map(|line| {
                let decl = line.trim_start_matches("const ").replace(": u32 =", " =");
                format!("static constexpr unsigned {decl}\n")
            })
            .collect()
    }

    /// The workgroup as settings write it: `64`, `16x16` or `8x8x4`.
    pub fn shape_text(&self) -> String {
        let [x, y, z] = self.workgroup_shape();
        match self.dims() {
            1 => format!("{x}"),
            2 => format!("{x}x{y}"),
            _ => format!("{x}x{y}x{z}"),
        }
    }
}

/// The extents of `wg=16x16` (`part`, its `value`), for a schedule of `dims` dimensions.
fn parse_shape(part: &str, value: &str, dims: usize) -> Result<Vec<u32>, String> {
    let extents: Vec<&str> = value.split('x').collect();
    let form = ["`wg=256`", "`wg=16x16`", "`wg=8x8x4`"][dims.clamp(1, 3) - 1];
    if extents.len() != dims {
        return Err(format!(
            "`{}`: this kernel's grid has {dims} dimension(s), so its workgroup has {dims} extent(s); write e.g. {form}",
            shown(part)
        ));
    }
    extents
        .iter()
        .map(|e| match e.parse::<u32>() {
            Ok(v) if v > 0 => Ok(v),
            _ => Err(format!(
                "`{}`: each extent must be a whole number of at least 1, as in {form}",
                shown(part)
            )),
        })
        .collect()
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wg={} items={} vec={}",
            self.shape_text(),
            self.items,
            self.vector
        )?;
        for (name, v) in self.knobs() {
            write!(f, " {name}={v}")?;
        }
        Ok(())
    }
}

/// A schedule as manifests store it: the knobs as a name → value map, absent when there
/// are none, and the workgroup's y and z extents absent for a 1-D schedule, so that files
/// written before knobs or grids existed read back unchanged.
#[derive(Serialize, Deserialize)]
struct ScheduleRecord {
    workgroup: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workgroup_y: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    workgroup_z: Option<u32>,
    items: u32,
    vector: u32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    knobs: BTreeMap<String, u32>,
}

impl Serialize for Schedule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ScheduleRecord {
            workgroup: self.workgroup,
            workgroup_y: self.workgroup_y,
            workgroup_z: self.workgroup_z,
            items: self.items,
            vector: self.vector,
            knobs: self.knobs().map(|(n, v)| (n.to_string(), v)).collect(),
        }
        .serialize(s)
    }
}

impl<'de> Deserialize<'de> for Schedule {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::Error;
        let r = ScheduleRecord::deserialize(d)?;
        if r.knobs.len() > MAX_KNOBS {
            return Err(D::Error::custom(format!(
                "a schedule has at most {MAX_KNOBS} knobs, this one {}",
                r.knobs.len()
            )));
        }
        let mut s = Schedule {
            workgroup_y: r.workgroup_y,
            workgroup_z: r.workgroup_z,
            ..Schedule::new(r.workgroup, r.items, r.vector)
        };
        for (name, v) in &r.knobs {
            if name.len() > MAX_KNOB_NAME {
                return Err(D::Error::custom(format!(
                    "the knob name `{}` is longer than {MAX_KNOB_NAME} bytes",
                    crate::shown::shown(name)
                )));
            }
            // A knob is a WGSL constant, so its name is an identifier; a file that says
            // otherwise is not ours, and its name would reach every table unescaped.
            let ident = name
                .chars()
                .next()
                .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !ident {
                return Err(D::Error::custom(format!(
                    "the knob name `{}` is not an identifier",
                    crate::shown::shown(name)
                )));
            }
            s = s.with_knob(name, *v);
        }
        Ok(s)
    }
}

/// The logical invocations of one launch in x, y and z: `[n, 1, 1]` for a 1-D kernel's
/// `threads = n`, `[w, h, 1]` for `threads = (w, h)`. The launch plan turns it into
/// workgroups ([`Schedule::groups_per_dim`]); a `u64` converts to a 1-D extent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Threads(pub [u64; 3]);

impl Threads {
    /// Every invocation of the grid: the product of the extents, saturating.
    pub fn total(&self) -> u64 {
        self.0.iter().fold(1u64, |a, b| a.saturating_mul(*b))
    }

    /// The bound of an indirect launch over this grid: its invocations, at most `u32::MAX`,
    /// as a plan's grid numbers them with a `u32` (a count is a `u32` too, so a larger grid
    /// bounds nothing more). The host check, the log of counts and the launch's clamp all
    /// take this one.
    pub fn indirect_bound(&self) -> u32 {
        u32::try_from(self.total()).unwrap_or(u32::MAX)
    }
}

impl From<u64> for Threads {
    fn from(n: u64) -> Self {
        Threads([n, 1, 1])
    }
}

impl From<[u64; 3]> for Threads {
    fn from(t: [u64; 3]) -> Self {
        Threads(t)
    }
}

impl fmt::Display for Threads {
    /// `1000`, `640x480` or `64x64x8`, trailing extents of 1 left out.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.0;
        match (y, z) {
            (1, 1) => write!(f, "{x}"),
            (_, 1) => write!(f, "{x}x{y}"),
            _ => write!(f, "{x}x{y}x{z}"),
        }
    }
}

/// The tuning space a kernel declares with `tune(workgroup = [..], items = [..], vector = [..],
/// KNOB = [..], keep = EXPR)`: every combination of the candidates, less those `keep` drops.
/// A kernel without `tune` has a space of one point: its declared schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TuneSpace {
    /// Candidate workgroup sizes of a 1-D kernel (empty for a kernel with a 2-D or 3-D
    /// grid, whose candidates are `shapes`).
    pub workgroup: &'static [u32],
    /// Candidate workgroup shapes of a kernel with a 2-D or 3-D grid, each of 2 or 3
    /// extents (`tune(workgroup = [(16, 16), (32, 8)])`); empty for a 1-D kernel.
    pub shapes: &'static [&'static [u32]],
    /// Candidate items per invocation.
    pub items: &'static [u32],
    /// Candidate vector widths.
    pub vector: &'static [u32],
    /// Each knob of the kernel with its candidate values (its default alone when it is not
    /// tuned), in declaration order.
    pub knobs: &'static [(&'static str, &'static [u32])],
    /// `tune(.., keep = EXPR)` as written (empty when the kernel keeps every combination):
    /// the condition a combination must meet to be a point of the space, such as
    /// `ITEMS < 8 || WG == 256` where a tile shape needs enough subgroups.
    pub keep: &'static str,
    /// The combinations `keep` drops, as indices into the full product in the order of
    /// [`TuneSpace::candidates`] (the last knob varies fastest), ascending. The macro
    /// evaluates `keep` at compile time and writes them here.
    pub dropped: &'static [u32],
}

impl TuneSpace {
    /// A space over the three axes, for a kernel without knobs.
    pub const fn new(
        workgroup: &'static [u32],
        items: &'static [u32],
        vector: &'static [u32],
    ) -> Self {
        TuneSpace {
            workgroup,
            shapes: &[],
            items,
            vector,
            knobs: &[],
            keep: "",
            dropped: &[],
        }
    }

    /// A space over workgroup shapes (each of 2 or 3 extents), for a kernel with a 2-D or
    /// 3-D grid and without knobs.
    pub const fn with_shapes(
        shapes: &'static [&'static [u32]],
        items: &'static [u32],
        vector: &'static [u32],
    ) -> Self {
        TuneSpace {
            workgroup: &[],
            shapes,
            items,
            vector,
            knobs: &[],
            keep: "",
            dropped: &[],
        }
    }

    /// Each candidate workgroup as a schedule of it alone: the shapes, or else the sizes.
    fn workgroups(&self) -> Vec<Schedule> {
        if self.shapes.is_empty() {
            self.workgroup
                .iter()
                .map(|w| Schedule::with_workgroup(*w))
                .collect()
        } else {
            self.shapes
                .iter()
                .map(|s| Schedule::with_workgroup(0).with_shape(s))
                .collect()
        }
    }

    /// Whether `schedule` is one of the space's points: its values are candidates, its
    /// knobs are exactly the space's, each at a candidate value, and `keep` does not drop it.
    pub fn contains(&self, schedule: &Schedule) -> bool {
        self.is_combination(schedule) && !self.drops(schedule)
    }

    /// Whether `schedule` is a combination of the candidates, `keep` not applied, checked
    /// value by value: the runtime asks on every launch of a tuned schedule, and the
    /// product is built only where `keep` dropped something.
    fn is_combination(&self, schedule: &Schedule) -> bool {
        self.workgroups().iter().any(|w| {
            (w.workgroup, w.workgroup_y, w.workgroup_z)
                == (
                    schedule.workgroup,
                    schedule.workgroup_y,
                    schedule.workgroup_z,
                )
        }) && self.items.contains(&schedule.items)
            && self.vector.contains(&schedule.vector)
            && schedule.knobs().count() == self.knobs.len()
            && self
                .knobs
                .iter()
                .all(|(name, vals)| schedule.knob(name).is_some_and(|v| vals.contains(&v)))
    }

    /// The number of points: the product of the candidate counts, less those dropped.
    pub fn len(&self) -> usize {
        let workgroups = self.workgroup.len().max(self.shapes.len());
        let product = self.knobs.iter().fold(
            workgroups * self.items.len() * self.vector.len(),
            |n, (_, v)| n * v.len(),
        );
        product
            - self
                .dropped
                .iter()
                .filter(|&&i| (i as usize) < product)
                .count()
    }

    /// Whether the space has no point (a candidate list is empty).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every schedule in the space, in declaration order (the last knob varies fastest).
    pub fn candidates(&self) -> Vec<Schedule> {
        self.product()
            .into_iter()
            .enumerate()
            .filter(|(i, _)| !self.is_dropped(*i))
            .map(|(_, s)| s)
            .collect()
    }

    /// Whether `schedule` is a combination of the candidates that `keep` drops.
    pub fn drops(&self, schedule: &Schedule) -> bool {
        if self.dropped.is_empty() {
            return false;
        }
        self.product()
            .iter()
            .enumerate()
            .any(|(i, s)| s == schedule && self.is_dropped(i))
    }

    /// Whether `keep` drops the `i`-th combination of [`TuneSpace::product`].
    fn is_dropped(&self, i: usize) -> bool {
        u32::try_from(i).is_ok_and(|i| self.dropped.binary_search(&i).is_ok())
    }

    /// Every combination of the candidates, `keep` not applied.
    fn product(&self) -> Vec<Schedule> {
        let mut out = Vec::new();
        for w in self.workgroups() {
            for &items in self.items {
                for &vector in self.vector {
                    out.push(Schedule { items, vector, ..w });
                }
            }
        }
        for (name, vals) in self.knobs {
            out = out
                .into_iter()
                .flat_map(|s| vals.iter().map(move |v| s.with_knob(name, *v)))
                .collect();
        }
        out
    }
}

impl fmt::Display for TuneSpace {
    /// `workgroup=[64, 128] items=[1] vector=[1] TILE=[64, 128]`, as `forge list` prints it;
    /// shapes print as `workgroup=[16x16, 32x8]`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let workgroups: Vec<String> = self.workgroups().iter().map(|w| w.shape_text()).collect();
        write!(
            f,
            "workgroup=[{}] items={:?} vector={:?}",
            workgroups.join(", "),
            self.items,
            self.vector
        )?;
        for (name, vals) in self.knobs {
            write!(f, " {name}={vals:?}")?;
        }
        if !self.keep.is_empty() {
            write!(f, " keep: {}", self.keep)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn knobs_compare_whatever_their_order() {
        let a = Schedule::new(64, 1, 1).with_knob("A", 1).with_knob("B", 2);
        let b = Schedule::new(64, 1, 1).with_knob("B", 2).with_knob("A", 1);
        assert_eq!(a, b);
        assert_ne!(a, Schedule::new(64, 1, 1).with_knob("A", 1));
        assert_ne!(a, a.with_knob("B", 3));
        let mut set = std::collections::HashSet::new();
        set.insert(a);
        assert!(set.contains(&b));
    }

    #[test]
    fn a_schedule_without_knobs_serializes_as_before() {
        let s = Schedule::new(128, 2, 1);
        let text = serde_json::to_string(&s).unwrap();
        assert_eq!(text, r#"{"workgroup":128,"items":2,"vector":1}"#);
        let k = s.with_knob("TILE", 64);
        let text = serde_json::to_string(&k).unwrap();
        assert_eq!(
            text,
            r#"{"workgroup":128,"items":2,"vector":1,"knobs":{"TILE":64}}"#
        );
        assert_eq!(serde_json::from_str::<Schedule>(&text).unwrap(), k);
        let long = format!(
            r#"{{"workgroup":1,"items":1,"vector":1,"knobs":{{"{}":1}}}}"#,
            "X".repeat(40)
        );
        assert!(serde_json::from_str::<Schedule>(&long).is_err());
    }

    #[test]
    fn shapes_print_parse_and_serialize() {
        let s = Schedule::new(64, 1, 1).with_shape(&[16, 16]);
        assert_eq!(s.to_string(), "wg=16x16 items=1 vec=1");
        assert_eq!(
            s.with_settings("wg=32x8").unwrap().workgroup_shape(),
            [32, 8, 1]
        );
        assert_eq!(s.with_settings(&s.to_string()).unwrap(), s);
        for bad in ["wg=16", "wg=16x0", "wg=2x2x2", "wg=16x", "wg=x16"] {
            assert!(s.with_settings(bad).is_err(), "{bad}");
        }
        let one = Schedule::with_workgroup(64);
        assert!(one.with_settings("wg=16x16").is_err());
        let t = Schedule::new(1, 1, 1).with_shape(&[4, 4, 2]);
        assert_eq!((t.dims(), t.invocations()), (3, 32));
        assert_eq!(
            t.with_settings("wg=8x8x4").unwrap().workgroup_shape(),
            [8, 8, 4]
        );
        let text = serde_json::to_string(&t).unwrap();
        assert_eq!(
            text,
            r#"{"workgroup":4,"workgroup_y":4,"workgroup_z":2,"items":1,"vector":1}"#
        );
        assert_eq!(serde_json::from_str::<Schedule>(&text).unwrap(), t);
        // A 2-D (64, 1) is not the 1-D 64.
        assert_ne!(Schedule::with_workgroup(64), one.with_shape(&[64, 1]));
        assert!(t.wgsl_header().contains("const WG: u32 = 32u;\nconst ITEMS: u32 = 1u;\nconst VEC: u32 = 1u;\nconst WG_X: u32 = 4u;\nconst WG_Y: u32 = 4u;\nconst WG_Z: u32 = 2u;\n"));
        assert!(!one.wgsl_header().contains("WG_X"));
    }

    #[test]
    fn a_space_of_shapes() {
        let space = TuneSpace::with_shapes(&[&[16, 16], &[32, 8]], &[1], &[1]);
        let c = space.candidates();
        assert_eq!(c.len(), 2);
        assert_eq!(space.len(), 2);
        assert_eq!(c[1].workgroup_shape(), [32, 8, 1]);
        assert!(c.iter().all(|s| space.contains(s)));
        assert!(!space.contains(&Schedule::with_workgroup(16)));
        assert!(!space.contains(&Schedule::with_workgroup(1).with_shape(&[16, 16, 1])));
        assert_eq!(
            space.to_string(),
            "workgroup=[16x16, 32x8] items=[1] vector=[1]"
        );
    }

    #[test]
    fn with_knobs_of_keeps_the_kernels_knobs_only() {
        let declared = Schedule::new(64, 1, 1)
            .with_knob("TILE", 64)
            .with_knob("K", 4);
        let given = Schedule::new(128, 1, 1)
            .with_knob("K", 8)
            .with_knob("OTHER", 1);
        let s = given.with_knobs_of(&declared);
        assert_eq!(
            s,
            Schedule::new(128, 1, 1)
                .with_knob("TILE", 64)
                .with_knob("K", 8)
        );
    }

    #[test]
    fn the_space_is_every_combination_of_axes_and_knobs() {
        let space = TuneSpace {
            workgroup: &[64, 128],
            shapes: &[],
            items: &[1],
            vector: &[1],
            knobs: &[("TILE", &[16, 32, 64]), ("K", &[2])],
            keep: "",
            dropped: &[],
        };
        let c = space.candidates();
        assert_eq!(c.len(), 6);
        assert_eq!(space.len(), 6);
        assert!(c.iter().all(|s| space.contains(s)));
        assert_eq!(
            c[1],
            Schedule::new(64, 1, 1)
                .with_knob("TILE", 32)
                .with_knob("K", 2)
        );
        assert!(!space.contains(&Schedule::new(64, 1, 1).with_knob("TILE", 32)));
        assert!(!space.contains(&c[0].with_knob("TILE", 8)));
        assert_eq!(
            space.to_string(),
            "workgroup=[64, 128] items=[1] vector=[1] TILE=[16, 32, 64] K=[2]"
        );
    }

    #[test]
    fn keep_drops_combinations_from_every_view_of_the_space() {
        // `keep = WG * ITEMS <= 128`: of (64, 1), (64, 2), (128, 1), (128, 2), the last goes.
        let space = TuneSpace {
            workgroup: &[64, 128],
            shapes: &[],
            items: &[1, 2],
            vector: &[1],
            knobs: &[],
            keep: "WG * ITEMS <= 128",
            dropped: &[3],
        };
        let c = space.candidates();
        assert_eq!(
            c,
            vec![
                Schedule::new(64, 1, 1),
                Schedule::new(64, 2, 1),
                Schedule::new(128, 1, 1)
            ]
        );
        assert_eq!(space.len(), 3);
        assert!(c.iter().all(|s| space.contains(s)));
        assert!(!space.contains(&Schedule::new(128, 2, 1)));
        assert!(space.drops(&Schedule::new(128, 2, 1)));
        assert!(!space.drops(&Schedule::new(128, 1, 1)));
        assert!(!space.drops(&Schedule::new(32, 1, 1)));
        assert_eq!(
            space.to_string(),
            "workgroup=[64, 128] items=[1, 2] vector=[1] keep: WG * ITEMS <= 128"
        );
    }
}
