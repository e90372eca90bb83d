//! Schedules: the tunable launch parameters of a kernel (workgroup size, items per
//! invocation, vector width) and the space a kernel declares with `tune(...)`. Layer 1
//! (values).

use serde::{Deserialize, Serialize};
use std::fmt;

/// One point in a kernel's tuning space. The generated WGSL sees these as the `u32`
/// constants `WG`, `ITEMS` and `VEC`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Schedule {
    /// Workgroup size in x (`WG`).
    pub workgroup: u32,
    /// Logical items handled by each invocation (`ITEMS`).
    pub items: u32,
    /// Vector width (`VEC`).
    pub vector: u32,
}

impl Schedule {
    /// A schedule with the given workgroup size, one item and vector width one.
    pub const fn with_workgroup(workgroup: u32) -> Self {
        Schedule {
            workgroup,
            items: 1,
            vector: 1,
        }
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
    /// printed, `wg=256 items=2 vec=1`, with spaces or commas between the settings
    /// (`wg=256,items=2,vec=1`); a setting left out keeps this schedule's value, so
    /// `wg=128` changes only the workgroup size. The error says what is wrong.
    ///
    /// ```
    /// use forge_core::Schedule;
    /// let declared = Schedule { workgroup: 256, items: 8, vector: 1 };
    /// let s = declared.with_settings("wg=64,items=2").unwrap();
    /// assert_eq!(s, Schedule { workgroup: 64, items: 2, vector: 1 });
    /// assert_eq!(declared.with_settings(&s.to_string()).unwrap(), s);
    /// assert!(declared.with_settings("wg=0").is_err());
    /// assert!(declared.with_settings("threads=4").is_err());
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
            let slot = match key {
                "wg" => &mut out.workgroup,
                "items" => &mut out.items,
                "vec" => &mut out.vector,
                _ => {
                    return Err(format!(
                        "unknown setting `{key}`; the settings are `wg`, `items` and `vec`"
                    ))
                }
            };
            if seen.contains(&key) {
                return Err(format!("`{key}` is given twice"));
            }
            seen.push(key);
            *slot = match value.parse::<u32>() {
                Ok(0) | Err(_) => {
                    return Err(format!(
                        "`{part}`: the value must be a whole number of at least 1"
                    ))
                }
                Ok(v) => v,
            };
        }
        if seen.is_empty() {
            return Err("no setting given; write e.g. `wg=256,items=2,vec=1`".into());
        }
        Ok(out)
    }

    /// The WGSL constant declarations that fix this schedule in a kernel's source.
    pub fn wgsl_header(&self) -> String {
        format!(
            "const WG: u32 = {}u;\nconst ITEMS: u32 = {}u;\nconst VEC: u32 = {}u;\n",
            self.workgroup, self.items, self.vector
        )
    }
}

impl fmt::Display for Schedule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "wg={} items={} vec={}",
            self.workgroup, self.items, self.vector
        )
    }
}

/// The tuning space a kernel declares with `tune(workgroup = [..], items = [..], vector = [..])`.
/// A kernel without `tune` has a space of one point: its declared schedule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TuneSpace {
    /// Candidate workgroup sizes.
    pub workgroup: &'static [u32],
    /// Candidate items per invocation.
    pub items: &'static [u32],
    /// Candidate vector widths.
    pub vector: &'static [u32],
}

impl TuneSpace {
    /// Whether `schedule` is one of the space's points.
    pub fn contains(&self, schedule: &Schedule) -> bool {
        self.workgroup.contains(&schedule.workgroup)
            && self.items.contains(&schedule.items)
            && self.vector.contains(&schedule.vector)
    }

    /// Every schedule in the space, in declaration order.
    pub fn candidates(&self) -> Vec<Schedule> {
        let mut out = Vec::new();
        for &workgroup in self.workgroup {
            for &items in self.items {
                for &vector in self.vector {
                    out.push(Schedule {
                        workgroup,
                        items,
                        vector,
                    });
                }
            }
        }
        out
    }
}
