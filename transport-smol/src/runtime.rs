//! [`Smol`]: `ssekit-http`'s [`Runtime`] on smol and async-io. Everything above it (the
//! response body, the queues, the broadcast, the accept loop, the ORS server, the clients'
//! drive loops) is written once there; this is all of ssekit-smol's runtime.

use std::future::Future;
use std::time::Duration;

use async_io::Timer;
use ssekit::Instant;
use ssekit_http::runtime::Runtime;

/// smol as a [`Runtime`]: tasks on smol's global executor (`smol::spawn`) and `async-io`
/// timers. Works from any thread, inside an executor or not; its clock reads from when the
/// value was made.
///
/// # Example
/// ```
/// use ssekit_http::runtime::Runtime;
/// let smol_rt = ssekit_smol::runtime::Smol::default();
/// smol::block_on(smol_rt.sleep(std::time::Duration::from_millis(1)));
/// assert!(smol_rt.now().as_millis() >= 1);
/// ```
#[derive(Clone, Copy, Debug)]
pub struct Smol {
    origin: std::time::Instant,
}

impl Default for Smol {
    fn default() -> Self {
        Smol {
            origin: std::time::Instant::now(),
        }
    }
}

/// hyper's executor hook: the HTTP/2 connections of the client spawn their streams as
/// tasks on smol's global executor.
///
/// # Example
/// ```
/// use hyper::rt::Executor;
/// let (tx, rx) = smol::channel::bounded(1);
/// ssekit_smol::runtime::Smol::default().execute(async move { let _ = tx.send(7).await; });
/// assert_eq!(smol::block_on(rx.recv()), Ok(7));
/// ```
#[cfg(feature = "http")]
impl<F> hyper::rt::Executor<F> for Smol
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        self.spawn(future);
    }
}

impl Runtime for Smol {
    type Sleep = Timer;

    fn now(&self) -> Instant {
        let elapsed = self.origin.elapsed();
        Instant::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    }

    fn sleep_until(&self, at: Instant) -> Timer {
        // A deadline that does not fit is a year away: it never fires.
        let at = self
            .origin
            .checked_add(at.since_origin())
            .unwrap_or_else(|| std::time::Instant::now() + Duration::from_secs(86_400 * 365));
        Timer::at(at)
    }

    fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        smol::spawn(future).detach();
    }
}
