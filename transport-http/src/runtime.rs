//! [`Runtime`]: the few hooks protocol code written once here needs from an async runtime,
//! as quinn carries tokio and smol: a clock, a timer, a way to run a task to its end, and the
//! transport's SSE response body. `ssekit-hyper` implements it on tokio
//! (`ssekit_hyper::runtime::Tokio`), `ssekit-smol` on smol and async-io
//! (`ssekit_smol::runtime::Smol`); the ORS server (`ors::Server`, feature `ors-server`) is
//! generic over it.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use ssekit::Instant;

use crate::Error;

/// Encoded SSE frames (whole blocks), as a runtime's [`Runtime::sse_body`] takes them.
pub type Frames = Pin<Box<dyn Stream<Item = Bytes> + Send>>;

/// What protocol code needs from an async runtime. Every method is cheap; a value is a handle
/// (clone it freely), and its clock's [`Instant::ZERO`] is when it was made.
///
/// # Example
/// A runtime whose clock is stopped and whose tasks run to their end at once on the calling
/// thread (enough for tools that never wait):
/// ```
/// use std::time::Duration;
/// use ssekit::Instant;
/// use ssekit_http::runtime::{Frames, Runtime};
///
/// #[derive(Clone, Default)]
/// struct Inline;
/// impl Runtime for Inline {
///     type Body = http_body_util::StreamBody<futures_lite::stream::Map<Frames, fn(bytes::Bytes) -> Result<http_body::Frame<bytes::Bytes>, ssekit_http::Error>>>;
///     type Sleep = std::future::Ready<()>;
///     fn now(&self) -> Instant { Instant::ZERO }
///     fn sleep_until(&self, _at: Instant) -> Self::Sleep { std::future::ready(()) }
///     fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(&self, future: F) {
///         futures_lite::future::block_on(future);
///     }
///     fn sse_body(&self, frames: Frames, _keep_alive: Duration) -> Self::Body {
///         use futures_lite::StreamExt;
///         let data: fn(bytes::Bytes) -> Result<http_body::Frame<bytes::Bytes>, ssekit_http::Error> =
///             |b| Ok(http_body::Frame::data(b));
///         http_body_util::StreamBody::new(frames.map(data))
///     }
/// }
/// assert_eq!(Inline.now(), Instant::ZERO);
/// ```
pub trait Runtime: Clone + Send + Sync + 'static {
    /// The transport's SSE response body: the frames as they come, keep-alive comments in
    /// between.
    type Body: http_body::Body<Data = Bytes, Error = Error> + Send + 'static;

    /// A timer future (its output is ignored).
    type Sleep: Future + Send + 'static;

    /// Now, in the core's milliseconds since this runtime value was made.
    fn now(&self) -> Instant;

    /// A timer that fires at `at` (at once when `at` has passed).
    fn sleep_until(&self, at: Instant) -> Self::Sleep;

    /// Runs `future` to its end in the background; it is not cancelled when the caller goes
    /// away (an ORS tool keeps running when its client hangs up).
    fn spawn<F>(&self, future: F)
    where
        F: Future<Output = ()> + Send + 'static;

    /// The response body of an event stream: `frames` as they come, and a `: ping` comment
    /// after every `keep_alive` of silence.
    fn sse_body(&self, frames: Frames, keep_alive: Duration) -> Self::Body;

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
