//! Launches whose number of invocations is read on the device
//! (`#[forge_kernel(indirect = count[0])]`): the checks of the count against its bound.
//! Part of the runtime (layer 5), over the backend seam: the same on wgpu and CUDA.
//!
//! The generated kernel runs `min(count[0], threads)` invocations, so a count past its
//! bound never reaches past the bindings. What it must not do is pass unseen, since a launch
//! that ran fewer invocations than asked leaves its results short:
//! - on host data the count is on the host, and a count past the bound is an error before
//!   anything runs;
//! - on tensors the count is on the device, written by an earlier launch in the same
//!   submission. Each such launch copies the count, as it is when the launch runs, into a
//!   log of the runtime's (4 bytes, behind the launches before it), and the next readback
//!   (a download, or a host call) reads the log with its results and checks every count
//!   logged since the last one. A count past its bound is then an error in place of the
//!   results.

use crate::backend::{Command, Memory};
use crate::error::{ForgeError, Result};
use crate::kernel::{Indirect, Kernel};
use crate::runtime::launch::HostArg;
use crate::runtime::ForgeRuntime;
use crate::schedule::Threads;
use crate::tensor::RawTensor;

/// Counts one memory of the log holds; the log takes another memory when one fills.
const SLOTS: u64 = 1024;

/// One logged launch: what its count is checked against.
struct Logged {
    kernel: &'static str,
    count_at: String,
    bound: u32,
}

/// The counts of tensor launches since the last readback.
#[derive(Default)]
pub(crate) struct IndirectLog {
    /// Memories of [`SLOTS`] counts each, kept for the runtime's life once taken.
    memory: Vec<Memory>,
    /// Launches logged since the last check, in slot order.
    logged: Vec<Logged>,
}

/// Where a tensor launch's count goes in the log: from `from` at `from_offset`, into the
/// log's memory `index` at `to_offset`.
pub(crate) struct LoggedCopy<'t> {
    from: &'t Memory,
    from_offset: u64,
    index: usize,
    to_offset: u64,
}

impl IndirectLog {
    /// The command that copies a logged count, to be recorded right before its launch.
    pub(crate) fn copy<'a>(&'a self, c: LoggedCopy<'a>) -> Command<'a> {
        Command::Copy {
            from: c.from,
            from_offset: c.from_offset,
            to: &self.memory[c.index],
            to_offset: c.to_offset,
            bytes: 4,
        }
    }
}

/// `count[0]`, as messages name the count.
fn count_at(kernel: &dyn Kernel, at: Indirect) -> String {
    let name = kernel.layout().get(at.binding).map_or("?", |b| b.name);
    format!("{name}[{}]", at.element)
}

/// The byte offset of the count in its binding of `bytes` bytes, or an error naming the
/// element past it.
fn count_offset(kernel: &dyn Kernel, at: Indirect, bytes: u64) -> Result<u64> {
    let offset = u64::from(at.element) * 4;
    if offset + 4 <= bytes {
        Ok(offset)
    } else {
        Err(ForgeError::InvalidArgument {
            kernel: kernel.name(),
            message: format!(
                "the launch reads its count of invocations from `{}`, past the binding's {} elements",
                count_at(kernel, at),
                bytes / 4
            ),
        })
    }
}

impl ForgeRuntime {
    /// A host call of an indirect kernel: its count, read from the host data, within its
    /// bound. Nothing runs otherwise.
    pub(crate) fn check_indirect_host(
        &self,
        kernel: &dyn Kernel,
        threads: &Threads,
        args: &[HostArg<'_>],
    ) -> Result<()> {
        let Some(at) = kernel.declarations().indirect else {
            return Ok(());
        };
        let data: &[u8] = match args.get(at.binding) {
            Some(HostArg::In(data)) => data,
            Some(HostArg::InOut(data)) => data,
            // The layout checks (`check_kind`) name a wrong kind first.
            _ => return Ok(()),
        };
        let offset = count_offset(kernel, at, data.len() as u64)? as usize;
        let count = u32::from_le_bytes(
            data[offset..offset + 4]
                .try_into()
                .expect("four bytes, checked"),
        );
        let bound = threads.indirect_bound();
        if count > bound {
            return Err(ForgeError::IndirectCount {
                kernel: kernel.name(),
                count_at: count_at(kernel, at),
                count,
                bound: bound.into(),
                ran: "",
            });
        }
        Ok(())
    }

    /// A tensor launch of an indirect kernel: the command that copies its count into the
    /// log as the launch runs, to go right before the launch. `None` for other kernels.
    pub(crate) fn log_indirect<'t>(
        &mut self,
        kernel: &dyn Kernel,
        threads: &Threads,
        tensors: &[&'t RawTensor],
    ) -> Result<Option<LoggedCopy<'t>>> {
        let Some(at) = kernel.declarations().indirect else {
            return Ok(None);
        };
        let Some(tensor) = tensors.get(at.binding) else {
            return Ok(None);
        };
        let from_offset = count_offset(kernel, at, tensor.bytes())?;
        let slot = self.indirect.logged.len() as u64;
        let (index, to_offset) = ((slot / SLOTS) as usize, (slot % SLOTS) * 4);
        if index == self.indirect.memory.len() {
            let memory = self
                .device
                .lease(SLOTS * 4, &|| "the counts of indirect launches".to_string())?;
            self.indirect.memory.push(memory);
        }
        self.indirect.logged.push(Logged {
            kernel: kernel.name(),
            count_at: count_at(kernel, at),
            bound: threads.indirect_bound(),
        });
        Ok(Some(LoggedCopy {
            from: tensor.memory(),
            from_offset,
            index,
            to_offset,
        }))
    }

    /// Forgets the last logged launch, whose recording failed.
    pub(crate) fn unlog_indirect(&mut self) {
        self.indirect.logged.pop();
    }

    /// Reads `from` into `into`, behind every pending launch, and with them the counts
    /// logged since the last readback: a count past its bound is an error in place of the
    /// results.
    pub(crate) async fn read_checked(
        &mut self,
        from: &[&Memory],
        into: &mut [&mut [u8]],
    ) -> Result<()> {
        let logged = std::mem::take(&mut self.indirect.logged);
        if logged.is_empty() {
            return self.device.read(from, into).await;
        }
        let used = logged.len().div_ceil(SLOTS as usize);
        let mut counts = vec![0u32; used * SLOTS as usize];
        {
            let mut all_from: Vec<&Memory> = from.to_vec();
            all_from.extend(self.indirect.memory[..used].iter());
            let mut all_into: Vec<&mut [u8]> = into.iter_mut().map(|s| &mut **s).collect();
            all_into.extend(
                counts
                    .chunks_mut(SLOTS as usize)
                    .map(bytemuck::cast_slice_mut::<u32, u8>),
            );
            self.device.read(&all_from, &mut all_into).await?;
        }
        match logged
            .iter()
            .zip(&counts)
            .find(|(l, &count)| count > l.bound)
        {
            Some((l, &count)) => Err(ForgeError::IndirectCount {
                kernel: l.kernel,
                count_at: l.count_at.clone(),
                count,
                bound: l.bound.into(),
                ran: ": it ran the bound, and the results are not returned",
            }),
            None => Ok(()),
        }
    }
}
