//! Schedules: the tunable launch parameters of a kernel (workgroup size, items per
//! invocation, vector width, and the kernel's own knobs) and the space a kernel declares
//! with `tune(...)`. Layer 1 (values).

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
/// constants `WG`, `ITEMS`, `VEC` and one per knob (`TILE`).
///
/// A kernel's declared schedule ([`Kernel::default_schedule`](crate::Kernel)) carries every
/// knob of the kernel with its default; a schedule without some knob runs that kernel with
/// the knob's default. Two schedules are equal when their values and their knobs are,
/// whatever the order the knobs were set in. `Schedule { workgroup: 128, ..declared }`
/// changes one value and keeps the rest, knobs included.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Schedule {
    /// Workgroup size in x (`WG`).
    pub workgroup: u32,
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
            items,
            vector,
            knobs: Knobs::NONE,
        }
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
        let mut out = Schedule::new(self.workgroup, self.items, self.vector);
        for (name, default) in declared.knobs() {
            out = out.with_knob(name, self.knob(name).unwrap_or(default));
        }
        out
    }

    /// Invocations per workgroup times items per invocation: the logical threads one
    /// workgroup covers.
    pub fn threads_per_group(&self) -> u64 {
        self.workgroup as u64 * self.items as u64
    }

    /// Workgroups needed to cover `threads` logical invocations.
    pub fn groups_for(&self, threads: u64) -> u64 {
        threads.div_ceil(self.threads_per_group().max(1))
    }

    /// This schedule with the settings in `text` changed. `text` is written as schedules are
    /// printed, `wg=256 items=2 vec=1 TILE=128`, with spaces or commas between the settings
    /// (`wg=256,items=2,vec=1`); a setting left out keeps this schedule's value, so
    /// `wg=128` changes only the workgroup size. A knob is set by its name, and must be one
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
            let (key, value) = part.split_once('=').ok_or_else(|| {
                format!("`{part}` is not `key=value`; write e.g. `wg=256,items=2,vec=1`")
            })?;
            let is_knob = self.knob(key).is_some();
            if !matches!(key, "wg" | "items" | "vec") && !is_knob {
                let mut known = vec!["`wg`".to_string(), "`items`".into(), "`vec`".into()];
                known.extend(self.knobs().map(|(n, _)| format!("`{n}`")));
                let last = known.pop().unwrap_or_default();
                return Err(format!(
                    "unknown setting `{key}`; the settings are {} and {last}",
                    known.join(", ")
                ));
            }
            if seen.contains(&key) {
                return Err(format!("`{key}` is given twice"));
            }
            seen.push(key);
            // Knobs may be 0 (a knob can switch a variant off); the axes may not.
            let v = match value.parse::<u32>() {
                Ok(v) if v > 0 || is_knob => v,
                _ if is_knob => return Err(format!("`{part}`: the value must be a whole number")),
                _ => {
                    return Err(format!(
                        "`{part}`: the value must be a whole number of at least 1"
                    ))
                }
            };
            match key {
                "wg" => out.workgroup = v,
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

    /// The WGSL constant declarations that fix this schedule in a kernel's source.
    pub fn wgsl_header(&self) -> String {
        let mut h = format!(
            "const WG: u32 = {}u;\nconst ITEMS: u32 = {}u;\nconst VEC: u32 = {}u;\n",
            self.workgroup, self.items, self.vector
        );
        for (name, v) in self.knobs() {
            h.push_str(&format!("const {name}: u32 = {v}u;\n"));
        }
        h
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wg={} items={} vec={}",
            self.workgroup, self.items, self.vector
        )?;
        for (name, v) in self.knobs() {
            write!(f, " {name}={v}")?;
        }
        Ok(())
    }
}

/// A schedule as manifests store it: the knobs as a name → value map, absent when there
/// are none, so that files written before knobs existed read back unchanged.
#[derive(Serialize, Deserialize)]
struct ScheduleRecord {
    workgroup: u32,
    items: u32,
    vector: u32,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    knobs: BTreeMap<String, u32>,
}

impl Serialize for Schedule {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        ScheduleRecord {
            workgroup: self.workgroup,
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
        let mut s = Schedule::new(r.workgroup, r.items, r.vector);
        for (name, v) in &r.knobs {
            if name.len() > MAX_KNOB_NAME {
                return Err(D::Error::custom(format!(
                    "the knob name `{name}` is longer than {MAX_KNOB_NAME} bytes"
                )));
            }
            s = s.with_knob(name, *v);
        }
        Ok(s)
    }
}

/// The tuning space a kernel declares with `tune(workgroup = [..], items = [..], vector = [..],
/// KNOB = [..])`. A kernel without `tune` has a space of one point: its declared schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TuneSpace {
    /// Candidate workgroup sizes.
    pub workgroup: &'static [u32],
    /// Candidate items per invocation.
    pub items: &'static [u32],
    /// Candidate vector widths.
    pub vector: &'static [u32],
    /// Each knob of the kernel with its candidate values (its default alone when it is not
    /// tuned), in declaration order.
    pub knobs: &'static [(&'static str, &'static [u32])],
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
            items,
            vector,
            knobs: &[],
        }
    }

    /// Whether `schedule` is one of the space's points: its values are candidates, and its
    /// knobs are exactly the space's, each at a candidate value.
    pub fn contains(&self, schedule: &Schedule) -> bool {
        self.workgroup.contains(&schedule.workgroup)
            && self.items.contains(&schedule.items)
            && self.vector.contains(&schedule.vector)
            && schedule.knobs().count() == self.knobs.len()
            && self
                .knobs
                .iter()
                .all(|(name, vals)| schedule.knob(name).is_some_and(|v| vals.contains(&v)))
    }

    /// The number of points: the product of the candidate counts.
    pub fn len(&self) -> usize {
        self.knobs.iter().fold(
            self.workgroup.len() * self.items.len() * self.vector.len(),
            |n, (_, v)| n * v.len(),
        )
    }

    /// Whether the space has no point (a candidate list is empty).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Every schedule in the space, in declaration order (the last knob varies fastest).
    pub fn candidates(&self) -> Vec<Schedule> {
        let mut out = Vec::new();
        for &workgroup in self.workgroup {
            for &items in self.items {
                for &vector in self.vector {
                    out.push(Schedule::new(workgroup, items, vector));
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
    /// `workgroup=[64, 128] items=[1] vector=[1] TILE=[64, 128]`, as `forge list` prints it.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "workgroup={:?} items={:?} vector={:?}",
            self.workgroup, self.items, self.vector
        )?;
        for (name, vals) in self.knobs {
            write!(f, " {name}={vals:?}")?;
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
            items: &[1],
            vector: &[1],
            knobs: &[("TILE", &[16, 32, 64]), ("K", &[2])],
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
}
