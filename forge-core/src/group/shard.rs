//! Sharded calls: a batch split across a group's devices, each part run where it landed,
//! gathered in order. Part of the groups (layer 7).
//!
//! - [`DeviceGroup::shards`] splits `0..total` into one contiguous [`Shard`] per device,
//!   as even as it can be (the first `total % n` devices take one more; a device past the
//!   batch takes none and does nothing).
//! - [`DeviceGroup::map_shards`] runs a closure on every shard at once, each on its
//!   device's runtime (see [`super::parallel`]), and returns the parts in order: the typed
//!   sharded forms of the built-ins (`forge_kernels::sharded`) are written on it.
//! - [`DeviceGroup::run_sharded`] does it for any kernel, type-erased, along a `u32`
//!   dimension that a [`Split`] names: each binding whose length grows in proportion to it
//!   is cut into contiguous blocks (the dimension is outermost: rows of a row-major
//!   matrix), each binding whose length does not is given whole to every device, and the
//!   outputs, which must all grow with it, are concatenated.
//! - [`DeviceGroup::certify_split`] certifies a split: on the kernel's certification
//!   cases, the sharded result must equal the single-device result (bit for bit where every
//!   device is of one type, which runs one schedule) and the oracle's.
//!
//! Each device runs its shard with its own schedule for the shard's size
//! ([`ForgeRuntime::schedule_for_threads`]): the winner tuned for its type.

use super::parallel::{run_parts, Part};
use super::{describe, device_failed, DeviceGroup};
use crate::certify::{compare, CertOptions};
use crate::error::{ForgeError, Result};
use crate::kernel::{DynArgs, HostBuffer, Kernel, ScalarType, ScalarValue};
use crate::runtime::launch::dyn_sizes;
use crate::runtime::ForgeRuntime;
use std::ops::Range;

/// One device's part of a batch: the device's index in the group and its range of the
/// batch (never empty).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Shard {
    /// The device's index in the group.
    pub device: usize,
    /// Its part of `0..total`.
    pub range: Range<usize>,
}

impl Shard {
    /// How many items of the batch the shard holds (at least one).
    pub fn len(&self) -> usize {
        self.range.len()
    }

    /// Always false: a device with nothing to do has no shard.
    pub fn is_empty(&self) -> bool {
        false
    }
}

impl DeviceGroup {
    /// `0..total` split into one contiguous shard per device, in device order, the sizes
    /// differing by at most one; devices past `total` get none.
    ///
    /// ```
    /// # use forge_core::group::{DeviceGroup, Shard};
    /// # let group = DeviceGroup::replicate(forge_core::ForgeRuntime::builder().capacity(1 << 20), 3)?;
    /// let ranges: Vec<_> = group.shards(7).into_iter().map(|s| s.range).collect();
    /// assert_eq!(ranges, [0..3, 3..5, 5..7]);
    /// assert_eq!(group.shards(2).len(), 2); // the third device has nothing to do
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn shards(&self, total: usize) -> Vec<Shard> {
        let n = self.len();
        let (base, extra) = (total / n, total % n);
        let mut start = 0;
        (0..n)
            .filter_map(|device| {
                let len = base + usize::from(device < extra);
                let range = start..start + len;
                start += len;
                (len > 0).then_some(Shard { device, range })
            })
            .collect()
    }

    /// Runs `f` on every shard of `0..total` ([`DeviceGroup::shards`]) at once, each with
    /// its device's runtime, and returns what each returned, in shard order. `what` names
    /// the work in errors, with the shard: "`gemm` rows" gives "`gemm` rows 64..128 of 256".
    ///
    /// Errors: `total == 0` ([`ForgeError::EmptyWork`]); a shard that failed
    /// ([`ForgeError::DeviceFailed`], naming its device and range; no part is returned).
    pub fn map_shards<R, F>(&mut self, what: &str, total: usize, f: F) -> Result<Vec<R>>
    where
        R: Send,
        F: Fn(&mut ForgeRuntime, &Shard) -> Result<R> + Sync,
    {
        if total == 0 {
            return Err(ForgeError::EmptyWork {
                kernel: "DeviceGroup::map_shards",
                what: format!("{what}: a batch of 0"),
            });
        }
        let shards = self.shards(total);
        let mut members: Vec<Option<&mut ForgeRuntime>> =
            self.members.iter_mut().map(Some).collect();
        let parts = shards
            .into_iter()
            .filter_map(|shard| {
                Some(Part {
                    device: shard.device,
                    rt: members[shard.device].take()?,
                    input: shard,
                })
            })
            .collect();
        let work =
            |_: usize, s: &Shard| format!("{what} {}..{} of {total}", s.range.start, s.range.end);
        run_parts(parts, &work, &|rt, shard| f(rt, shard))
    }

    /// Runs `kernel` on type-erased host data split along `split`'s dimension across the
    /// devices (see the [module docs](self)), and returns the final contents of every
    /// writable binding, in layout order, as [`ForgeRuntime::run_dyn`] does on one device.
    ///
    /// ```
    /// # use forge_core::group::{DeviceGroup, Split};
    /// # use forge_core::*;
    /// # use forge_core::kernel::*;
    /// # struct Doubles;
    /// # impl Kernel for Doubles {
    /// #     fn name(&self) -> &'static str { "doc_doubles" }
    /// #     fn wgsl(&self, s: &Schedule) -> String { format!("struct P {{ n: u32 }}
    /// #         @group(0) @binding(0) var<storage, read> x: array<f32>;
    /// #         @group(0) @binding(1) var<storage, read_write> y: array<f32>;
    /// #         @group(0) @binding(2) var<uniform> p: P;
    /// #         @compute @workgroup_size({}) fn main(@builtin(global_invocation_id) g: vec3<u32>) {{
    /// #             if g.x < p.n {{ y[g.x] = 2.0 * x[g.x]; }} }}", s.workgroup) }
    /// #     fn layout(&self) -> &'static [Binding] {
    /// #         const F: ElemType = ElemType::scalar(ScalarType::F32);
    /// #         &[Binding { binding: 0, name: "x", elem: F, access: Access::Read, len: "n" },
    /// #           Binding { binding: 1, name: "y", elem: F, access: Access::Out, len: "n" }]
    /// #     }
    /// #     fn scalars(&self) -> &'static [ScalarParam] { &[ScalarParam { name: "n", ty: ScalarType::U32 }] }
    /// #     fn default_schedule(&self) -> Schedule { Schedule::with_workgroup(64) }
    /// #     fn tune_space(&self) -> TuneSpace { TuneSpace::new(&[64], &[1], &[1]) }
    /// #     fn cert_cases(&self) -> Vec<Vec<ScalarValue>> { vec![vec![ScalarValue::U32(5)]] }
    /// #     fn binding_lens_at(&self, _: &Schedule, s: &[ScalarValue]) -> Result<Vec<u64>> { Ok(vec![s[0].bits() as u64; 2]) }
    /// #     fn grid_threads_at(&self, _: &Schedule, s: &[ScalarValue]) -> Result<forge_core::Threads> { Ok(forge_core::Threads::from(s[0].bits() as u64)) }
    /// #     fn cpu_dyn(&self, _: &Schedule, a: &DynArgs) -> Result<Vec<HostBuffer>> {
    /// #         let x: &[f32] = bytemuck::cast_slice(a.buffers[0].as_ref().unwrap().bytes());
    /// #         let y: Vec<f32> = x.iter().map(|v| 2.0 * v).collect();
    /// #         Ok(vec![HostBuffer::from_slice(ElemType::scalar(ScalarType::F32), &y)])
    /// #     }
    /// # }
    /// let mut group = DeviceGroup::replicate(ForgeRuntime::builder().capacity(1 << 20), 2)?;
    /// // `y = 2·x` over `n` elements: x and y are cut in two blocks of `n`.
    /// let f32s = ElemType::scalar(ScalarType::F32);
    /// let x = [1.0f32, 2.0, 3.0, 4.0, 5.0];
    /// let args = DynArgs {
    ///     scalars: vec![ScalarValue::U32(5)],
    ///     buffers: vec![Some(HostBuffer::from_slice(f32s, &x)), None],
    /// };
    /// let out = group.run_sharded(&Doubles, &Split::along("n"), &args)?;
    /// assert_eq!(out[0], HostBuffer::from_slice(f32s, &[2.0f32, 4.0, 6.0, 8.0, 10.0]));
    /// // The split is certified on the kernel's cases: sharded = one device = the oracle.
    /// assert!(group.certify_split(&Doubles, &Split::along("n"), &Default::default())?.passed());
    /// # Ok::<(), ForgeError>(())
    /// ```
    ///
    /// Errors: those of [`ForgeRuntime::run_dyn`] for the whole call (checked before any
    /// device runs); a split the kernel does not allow ([`ForgeError::InvalidArgument`],
    /// naming the binding); a device that failed ([`ForgeError::DeviceFailed`]).
    pub fn run_sharded(
        &mut self,
        kernel: &dyn Kernel,
        split: &Split,
        args: &DynArgs,
    ) -> Result<Vec<HostBuffer>> {
        // The whole call, at the declared schedule; each shard is checked again at its own.
        let (lens, _) = dyn_sizes(kernel, &kernel.default_schedule(), args)?;
        args.check_data(kernel, &lens)?;
        let plan = SplitPlan::new(kernel, split, args)?;
        let what = format!("`{}` {}", kernel.name(), plan.axis_name);
        let parts = self.map_shards(&what, plan.total, |rt, shard| {
            let sub = plan.shard_args(kernel, args, &shard.range)?;
            let threads = kernel.threads(&sub.scalars)?;
            let schedule = rt.schedule_for_threads(kernel, threads);
            rt.run_dyn(kernel, &schedule, &sub)
        })?;
        Ok(plan.gather(kernel, parts))
    }

    /// Certifies `split` for `kernel` on this group: on each certification case of the
    /// kernel whose dimension is at least 2, with test vectors drawn from `opts`'s seed, the
    /// sharded result ([`DeviceGroup::run_sharded`]) must match the result of device 0 alone
    /// and the oracle's within the kernel's tolerance, and, where every device is of one type
    /// (the same hardware and schedule), equal device 0's bit for bit.
    ///
    /// Errors: a split the kernel does not allow ([`ForgeError::InvalidArgument`]); a
    /// device that failed ([`ForgeError::DeviceFailed`]). A mismatch is not an error: it is
    /// a line of [`SplitReport::failures`].
    pub fn certify_split(
        &mut self,
        kernel: &dyn Kernel,
        split: &Split,
        opts: &CertOptions,
    ) -> Result<SplitReport> {
        let axis = split.axis_index(kernel)?;
        let one_type = self.device_types().len() == 1;
        let tol = kernel.tolerance();
        let mut report = SplitReport {
            kernel: kernel.name().to_string(),
            axis: kernel.scalars()[axis].name.to_string(),
            devices: self.len(),
            cases: 0,
            identical: 0,
            max_abs_err: 0.0,
            failures: Vec::new(),
            skipped: Vec::new(),
        };
        for (case, scalars) in kernel.cert_cases().into_iter().enumerate() {
            let label = format!(
                "case {case} ({})",
                crate::kernel::describe_scalars(kernel, &scalars)
            );
            if scalars.get(axis).map_or(0, ScalarValue::bits) < 2 {
                report
                    .skipped
                    .push(format!("{label}: `{}` < 2, nothing to split", report.axis));
                continue;
            }
            let bytes: u64 = kernel
                .binding_lens(&scalars)?
                .iter()
                .zip(kernel.layout())
                .map(|(&len, b)| len.saturating_mul(b.elem.size() as u64))
                .sum();
            if bytes > opts.max_case_bytes {
                report.skipped.push(format!(
                    "{label}: {bytes} bytes of bindings, over {}",
                    opts.max_case_bytes
                ));
                continue;
            }
            let args = crate::tune::problem_args(kernel, &scalars, opts)?;
            let threads = kernel.threads(&scalars)?;
            let rt = &mut self.members[0];
            let schedule = rt.schedule_for_threads(kernel, threads);
            let single = rt.run_dyn(kernel, &schedule, &args).map_err(|e| {
                let work = format!("the single-device run of {label}");
                device_failed(0, describe(rt), work, e)
            })?;
            let oracle = kernel.cpu_dyn(&schedule, &args)?;
            let sharded = self.run_sharded(kernel, split, &args)?;
            report.cases += 1;
            let outputs = kernel.layout().iter().filter(|b| b.access.writable());
            let mut identical = true;
            for (b, ((got, one), want)) in outputs.zip(sharded.iter().zip(&single).zip(&oracle)) {
                identical &= got == one;
                for (against, reference) in [("device 0 alone", one), ("the oracle", want)] {
                    let cmp = compare(got, reference, tol);
                    report.max_abs_err = report.max_abs_err.max(cmp.max_abs);
                    if !cmp.ok() {
                        report.failures.push(format!(
                            "{label}: `{}` sharded differs from {against}{}",
                            b.name,
                            cmp.first
                                .map(|m| format!(
                                    " at element {}: {} against {}",
                                    m.index, m.got, m.want
                                ))
                                .unwrap_or_default()
                        ));
                    }
                }
            }
            if identical {
                report.identical += 1;
            } else if one_type {
                report.failures.push(format!(
                    "{label}: every device is of one type, yet the sharded result is not device 0's bit for bit"
                ));
            }
        }
        Ok(report)
    }
}

/// The dimension a type-erased call is split along: a `u32` scalar parameter of the
/// kernel, named ([`Split::along`]) or the one the kernel declares
/// ([`Split::declared`], [`Declarations::batch_axis`](crate::kernel::Declarations::batch_axis)).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    axis: Option<String>,
}

impl Split {
    /// Along the scalar parameter `axis` (`"m"` for rows of `gemm`'s `A` and `C`).
    pub fn along(axis: impl Into<String>) -> Split {
        Split {
            axis: Some(axis.into()),
        }
    }

    /// Along the dimension the kernel declares as its batch axis ([`Declarations::batch_axis`](crate::kernel::Declarations::batch_axis));
    /// a kernel that declares none is an error when the split is used.
    pub fn declared() -> Split {
        Split { axis: None }
    }

    /// The index of the split's dimension among `kernel`'s scalars. Errors: no such
    /// parameter, one that is not a `u32`, or no declared axis
    /// ([`ForgeError::InvalidArgument`]).
    fn axis_index(&self, kernel: &dyn Kernel) -> Result<usize> {
        let name = kernel.name();
        let invalid = |message: String| ForgeError::InvalidArgument {
            kernel: name,
            message,
        };
        let axis = match (&self.axis, kernel.declarations().batch_axis) {
            (Some(a), _) => a.as_str(),
            (None, Some(a)) => a,
            (None, None) => {
                return Err(invalid(
                    "the kernel declares no batch axis; name the dimension to split along with `Split::along`".into(),
                ))
            }
        };
        let scalars = kernel.scalars();
        let index = scalars.iter().position(|s| s.name == axis).ok_or_else(|| {
            let names: Vec<&str> = scalars.iter().map(|s| s.name).collect();
            invalid(format!(
                "no scalar parameter `{axis}` to split along; the kernel's are: {}",
                names.join(", ")
            ))
        })?;
        if scalars[index].ty != ScalarType::U32 {
            return Err(invalid(format!(
                "`{axis}` is a `{}` parameter; a split runs along a `u32` size",
                scalars[index].ty.wgsl()
            )));
        }
        Ok(index)
    }
}

/// How one call splits: the dimension, its extent, and for each binding the elements of
/// one step of the dimension (`None`: given whole to every device).
struct SplitPlan {
    axis: usize,
    axis_name: &'static str,
    total: usize,
    units: Vec<Option<u64>>,
}

impl SplitPlan {
    /// The plan for `args`: each binding's length at the full extent, at 1 and at 2 tells
    /// whether it grows in proportion to the dimension (split), does not change with it
    /// (whole), or neither (an error); every writable binding must be split.
    fn new(kernel: &dyn Kernel, split: &Split, args: &DynArgs) -> Result<SplitPlan> {
        let axis = split.axis_index(kernel)?;
        let axis_name = kernel.scalars()[axis].name;
        let total = args.scalars[axis].bits() as usize;
        let at = |v: u32| -> Result<Vec<u64>> {
            let mut scalars = args.scalars.clone();
            scalars[axis] = ScalarValue::U32(v);
            kernel.binding_lens(&scalars)
        };
        let (full, one, two) = (at(total as u32)?, at(1)?, at(2)?);
        let mut units = Vec::with_capacity(full.len());
        for (i, b) in kernel.layout().iter().enumerate() {
            let (f, o, t) = (full[i], one[i], two[i]);
            let unit = if o > 0 && t == 2 * o && f == total as u64 * o {
                Some(o)
            } else if f == o && t == o {
                None
            } else {
                return Err(ForgeError::InvalidArgument {
                    kernel: kernel.name(),
                    message: format!(
                        "binding `{}` (length `{}`) neither grows in proportion to `{axis_name}` nor stays the same; the call cannot be split along `{axis_name}`",
                        b.name, b.len
                    ),
                });
            };
            if unit.is_none() && b.access.writable() {
                return Err(ForgeError::InvalidArgument {
                    kernel: kernel.name(),
                    message: format!(
                        "`{}` is written but does not grow with `{axis_name}`: every device would write all of it; split along a dimension that every output grows with",
                        b.name
                    ),
                });
            }
            units.push(unit);
        }
        Ok(SplitPlan {
            axis,
            axis_name,
            total,
            units,
        })
    }

    /// The arguments of the shard `range`: the dimension set to its length, each split
    /// binding cut to its block, the others whole. Checks that each split binding's
    /// length at the shard's extent is its block's (a length that is proportional at 1, 2
    /// and the whole extent may still round elsewhere).
    fn shard_args(
        &self,
        kernel: &dyn Kernel,
        args: &DynArgs,
        range: &Range<usize>,
    ) -> Result<DynArgs> {
        let mut scalars = args.scalars.clone();
        scalars[self.axis] = ScalarValue::U32(range.len() as u32);
        let lens = kernel.binding_lens(&scalars)?;
        let buffers = kernel
            .layout()
            .iter()
            .zip(&args.buffers)
            .zip(self.units.iter().zip(lens))
            .map(|((b, buf), (unit, len))| {
                let Some(unit) = *unit else {
                    return Ok(buf.clone());
                };
                if len != unit * range.len() as u64 {
                    return Err(ForgeError::InvalidArgument {
                        kernel: kernel.name(),
                        message: format!(
                            "binding `{}` (length `{}`) is {len} long at `{}` = {}, not {}: it is not proportional to `{}`",
                            b.name, b.len, self.axis_name, range.len(), unit * range.len() as u64, self.axis_name
                        ),
                    });
                }
                Ok(buf.as_ref().map(|buf| {
                    let size = b.elem.size();
                    let (start, end) = (range.start * unit as usize, range.end * unit as usize);
                    HostBuffer::from_slice::<u8>(b.elem, &buf.bytes()[start * size..end * size])
                }))
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(DynArgs { scalars, buffers })
    }

    /// The shards' outputs (one list per shard, writable bindings in layout order), each
    /// binding's blocks concatenated in shard order.
    fn gather(&self, kernel: &dyn Kernel, parts: Vec<Vec<HostBuffer>>) -> Vec<HostBuffer> {
        let outputs: Vec<_> = kernel
            .layout()
            .iter()
            .filter(|b| b.access.writable())
            .collect();
        outputs
            .iter()
            .enumerate()
            .map(|(j, b)| {
                let bytes: Vec<u8> = parts
                    .iter()
                    .flat_map(|p| p.get(j).map_or(&[][..], HostBuffer::bytes))
                    .copied()
                    .collect();
                HostBuffer::from_slice::<u8>(b.elem, &bytes)
            })
            .collect()
    }
}

/// What [`DeviceGroup::certify_split`] found.
#[non_exhaustive]
#[derive(Clone, Debug, PartialEq)]
pub struct SplitReport {
    /// The kernel's name.
    pub kernel: String,
    /// The dimension split along.
    pub axis: String,
    /// The devices the group split across.
    pub devices: usize,
    /// Cases that ran.
    pub cases: usize,
    /// Cases whose sharded result equals device 0's alone bit for bit.
    pub identical: usize,
    /// The largest absolute error of the sharded result against device 0's and the
    /// oracle's.
    pub max_abs_err: f64,
    /// One line per check that failed.
    pub failures: Vec<String>,
    /// One line per case left out, with the reason.
    pub skipped: Vec<String>,
}

impl SplitReport {
    /// Whether at least one case ran and every check passed.
    pub fn passed(&self) -> bool {
        self.cases > 0 && self.failures.is_empty()
    }
}
