//! [`Smol`]: `ssekit-http`'s [`Runtime`] hooks on smol, so the protocol code written once
//! there (the ORS [`Server`](crate::ors::Server)) runs here, with no tokio runtime.

use std::future::Future;
use std::time::Duration;

use async_io::Timer;
use ssekit::Instant;
use ssekit_http::runtime::{Frames, Runtime};

use crate::server::SseBody;
use crate::time::Clock;

/// smol as a [`Runtime`]: tasks on smol's global executor (`smol::spawn`), `async-io`
/// timers, and [`SseBody`]. Works from any thread, inside an executor or not.
///
/// # Example
/// ```
/// use ssekit_http::runtime::Runtime;
/// let smol_rt = ssekit_smol::runtime::Smol::default();
/// smol::block_on(smol_rt.sleep(std::time::Duration::from_millis(1)));
/// assert!(smol_rt.now().as_millis() >= 1);
/// ```
#[derive(Clone, Copy)]
pub struct Smol {
    clock: Clock,
}

impl Default for Smol {
    fn default() -> Self {
        Smol {
            clock: Clock::new(),
        }
    }
}

impl std::fmt::Debug for Smol {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Smol").finish_non_exhaustive()
    }
}

/// hyper's executor hook: the HTTP/2 connections of [`serve_with`](crate::server::serve_with)
/// and of the client spawn their streams as tasks on smol's global executor.
///
/// # Example
/// ```
/// use hyper::rt::Executor;
/// let (tx, rx) = async_channel::bounded(1);
/// ssekit_smol::runtime::Smol::default().execute(async move { let _ = tx.send(7).await; });
/// assert_eq!(smol::block_on(rx.recv()), Ok(7));
/// ```
impl<F> hyper::rt::Executor<F> for Smol
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        smol::spawn(future).detach();
    }
}

impl Runtime for Smol {
    type Body = SseBody;
    type Sleep = Timer;

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn sleep_until(&self, at: Instant) -> Timer {
        Timer::at(self.clock.at(at))
    }

    fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        smol::spawn(future).detach();
    }

    fn sse_body(&self, frames: Frames, keep_alive: Duration) -> SseBody {
        SseBody::from_bytes(frames).keep_alive(keep_alive)
    }
}
