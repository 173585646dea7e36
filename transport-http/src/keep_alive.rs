//! [`Pinger`]: the core [`KeepAlive`] and the timer that wakes it, the one place a
//! response body's keep-alive comments are timed, on any [`Runtime`]'s clock.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use ssekit::server::KeepAlive;
use ssekit::Instant;

use crate::runtime::Runtime;

/// A core [`KeepAlive`] with its timer: ready with the ping bytes when the core says one is
/// due, otherwise the timer is armed for the core's deadline.
///
/// # Example
/// ```
/// use std::task::{Context, Poll, Waker};
/// use std::time::Duration;
/// use ssekit::server::KeepAlive;
/// use ssekit_http::keep_alive::Pinger;
/// use ssekit_http::runtime::Runtime;
///
/// fn pings<R: Runtime>(rt: R) {
///     let mut pinger = Pinger::new(KeepAlive::new(Duration::from_secs(15), rt.now()), rt);
///     let mut cx = Context::from_waker(Waker::noop());
///     // Pending (the timer armed) until 15 s of silence; then the comment.
///     if let Poll::Ready(ping) = pinger.poll_ping(&mut cx) {
///         assert_eq!(ping, ": ping\n");
///     }
/// }
/// ```
pub struct Pinger<R: Runtime> {
    keep_alive: KeepAlive,
    clock: R,
    timer: Option<(Instant, R::Sleep)>,
}

impl<R: Runtime> fmt::Debug for Pinger<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pinger")
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime> Pinger<R> {
    /// Pings per `keep_alive`, timed by `clock` (whose [`Instant::ZERO`] is the keep-alive's
    /// start).
    ///
    /// # Example
    /// See [`Pinger`].
    pub fn new(keep_alive: KeepAlive, clock: R) -> Self {
        Pinger {
            keep_alive,
            clock,
            timer: None,
        }
    }

    /// The same keep-alive timed by `clock` from now on (the silence restarts on it).
    pub(crate) fn on_clock(mut self, clock: R) -> Self {
        self.keep_alive.handle_write(clock.now());
        Pinger {
            keep_alive: self.keep_alive,
            clock,
            timer: None,
        }
    }

    /// Something was written: the silence restarts.
    ///
    /// # Example
    /// ```
    /// # use ssekit::server::KeepAlive;
    /// # use ssekit_http::keep_alive::Pinger;
    /// # fn wrote<R: ssekit_http::runtime::Runtime>(rt: R) {
    /// let mut pinger = Pinger::new(KeepAlive::new(KeepAlive::ORS, rt.now()), rt);
    /// pinger.wrote();
    /// # }
    /// ```
    pub fn wrote(&mut self) {
        self.keep_alive.handle_write(self.clock.now());
    }

    /// The ping bytes when one is due; `Pending` (with the timer armed) otherwise.
    ///
    /// # Example
    /// See [`Pinger`].
    pub fn poll_ping(&mut self, cx: &mut Context<'_>) -> Poll<Bytes> {
        loop {
            self.keep_alive.handle_timeout(self.clock.now());
            if let Some(ping) = self.keep_alive.poll_transmit() {
                return Poll::Ready(ping);
            }
            let Some(deadline) = self.keep_alive.poll_timeout() else {
                return Poll::Pending;
            };
            // A timer armed for an earlier deadline is kept: every write moves the deadline
            // later, and a new timer per write would cost an allocation and a registration
            // with the runtime's timer (on async-io, a write to wake its reactor thread) for
            // each event. When it fires early, the loop arms one for the deadline then.
            let timer = match &mut self.timer {
                Some((armed, timer)) if *armed <= deadline => timer,
                slot => &mut slot.insert((deadline, self.clock.sleep_until(deadline))).1,
            };
            if Pin::new(timer).poll(cx).is_pending() {
                return Poll::Pending;
            }
            self.timer = None;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::manual::Manual;
    use std::task::Waker;
    use std::time::Duration;

    #[test]
    fn a_busy_stream_keeps_one_timer_and_an_idle_one_still_pings_on_time() {
        let clock = Manual::default();
        let ka = KeepAlive::new(Duration::from_millis(1000), Instant::ZERO);
        let mut pinger = Pinger::new(ka, clock.clone());
        let mut cx = Context::from_waker(Waker::noop());
        assert!(pinger.poll_ping(&mut cx).is_pending());
        // An event every 10 ms for 5 s: the deadline moves 500 times, the timer is not made
        // again each time; it is re-armed when it fires, once a second.
        for ms in (10..=5000).step_by(10) {
            clock.set(ms);
            pinger.wrote();
            assert!(pinger.poll_ping(&mut cx).is_pending(), "no ping at {ms} ms");
        }
        assert!(clock.timers_made() <= 6, "{} timers", clock.timers_made());
        // Silence: the ping comes one interval after the last write, not before.
        clock.set(5999);
        assert!(pinger.poll_ping(&mut cx).is_pending());
        clock.set(6000);
        assert!(pinger.poll_ping(&mut cx).is_ready());
    }
}
