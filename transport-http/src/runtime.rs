//! [`Runtime`]: the one seam between ssekit and an async runtime, as quinn's `Runtime` is
//! for quinn: a clock, a timer, a way to run a task, and a cooperative budget. Everything
//! else (the response body and its keep-alive, the per-client queue, the broadcast, the
//! accept loop, the ORS server, the client's drive loop) is written once in this crate,
//! generic over it. Sockets are the listener's: [`Accept`](crate::server::Accept) (the
//! accept loop's) is implemented for each runtime's listener, as quinn's `AsyncUdpSocket`
//! is beside its `Runtime`.
//!
//! ```text
//!  SseBody<R> ── keep-alive ──▶ R::now / R::sleep_until   serve_with(R, L: Accept<R>) ── L::accept, R::spawn
//!  ors::Server<R> ── tasks ───▶ R::spawn / R::sleep        hyper's timers and executor ── R (Timer, Executor)
//!  client::Drive<Io<Runtime = R>> ── response timeout, idle deadline ──▶ R::sleep_until
//! ```
//!
//! `ssekit-hyper` implements it on tokio (`ssekit_hyper::runtime::Tokio`), `ssekit-smol` on
//! smol and async-io (`ssekit_smol::runtime::Smol`). A third runtime is one `impl` of this
//! trait (about 50 lines: see the example on [`Runtime`]), one of `Accept` for its listener
//! when it serves sockets (about 25), and one of [`client::Io`](crate::client::Io) for its
//! HTTP client (about 25).

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use ssekit::Instant;

/// Encoded SSE frames (whole blocks), as the ORS server and the shared-store broadcast hand
/// them to an [`SseBody`](crate::server::SseBody).
pub type Frames = Pin<Box<dyn Stream<Item = Bytes> + Send>>;

/// A connection as hyper reads and writes it: what a listener's
/// [`Accept::accept`](crate::server::Accept::accept) yields.
///
/// # Example
/// ```
/// fn is_connection<C: ssekit_http::runtime::Connection>() {}
/// is_connection::<Box<dyn ssekit_http::runtime::Connection>>();
/// ```
#[cfg(feature = "hyper")]
pub trait Connection: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static {}

#[cfg(feature = "hyper")]
impl<T: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static> Connection for T {}

/// What ssekit needs from an async runtime. A value is a handle (clone it freely); its
/// clock's [`Instant::ZERO`] is when the value was made.
///
/// # Example
/// A runtime whose clock the caller moves by hand and whose tasks run at once on the
/// calling thread: enough to run response bodies and keep-alive under test.
/// ```
/// use std::sync::Arc;
/// use std::sync::atomic::{AtomicU64, Ordering};
/// use ssekit::Instant;
/// use ssekit_http::runtime::Runtime;
///
/// #[derive(Clone, Default)]
/// struct Manual(Arc<AtomicU64>);
/// impl Runtime for Manual {
///     type Sleep = std::future::Ready<()>;
///     fn now(&self) -> Instant { Instant::from_millis(self.0.load(Ordering::SeqCst)) }
///     fn sleep_until(&self, _at: Instant) -> Self::Sleep { std::future::ready(()) }
///     fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(&self, future: F) {
///         futures_lite::future::block_on(future);
///     }
/// }
/// let rt = Manual::default();
/// rt.0.store(1_500, Ordering::SeqCst);
/// assert_eq!(rt.now(), Instant::from_millis(1_500));
/// ```
pub trait Runtime: Clone + Send + Sync + Unpin + 'static {
    /// A timer future (its output is ignored).
    type Sleep: Future + Send + Sync + Unpin + 'static;

    /// Now, in the core's milliseconds since this runtime value was made (rounded down, so
    /// a deadline read back is never early).
    fn now(&self) -> Instant;

    /// A timer that fires at `at` (at once when `at` has passed).
    fn sleep_until(&self, at: Instant) -> Self::Sleep;

    /// Runs `future` to its end in the background; it is not cancelled when the caller goes
    /// away (an ORS tool keeps running when its client hangs up).
    fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static;

    /// Polls `poll` within the runtime's cooperative budget, if it has one: a response
    /// body that is always ready yields once the task has spent its budget (tokio's
    /// `coop`). The default polls at once (smol has no budget; the body's own turn bounds
    /// it).
    ///
    /// # Example
    /// ```
    /// # use std::task::{Context, Poll, Waker};
    /// # use ssekit_http::runtime::Runtime;
    /// # fn budgeted<R: Runtime>(rt: &R) {
    /// let mut cx = Context::from_waker(Waker::noop());
    /// assert_eq!(rt.budgeted(&mut cx, |_| Poll::Ready(7)), Poll::Ready(7));
    /// # }
    /// ```
    fn budgeted<T>(
        &self,
        cx: &mut Context<'_>,
        poll: impl FnOnce(&mut Context<'_>) -> Poll<T>,
    ) -> Poll<T> {
        poll(cx)
    }

    /// A timer that fires after `duration`.
    ///
    /// # Example
    /// ```
    /// # use ssekit_http::runtime::Runtime;
    /// # fn wait<R: Runtime>(rt: &R) -> R::Sleep {
    /// rt.sleep(std::time::Duration::from_millis(20))
    /// # }
    /// ```
    fn sleep(&self, duration: Duration) -> Self::Sleep {
        self.sleep_until(self.now().saturating_add(duration))
    }
}

/// A [`Runtime`] as hyper's executor (`hyper::rt::Executor`): HTTP/2 streams of the
/// connections [`serve_with`](crate::server::serve_with) serves run as the runtime's tasks.
///
/// # Example
/// ```
/// # use ssekit_http::runtime::{Executor, Runtime};
/// # fn exec<R: Runtime>(rt: R) {
/// use hyper::rt::Executor as _;
/// Executor(rt).execute(async {});
/// # }
/// ```
#[cfg(feature = "hyper")]
#[derive(Clone, Debug)]
pub struct Executor<R>(pub R);

#[cfg(feature = "hyper")]
impl<R: Runtime, F> hyper::rt::Executor<F> for Executor<R>
where
    F: Future<Output = ()> + Send + 'static,
{
    fn execute(&self, future: F) {
        self.0.spawn(future);
    }
}

/// A [`Runtime`]'s timer as hyper's (`hyper::rt::Timer`): the header read timeout and the
/// HTTP/2 keep-alive run on the runtime's clock. A deadline is rounded up to the next whole
/// millisecond of that clock, so it never fires early.
///
/// # Example
/// ```
/// # use ssekit_http::runtime::{Runtime, Timer};
/// # fn timer<R: Runtime>(rt: R) {
/// use hyper::rt::Timer as _;
/// let sleep = Timer(rt).sleep(std::time::Duration::from_millis(5));
/// # let _ = sleep; }
/// ```
#[cfg(feature = "hyper")]
#[derive(Clone, Debug)]
pub struct Timer<R>(pub R);

#[cfg(feature = "hyper")]
impl<R: Runtime> hyper::rt::Timer for Timer<R> {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        // `now` is rounded down: one more millisecond keeps the deadline from being early.
        let whole_ms = duration.as_nanos().div_ceil(1_000_000);
        let ms = u64::try_from(whole_ms)
            .unwrap_or(u64::MAX)
            .saturating_add(1);
        let at = self.0.now().saturating_add(Duration::from_millis(ms));
        Box::pin(Sleep(self.0.sleep_until(at)))
    }

    fn sleep_until(&self, deadline: std::time::Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep(deadline.saturating_duration_since(std::time::Instant::now()))
    }
}

/// A runtime's timer as a `hyper::rt::Sleep`.
#[cfg(feature = "hyper")]
struct Sleep<S>(S);

#[cfg(feature = "hyper")]
impl<S: Future + Unpin> Future for Sleep<S> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        Pin::new(&mut self.0).poll(cx).map(drop)
    }
}

#[cfg(feature = "hyper")]
impl<S: Future + Send + Sync + Unpin + 'static> hyper::rt::Sleep for Sleep<S> {}

/// A runtime for this crate's unit tests: a clock the test moves by hand, timers that fire
/// once it reaches their deadline (counted as they are made), tasks run at once.
#[cfg(test)]
pub(crate) mod manual {
    use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
    use std::sync::Arc;

    use super::*;

    #[derive(Clone, Default)]
    pub(crate) struct Manual {
        now: Arc<AtomicU64>,
        made: Arc<AtomicUsize>,
    }

    impl Manual {
        pub(crate) fn set(&self, ms: u64) {
            self.now.store(ms, Ordering::SeqCst);
        }

        pub(crate) fn timers_made(&self) -> usize {
            self.made.load(Ordering::SeqCst)
        }
    }

    pub(crate) struct ManualSleep {
        now: Arc<AtomicU64>,
        at: u64,
    }

    impl Future for ManualSleep {
        type Output = ();
        fn poll(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<()> {
            if self.now.load(Ordering::SeqCst) >= self.at {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        }
    }

    impl Runtime for Manual {
        type Sleep = ManualSleep;

        fn now(&self) -> Instant {
            Instant::from_millis(self.now.load(Ordering::SeqCst))
        }

        fn sleep_until(&self, at: Instant) -> ManualSleep {
            self.made.fetch_add(1, Ordering::SeqCst);
            let at = u64::try_from(at.since_origin().as_millis()).unwrap_or(u64::MAX);
            ManualSleep {
                now: self.now.clone(),
                at,
            }
        }

        fn spawn<F: Future<Output = ()> + Send + 'static>(&self, future: F) {
            futures_lite::future::block_on(future);
        }
    }
}
