//! The host side of the loop guard ([`crate::emit::loop_guard`]): on an adapter whose
//! driver cuts long loops short ([`super::adapter::limits_loops`]), one small buffer per
//! device, in which every guarded kernel counts the loops it enters and leaves, checked with
//! every readback and wait. Part of the wgpu device (layer 4).
//!
//! The check costs no submission of its own: the submission that carries guarded launches
//! copies the guard (1 KiB) into a staging buffer of its own at its end, and the wait
//! that a readback makes anyway maps it with the results. When it is set, the readback
//! returns [`ForgeError::LoopLimit`] instead of the results, naming the kernels launched
//! since the last check, and the guard is cleared for the next call.

use super::{STAGING_USAGE, STORAGE_USAGE};
use crate::emit::loop_guard::GUARD_BYTES;
use crate::error::ForgeError;
use crate::shown::shown;

/// The most kernel names an error lists; past them it says how many more.
const MAX_NAMED: usize = 4;

/// The guard buffer, its staging copy and the kernels it covers. See the [module
/// docs](self).
#[derive(Debug)]
pub struct LoopGuard {
    /// Bound to every guarded launch: the count of loops entered and not left through
    /// their own exits, zero unless one was cut.
    buffer: wgpu::Buffer,
    /// Where each submission with guarded launches copies it, to be mapped at the next
    /// wait.
    staging: wgpu::Buffer,
    /// Guarded kernels recorded and not yet submitted.
    recorded: Vec<&'static str>,
    /// Guarded kernels submitted since the last check: what the staging copy covers.
    submitted: Vec<&'static str>,
}

impl LoopGuard {
    /// A guard on `device`, clear.
    pub fn new(device: &wgpu::Device) -> LoopGuard {
        let make = |label, usage| {
            device.create_buffer(&wgpu::BufferDescriptor {
                label: Some(label),
                size: GUARD_BYTES,
                usage,
                // Zeroed at creation, as wgpu zeroes every buffer.
                mapped_at_creation: false,
            })
        };
        LoopGuard {
            buffer: make("forge loop guard", STORAGE_USAGE),
            staging: make("forge loop guard staging", STAGING_USAGE),
            recorded: Vec::new(),
            submitted: Vec::new(),
        }
    }

    /// The buffer guarded kernels bind.
    pub fn buffer(&self) -> &wgpu::Buffer {
        &self.buffer
    }

    /// Notes a guarded launch of `kernel` in the pending work.
    pub fn note(&mut self, kernel: &'static str) {
        if !self.recorded.contains(&kernel) {
            self.recorded.push(kernel);
        }
    }

    /// At the end of a submission's encoder: copies the guard out, where the submission
    /// carries guarded launches.
    pub fn before_submit(&mut self, encoder: &mut wgpu::CommandEncoder) {
        if self.recorded.is_empty() {
            return;
        }
        encoder.copy_buffer_to_buffer(&self.buffer, 0, &self.staging, 0, GUARD_BYTES);
        for k in self.recorded.drain(..) {
            if !self.submitted.contains(&k) {
                self.submitted.push(k);
            }
        }
    }

    /// The staging buffer to map at the next wait, where a submission copied the guard
    /// since the last check.
    pub fn to_check(&self) -> Option<&wgpu::Buffer> {
        (!self.submitted.is_empty()).then_some(&self.staging)
    }

    /// From the staging buffer, mapped by the wait: how many slots hold loops entered
    /// and not left (0 unless one was cut); unmaps it.
    pub fn read_mapped(&self) -> Option<u32> {
        let word = self.staging.get_mapped_range(..).ok().map(|view| {
            view.chunks_exact(4)
                .filter(|w| w.iter().any(|b| *b != 0))
                .count() as u32
        });
        self.staging.unmap();
        word
    }

    /// The check, once the staging buffer is mapped (`word`: its value) or failed to map
    /// (`None`: nothing is known, and the kernels stay to be checked by the next wait).
    /// Clears the guard when it was set: the launches that set it are reported now.
    pub fn check(
        &mut self,
        queue: &wgpu::Queue,
        word: Option<u32>,
        adapter: &str,
    ) -> Result<(), ForgeError> {
        let Some(word) = word else {
            return Ok(());
        };
        let kernels = std::mem::take(&mut self.submitted);
        if word == 0 {
            return Ok(());
        }
        // Lands before the next submission's launches.
        queue.write_buffer(&self.buffer, 0, &[0u8; GUARD_BYTES as usize]);
        Err(ForgeError::LoopLimit {
            kernels: name_kernels(&kernels),
            adapter: shown(adapter),
            limit: super::adapter::LLVMPIPE_LOOP_LIMIT,
        })
    }
}

/// `` kernel `a` ``, or `` one of the kernels `a`, `b` `` (at most [`MAX_NAMED`] names), or
/// `the work in flight` for none: how the guard's and the timeout's errors name kernels.
pub(crate) fn name_kernels(kernels: &[&'static str]) -> String {
    let named: Vec<String> = kernels
        .iter()
        .take(MAX_NAMED)
        .map(|k| format!("`{}`", shown(k)))
        .collect();
    match kernels.len() {
        0 => "the work in flight".to_string(),
        1 => format!("kernel {}", named[0]),
        n if n <= MAX_NAMED => format!("one of the kernels {}", named.join(", ")),
        n => format!(
            "one of the kernels {} and {} more",
            named.join(", "),
            n - MAX_NAMED
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::name_kernels;

    #[test]
    fn kernels_are_named_and_bounded() {
        assert_eq!(name_kernels(&["a"]), "kernel `a`");
        assert_eq!(name_kernels(&["a", "b"]), "one of the kernels `a`, `b`");
        assert_eq!(
            name_kernels(&["a", "b", "c", "d", "e", "f"]),
            "one of the kernels `a`, `b`, `c`, `d` and 2 more"
        );
    }
}
