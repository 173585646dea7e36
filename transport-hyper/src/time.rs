//! Bridges the core's millisecond [`Instant`] to a hyper [`Timer`].

use std::pin::Pin;
use std::sync::Arc;

use hyper::rt::{Sleep, Timer};
use ssekit::time::Instant;

/// A timer and the moment it reads as [`Instant::ZERO`].
#[derive(Clone)]
pub(crate) struct Clock {
    timer: Arc<dyn Timer + Send + Sync>,
    origin: std::time::Instant,
}

impl Clock {
    pub(crate) fn new(timer: Arc<dyn Timer + Send + Sync>) -> Self {
        let origin = timer.now();
        Clock { timer, origin }
    }

    pub(crate) fn tokio() -> Self {
        Clock::new(Arc::new(hyper_util::rt::TokioTimer::new()))
    }

    /// Whole milliseconds since the origin (rounded down, so a deadline read back is never early).
    pub(crate) fn now(&self) -> Instant {
        let elapsed = self.timer.now().saturating_duration_since(self.origin);
        Instant::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    }

    pub(crate) fn sleep_until(&self, deadline: Instant) -> Pin<Box<dyn Sleep>> {
        let at = self
            .origin
            .checked_add(deadline.since_origin())
            .unwrap_or_else(|| self.origin + std::time::Duration::from_secs(86_400 * 365));
        self.timer.sleep_until(at)
    }
}

impl ssekit_http::keep_alive::Clock for Clock {
    type Sleep = Pin<Box<dyn Sleep>>;

    fn now(&self) -> Instant {
        Clock::now(self)
    }

    fn sleep_until(&self, at: Instant) -> Pin<Box<dyn Sleep>> {
        Clock::sleep_until(self, at)
    }
}
