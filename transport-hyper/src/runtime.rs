//! [`Tokio`]: `ssekit-http`'s [`Runtime`] hooks on tokio, so the protocol code written once
//! there (the ORS [`Server`](crate::ors::Server)) runs here.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use ssekit::Instant;
use ssekit_http::runtime::{Frames, Runtime};

use crate::server::SseBody;
use crate::time::Clock;

/// tokio as a [`Runtime`]: `tokio::spawn`, tokio's timer (through hyper-util's
/// `TokioTimer`), and [`SseBody`]. Its methods must be called inside a tokio runtime.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use ssekit_http::runtime::Runtime;
/// let tokio = ssekit_hyper::runtime::Tokio::default();
/// tokio.sleep(std::time::Duration::from_millis(1)).await;
/// assert!(tokio.now().as_millis() >= 1);
/// # }
/// ```
#[derive(Clone)]
pub struct Tokio {
    clock: Clock,
}

impl Default for Tokio {
    fn default() -> Self {
        Tokio {
            clock: Clock::tokio(),
        }
    }
}

impl std::fmt::Debug for Tokio {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokio").finish_non_exhaustive()
    }
}

impl Runtime for Tokio {
    type Body = SseBody;
    type Sleep = Pin<Box<dyn hyper::rt::Sleep>>;

    fn now(&self) -> Instant {
        self.clock.now()
    }

    fn sleep_until(&self, at: Instant) -> Self::Sleep {
        self.clock.sleep_until(at)
    }

    fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        tokio::spawn(future);
    }

    fn sse_body(&self, frames: Frames, keep_alive: Duration) -> SseBody {
        SseBody::from_bytes(frames).keep_alive(keep_alive)
    }
}
