//! The launch plan: one call of a kernel, checked against the adapter's limits before the
//! device is touched. Layer 1 (values): pure functions of the kernel's description, the
//! call's sizes and [`wgpu::Limits`].
//!
//! This module owns the one preflight that every way of launching a kernel goes through
//! (host slices, device tensors, timing): [`LaunchPlan::new`] checks the schedule
//! ([`check_schedule`]), turns the call's logical invocations into a [`Grid`] of
//! workgroups (folded past the per-dimension limit by [`fold_groups`]), checks and pads
//! every storage binding's size, and lays out the `Params` uniform. What the plan says is
//! what is bound and dispatched: the bind-group builder
//! ([`crate::device::pipeline::CompiledPipeline::bind_group`]) takes its sizes, and the
//! dispatch its grid.
//!
//! The memory budget is the device's business, not the plan's: a plan reports its bytes
//! ([`LaunchPlan::device_bytes`]) and the caller checks them, with whatever else the call
//! allocates (timing's pristine copies), against the capacity.

use crate::error::{ForgeError, Result};
use crate::kernel::{params_binding, Binding, Kernel};
use crate::schedule::{Schedule, Threads};

/// wgpu's required alignment for copy sizes and offsets, and so for every buffer size.
pub const COPY_ALIGN: u64 = wgpu::COPY_BUFFER_ALIGNMENT;

/// Rounds `bytes` up to a multiple of `align` (a power of two). Saturates instead of
/// overflowing, so absurd sizes fail the limit checks rather than wrap.
///
/// ```
/// use forge_core::plan::align_up;
/// assert_eq!((align_up(5, 4), align_up(8, 4), align_up(u64::MAX, 4)), (8, 8, !3));
/// ```
pub fn align_up(bytes: u64, align: u64) -> u64 {
    debug_assert!(align.is_power_of_two());
    match bytes.checked_add(align - 1) {
        Some(v) => v & !(align - 1),
        None => !(align - 1),
    }
}

/// A uniform buffer's size for `len` bytes of params: a multiple of 16, at least 16.
///
/// ```
/// use forge_core::plan::uniform_size;
/// assert_eq!((uniform_size(1), uniform_size(16), uniform_size(20)), (16, 16, 32));
/// ```
pub fn uniform_size(len: usize) -> u64 {
    align_up(len as u64, 16).max(16)
}

/// Workgroups that cannot be launched even folded over x, y and z.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{groups} workgroups cannot be folded into three dimensions of at most {limit} each")]
pub struct FoldError {
    /// Workgroups needed.
    pub groups: u64,
    /// The per-dimension limit.
    pub limit: u32,
}

/// Spreads `groups` workgroups over (x, y, z), each at most `limit`, so that
/// `x * y * z >= groups` with little overshoot.
///
/// Up to `limit` groups run as `(groups, 1, 1)`. Past that, y is the fewest rows that fit
/// and x the fewest columns for those rows; z is used the same way once y would pass the
/// limit. A kernel computes its linear workgroup index as
/// `wid.x + wid.y * nwg.x + wid.z * nwg.x * nwg.y` and returns early at or past `groups`,
/// so the overshoot does no work. Zero groups fold to `[0, 1, 1]`, an empty dispatch.
///
/// ```
/// use forge_core::plan::fold_groups;
/// assert_eq!(fold_groups(1000, 65535).unwrap(), [1000, 1, 1]);
/// assert_eq!(fold_groups(65536, 65535).unwrap(), [32768, 2, 1]);
/// assert!(fold_groups(u64::MAX, 65535).is_err());
/// ```
pub fn fold_groups(groups: u64, limit: u32) -> std::result::Result<[u32; 3], FoldError> {
    let err = FoldError { groups, limit };
    let lim = limit as u64;
    if groups == 0 {
        return Ok([0, 1, 1]);
    }
    if lim == 0 {
        return Err(err);
    }
    if groups <= lim {
        return Ok([groups as u32, 1, 1]);
    }
    let z = groups.div_ceil(lim * lim);
    if z > lim {
        return Err(err);
    }
    let per_slice = groups.div_ceil(z);
    let y = per_slice.div_ceil(lim);
    let x = per_slice.div_ceil(y);
    // Each of these is at most `lim` by construction; checked anyway, never wrapped.
    match (u32::try_from(x), u32::try_from(y), u32::try_from(z)) {
        (Ok(x), Ok(y), Ok(z)) if x <= limit && y <= limit && z <= limit => Ok([x, y, z]),
        _ => Err(err),
    }
}

/// The workgroups of one launch: the grid the kernel sees and the dispatch that covers it.
///
/// The logical grid has a count of workgroups per dimension: `[groups, 1, 1]` for a 1-D
/// kernel, `[gx, gy, 1]` or `[gx, gy, gz]` for a 2-D or 3-D one. Where every count is within
/// the per-dimension limit it is dispatched as it is; past it, the grid's workgroups are
/// numbered linearly (`x + gx·(y + gy·z)`) and that number is folded by [`fold_groups`].
/// Either way the generated WGSL computes the same linear index from the physical ids,
/// leaves at once past the grid, and unfolds it into the logical ids, so the kernel never
/// sees the folding.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Grid {
    /// Workgroups per logical dimension.
    pub logical: [u64; 3],
    /// The workgroup counts handed to `dispatch_workgroups`.
    pub dispatch: [u32; 3],
}

impl Grid {
    /// A one-dimensional grid of `groups` workgroups, folded past `limit` per dimension.
    ///
    /// ```
    /// use forge_core::plan::Grid;
    /// let g = Grid::linear(100_000, 65535).unwrap();
    /// assert_eq!((g.logical, g.dispatch), ([100_000, 1, 1], [50_000, 2, 1]));
    /// ```
    pub fn linear(groups: u64, limit: u32) -> std::result::Result<Grid, FoldError> {
        Grid::new([groups, 1, 1], limit)
    }

    /// A grid of `logical` workgroups per dimension: dispatched as it is where every count
    /// is within `limit`, else folded from its linear numbering. The linear index must fit
    /// a `u32`, as the WGSL computes it.
    ///
    /// ```
    /// use forge_core::plan::Grid;
    /// assert_eq!(Grid::new([40, 30, 2], 65535).unwrap().dispatch, [40, 30, 2]);
    /// let g = Grid::new([70_000, 3, 1], 65535).unwrap();
    /// assert_eq!(g.dispatch, [52_500, 4, 1]); // 210 000 workgroups, folded
    /// assert!(Grid::new([1 << 20, 1 << 20, 1], 65535).is_err());
    /// ```
    pub fn new(logical: [u64; 3], limit: u32) -> std::result::Result<Grid, FoldError> {
        let groups = logical.iter().try_fold(1u64, |a, b| a.checked_mul(*b));
        let err = FoldError {
            groups: groups.unwrap_or(u64::MAX),
            limit,
        };
        let groups = groups.ok_or(err)?;
        if groups > u32::MAX as u64 {
            return Err(err);
        }
        let dispatch = if groups == 0 {
            [0, 1, 1]
        } else if logical.iter().all(|g| *g <= limit as u64) {
            logical.map(|g| g as u32)
        } else {
            fold_groups(groups, limit)?
        };
        // Folding overshoots by less than a row; the WGSL's linear index must not wrap.
        let launched = dispatch.iter().fold(1u64, |a, b| a * *b as u64);
        if launched > 1 << 32 {
            return Err(err);
        }
        Ok(Grid { logical, dispatch })
    }

    /// Workgroups in the logical grid.
    pub fn groups(&self) -> u64 {
        self.logical.iter().product()
    }
}

/// Checks a schedule against the adapter's workgroup limits: every setting at least 1,
/// each extent within `max_compute_workgroup_size_x`/`_y`/`_z`, the invocations within
/// `max_compute_invocations_per_workgroup`, and `items` at 1 on a 2-D or 3-D workgroup
/// (`ITEMS` spreads a 1-D grid only).
pub fn check_schedule(
    kernel: &'static str,
    schedule: &Schedule,
    limits: &wgpu::Limits,
) -> Result<()> {
    let bad = |reason: String| ForgeError::BadSchedule {
        kernel,
        schedule: schedule.to_string(),
        reason,
    };
    let [x, y, z] = schedule.workgroup_shape();
    if x == 0 || y == 0 || z == 0 || schedule.items == 0 || schedule.vector == 0 {
        return Err(bad(
            "workgroup, items and vector must each be at least 1".into()
        ));
    }
    if schedule.workgroup_z.is_some() && schedule.workgroup_y.is_none() {
        return Err(bad("a workgroup with a z extent needs a y extent".into()));
    }
    if schedule.dims() > 1 && schedule.items != 1 {
        return Err(bad(format!(
            "`items` must be 1 with a {}-D workgroup; `items` spreads a 1-D grid only",
            schedule.dims()
        )));
    }
    let invocations = limits.max_compute_invocations_per_workgroup;
    if schedule.dims() == 1 {
        let max_x = limits.max_compute_workgroup_size_x.min(invocations);
        if x > max_x {
            return Err(bad(format!(
                "workgroup size {x} is over the adapter's limit of {max_x} (`max_compute_workgroup_size_x` / \
                 `max_compute_invocations_per_workgroup`)"
            )));
        }
        return Ok(());
    }
    let per_dim = [
        (x, limits.max_compute_workgroup_size_x, "x"),
        (y, limits.max_compute_workgroup_size_y, "y"),
        (z, limits.max_compute_workgroup_size_z, "z"),
    ];
    for (v, max, axis) in per_dim {
        if v > max {
            return Err(bad(format!(
                "the workgroup's {axis} extent {v} is over the adapter's limit of {max} (`max_compute_workgroup_size_{axis}`)"
            )));
        }
    }
    if schedule.invocations() > invocations as u64 {
        return Err(bad(format!(
            "a workgroup of {} has {} invocations, over the adapter's limit of {invocations} (`max_compute_invocations_per_workgroup`)",
            schedule.shape_text(),
            schedule.invocations()
        )));
    }
    Ok(())
}

/// The widest workgroup a [workgroup-free](Kernel::workgroup_free) kernel runs at outside
/// its declared schedules: the most invocations per workgroup any adapter offers, so that
/// the oracle, which keeps every local once per invocation of a workgroup, stays small.
pub const MAX_FREE_WORKGROUP: u32 = 1024;

/// The bytes of workgroup memory `kernel` takes at `schedule`: the sizes of its WGSL's
/// `var<workgroup>` declarations, as naga lays them out. A schedule of the tuning space may
/// take more than the portable 16 KiB that the declared one keeps to, up to each
/// adapter's own limit ([`check_workgroup_memory`]).
pub fn workgroup_bytes(kernel: &dyn Kernel, schedule: &Schedule) -> Result<u64> {
    let module = naga::front::wgsl::parse_str(&kernel.wgsl(schedule)).map_err(|e| {
        ForgeError::ShaderCompile {
            kernel: kernel.name(),
            backend: "wgsl".into(),
            message: e.message().to_string(),
        }
    })?;
    let ctx = module.to_ctx();
    Ok(module
        .global_variables
        .iter()
        .filter(|(_, g)| g.space == naga::AddressSpace::WorkGroup)
        .map(|(_, g)| module.types[g.ty].inner.size(ctx) as u64)
        .sum())
}

/// The workgroup memory every adapter offers (WebGPU's default
/// `max_compute_workgroup_storage_size`), which a kernel's declared schedule keeps to.
pub const PORTABLE_WORKGROUP_BYTES: u64 = 16384;

/// Refuses a schedule whose workgroup memory ([`workgroup_bytes`]) is over the adapter's
/// `max_compute_workgroup_storage_size`, naming both. The runtime checks it before it
/// compiles a pipeline, and the tuner and the certifier skip such a schedule with the
/// reason ([`crate::ForgeRuntime::check_schedule`]).
pub fn check_workgroup_memory(
    kernel: &dyn Kernel,
    schedule: &Schedule,
    limits: &wgpu::Limits,
) -> Result<()> {
    let limit = limits.max_compute_workgroup_storage_size as u64;
    // The declared schedule keeps to the portable limit (the macro checks it): every
    // adapter holds it, and there is nothing to parse.
    if limit >= PORTABLE_WORKGROUP_BYTES && kernel.default_schedule() == *schedule {
        return Ok(());
    }
    let bytes = workgroup_bytes(kernel, schedule)?;
    if bytes > limit {
        return Err(ForgeError::BadSchedule {
            kernel: kernel.name(),
            schedule: schedule.to_string(),
            reason: format!(
                "its workgroup memory, {bytes} bytes, is over the adapter's `max_compute_workgroup_storage_size` of {limit} bytes"
            ),
        });
    }
    Ok(())
}

/// Checks that `kernel` declares `schedule`: it is the declared schedule or a point of the
/// tuning space, or the kernel is [workgroup-free](Kernel::workgroup_free) and `schedule`
/// differs from the declared one only in a workgroup size of 1 to [`MAX_FREE_WORKGROUP`].
/// A kernel is written, and certified, for the schedules it declares: at another one it may
/// compute something else (a kernel that reads `ITEMS` covers `ITEMS` elements an
/// invocation), so running it there would be a wrong result, not an error.
///
/// The runtime checks this on every launch ([`LaunchPlan::new`]) and the oracle on every
/// run; the adapter's limits are [`check_schedule`]'s.
pub fn check_declared(kernel: &dyn Kernel, given: &Schedule) -> Result<()> {
    let declared = kernel.default_schedule();
    let bad = |reason: String| ForgeError::BadSchedule {
        kernel: kernel.name(),
        schedule: given.to_string(),
        reason,
    };
    if let Some((name, _)) = given
        .knobs()
        .find(|(name, _)| declared.knob(name).is_none())
    {
        let knobs: Vec<&str> = declared.knobs().map(|(n, _)| n).collect();
        return Err(bad(format!(
            "the kernel has no knob `{name}`; its knobs are {}",
            if knobs.is_empty() {
                "none".to_string()
            } else {
                format!("{knobs:?}")
            }
        )));
    }
    // A knob the schedule leaves out runs at its default, as the kernel does.
    let schedule = &given.with_knobs_of(&declared);
    if *schedule == declared || kernel.tune_space().contains(schedule) {
        return Ok(());
    }
    let space = kernel.tune_space();
    if space.drops(schedule) {
        return Err(bad(format!(
            "`tune(keep = {})` drops it from the tuning space, so the kernel was not written \
             for it; pick a schedule the condition keeps",
            space.keep
        )));
    }
    // A 1-D kernel's sizes (`[64, 128]`), or a 2-D or 3-D one's shapes (`[16x16, 32x8]`).
    let workgroups = if space.shapes.is_empty() {
        format!("{:?}", space.workgroup)
    } else {
        let shapes: Vec<String> = space
            .shapes
            .iter()
            .map(|s| {
                s.iter()
                    .map(|v| v.to_string())
                    .collect::<Vec<_>>()
                    .join("x")
            })
            .collect();
        format!("[{}]", shapes.join(", "))
    };
    let declared_list = format!(
        "the declared schedule is {declared}, and the tuning space is workgroup {workgroups} x items {:?} x vector {:?}{}",
        space.items,
        space.vector,
        space
            .knobs
            .iter()
            .map(|(name, values)| format!(" x {name} {values:?}"))
            .collect::<String>()
    );
    // Field by field assignment, not a struct literal: `Schedule` may gain private fields.
    // The workgroup's shape may differ, not its dimensions.
    let mut same_but_workgroup = *schedule;
    same_but_workgroup.workgroup = declared.workgroup;
    if schedule.dims() == declared.dims() {
        same_but_workgroup.workgroup_y = declared.workgroup_y;
        same_but_workgroup.workgroup_z = declared.workgroup_z;
    }
    let only_workgroup = same_but_workgroup == declared;
    if kernel.workgroup_free() && only_workgroup {
        if schedule.workgroup_shape().iter().all(|e| *e >= 1)
            && schedule.invocations() <= MAX_FREE_WORKGROUP as u64
        {
            return Ok(());
        }
        return Err(bad(format!(
            "the kernel runs at any workgroup of 1 to {MAX_FREE_WORKGROUP} invocations, not {}",
            schedule.shape_text()
        )));
    }
    Err(bad(format!(
        "the kernel does not declare it ({declared_list}){}; add it to `tune(...)`, or pick one of those",
        if kernel.workgroup_free() {
            "; only the workgroup size may differ from the declared schedule's"
        } else {
            ""
        }
    )))
}

/// Checks that a schedule has as many dimensions as the kernel's grid (its declared
/// schedule's): a 1-D kernel takes `wg=N`, a 2-D one `wg=XxY`, a 3-D one `wg=XxYxZ`.
pub fn check_dims(kernel: &dyn Kernel, schedule: &Schedule) -> Result<()> {
    let want = kernel.default_schedule().dims();
    if schedule.dims() == want {
        return Ok(());
    }
    let form = ["`wg=256`", "`wg=16x16`", "`wg=8x8x4`"][want - 1];
    Err(ForgeError::BadSchedule {
        kernel: kernel.name(),
        schedule: schedule.to_string(),
        reason: format!(
            "the kernel's grid has {want} dimension(s) and this workgroup {}; give a workgroup such as {form}",
            schedule.dims()
        ),
    })
}

/// The grid for `threads` logical invocations at `schedule`: per dimension,
/// `ceil(threads / WG_X·ITEMS)`, `ceil(threads / WG_Y)` and `ceil(threads / WG_Z)`
/// workgroups (for a 1-D kernel, `ceil(threads / (WG·ITEMS))`), folded past the limit.
/// A dimension of zero threads is [`ForgeError::EmptyWork`]; more workgroups than three
/// folded dimensions hold (or than a `u32` numbers) is [`ForgeError::TooManyWorkgroups`];
/// a grid whose invocations or ids do not fit a `u32` is [`ForgeError::GridTooLarge`].
///
/// ```
/// use forge_core::{plan::grid, Schedule, Threads};
/// let limits = forge_core::wgpu::Limits::default();
/// let s = Schedule::with_workgroup(1).with_shape(&[16, 16]);
/// let g = grid("blur", &s, Threads([65536 * 16 + 3, 2, 1]), &limits).unwrap();
/// assert_eq!(g.logical, [65537, 1, 1]);
/// assert_eq!(g.dispatch, [32769, 2, 1]); // folded: 65537 is past 65535
/// assert!(grid("blur", &s, Threads([0, 2, 1]), &limits).is_err());
/// assert!(grid("blur", &s, Threads([1 << 20, 1 << 20, 1]), &limits).is_err());
/// ```
pub fn grid(
    kernel: &'static str,
    schedule: &Schedule,
    threads: impl Into<Threads>,
    limits: &wgpu::Limits,
) -> Result<Grid> {
    let threads = threads.into();
    if let Some(d) = threads.0.iter().position(|t| *t == 0) {
        let what = if threads.0[1..] == [1, 1] {
            "`threads` is 0".to_string()
        } else {
            format!("`threads` is {threads}, 0 in {}", ["x", "y", "z"][d])
        };
        return Err(ForgeError::EmptyWork { kernel, what });
    }
    let logical = schedule.groups_per_dim(threads);
    let g = Grid::new(logical, limits.max_compute_workgroups_per_dimension).map_err(|e| {
        ForgeError::TooManyWorkgroups {
            kernel,
            groups: e.groups,
            limit: e.limit,
        }
    })?;
    let too_large = |reason: String| ForgeError::GridTooLarge {
        kernel,
        threads: threads.to_string(),
        reason,
    };
    if threads.total() > u32::MAX as u64 {
        return Err(too_large(format!(
            "{} invocations, past the {} that `global_index()` (a `u32`) numbers",
            threads.total(),
            u32::MAX
        )));
    }
    let shape = schedule.workgroup_shape();
    let per = [
        shape[0] as u64 * schedule.items as u64,
        shape[1] as u64,
        shape[2] as u64,
    ];
    for d in 0..3 {
        // The last workgroup's ids run past the extent: they must still fit a `u32`.
        if logical[d].saturating_mul(per[d]) > u32::MAX as u64 + 1 {
            return Err(too_large(format!(
                "the ids in {} run past `u32`",
                ["x", "y", "z"][d]
            )));
        }
    }
    Ok(g)
}

/// The per-dimension workgroup limit every adapter has (`max_compute_workgroups_per_dimension`):
/// what a grid is folded against where no adapter is at hand.
pub const GROUPS_PER_DIMENSION: u32 = 65535;

/// The logical workgroups per dimension of a call of a kernel whose grid has `dims`
/// dimensions, for `threads` invocations at `schedule`, at the portable limit of
/// [`GROUPS_PER_DIMENSION`]: the grid [`grid`] gives every launch, so that the CPU oracle,
/// which runs exactly these workgroups, fails where a launch fails.
///
/// ```
/// use forge_core::{plan::logical_grid, Schedule};
/// let s = Schedule::with_workgroup(1).with_shape(&[16, 16]);
/// assert_eq!(logical_grid("blur", &s, [33, 16, 1], 2).unwrap(), [3, 1, 1]);
/// assert!(logical_grid("blur", &s, [33, 16, 1], 1).is_err()); // a 2-D workgroup, a 1-D grid
/// ```
pub fn logical_grid(
    kernel: &'static str,
    schedule: &Schedule,
    threads: [u32; 3],
    dims: usize,
) -> Result<[u64; 3]> {
    let bad = |reason: String| ForgeError::BadSchedule {
        kernel,
        schedule: schedule.to_string(),
        reason,
    };
    if schedule.dims() != dims {
        return Err(bad(format!(
            "the kernel's grid has {dims} dimension(s) and this workgroup {}",
            schedule.dims()
        )));
    }
    // What the launch plan refuses whatever the adapter (`check_schedule`).
    if dims > 1 && schedule.items != 1 {
        return Err(bad(format!(
            "`items` must be 1 with a {dims}-D workgroup; `items` spreads a 1-D grid only"
        )));
    }
    let limits = wgpu::Limits {
        max_compute_workgroups_per_dimension: GROUPS_PER_DIMENSION,
        ..wgpu::Limits::downlevel_defaults()
    };
    Ok(grid(kernel, schedule, Threads(threads.map(u64::from)), &limits)?.logical)
}

/// [`logical_grid`] of an indirect kernel (`indirect = count[0]`), as the oracle runs it:
/// `ext` is the grid of its bound (`threads`), checked as every launch's is, and the grid
/// run is that of `count[element]` invocations, which must be within the bound
/// ([`ForgeError::IndirectCount`], as a host call's launch says). Returns the logical
/// extent and workgroups run; a count of 0 runs none.
pub fn indirect_grid(
    kernel: &'static str,
    schedule: &Schedule,
    (count, element, count_at): (&[u32], u32, &'static str),
    ext: [u32; 3],
) -> Result<([u32; 3], [u64; 3])> {
    logical_grid(kernel, schedule, ext, 1)?;
    let Some(&n) = count.get(element as usize) else {
        return Err(ForgeError::InvalidArgument {
            kernel,
            message: format!(
                "the launch reads its count of invocations from `{count_at}`, past the binding's {} elements",
                count.len()
            ),
        });
    };
    if n > ext[0] {
        return Err(ForgeError::IndirectCount {
            kernel,
            count_at: count_at.to_string(),
            count: n,
            bound: u64::from(ext[0]),
            ran: "",
        });
    }
    if n == 0 {
        return Ok(([0, 1, 1], [0, 1, 1]));
    }
    Ok(([n, 1, 1], logical_grid(kernel, schedule, [n, 1, 1], 1)?))
}

/// Checks one storage binding's size in bytes; returns it padded to whole words.
/// An empty binding is [`ForgeError::EmptyWork`]; one past the adapter's per-binding (or
/// per-buffer) limit is [`ForgeError::BindingTooLarge`].
pub fn binding_size(
    kernel: &'static str,
    arg: &'static str,
    bytes: u64,
    limits: &wgpu::Limits,
) -> Result<u64> {
    if bytes == 0 {
        return Err(ForgeError::EmptyWork {
            kernel,
            what: format!("argument `{arg}` has no elements"),
        });
    }
    let padded = align_up(bytes, COPY_ALIGN);
    let (limit_name, limit) = if limits.max_storage_buffer_binding_size <= limits.max_buffer_size {
        (
            "max_storage_buffer_binding_size",
            limits.max_storage_buffer_binding_size,
        )
    } else {
        ("max_buffer_size", limits.max_buffer_size)
    };
    check_limit(kernel, arg, padded, (limit_name, limit))
}

/// `bytes` of argument `arg`, unless they are past the device's limit (named, with its
/// value): then [`ForgeError::BindingTooLarge`].
pub fn check_limit(
    kernel: &'static str,
    arg: &'static str,
    bytes: u64,
    (limit_name, limit): (&'static str, u64),
) -> Result<u64> {
    if bytes > limit {
        return Err(ForgeError::BindingTooLarge {
            kernel,
            arg,
            bytes,
            limit_name,
            limit,
        });
    }
    Ok(bytes)
}

/// A call of a kernel that the adapter can run: see the [module docs](self).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LaunchPlan {
    /// The kernel's name, for errors and labels.
    pub kernel: &'static str,
    /// The kernel's storage bindings, in binding order.
    pub layout: &'static [Binding],
    /// The schedule the call runs with.
    pub schedule: Schedule,
    /// The workgroups, logical and dispatched.
    pub grid: Grid,
    /// Each storage binding's size in bytes, padded to whole words, in layout order: what
    /// is allocated and bound.
    pub bindings: Vec<u64>,
    /// The `Params` uniform, zero-padded to its buffer's size (a multiple of 16 bytes);
    /// empty for a kernel without scalar parameters, which has no uniform.
    pub params: Vec<u8>,
    /// The uniform's binding number: the one after the storage bindings.
    pub params_binding: u32,
}

impl LaunchPlan {
    /// Plans a call of `kernel` at `schedule` over `threads` logical invocations (a `u64`
    /// for a 1-D kernel, or a [`Threads`] per dimension), with
    /// `params` (the `Params` struct's bytes, empty without scalars) and `binding_bytes`
    /// (each storage binding's size in bytes, in layout order).
    ///
    /// Errors, in this order: a wrong number of bindings
    /// ([`ForgeError::InvalidArgument`]), a schedule the kernel does not declare
    /// ([`check_declared`]) or the adapter or the kernel's grid cannot run
    /// ([`ForgeError::BadSchedule`]), no threads or an empty binding
    /// ([`ForgeError::EmptyWork`]), a grid past `u32` ids ([`ForgeError::GridTooLarge`]),
    /// too many workgroups ([`ForgeError::TooManyWorkgroups`]), a binding or the uniform past the adapter's
    /// limit ([`ForgeError::BindingTooLarge`]).
    ///
    /// ```
    /// # use forge_core::kernel::*;
    /// # use forge_core::*;
    /// # struct K;
    /// # impl Kernel for K {
    /// #     fn name(&self) -> &'static str { "k" }
    /// #     fn wgsl(&self, _: &Schedule) -> String { String::new() }
    /// #     fn layout(&self) -> &'static [Binding] {
    /// #         static L: [Binding; 1] = [Binding { binding: 0, name: "y", elem: ElemType::scalar(ScalarType::F32), access: Access::Out, len: "n" }];
    /// #         &L
    /// #     }
    /// #     fn scalars(&self) -> &'static [ScalarParam] { &[ScalarParam { name: "n", ty: ScalarType::U32 }] }
    /// #     fn default_schedule(&self) -> Schedule { Schedule::with_workgroup(64) }
    /// #     fn tune_space(&self) -> TuneSpace { TuneSpace::new(&[64], &[1], &[1]) }
    /// #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![] }
    /// #     fn binding_lens_at(&self, _: &Schedule, s: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![s[0].bits() as u64]) }
    /// #     fn grid_threads_at(&self, _: &Schedule, s: &[ScalarValue]) -> Result<forge_core::Threads> { Ok(forge_core::Threads::from(s[0].bits() as u64)) }
    /// #     fn cpu_dyn(&self, _: &Schedule, _: &DynArgs) -> Result<Vec<HostBuffer>> { Ok(vec![]) }
    /// # }
    /// use forge_core::plan::LaunchPlan;
    /// let limits = wgpu::Limits::default();
    /// let n = 5_000_000u32;
    /// let plan = LaunchPlan::new(&K, &Schedule::with_workgroup(64), &n.to_le_bytes(), n as u64, &[4 * n as u64 + 2], &limits)?;
    /// assert_eq!(plan.grid.dispatch, [39063, 2, 1]); // 78 125 workgroups, folded
    /// assert_eq!(plan.bindings, vec![20_000_004]); // padded to whole words
    /// assert_eq!((plan.params.len(), plan.params_binding), (16, 1));
    /// assert!(LaunchPlan::new(&K, &Schedule::with_workgroup(64), &[], 0, &[4], &limits).is_err());
    /// # Ok::<(), ForgeError>(())
    /// ```
    pub fn new(
        kernel: &dyn Kernel,
        schedule: &Schedule,
        params: &[u8],
        threads: impl Into<Threads>,
        binding_bytes: &[u64],
        limits: &wgpu::Limits,
    ) -> Result<LaunchPlan> {
        let name = kernel.name();
        let layout = kernel.layout();
        if binding_bytes.len() != layout.len() {
            return Err(ForgeError::InvalidArgument {
                kernel: name,
                message: format!(
                    "expected {} bindings, one per binding in layout order, got {}",
                    layout.len(),
                    binding_bytes.len()
                ),
            });
        }
        check_dims(kernel, schedule)?;
        check_declared(kernel, schedule)?;
        check_schedule(name, schedule, limits)?;
        let grid = grid(name, schedule, threads, limits)?;
        let bindings = layout
            .iter()
            .zip(binding_bytes)
            .map(|(b, &bytes)| binding_size(name, b.name, bytes, limits))
            .collect::<Result<Vec<u64>>>()?;
        let mut params = params.to_vec();
        if !params.is_empty() {
            let limit = (
                "max_uniform_buffer_binding_size",
                limits.max_uniform_buffer_binding_size,
            );
            let size = check_limit(name, "Params", uniform_size(params.len()), limit)?;
            params.resize(size as usize, 0);
        }
        Ok(LaunchPlan {
            kernel: name,
            layout,
            schedule: *schedule,
            grid,
            bindings,
            params,
            params_binding: params_binding(layout),
        })
    }

    /// The uniform buffer's size, `None` when the kernel has no scalar parameters.
    pub fn uniform_size(&self) -> Option<u64> {
        (!self.params.is_empty()).then_some(self.params.len() as u64)
    }

    /// Whether the kernel's layout ends with the `Params` uniform.
    pub fn has_params(&self) -> bool {
        !self.params.is_empty()
    }

    /// The device bytes the call binds: every storage binding and the uniform.
    pub fn device_bytes(&self) -> u64 {
        self.bindings
            .iter()
            .copied()
            .chain(self.uniform_size())
            .fold(0u64, u64::saturating_add)
    }

    /// Fails with [`ForgeError::CapacityExceeded`] when the call's bindings and `extra`
    /// bytes could never fit a budget of `capacity` bytes, of which `in_use` are taken.
    pub fn check_capacity(&self, extra: u64, capacity: u64, in_use: u64) -> Result<()> {
        let total = self.device_bytes().saturating_add(extra);
        if total > capacity {
            return Err(ForgeError::CapacityExceeded {
                what: format!("kernel `{}`: its bindings", self.kernel),
                requested: total,
                capacity,
                in_use,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn covers(groups: u64, limit: u32) {
        let [x, y, z] = fold_groups(groups, limit).expect("foldable");
        assert!(
            x <= limit && y <= limit && z <= limit,
            "{groups}: {x} {y} {z}"
        );
        let total = x as u64 * y as u64 * z as u64;
        assert!(total >= groups, "{groups} groups but only {total} launched");
        // Overshoot stays under one row (or one slice) of the folded shape.
        assert!(
            total - groups < x as u64 * y as u64,
            "{groups}: {x} {y} {z}"
        );
    }

    #[test]
    fn small_counts_stay_one_dimensional() {
        assert_eq!(fold_groups(1, 65535), Ok([1, 1, 1]));
        assert_eq!(fold_groups(65535, 65535), Ok([65535, 1, 1]));
        assert_eq!(fold_groups(0, 65535), Ok([0, 1, 1]));
    }

    #[test]
    fn folds_into_y() {
        assert_eq!(fold_groups(65536, 65535), Ok([32768, 2, 1]));
        assert_eq!(fold_groups(15_626, 1000), Ok([977, 16, 1]));
        for groups in [65536u64, 100_000, 1_000_000, 65535 * 65535] {
            covers(groups, 65535);
            assert_eq!(fold_groups(groups, 65535).map(|d| d[2]), Ok(1));
        }
    }

    #[test]
    fn folds_into_z() {
        let groups = 65535u64 * 65535 + 1;
        let [_, _, z] = fold_groups(groups, 65535).expect("foldable");
        assert_eq!(z, 2);
        covers(groups, 65535);
        covers(65535u64 * 65535 * 65535, 65535);
        for groups in 1..=343u64 {
            covers(groups, 7);
        }
    }

    #[test]
    fn rejects_the_impossible() {
        let limit = 65535u32;
        let max = limit as u64 * limit as u64 * limit as u64;
        assert_eq!(
            fold_groups(max + 1, limit),
            Err(FoldError {
                groups: max + 1,
                limit
            })
        );
        assert!(fold_groups(u64::MAX, limit).is_err());
        assert!(fold_groups(5, 0).is_err());
        assert_eq!(fold_groups(343, 7), Ok([7, 7, 7]));
        assert!(fold_groups(344, 7).is_err());
    }

    #[test]
    fn grids_dispatch_as_they_are_until_a_dimension_passes_the_limit() {
        let limits = wgpu::Limits::default();
        let s2 = Schedule::with_workgroup(1).with_shape(&[16, 16]);
        let g = grid("k", &s2, Threads([37, 19, 1]), &limits).unwrap();
        assert_eq!((g.logical, g.dispatch), ([3, 2, 1], [3, 2, 1]));
        // Past the limit in y, and in z: folded from the linear numbering.
        let one = Schedule::with_workgroup(1).with_shape(&[1, 1, 1]);
        for t in [[3u64, 70_001, 1], [1, 2, 70_001], [70_001, 2, 1]] {
            let g = grid("k", &one, Threads(t), &limits).unwrap();
            assert_eq!(g.logical, t);
            let [x, y, z] = g.dispatch;
            assert!(
                x <= 65535 && y <= 65535 && z <= 65535,
                "{t:?}: {:?}",
                g.dispatch
            );
            assert!(x as u64 * y as u64 * z as u64 >= g.groups());
        }
        assert!(matches!(
            grid("k", &one, Threads([1 << 16, 1 << 16, 1]), &limits),
            Err(ForgeError::TooManyWorkgroups { .. })
        ));
        assert!(matches!(
            grid("k", &s2, Threads([1 << 16, 1 << 16, 1]), &limits),
            Err(ForgeError::GridTooLarge { .. })
        ));
        assert!(matches!(
            grid("k", &one, Threads([5, 0, 1]), &limits),
            Err(ForgeError::EmptyWork { .. })
        ));
        // The last workgroup's ids past u32: 2^32 - 1 threads in x, workgroups of 7.
        let seven = Schedule::with_workgroup(1).with_shape(&[7, 1]);
        assert!(matches!(
            grid("k", &seven, Threads([u32::MAX as u64, 1, 1]), &limits),
            Err(ForgeError::GridTooLarge { .. })
        ));
        let wide = Schedule::with_workgroup(1).with_shape(&[256, 1]);
        assert!(grid("k", &wide, Threads([u32::MAX as u64, 1, 1]), &limits).is_ok());
    }

    #[test]
    fn grid_schedules_are_checked_per_dimension() {
        let limits = wgpu::Limits::default();
        let ok = Schedule::with_workgroup(1).with_shape(&[16, 16]);
        assert!(check_schedule("k", &ok, &limits).is_ok());
        for bad in [
            ok.with_shape(&[32, 16]),    // 512 invocations
            ok.with_shape(&[1, 1, 128]), // z over 64
            ok.with_shape(&[16, 0]),
            Schedule { items: 2, ..ok },
            Schedule {
                workgroup_y: None,
                workgroup_z: Some(2),
                ..ok
            },
        ] {
            assert!(
                matches!(
                    check_schedule("k", &bad, &limits),
                    Err(ForgeError::BadSchedule { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn uniform_sizes_are_padded() {
        assert_eq!(uniform_size(1), 16);
        assert_eq!(uniform_size(16), 16);
        assert_eq!(uniform_size(20), 32);
    }

    #[test]
    fn binding_sizes_are_padded_and_limited() {
        let limits = wgpu::Limits {
            max_storage_buffer_binding_size: 1 << 20,
            max_buffer_size: 1 << 30,
            ..wgpu::Limits::default()
        };
        assert_eq!(binding_size("k", "x", 5, &limits).unwrap(), 8);
        assert_eq!(binding_size("k", "x", 1 << 20, &limits).unwrap(), 1 << 20);
        assert!(matches!(
            binding_size("k", "x", (1 << 20) + 1, &limits),
            Err(ForgeError::BindingTooLarge {
                limit_name: "max_storage_buffer_binding_size",
                ..
            })
        ));
        assert!(matches!(
            binding_size("k", "x", 0, &limits),
            Err(ForgeError::EmptyWork { .. })
        ));
        // A saturated size fails the limit instead of wrapping to a small one.
        assert!(binding_size("k", "x", u64::MAX, &limits).is_err());
    }

    #[test]
    fn schedules_are_checked_against_the_limits() {
        let limits = wgpu::Limits::default();
        let max = limits
            .max_compute_workgroup_size_x
            .min(limits.max_compute_invocations_per_workgroup);
        assert!(check_schedule("k", &Schedule::with_workgroup(max), &limits).is_ok());
        for bad in [
            Schedule::with_workgroup(max + 1),
            Schedule::with_workgroup(0),
            Schedule::new(64, 0, 1),
        ] {
            assert!(matches!(
                check_schedule("k", &bad, &limits),
                Err(ForgeError::BadSchedule { .. })
            ));
        }
    }
}
