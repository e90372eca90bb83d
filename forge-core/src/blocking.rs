//! The one bridge from the async core to the blocking API. Layer 1.
//!
//! Every call that waits for the GPU (opening a device, a readback, a certification) is
//! written once, as an `async fn`. On native targets the blocking form drives it to the
//! end on the calling thread with [`pollster`]: wgpu's native futures are ready as soon as
//! the device has been polled, which the async core does itself. A browser cannot block
//! its thread (the GPU's answers arrive through the event loop that blocking would stop),
//! so there the blocking form is a [`ForgeError::NotOnTheWeb`](crate::error::ForgeError::NotOnTheWeb) that names the `_async`
//! call to use instead.

#[cfg(target_arch = "wasm32")]
use crate::error::ForgeError;
use crate::error::Result;
use std::future::Future;

/// Runs `work` to completion on this thread; `what` names the call in the web's refusal.
#[cfg(not(target_arch = "wasm32"))]
pub fn block_on<T>(_what: &'static str, work: impl Future<Output = Result<T>>) -> Result<T> {
    pollster::block_on(work)
}

/// Refuses: a page cannot block. See the [module docs](self).
#[cfg(target_arch = "wasm32")]
pub fn block_on<T>(what: &'static str, work: impl Future<Output = Result<T>>) -> Result<T> {
    drop(work);
    Err(refusal(what))
}

/// Whether this thread may block: `Ok` on native targets, and on the web the refusal that
/// [`block_on`] gives. A blocking form that does its own work before it blocks (the
/// generated `run_with`) asks first, so that on the web it refuses before anything else,
/// as one written over [`block_on`] does.
#[cfg(not(target_arch = "wasm32"))]
pub fn can_block(_what: &'static str) -> Result<()> {
    Ok(())
}

/// Refuses: a page cannot block. See the [module docs](self).
#[cfg(target_arch = "wasm32")]
pub fn can_block(what: &'static str) -> Result<()> {
    Err(refusal(what))
}

#[cfg(target_arch = "wasm32")]
fn refusal(what: &'static str) -> ForgeError {
    ForgeError::NotOnTheWeb {
        what,
        reason: "a page cannot block its thread while the GPU works; await the `_async` form \
                 of the call (`ForgeRuntime::new_async`, `run_async`, `download_async`, \
                 `certify_async`)",
    }
}
