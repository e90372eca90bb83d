//! Schedules: the values of `WG`, `ITEMS`, `VEC` and the knobs that one point of a
//! kernel's tuning space gives, and how the language names them.
//!
//! Part of `model` (layer 1).

/// One schedule of a kernel's tuning space, as the macro sees it: the values of `WG`,
/// `ITEMS`, `VEC` and of each knob, in declaration order, and the workgroup's shape: `WG`
/// is the product of `shape`, whose first `dims` extents the kernel's grid has.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchedPoint {
    pub wg: u32,
    pub shape: [u32; 3],
    pub dims: usize,
    pub items: u32,
    pub vec: u32,
    pub knobs: Vec<u32>,
}

impl SchedPoint {
    /// A point with a workgroup of `shape` (1 to 3 extents) and no knobs.
    pub fn new(shape: &[u32], items: u32, vec: u32) -> Self {
        let mut s3 = [1u32; 3];
        for (d, v) in shape.iter().take(3).enumerate() {
            s3[d] = *v;
        }
        SchedPoint {
            wg: s3.iter().fold(1u32, |a, b| a.saturating_mul(*b)),
            shape: s3,
            dims: shape.len().clamp(1, 3),
            items,
            vec,
            knobs: Vec::new(),
        }
    }

    pub fn get(&self, c: SchedConst) -> u32 {
        match c {
            SchedConst::Wg => self.wg,
            SchedConst::WgAxis(d) => self.shape[d as usize % 3],
            SchedConst::Items => self.items,
            SchedConst::Vec => self.vec,
            SchedConst::Knob(i) => self.knobs.get(i).copied().unwrap_or(0),
        }
    }

    /// The workgroup as the attribute writes it: `64`, `(16, 16)` or `(4, 4, 4)`.
    pub fn shape_text(&self) -> String {
        shape_text(&self.shape[..self.dims])
    }

    /// `WG=64, ITEMS=1, VEC=1, TILE=128`, for messages.
    pub fn describe(&self, knobs: &[Knob]) -> String {
        let wg = if self.dims > 1 {
            format!("workgroup {}", self.shape_text())
        } else {
            format!("WG={}", self.wg)
        };
        let mut s = format!("{wg}, ITEMS={}, VEC={}", self.items, self.vec);
        for (k, v) in knobs.iter().zip(&self.knobs) {
            s.push_str(&format!(", {}={v}", k.name));
        }
        s
    }
}

/// A knob: `knobs(TILE = 64)` declares a named `u32` schedule constant with its default,
/// and `tune(TILE = [64, 128])` the values the tuner tries.
#[derive(Clone, Debug)]
pub struct Knob {
    pub name: String,
    pub default: u32,
    /// The tuned values; empty when the knob is not tuned.
    pub tune: Vec<u32>,
}

/// A schedule constant: `WG`, `ITEMS`, `VEC`, or a knob by index into `Options::knobs`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedConst {
    Wg,
    /// `WG_X`, `WG_Y` or `WG_Z` (0, 1, 2): a 2-D or 3-D workgroup's extent.
    WgAxis(u8),
    Items,
    Vec,
    Knob(usize),
}

/// A workgroup shape as the attribute writes it: `64`, `(16, 16)` or `(4, 4, 4)`.
pub fn shape_text(shape: &[u32]) -> String {
    match shape {
        [x] => x.to_string(),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|v| v.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
