//! [`Wait`]: what a device hands back for work that waits for the GPU (a readback, the
//! queue going idle, timestamps). Part of the backend seam (layer 3).
//!
//! The runtime's waits are `async` (a browser cannot block), and [`crate::backend::Device`]
//! is used as a trait object, whose methods cannot be `async fn`s. A `Wait` is the one
//! future type they return. On native targets a device finishes the work before it
//! returns (its futures are ready once the device has been polled, which the work does
//! itself), so a `Wait` is a value already there: nothing is boxed on the runtime's hot
//! paths. In a browser the work is awaited later, through the event loop, and the `Wait`
//! boxes it.

use crate::error::{ForgeError, Result};
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::task::{Context, Poll};

/// The outcome of work that waits for the device: a future of `Result<T>`. See the
/// [module docs](self).
#[must_use = "a `Wait` does nothing until it is awaited"]
pub struct Wait<'a, T>(State<'a, T>);

enum State<'a, T> {
    /// Finished: the outcome, until it is taken.
    Ready(Option<Result<T>>, PhantomData<&'a ()>),
    /// To be awaited through the browser's event loop.
    #[cfg(target_arch = "wasm32")]
    Later(Pin<Box<dyn Future<Output = Result<T>> + 'a>>),
}

impl<'a, T> Wait<'a, T> {
    /// Work that has finished with `outcome`.
    pub fn ready(outcome: Result<T>) -> Self {
        Wait(State::Ready(Some(outcome), PhantomData))
    }

    /// `work`, driven: on native targets to its end, now (it is polled once, and blocked
    /// on in the rare case that it is not ready then); in a browser, when the `Wait` is
    /// awaited.
    pub fn of(work: impl Future<Output = Result<T>> + 'a) -> Self {
        #[cfg(not(target_arch = "wasm32"))]
        {
            let mut work = std::pin::pin!(work);
            let mut cx = Context::from_waker(std::task::Waker::noop());
            match work.as_mut().poll(&mut cx) {
                Poll::Ready(outcome) => Self::ready(outcome),
                Poll::Pending => Self::ready(pollster::block_on(work)),
            }
        }
        #[cfg(target_arch = "wasm32")]
        {
            Wait(State::Later(Box::pin(work)))
        }
    }
}

impl<T: Unpin> Future for Wait<'_, T> {
    type Output = Result<T>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Result<T>> {
        let _ = &cx;
        match &mut self.get_mut().0 {
            State::Ready(outcome, _) => Poll::Ready(outcome.take().unwrap_or_else(|| {
                Err(ForgeError::Gpu {
                    context: "waiting for the device",
                    message: "the outcome was already taken (a `Wait` polled after it finished)"
                        .into(),
                })
            })),
            #[cfg(target_arch = "wasm32")]
            State::Later(work) => work.as_mut().poll(cx),
        }
    }
}
