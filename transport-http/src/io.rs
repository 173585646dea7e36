//! [`HttpIo`]: what a protocol client written once (the ORS client, the UTCP provider) needs
//! from a transport: event streams that do not reconnect by themselves, one-shot requests
//! with a bounded answer, and the [`Runtime`] whose clock and timer they use. `ssekit-hyper` (hyper-util's client,
//! tokio's timer) and `ssekit-smol` (hyper driven by smol, `async-io` timers) implement it;
//! everything above it is generic and decides alone.
//!
//! ```text
//!  protocol client (IO-free) ──events(spec)──────────▶ Events ──next──▶ Item*
//!                            ──request_limited(req)──▶ Response<Bytes> (≤ limit, else TooLarge)
//!                            ──runtime()─────────────▶ the transport's Runtime (clock, timer)
//! ```
//!
//! The TLS set-up, connection pooling and connect timeouts are the implementation's own
//! (its constructor); the trait carries none of them.

use std::fmt;
use std::future::Future;

use bytes::Bytes;
use http::{Request, Response};
use ssekit::Instant;

use crate::client::{Item, RequestSpec};
use crate::runtime::Runtime;
use crate::Error;

/// What a protocol client needs from a transport: event streams, one-shot requests with a
/// bounded answer, and the runtime they run on. `ssekit_http::ors::OrsIo` is this trait under
/// its first name.
///
/// # Example
/// The implementations are `ssekit-hyper`'s and `ssekit-smol`'s; the ORS client and the
/// UTCP provider are generic over them:
/// ```
/// use ssekit_http::io::HttpIo;
/// use ssekit_http::runtime::Runtime;
/// async fn later<T: HttpIo>(io: &T) -> ssekit::Instant {
///     let at = io.now().saturating_add(std::time::Duration::from_millis(5));
///     io.sleep_until(at).await;
///     io.runtime().now()
/// }
/// ```
pub trait HttpIo: Clone + Send + Sync + 'static {
    /// The URL schemes the transport connects to.
    const SCHEMES: &'static [&'static str];
    /// An open event stream.
    type Events: Send + 'static;

    /// The transport's default set-up (its HTTP client, TLS roots, clock origin).
    fn new() -> Result<Self, Error>;
    /// Opens the event stream `spec` describes.
    fn events(&self, spec: RequestSpec) -> Self::Events;
    /// The next item of `events`.
    fn next(events: &mut Self::Events) -> impl Future<Output = Option<Result<Item, Error>>> + Send;
    /// Sends `req` (absolute URL) and returns the response with its whole body (at most
    /// [`MAX_JSON_ANSWER`](crate::ors::MAX_JSON_ANSWER) bytes). It follows no redirects: the caller does, by the
    /// response's status and headers.
    fn request(
        &self,
        req: Request<Bytes>,
    ) -> impl Future<Output = Result<Response<Bytes>, Error>> + Send;
    /// As [`request`](Self::request), with a body of at most `limit` bytes, whatever the
    /// status: a longer one (by its `Content-Length`, or by the bytes read) is an
    /// [`Error::Http`] holding a [`TooLarge`]. The transports stop reading at `limit`; this
    /// default, for implementations that do not say how, reads up to [`MAX_JSON_ANSWER`](crate::ors::MAX_JSON_ANSWER)
    /// and checks afterwards.
    fn request_limited(
        &self,
        req: Request<Bytes>,
        limit: usize,
    ) -> impl Future<Output = Result<Response<Bytes>, Error>> + Send {
        async move {
            let resp = self.request(req).await?;
            if resp.body().len() > limit {
                return Err(TooLarge { limit }.into());
            }
            Ok(resp)
        }
    }
    /// The runtime the transport runs on: its clock and timers are the client's.
    type Runtime: Runtime;
    /// The runtime.
    fn runtime(&self) -> &Self::Runtime;
    /// The runtime's clock.
    fn now(&self) -> Instant {
        self.runtime().now()
    }
    /// Waits until `at`, on the runtime's timer.
    fn sleep_until(&self, at: Instant) -> impl Future<Output = ()> + Send {
        let timer = self.runtime().sleep_until(at);
        async move {
            timer.await;
        }
    }
}

/// An answer whose body is longer than the limit of [`HttpIo::request_limited`]; it
/// reaches the caller inside [`Error::Http`], where [`TooLarge::of`] finds it.
///
/// # Example
/// ```
/// use ssekit_http::io::TooLarge;
/// let err = ssekit_http::Error::from(TooLarge { limit: 1024 });
/// assert_eq!(TooLarge::of(&err), Some(&TooLarge { limit: 1024 }));
/// assert_eq!(err.to_string(), "HTTP error: the answer is larger than 1024 bytes");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TooLarge {
    /// The limit, in bytes.
    pub limit: usize,
}

impl TooLarge {
    /// The [`TooLarge`] `err` carries, if it is one.
    ///
    /// # Example
    /// See [`TooLarge`].
    pub fn of(err: &Error) -> Option<&TooLarge> {
        match err {
            Error::Http(inner) => inner.downcast_ref(),
            _ => None,
        }
    }
}

impl fmt::Display for TooLarge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the answer is larger than {} bytes", self.limit)
    }
}

impl std::error::Error for TooLarge {}

impl From<TooLarge> for Error {
    fn from(e: TooLarge) -> Self {
        Error::http(e)
    }
}

/// Reads the body of `resp` whole, if it is at most `limit` bytes: refused from its
/// `Content-Length` when that says more, else when the bytes read pass it ([`TooLarge`]).
/// What both transports' [`HttpIo::request_limited`] do with a response head.
///
/// # Example
/// ```
/// use http_body_util::Full;
/// # futures_lite::future::block_on(async {
/// let resp = http::Response::new(Full::new(bytes::Bytes::from_static(b"{}")));
/// let read = ssekit_http::io::collect(resp, 2).await?;
/// assert_eq!(read.body().as_ref(), b"{}");
/// let resp = http::Response::new(Full::new(bytes::Bytes::from_static(b"{ }")));
/// let err = ssekit_http::io::collect(resp, 2).await.unwrap_err();
/// assert!(ssekit_http::io::TooLarge::of(&err).is_some());
/// # Ok::<(), ssekit_http::Error>(()) }).unwrap();
/// ```
#[cfg(feature = "hyper")]
pub async fn collect<B>(resp: Response<B>, limit: usize) -> Result<Response<Bytes>, Error>
where
    B: http_body::Body<Data = Bytes>,
    B::Error: Into<crate::BoxError>,
{
    use http_body_util::{BodyExt, LengthLimitError, Limited};
    let declared = resp
        .headers()
        .get(http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > limit as u64) {
        return Err(TooLarge { limit }.into());
    }
    let (head, body) = resp.into_parts();
    match Limited::new(body, limit).collect().await {
        Ok(body) => Ok(Response::from_parts(head, body.to_bytes())),
        Err(e) if e.is::<LengthLimitError>() => Err(TooLarge { limit }.into()),
        Err(e) => Err(Error::http(e)),
    }
}

/// Runs `work` until it finishes (`Some`) or `deadline` does first (`None`), polling both
/// on one task: no runtime's `select` or `timeout` needed.
///
/// # Example
/// ```
/// use ssekit_http::io::first_of;
/// # futures_lite::future::block_on(async {
/// assert_eq!(first_of(async { 1 }, std::future::pending()).await, Some(1));
/// assert_eq!(first_of(std::future::pending::<u8>(), async {}).await, None);
/// # });
/// ```
pub async fn first_of<T>(
    work: impl Future<Output = T>,
    deadline: impl Future<Output = ()>,
) -> Option<T> {
    let mut work = std::pin::pin!(work);
    let mut deadline = std::pin::pin!(deadline);
    std::future::poll_fn(|cx| {
        if let std::task::Poll::Ready(done) = work.as_mut().poll(cx) {
            return std::task::Poll::Ready(Some(done));
        }
        deadline.as_mut().poll(cx).map(|()| None)
    })
    .await
}
