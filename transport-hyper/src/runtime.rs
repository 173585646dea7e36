//! [`Tokio`]: `ssekit-http`'s [`Runtime`] on tokio. Everything above it (the response body,
//! the queues, the broadcast, the accept loop, the ORS server, the clients' drive loops) is
//! written once there; this is all of ssekit-hyper's runtime.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use ssekit::Instant;
use ssekit_http::runtime::Runtime;

/// tokio as a [`Runtime`]: `tokio::spawn`, tokio's timer and cooperative budget (its
/// listener, `tokio::net::TcpListener`, is the accept loop's:
/// [`server::serve_with`](crate::server::serve_with)). Its timers and tasks need a tokio runtime to run on (make one with
/// `#[tokio::main]`); its clock reads from when the value was made.
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
#[derive(Clone, Copy, Debug)]
pub struct Tokio {
    origin: tokio::time::Instant,
}

impl Default for Tokio {
    fn default() -> Self {
        Tokio {
            origin: tokio::time::Instant::now(),
        }
    }
}

impl Runtime for Tokio {
    type Sleep = Pin<Box<tokio::time::Sleep>>;

    fn now(&self) -> Instant {
        let elapsed = self.origin.elapsed();
        Instant::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    }

    fn sleep_until(&self, at: Instant) -> Self::Sleep {
        // A deadline past tokio's range (about 30 years) is a year away: it never fires.
        let at = self
            .origin
            .checked_add(at.since_origin())
            .unwrap_or_else(|| tokio::time::Instant::now() + YEAR);
        Box::pin(tokio::time::sleep_until(at))
    }

    fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        tokio::spawn(future);
    }

    fn budgeted<T>(
        &self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        // One unit of tokio's budget per poll that makes progress (none outside a tokio
        // task): a task that has spent its budget on other IO yields first.
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        let polled = poll(cx);
        if polled.is_ready() {
            coop.made_progress();
        }
        polled
    }
}

const YEAR: std::time::Duration = std::time::Duration::from_secs(86_400 * 365);
