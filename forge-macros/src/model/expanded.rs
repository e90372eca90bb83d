//! A kernel made concrete for one schedule (by `unroll`), and what the text emitters made
//! of it for every schedule: the inputs of the WGSL and CUDA emitters, and of the Rust one.
//!
//! Part of `model` (layer 1).

use super::kernel::Local;
use super::sched::SchedPoint;
use super::stmt::Block;

/// A function made concrete: its locals (register elements added) and its body.
pub struct Func {
    pub locals: Vec<Local>,
    pub body: Block,
}

/// A kernel made concrete for one schedule.
pub struct Expanded {
    pub main: Func,
    /// The used helpers that stay functions, by index into `Kernel::helpers`.
    pub helpers: Vec<(usize, Func)>,
    /// Whether the result depends on the schedule's values (an unroll count or a
    /// register index that uses `WG`, `ITEMS`, `VEC` or a knob), so that each schedule
    /// needs WGSL of its own.
    pub sched_dependent: bool,
}

/// A kernel's WGSL for every schedule of its tuning space: the directives, then the
/// schedule's constants (which the runtime writes, as `emit_wgsl::schedule_header` does),
/// then its body. Schedules share a body unless unrolling made theirs differ.
pub struct Sources {
    pub directives: String,
    pub bodies: Vec<String>,
    /// Each schedule of `Kernel::schedules`, the default first, and its body.
    pub schedules: Vec<(SchedPoint, usize)>,
    /// The body of schedules outside the tuning space.
    pub fallback: usize,
    /// The whole source of the default schedule: directives, constants and body.
    pub default_source: String,
}

/// A kernel's CUDA for every schedule of its tuning space, parallel to its WGSL: the
/// prelude, then the schedule's constants (`forge_core::Schedule::cuda_header`), then a
/// body.
pub struct CudaSources {
    pub prelude: String,
    pub bodies: Vec<String>,
    /// The body of each schedule of `Kernel::schedules`, in order.
    pub schedules: Vec<usize>,
    /// The body of schedules outside the tuning space.
    pub fallback: usize,
    /// Why the kernel has no CUDA, if it has none.
    pub refused: Option<String>,
}

impl CudaSources {
    /// No CUDA, and why.
    pub fn refused(reason: String) -> Self {
        CudaSources {
            prelude: String::new(),
            bodies: vec![String::new()],
            schedules: Vec::new(),
            fallback: 0,
            refused: Some(reason),
        }
    }

    /// Adds a schedule's body (shared with an earlier schedule's when equal); its index.
    pub fn add(&mut self, body: String) -> usize {
        match self.bodies.iter().position(|b| *b == body) {
            Some(i) => i,
            None => {
                self.bodies.push(body);
                self.bodies.len() - 1
            }
        }
    }
}
