//! NCCL's collectives between CUDA devices of one process: the [`Collectives`] engine of a
//! group of CUDA runtimes. Layer 4 (the devices), behind the `nccl` feature (which turns
//! on `cuda`): it works on the CUDA device's memory ([`super::cuda::DeviceMem`]).
//!
//! NCCL does the work: its communicators, one per device, come from `ncclCommInitAll`
//! (one process, every device), and each collective is one `ncclGroupStart`, the call for
//! each rank, `ncclGroupEnd`, as NCCL requires when one thread drives several devices.
//! Nothing here moves data itself. Each call goes on the legacy default stream of its
//! device, the stream every operation of the CUDA runtime goes on, so it is ordered after
//! the launches before it and before those after it.
//!
//! libnccl is loaded at run time by `cudarc`, which panics where it is missing, so
//! [`open`] and [`version`] look for it first and return [`ForgeError::MissingLibrary`]
//! with a hint instead.

use super::cuda::DeviceMem;
use crate::backend::collective::check_elem;
use crate::backend::{foreign, Collectives, Memory, ReduceOp};
use crate::error::{ForgeError, Result};
use crate::kernel::{ElemType, ScalarType};
use cudarc::nccl::{result, sys};
use std::ffi::c_void;

/// Where to get libnccl, for the error when it cannot be loaded.
const NCCL_HINT: &str = "NCCL's collectives need libnccl: `pip install nvidia-nccl-cu12` (or the CUDA 13 wheel) or the distribution's libnccl2 provides libnccl.so.2; cudarc opens `libnccl.so`, so link that name to it (`ln -s .../libnccl.so.2 DIR/libnccl.so`) and put DIR on LD_LIBRARY_PATH; without NCCL, leave the group on host staging";

/// Whether libnccl can be loaded, checked before `cudarc` is asked for it (which panics
/// where it is missing).
pub fn library_present() -> bool {
    // SAFETY: loading a library by name runs its initialisers; libnccl's are NVIDIA's.
    unsafe { sys::is_culib_present() }
}

/// [`ForgeError::MissingLibrary`] unless libnccl can be loaded.
fn check_library() -> Result<()> {
    if library_present() {
        Ok(())
    } else {
        Err(ForgeError::MissingLibrary {
            library: "libnccl",
            hint: NCCL_HINT,
        })
    }
}

/// An NCCL error met during `context`.
fn nccl_error(context: &'static str, e: result::NcclError) -> ForgeError {
    ForgeError::Gpu {
        context,
        message: format!("NCCL: {:?}", e.0),
    }
}

/// NCCL's version as `major·10000 + minor·100 + patch` (`22304` for 2.23.4), or
/// [`ForgeError::MissingLibrary`] without libnccl.
pub fn version() -> Result<i32> {
    check_library()?;
    result::get_nccl_version().map_err(|e| nccl_error("asking NCCL's version", e))
}

/// `22304` as `2.23.4` (NCCL 2.9 and later; earlier ones counted `major·1000 + minor·100`).
fn dotted(v: i32) -> String {
    format!("{}.{}.{}", v / 10000, (v / 100) % 100, v % 100)
}

/// NCCL's communicators over the CUDA devices `ordinals`, in that order (a device's rank is
/// its index). Errors: libnccl missing ([`ForgeError::MissingLibrary`], checked first), an
/// ordinal given twice or none given ([`ForgeError::InvalidArgument`]), NCCL's refusal.
pub fn open(ordinals: &[usize]) -> Result<Box<dyn Collectives>> {
    check_library()?;
    let invalid = |message: String| ForgeError::InvalidArgument {
        kernel: "NCCL",
        message,
    };
    if ordinals.is_empty() {
        return Err(invalid("a communicator needs at least one device".into()));
    }
    let mut seen = ordinals.to_vec();
    seen.sort_unstable();
    if seen.windows(2).any(|w| w[0] == w[1]) {
        return Err(invalid(format!(
            "the devices {ordinals:?} repeat an ordinal; NCCL's ranks are distinct GPUs"
        )));
    }
    let devices: Vec<i32> = ordinals
        .iter()
        .map(|&o| i32::try_from(o).map_err(|_| invalid(format!("ordinal {o} is past i32"))))
        .collect::<Result<_>>()?;
    let version = version()?;
    let mut comms: Vec<sys::ncclComm_t> = vec![std::ptr::null_mut(); devices.len()];
    // SAFETY: `comms` has room for one communicator per device of `devices`.
    unsafe { result::comm_init_all(comms.as_mut_ptr(), devices.len() as i32, devices.as_ptr()) }
        .map_err(|e| nccl_error("opening NCCL's communicators", e))?;
    tracing::debug!(version = %dotted(version), ?ordinals, "NCCL communicators open");
    Ok(Box::new(Nccl { comms, version }))
}

/// NCCL's communicators, one per device, in rank order.
#[derive(Debug)]
struct Nccl {
    comms: Vec<sys::ncclComm_t>,
    version: i32,
}

// SAFETY: a communicator is NCCL's handle, used from any thread (one at a time here: the
// engine is behind `&mut`); nothing in it is thread-local.
unsafe impl Send for Nccl {}
// SAFETY: shared use never touches the communicators.
unsafe impl Sync for Nccl {}

impl Drop for Nccl {
    fn drop(&mut self) {
        for &comm in &self.comms {
            // SAFETY: each communicator came from ncclCommInitAll and is destroyed once.
            if let Err(e) = unsafe { result::comm_destroy(comm) } {
                tracing::warn!(error = ?e.0, "destroying an NCCL communicator failed");
            }
        }
    }
}

/// NCCL's type for elements of `elem`, and how many NCCL elements one holds.
fn nccl_type(what: &'static str, elem: ElemType) -> Result<(sys::ncclDataType_t, u64)> {
    check_elem(what, elem)?;
    use sys::ncclDataType_t as T;
    let t = match elem.scalar {
        ScalarType::F32 => T::ncclFloat32,
        ScalarType::F16 => T::ncclFloat16,
        ScalarType::F64 => T::ncclFloat64,
        ScalarType::U32 => T::ncclUint32,
        _ => T::ncclInt32,
    };
    Ok((t, elem.width.max(1) as u64))
}

fn nccl_op(op: ReduceOp) -> sys::ncclRedOp_t {
    use sys::ncclRedOp_t as O;
    match op {
        ReduceOp::Sum => O::ncclSum,
        ReduceOp::Prod => O::ncclProd,
        ReduceOp::Min => O::ncclMin,
        ReduceOp::Max => O::ncclMax,
    }
}

impl Nccl {
    /// The device addresses of `send` and `recv`, one pair per rank, after checking that
    /// there is one memory per rank, that each is CUDA memory, and that it holds
    /// `send_elems` (`recv_elems`) elements of `elem`: NCCL would read or write past an
    /// allocation otherwise.
    fn pointers(
        &self,
        what: &'static str,
        (send, recv): (&[&Memory], &[&Memory]),
        elem: ElemType,
        (send_elems, recv_elems): (u64, u64),
    ) -> Result<Vec<(*const c_void, *mut c_void)>> {
        let ranks = self.comms.len();
        if send.len() != ranks || recv.len() != ranks {
            return Err(ForgeError::InvalidArgument {
                kernel: what,
                message: format!(
                    "{} sources and {} destinations for {ranks} devices; give one of each per device",
                    send.len(),
                    recv.len()
                ),
            });
        }
        let size = elem.size() as u64;
        let address = |m: &Memory, elems: u64| -> Result<u64> {
            let mem = m.raw::<DeviceMem>().ok_or_else(|| foreign(what))?;
            if elems.saturating_mul(size) > mem.bytes() {
                return Err(ForgeError::InvalidArgument {
                    kernel: what,
                    message: format!(
                        "{elems} elements of `{}` do not fit the {} bytes of a device's memory",
                        elem.wgsl(),
                        mem.bytes()
                    ),
                });
            }
            Ok(mem.ptr())
        };
        send.iter()
            .zip(recv)
            .map(|(s, r)| {
                Ok((
                    address(s, send_elems)? as *const c_void,
                    address(r, recv_elems)? as *mut c_void,
                ))
            })
            .collect()
    }

    /// Runs `call` for every rank between `ncclGroupStart` and `ncclGroupEnd`, on each
    /// device's legacy default stream (null).
    fn grouped(
        &self,
        context: &'static str,
        call: impl Fn(usize, sys::ncclComm_t, sys::cudaStream_t) -> Result<(), result::NcclError>,
    ) -> Result<()> {
        result::group_start().map_err(|e| nccl_error(context, e))?;
        let mut first = Ok(());
        for (rank, &comm) in self.comms.iter().enumerate() {
            if let Err(e) = call(rank, comm, std::ptr::null_mut()) {
                first = Err(nccl_error(context, e));
                break;
            }
        }
        // The group is closed even after a failed call, or NCCL stays in group mode.
        let ended = result::group_end().map_err(|e| nccl_error(context, e));
        first.and(ended.map(drop))
    }
}

impl Collectives for Nccl {
    fn name(&self) -> String {
        format!("NCCL {}", dotted(self.version))
    }

    fn devices(&self) -> usize {
        self.comms.len()
    }

    fn all_reduce(
        &mut self,
        send: &[&Memory],
        recv: &[&Memory],
        elem: ElemType,
        count: u64,
        op: ReduceOp,
    ) -> Result<()> {
        const WHAT: &str = "NCCL all-reduce";
        let (t, per) = nccl_type(WHAT, elem)?;
        let ptrs = self.pointers(WHAT, (send, recv), elem, (count, count))?;
        let n = (count * per) as usize;
        self.grouped(WHAT, |rank, comm, stream| {
            let (s, r) = ptrs[rank];
            // SAFETY: `pointers` checked that both hold `count` elements.
            unsafe { result::all_reduce(s, r, n, t, nccl_op(op), comm, stream) }.map(drop)
        })
    }

    fn all_gather(
        &mut self,
        send: &[&Memory],
        recv: &[&Memory],
        elem: ElemType,
        count: u64,
    ) -> Result<()> {
        const WHAT: &str = "NCCL all-gather";
        let (t, per) = nccl_type(WHAT, elem)?;
        let total = count.saturating_mul(self.comms.len() as u64);
        let ptrs = self.pointers(WHAT, (send, recv), elem, (count, total))?;
        let n = (count * per) as usize;
        self.grouped(WHAT, |rank, comm, stream| {
            let (s, r) = ptrs[rank];
            // SAFETY: `pointers` checked `count` elements to send and `ranks · count` to
            // receive.
            unsafe { result::all_gather(s, r, n, t, comm, stream) }.map(drop)
        })
    }

    fn reduce_scatter(
        &mut self,
        send: &[&Memory],
        recv: &[&Memory],
        elem: ElemType,
        count: u64,
        op: ReduceOp,
    ) -> Result<()> {
        const WHAT: &str = "NCCL reduce-scatter";
        let (t, per) = nccl_type(WHAT, elem)?;
        let total = count.saturating_mul(self.comms.len() as u64);
        let ptrs = self.pointers(WHAT, (send, recv), elem, (total, count))?;
        let n = (count * per) as usize;
        self.grouped(WHAT, |rank, comm, stream| {
            let (s, r) = ptrs[rank];
            // SAFETY: `pointers` checked `ranks · count` elements to send and `count` to
            // receive.
            unsafe { result::reduce_scatter(s, r, n, t, nccl_op(op), comm, stream) }.map(drop)
        })
    }
}
