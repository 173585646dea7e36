//! [`Pinger`]: the core [`KeepAlive`] and the timer that wakes it, the one place a
//! transport's keep-alive comments are timed, over any runtime's [`Clock`].

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use ssekit::server::KeepAlive;
use ssekit::Instant;

/// A runtime's clock and timer, in the core's milliseconds.
///
/// # Example
/// ```
/// use std::future::Ready;
/// use ssekit::Instant;
/// /// A clock stopped at zero whose timers fire at once (for tests).
/// #[derive(Clone)]
/// struct Frozen;
/// impl ssekit_http::keep_alive::Clock for Frozen {
///     type Sleep = Ready<()>;
///     fn now(&self) -> Instant { Instant::ZERO }
///     fn sleep_until(&self, _at: Instant) -> Ready<()> { std::future::ready(()) }
/// }
/// ```
pub trait Clock {
    /// A timer future (its output is ignored).
    type Sleep: Future + Unpin;
    /// Now.
    fn now(&self) -> Instant;
    /// A timer that fires at `at`.
    fn sleep_until(&self, at: Instant) -> Self::Sleep;
}

/// A core [`KeepAlive`] with its timer: ready with the ping bytes when the core says one is
/// due, otherwise the timer is armed for the core's deadline.
///
/// # Example
/// ```
/// use std::future::Ready;
/// use std::task::{Context, Poll, Waker};
/// use std::time::Duration;
/// use ssekit::{server::KeepAlive, Instant};
/// use ssekit_http::keep_alive::{Clock, Pinger};
///
/// #[derive(Clone)]
/// struct Late; // reads as one minute in; timers fire at once
/// impl Clock for Late {
///     type Sleep = Ready<()>;
///     fn now(&self) -> Instant { Instant::from_millis(60_000) }
///     fn sleep_until(&self, _at: Instant) -> Ready<()> { std::future::ready(()) }
/// }
///
/// let mut pinger = Pinger::new(KeepAlive::new(Duration::from_secs(15), Instant::ZERO), Late);
/// let mut cx = Context::from_waker(Waker::noop());
/// assert!(matches!(pinger.poll_ping(&mut cx), Poll::Ready(ping) if ping == ": ping\n"));
/// ```
pub struct Pinger<C: Clock> {
    keep_alive: KeepAlive,
    clock: C,
    timer: Option<(Instant, C::Sleep)>,
}

impl<C: Clock> fmt::Debug for Pinger<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Pinger")
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

impl<C: Clock> Pinger<C> {
    /// Pings per `keep_alive`, timed by `clock` (whose [`Instant::ZERO`] is the keep-alive's
    /// start).
    ///
    /// # Example
    /// See [`Pinger`].
    pub fn new(keep_alive: KeepAlive, clock: C) -> Self {
        Pinger {
            keep_alive,
            clock,
            timer: None,
        }
    }

    /// Something was written: the silence restarts.
    ///
    /// # Example
    /// ```
    /// # use std::future::Ready;
    /// # use ssekit::{server::KeepAlive, Instant};
    /// # use ssekit_http::keep_alive::{Clock, Pinger};
    /// # #[derive(Clone)] struct Frozen;
    /// # impl Clock for Frozen {
    /// #     type Sleep = Ready<()>;
    /// #     fn now(&self) -> Instant { Instant::ZERO }
    /// #     fn sleep_until(&self, _at: Instant) -> Ready<()> { std::future::ready(()) }
    /// # }
    /// let mut pinger = Pinger::new(KeepAlive::new(KeepAlive::ORS, Instant::ZERO), Frozen);
    /// pinger.wrote();
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
    use std::cell::Cell;
    use std::rc::Rc;
    use std::task::Waker;
    use std::time::Duration;

    /// A clock the test moves by hand; its timers fire once it reaches their deadline, and
    /// it counts the timers made.
    #[derive(Clone, Default)]
    struct Manual {
        now: Rc<Cell<u64>>,
        made: Rc<Cell<usize>>,
    }

    struct Sleep {
        now: Rc<Cell<u64>>,
        at: u64,
    }

    impl Future for Sleep {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            if self.now.get() >= self.at {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    impl Clock for Manual {
        type Sleep = Sleep;
        fn now(&self) -> Instant {
            Instant::from_millis(self.now.get())
        }
        fn sleep_until(&self, at: Instant) -> Sleep {
            self.made.set(self.made.get() + 1);
            Sleep {
                now: self.now.clone(),
                at: at.since_origin().as_millis() as u64,
            }
        }
    }

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
            clock.now.set(ms);
            pinger.wrote();
            assert!(pinger.poll_ping(&mut cx).is_pending(), "no ping at {ms} ms");
        }
        assert!(clock.made.get() <= 6, "{} timers", clock.made.get());
        // Silence: the ping comes one interval after the last write, not before.
        clock.now.set(5999);
        assert!(pinger.poll_ping(&mut cx).is_pending());
        clock.now.set(6000);
        assert!(pinger.poll_ping(&mut cx).is_ready());
    }
}
