//! The core's millisecond [`Instant`] on a monotonic clock, and keep-alive pings on an
//! [`async_io::Timer`] (the timing is `ssekit-http`'s `Pinger`).

use std::time::Duration;

use async_io::Timer;
use ssekit::time::Instant;

/// The moment that reads as [`Instant::ZERO`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Clock {
    origin: std::time::Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            origin: std::time::Instant::now(),
        }
    }

    /// Whole milliseconds since the origin (rounded down, so a deadline read back is never early).
    pub(crate) fn now(&self) -> Instant {
        let elapsed = self.origin.elapsed();
        Instant::from_millis(u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
    }

    /// The wall-clock moment of a core deadline (a year away when it does not fit).
    pub(crate) fn at(&self, deadline: Instant) -> std::time::Instant {
        self.origin
            .checked_add(deadline.since_origin())
            .unwrap_or_else(|| std::time::Instant::now() + Duration::from_secs(86_400 * 365))
    }
}

impl ssekit_http::keep_alive::Clock for Clock {
    type Sleep = Timer;

    fn now(&self) -> Instant {
        Clock::now(self)
    }

    fn sleep_until(&self, at: Instant) -> Timer {
        Timer::at(self.at(at))
    }
}

/// The shared keep-alive timing on async-io's timer.
pub(crate) type Pinger = ssekit_http::keep_alive::Pinger<Clock>;
