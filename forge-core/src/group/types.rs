//! The devices of a group by type, and what is done once per type: certification and
//! tuning. Part of the groups (layer 7).
//!
//! Two devices are of one type when their topology hashes and emission backends agree:
//! the two halves of the key a tuned manifest is trusted under
//! ([`crate::manifest::ManifestKey`]). Such devices run the same code the same way, so a
//! certificate or a tuned winner found on one holds for all: [`DeviceGroup::tune`] tunes
//! on the first device of each type and hands the manifest to the others (through the
//! cache where they share one, and in memory always); [`DeviceGroup::certify`] certifies
//! on the first of each type. The types are done one after another, not at once: tuning
//! times candidates, and devices that share a host (or, replicated, one adapter) would
//! disturb each other's timings.

use super::{describe, device_failed, DeviceGroup};
use crate::certify::{CertOptions, CertReport};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::target::Backend;
use crate::tune::{TuneOptions, TuneReport};

/// Devices of a group that are of one type: the same topology hash and emission.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceType {
    /// The hardware profile's hash ([`crate::ForgeRuntime::topology_hash`]).
    pub topology_hash: String,
    /// The shader form the devices compile kernels from.
    pub emission: Backend,
    /// The adapter's name.
    pub adapter: String,
    /// The devices of this type, by index in the group, in order.
    pub devices: Vec<usize>,
}

impl DeviceGroup {
    /// The group's devices by type, in the order of each type's first device.
    ///
    /// ```
    /// use forge_core::group::DeviceGroup;
    /// use forge_core::{Backend, ForgeRuntime};
    /// let builder = ForgeRuntime::builder().capacity(1 << 20);
    /// // Two devices of one type, and one that compiles SPIR-V: its manifests are apart.
    /// let mut runtimes = DeviceGroup::replicate(builder.clone(), 2)?.into_runtimes();
    /// runtimes.push(builder.emission(Backend::Spirv).build()?);
    /// let group = DeviceGroup::from_runtimes(runtimes)?;
    /// let types = group.device_types();
    /// assert_eq!(types.iter().map(|t| t.devices.clone()).collect::<Vec<_>>(), [vec![0, 1], vec![2]]);
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn device_types(&self) -> Vec<DeviceType> {
        let mut types: Vec<DeviceType> = Vec::new();
        for (i, rt) in self.members.iter().enumerate() {
            let (hash, emission) = (rt.topology_hash(), rt.emission());
            match types
                .iter_mut()
                .find(|t| t.topology_hash == hash && t.emission == emission)
            {
                Some(t) => t.devices.push(i),
                None => types.push(DeviceType {
                    topology_hash: hash,
                    emission,
                    adapter: rt.adapter_info().name.clone(),
                    devices: vec![i],
                }),
            }
        }
        types
    }

    /// Tunes `kernel` once per device type, on the type's first device, and makes the
    /// winner every device of the type runs with ([`crate::ForgeRuntime::tuned_schedule`]).
    /// Returns each type with its report. Errors: those of [`crate::tune::tune`], as
    /// [`crate::ForgeError::DeviceFailed`] naming the device that tuned.
    pub fn tune(
        &mut self,
        kernel: &dyn Kernel,
        opts: &TuneOptions,
    ) -> Result<Vec<(DeviceType, TuneReport)>> {
        let mut out = Vec::new();
        for t in self.device_types() {
            let first = t.devices[0];
            let rt = &mut self.members[first];
            let report = crate::tune::tune(rt, kernel, opts).map_err(|e| {
                device_failed(
                    first,
                    describe(rt),
                    format!("tuning `{}`", kernel.name()),
                    e,
                )
            })?;
            for &peer in &t.devices[1..] {
                self.members[peer].remember_tuning(kernel, report.manifest.clone());
            }
            out.push((t, report));
        }
        Ok(out)
    }

    /// Certifies `kernel` once per device type, on the type's first device, at the
    /// schedule the type runs it with ([`crate::ForgeRuntime::schedule_for`]). Returns
    /// each type with its report. Errors: those of [`crate::certify::certify`], as
    /// [`crate::ForgeError::DeviceFailed`] naming the device.
    pub fn certify(
        &mut self,
        kernel: &dyn Kernel,
        opts: &CertOptions,
    ) -> Result<Vec<(DeviceType, CertReport)>> {
        let mut out = Vec::new();
        for t in self.device_types() {
            let first = t.devices[0];
            let rt = &mut self.members[first];
            let schedule = rt.schedule_for(kernel);
            let report = crate::certify::certify(rt, kernel, &schedule, opts).map_err(|e| {
                let work = format!("certifying `{}`", kernel.name());
                device_failed(first, describe(rt), work, e)
            })?;
            out.push((t, report));
        }
        Ok(out)
    }
}
