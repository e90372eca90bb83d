//! Tensors on the devices of a group: made on a named device, found by the device that
//! holds them, and moved between devices only when asked. Part of the groups (layer 7).
//!
//! A tensor belongs to the runtime that made it ([`crate::GpuTensor::runtime_id`]), so a
//! group knows which device holds one without keeping a table. Moving one between devices
//! is a copy through the host: wgpu has no peer-to-peer between devices (two wgpu devices
//! share no memory, even on one adapter), and the CUDA runtime uses the same path for now
//! (a peer copy, `cuMemcpyPeerAsync`, is what it would take instead). Nothing moves
//! implicitly: a launch on a runtime refuses another runtime's tensor
//! ([`ForgeError::ForeignTensor`]).

use super::{no_such_device, DeviceGroup};
use crate::error::{ForgeError, Result};
use crate::tensor::{Element, GpuTensor};

impl DeviceGroup {
    /// Copies `data` to a new tensor on device `device`. Errors: no such device
    /// ([`ForgeError::InvalidArgument`]), and those of [`crate::ForgeRuntime::upload`].
    pub fn upload<T: Element>(&mut self, device: usize, data: &[T]) -> Result<GpuTensor<T>> {
        self.runtime(device)?.upload(data)
    }

    /// A new tensor of `len` zeroed elements on device `device`.
    pub fn zeros<T: Element>(&mut self, device: usize, len: usize) -> Result<GpuTensor<T>> {
        self.runtime(device)?.zeros(len)
    }

    /// The index of the device that holds `tensor`, if a device of this group does.
    pub fn device_of<T: Element>(&self, tensor: &GpuTensor<T>) -> Option<usize> {
        self.members
            .iter()
            .position(|rt| rt.id() == tensor.runtime_id())
    }

    /// The device that holds `tensor`, or [`ForgeError::ForeignTensor`] when none of the
    /// group's does.
    pub(crate) fn holder<T: Element>(
        &self,
        what: &'static str,
        arg: &dyn Fn() -> String,
        tensor: &GpuTensor<T>,
    ) -> Result<usize> {
        self.device_of(tensor)
            .ok_or_else(|| ForgeError::ForeignTensor {
                what,
                arg: format!("{} (no device of the group)", arg()),
                tensor_runtime: tensor.runtime_id(),
                runtime: self.members[0].id(),
            })
    }

    /// Copies `tensor` back to the host from the device that holds it.
    ///
    /// ```
    /// # use forge_core::group::DeviceGroup;
    /// let mut group = DeviceGroup::replicate(forge_core::ForgeRuntime::builder().capacity(1 << 20), 2)?;
    /// let t = group.upload(1, &[1u32, 2, 3])?;
    /// assert_eq!(group.device_of(&t), Some(1));
    /// // Moved explicitly, through the host: a new tensor on device 0, the old one freed.
    /// let t = group.move_to(t, 0)?;
    /// assert_eq!((group.device_of(&t), group.download(&t)?), (Some(0), vec![1, 2, 3]));
    /// # Ok::<(), forge_core::ForgeError>(())
    /// ```
    pub fn download<T: Element>(&mut self, tensor: &GpuTensor<T>) -> Result<Vec<T>> {
        let device = self.holder("download", &|| "the tensor".into(), tensor)?;
        self.members[device].download(tensor)
    }

    /// A copy of `tensor` on device `to`, through the host (see the [module
    /// docs](self)); the tensor stays where it is.
    pub fn copy_to<T: Element>(
        &mut self,
        tensor: &GpuTensor<T>,
        to: usize,
    ) -> Result<GpuTensor<T>> {
        if to >= self.len() {
            return Err(no_such_device("DeviceGroup::copy_to", to, self.len()));
        }
        let data = self.download(tensor)?;
        self.members[to].upload(&data)
    }

    /// `tensor` on device `to`: as it is when it is there already, else copied there through
    /// the host and freed where it was.
    pub fn move_to<T: Element>(&mut self, tensor: GpuTensor<T>, to: usize) -> Result<GpuTensor<T>> {
        if self.device_of(&tensor) == Some(to) {
            return Ok(tensor);
        }
        self.copy_to(&tensor, to)
    }
}
