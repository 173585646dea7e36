//! The core's millisecond [`Instant`] on a monotonic clock, and keep-alive pings on an
//! [`async_io::Timer`].

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use async_io::Timer;
use bytes::Bytes;
use ssekit::server::KeepAlive;
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

/// A core [`KeepAlive`] with its timer: the one place pings are timed.
#[derive(Debug)]
pub(crate) struct Pinger {
    keep_alive: KeepAlive,
    clock: Clock,
    timer: Option<(Instant, Timer)>,
}

impl Pinger {
    pub(crate) fn new(keep_alive: KeepAlive, clock: Clock) -> Self {
        Pinger {
            keep_alive,
            clock,
            timer: None,
        }
    }

    /// Something was written: the silence restarts.
    pub(crate) fn wrote(&mut self) {
        self.keep_alive.handle_write(self.clock.now());
    }

    /// Ready with the ping bytes when the core says one is due; otherwise the timer is
    /// armed for the core's deadline.
    pub(crate) fn poll_ping(&mut self, cx: &mut Context<'_>) -> Poll<Bytes> {
        loop {
            self.keep_alive.handle_timeout(self.clock.now());
            if let Some(ping) = self.keep_alive.poll_transmit() {
                return Poll::Ready(ping);
            }
            let Some(deadline) = self.keep_alive.poll_timeout() else {
                return Poll::Pending;
            };
            let timer = match &mut self.timer {
                Some((armed, timer)) if *armed == deadline => timer,
                slot => {
                    &mut slot
                        .insert((deadline, Timer::at(self.clock.at(deadline))))
                        .1
                }
            };
            if Pin::new(timer).poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.timer = None;
        }
    }
}
