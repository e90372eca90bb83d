//! Work on several devices of a group at once, and what a failure of one does. Part of
//! the groups (layer 7).
//!
//! Each device's part runs on a thread of its own ([`std::thread::scope`]), since every
//! runtime call blocks until its device is done: the devices then work at the same time,
//! and the call takes as long as the slowest part. In a browser, where there are no
//! threads, the parts run one after another.
//!
//! A call that spans the group succeeds only whole: if any part fails, the call returns
//! [`ForgeError::DeviceFailed`] for the first failed device by index (how many others
//! failed is counted), with the runtime's own error as its source, and every part that
//! succeeded is dropped. A part that panics (a closure of the caller's) fails the same
//! way instead of taking the program down.

use super::describe;
use crate::error::{ForgeError, Result};
use crate::runtime::ForgeRuntime;

/// One device's part: its index in the group, its runtime, and what it works on.
pub(crate) struct Part<'a, I> {
    /// The device's index in the group.
    pub device: usize,
    /// Its runtime.
    pub rt: &'a mut ForgeRuntime,
    /// Its input.
    pub input: I,
}

/// Runs `job` on every part at once and returns the results in the parts' order, or
/// [`ForgeError::DeviceFailed`] for the first part that failed; `work` says what each
/// part was (for its device and input), for that error.
pub(crate) fn run_parts<I, R>(
    parts: Vec<Part<'_, I>>,
    work: &(dyn Fn(usize, &I) -> String + Sync),
    job: &(dyn Fn(&mut ForgeRuntime, &I) -> Result<R> + Sync),
) -> Result<Vec<R>>
where
    I: Send + Sync,
    R: Send,
{
    let outcomes = run_all(parts, job);
    let failed = outcomes.iter().filter(|o| o.result.is_err()).count();
    let mut results = Vec::with_capacity(outcomes.len());
    for outcome in outcomes {
        match outcome.result {
            Ok(r) => results.push(r),
            Err(source) => {
                return Err(ForgeError::DeviceFailed {
                    device: outcome.device,
                    adapter: outcome.adapter,
                    work: work(outcome.device, &outcome.input),
                    others: failed - 1,
                    source: Box::new(source),
                })
            }
        }
    }
    Ok(results)
}

/// What became of one part.
struct Outcome<I, R> {
    device: usize,
    adapter: String,
    input: I,
    result: Result<R>,
}

/// Every part's outcome, in order: each on a thread of its own (the first on the calling
/// thread), joined before returning.
#[cfg(not(target_arch = "wasm32"))]
fn run_all<I, R>(
    parts: Vec<Part<'_, I>>,
    job: &(dyn Fn(&mut ForgeRuntime, &I) -> Result<R> + Sync),
) -> Vec<Outcome<I, R>>
where
    I: Send + Sync,
    R: Send,
{
    let mut parts = parts.into_iter();
    let Some(first) = parts.next() else {
        return Vec::new();
    };
    std::thread::scope(|scope| {
        let others: Vec<_> = parts
            .map(|part| scope.spawn(move || run_one(part, job)))
            .collect();
        let mut outcomes = vec![run_one(first, job)];
        outcomes.extend(others.into_iter().map(|handle| {
            handle
                .join()
                .unwrap_or_else(|_| unreachable!("run_one catches the job's panics"))
        }));
        outcomes
    })
}

/// Every part's outcome, one after another: a browser has no threads.
#[cfg(target_arch = "wasm32")]
fn run_all<I, R>(
    parts: Vec<Part<'_, I>>,
    job: &(dyn Fn(&mut ForgeRuntime, &I) -> Result<R> + Sync),
) -> Vec<Outcome<I, R>> {
    parts.into_iter().map(|part| run_one(part, job)).collect()
}

/// One part's outcome: the job's result, or an error for its panic.
fn run_one<I, R>(
    part: Part<'_, I>,
    job: &(dyn Fn(&mut ForgeRuntime, &I) -> Result<R> + Sync),
) -> Outcome<I, R> {
    let Part { device, rt, input } = part;
    let adapter = describe(rt);
    let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| job(rt, &input)))
        .unwrap_or_else(|panic| {
            let message = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a panic without a message".into());
            Err(ForgeError::InvalidArgument {
                kernel: "DeviceGroup",
                message: format!("the device's part panicked: {message}"),
            })
        });
    Outcome {
        device,
        adapter,
        input,
        result,
    }
}
