//! The server side: [`SseBody`], a streaming response body with keep-alive comments,
//! [`channel`] for a bounded per-stream queue, and [`response`] for the headers.
//!
//! ```text
//!  app ──Sender::send──▶ bounded queue ──▶ SseBody::poll_frame ──▶ hyper ──▶ socket
//!                                              ▲       │ ready events, frames ≤ FRAME_BYTES,
//!                                   KeepAlive ─┘       │ yield after TURN_BYTES a turn
//!                                                      └ ": ping" after `interval` of silence
//! ```
//!
//! # Slow and vanished clients
//! Nothing grows without bound. hyper polls the body only when its write buffer has room
//! ([`serve`] caps it at [`WRITE_BUFFER`](ssekit_http::server::WRITE_BUFFER); hyper's own
//! default is 400 KiB), plus the kernel's socket buffer, so a client that stops reading stops
//! the body being polled: a slow reader costs that buffer, one frame and its queue. Behind it, a [`channel`] queue holds at most
//! `capacity` events; then [`Sender::send`] waits (backpressure onto the producer) and
//! [`Sender::try_send`] answers [`TrySendError::Full`] at once, so a broadcaster can drop
//! that one subscriber instead of waiting on it (the client reconnects with `Last-Event-ID`
//! and is served from a [`ReplayBuffer`](ssekit::server::ReplayBuffer), or learns of the gap).
//! When the client goes away hyper drops the body, and every later send answers
//! [`TrySendError::Closed`]; keep-alive pings make a dead peer visible within one interval
//! even when the application has nothing to send.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use http_body::{Body, Frame, SizeHint};
use hyper::rt::Timer;
use ssekit::server::KeepAlive;
use ssekit::{Encoder, Event};
use tokio::sync::mpsc;

pub use ssekit_http::server::{
    last_event_id, response, AnyBody, Message, ServeOptions, TrySendError, TLS_HANDSHAKE_TIMEOUT,
};

use ssekit_http::keep_alive::Pinger;
use ssekit_http::server::Frames;

use crate::time::Clock;
use crate::Error;

mod broadcast;
pub use broadcast::Broadcast;

type Source = Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>;

/// A streaming `text/event-stream` response body. Each event is written as soon as the
/// source yields it, and no event ever waits for another: one event per frame when events
/// are few; when many are ready together they share frames of up to
/// [`FRAME_BYTES`](ssekit_http::server::FRAME_BYTES). When the source is silent for the
/// keep-alive interval a `: ping` comment is sent. Runs on any runtime whose timer
/// implements [`hyper::rt::Timer`] (tokio's by default).
///
/// # Fair under load
/// A source that is always ready (an iterator, a channel that a fast producer keeps full)
/// does not take the executor: each frame consumes a unit of tokio's cooperative budget, and
/// after [`TURN_BYTES`](ssekit_http::server::TURN_BYTES) in one turn the body wakes itself
/// and answers `Pending`, so the connection's task goes behind every other stream, timer and
/// accept. The body holds at most one frame and one event besides its source's queue.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use ssekit::Event;
/// use ssekit_hyper::server::{response, SseBody};
///
/// let events = futures_util::stream::iter(vec![Event::message("hello"), Event::message("world")]);
/// let body = SseBody::new(events).keep_alive(Duration::from_secs(15));
/// let resp = response(body);
/// assert_eq!(resp.headers()["content-type"], "text/event-stream");
/// assert_eq!(resp.headers()["x-accel-buffering"], "no");
/// ```
pub struct SseBody {
    frames: Frames<Source, Error>,
    pinger: Option<Pinger<Clock>>,
    clock: Clock,
}

impl std::fmt::Debug for SseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseBody")
            .field("keep_alive", &self.pinger)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl SseBody {
    /// A body that encodes each event of `events`; it ends when the stream ends. Keep-alive
    /// is off until [`keep_alive`](Self::keep_alive) is set.
    ///
    /// # Example
    /// ```
    /// let body = ssekit_hyper::server::SseBody::new(futures_util::stream::empty());
    /// # let _ = body;
    /// ```
    pub fn new<S>(events: S) -> Self
    where
        S: Stream<Item = Event> + Send + 'static,
    {
        use futures_util::StreamExt;
        let encoder = Encoder::new();
        Self::from_source(Box::pin(events.map(move |event| {
            let mut out = BytesMut::with_capacity(encoder.encoded_len(&event));
            encoder.encode(&event, &mut out)?;
            Ok(out.freeze())
        })))
    }

    /// A body of already encoded frames (from a [`ReplayBuffer`](ssekit::server::ReplayBuffer),
    /// a [`TaskRegistry`](ssekit::server::TaskRegistry), or an [`Encoder`] of your own). Each
    /// item must be whole SSE blocks.
    ///
    /// # Example
    /// ```
    /// use bytes::Bytes;
    /// let wire = futures_util::stream::iter(vec![Bytes::from_static(b"data: x\n\n")]);
    /// let body = ssekit_hyper::server::SseBody::from_bytes(wire);
    /// # let _ = body;
    /// ```
    pub fn from_bytes<S>(frames: S) -> Self
    where
        S: Stream<Item = Bytes> + Send + 'static,
    {
        use futures_util::StreamExt;
        Self::from_source(Box::pin(frames.map(Ok)))
    }

    /// A body of [`Message`]s: events, comments and `retry:` lines from one stream (an
    /// [`Event`] is a message too). It ends when the stream ends.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use ssekit_hyper::server::{Message, SseBody};
    /// let items = vec![Message::retry(Duration::from_secs(1)), Message::from(ssekit::Event::message("hi"))];
    /// let body = SseBody::from_messages(futures_util::stream::iter(items));
    /// # let _ = body;
    /// ```
    pub fn from_messages<S, M>(messages: S) -> Self
    where
        S: Stream<Item = M> + Send + 'static,
        M: Into<Message>,
    {
        use futures_util::StreamExt;
        let blocks = messages.map(|message| Ok(message.into().encode()));
        Self::from_source(Box::pin(blocks))
    }

    /// A body of a fallible stream of [`Message`]s (or [`Event`]s): at its first `Err` the
    /// body ends cleanly, after what was sent (the client sees an end, not a broken
    /// connection, and reconnects as after any end), and the error goes to `on_error`.
    ///
    /// # Example
    /// ```
    /// use ssekit::Event;
    /// let rows = futures_util::stream::iter(vec![Ok(Event::message("row 1")), Err(std::io::Error::other("db gone"))]);
    /// let body = ssekit_hyper::server::SseBody::try_from_stream(rows, |e| eprintln!("stream ended: {e}"));
    /// # let _ = body;
    /// ```
    pub fn try_from_stream<S, M, E, F>(messages: S, on_error: F) -> Self
    where
        S: Stream<Item = Result<M, E>> + Send + 'static,
        M: Into<Message> + 'static,
        E: 'static,
        F: FnOnce(E) + Send + 'static,
    {
        use futures_util::StreamExt;
        let blocks = ssekit_http::server::encode_messages(messages, on_error);
        Self::from_source(Box::pin(blocks.map(Ok)))
    }

    fn from_source(source: Source) -> Self {
        SseBody {
            frames: Frames::new(source),
            pinger: None,
            clock: Clock::tokio(),
        }
    }

    /// Sends `: ping` whenever nothing was written for `interval` (core [`KeepAlive`]).
    /// ORS asks for 10 s ([`KeepAlive::ORS`]); the official ORS client gives up after 30 s.
    ///
    /// # Example
    /// ```
    /// use ssekit::server::KeepAlive;
    /// let body = ssekit_hyper::server::SseBody::new(futures_util::stream::empty())
    ///     .keep_alive(KeepAlive::ORS);
    /// # let _ = body;
    /// ```
    pub fn keep_alive(self, interval: Duration) -> Self {
        let now = self.clock.now();
        self.keep_alive_with(KeepAlive::new(interval, now))
    }

    /// Uses a configured [`KeepAlive`] (a different comment text, say). Its clock must start
    /// at [`ssekit::time::Instant::ZERO`], which is when the body was created.
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::KeepAlive, time::Instant};
    /// let ka = KeepAlive::new(KeepAlive::ORS, Instant::ZERO).with_comment("keep-alive")?;
    /// let body = ssekit_hyper::server::SseBody::new(futures_util::stream::empty()).keep_alive_with(ka);
    /// # let _ = body;
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn keep_alive_with(mut self, keep_alive: KeepAlive) -> Self {
        self.pinger = Some(Pinger::new(keep_alive, self.clock.clone()));
        self
    }

    /// Uses another runtime's timer for the keep-alive (tokio's is the default). Set it
    /// before [`keep_alive`](Self::keep_alive).
    ///
    /// # Example
    /// ```
    /// let body = ssekit_hyper::server::SseBody::new(futures_util::stream::empty())
    ///     .timer(hyper_util::rt::TokioTimer::new());
    /// # let _ = body;
    /// ```
    pub fn timer<T: Timer + Send + Sync + 'static>(mut self, timer: T) -> Self {
        self.clock = Clock::new(Arc::new(timer));
        self
    }
}

impl Body for SseBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        // One unit of tokio's budget per frame (none outside a tokio task): a task that has
        // spent its budget on other IO yields before this body writes more.
        let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
        let frame = this.frames.poll_frame(this.pinger.as_mut(), cx);
        if frame.is_ready() {
            coop.made_progress();
        }
        frame.map(|frame| frame.map(|bytes| bytes.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// With feature `axum`: an axum handler returns an [`SseBody`] as it is, with the headers
/// of [`response`] (`text/event-stream`, no caching, no proxy buffering).
///
/// # Example
/// ```
/// use axum::{routing::get, Router};
/// use ssekit::Event;
/// use ssekit_hyper::server::SseBody;
/// async fn events() -> SseBody {
///     SseBody::new(futures_util::stream::iter(vec![Event::message("hi")]))
/// }
/// let app: Router = Router::new().route("/events", get(events));
/// # let _ = app;
/// ```
#[cfg(feature = "axum")]
impl axum::response::IntoResponse for SseBody {
    fn into_response(self) -> axum::response::Response {
        response(axum::body::Body::new(self))
    }
}

/// A bounded per-stream queue: the [`Sender`] half for the application, the [`SseBody`] half
/// for the response. `capacity` events at most wait in the queue (at least 1, at most
/// [`MAX_QUEUED`](ssekit_http::server::MAX_QUEUED)); its memory grows with the events in it.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::server::TrySendError> {
/// use ssekit::Event;
/// let (tx, body) = ssekit_hyper::server::channel(16);
/// tx.send(&Event::message("first")).await?;
/// let resp = ssekit_hyper::server::response(body);  // return this from the handler
/// # let _ = resp; Ok(()) }
/// ```
pub fn channel(capacity: usize) -> (Sender, SseBody) {
    let (tx, rx) = mpsc::channel::<Bytes>(ssekit_http::server::queue_capacity(capacity));
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|bytes| (bytes, rx))
    });
    (
        Sender {
            tx,
            encoder: Encoder::new(),
        },
        SseBody::from_bytes(stream),
    )
}

/// The application's half of [`channel`]. Cloning it gives another producer on the same
/// stream; the stream ends when every clone is dropped.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// use ssekit_hyper::server::{channel, TrySendError};
/// let (tx, body) = channel(1);
/// assert!(tx.try_send(&ssekit::Event::message("a")).is_ok());
/// assert!(matches!(tx.try_send(&ssekit::Event::message("b")), Err(TrySendError::Full)));
/// drop(body); // the client went away
/// assert!(matches!(tx.try_send(&ssekit::Event::message("c")), Err(TrySendError::Closed)));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Sender {
    tx: mpsc::Sender<Bytes>,
    encoder: Encoder,
}

impl Sender {
    fn encode(&self, event: &Event) -> Result<Bytes, TrySendError> {
        let mut out = BytesMut::with_capacity(self.encoder.encoded_len(event));
        self.encoder
            .encode(event, &mut out)
            .map_err(TrySendError::Encode)?;
        Ok(out.freeze())
    }

    /// Queues an event, waiting while the queue is full (backpressure). Fails only when the
    /// client went away (or the event cannot be encoded).
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::server::TrySendError> {
    /// let (tx, _body) = ssekit_hyper::server::channel(4);
    /// tx.send(&ssekit::Event::message("x")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send(&self, event: &Event) -> Result<(), TrySendError> {
        let bytes = self.encode(event)?;
        self.send_bytes(bytes).await
    }

    /// Queues already encoded SSE blocks, waiting while the queue is full.
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::server::TrySendError> {
    /// let (tx, _body) = ssekit_hyper::server::channel(4);
    /// tx.send_bytes(bytes::Bytes::from_static(b": hello\n\n")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send_bytes(&self, bytes: Bytes) -> Result<(), TrySendError> {
        self.tx.send(bytes).await.map_err(|_| TrySendError::Closed)
    }

    /// Queues an event without waiting: [`TrySendError::Full`] when the client is behind by
    /// `capacity` events. The usual policy for a broadcaster is to drop that subscriber.
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let (tx, _body) = ssekit_hyper::server::channel(1);
    /// assert!(tx.try_send(&ssekit::Event::message("x")).is_ok());
    /// # }
    /// ```
    pub fn try_send(&self, event: &Event) -> Result<(), TrySendError> {
        let bytes = self.encode(event)?;
        self.try_send_bytes(bytes)
    }

    /// [`try_send`](Self::try_send) for already encoded blocks.
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let (tx, _body) = ssekit_hyper::server::channel(1);
    /// assert!(tx.try_send_bytes(bytes::Bytes::from_static(b"data: x\n\n")).is_ok());
    /// # }
    /// ```
    pub fn try_send_bytes(&self, bytes: Bytes) -> Result<(), TrySendError> {
        self.tx.try_send(bytes).map_err(|e| match e {
            mpsc::error::TrySendError::Full(_) => TrySendError::Full,
            mpsc::error::TrySendError::Closed(_) => TrySendError::Closed,
        })
    }

    /// Resolves when the client went away (the body was dropped).
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let (tx, body) = ssekit_hyper::server::channel(1);
    /// drop(body);
    /// tx.closed().await;
    /// assert!(tx.is_closed());
    /// # }
    /// ```
    pub async fn closed(&self) {
        self.tx.closed().await
    }

    /// Whether the client went away.
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() {
    /// let (tx, _body) = ssekit_hyper::server::channel(1);
    /// assert!(!tx.is_closed());
    /// # }
    /// ```
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// Accepts connections on `listener` forever, serving each with `service` on its own tokio
/// task with the default [`ServeOptions`]: HTTP/1.1 and HTTP/2 (h2c: prior knowledge, as
/// `curl --http2-prior-knowledge` sends it), an 8 KiB write buffer. [`serve_until`] stops
/// gracefully; [`serve_with`] takes options (TLS with ALPN, limits, timeouts).
///
/// # Example
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// use hyper::service::service_fn;
/// use ssekit_hyper::server::{response, serve, SseBody};
///
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// serve(listener, service_fn(|_req| async {
///     let events = futures_util::stream::iter(vec![ssekit::Event::message("hi")]);
///     Ok::<_, std::convert::Infallible>(response(SseBody::new(events)))
/// }))
/// .await
/// # }
/// ```
pub async fn serve<S, B>(listener: tokio::net::TcpListener, service: S) -> std::io::Result<()>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<crate::BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<crate::BoxError>,
{
    serve_until(listener, service, std::future::pending()).await
}

/// As [`serve`], until `stop` completes: then the listener is closed (no new connections),
/// every connection finishes the response it is sending and closes (idle keep-alive
/// connections at once), and this returns when all are closed. Open event streams keep
/// their connection until they end: end them first (the ORS server's `shutdown` does), or
/// bound the wait with a timeout.
///
/// # Example
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// use hyper::service::service_fn;
/// use ssekit_hyper::server::{full, serve_until};
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let stop = tokio::time::sleep(std::time::Duration::from_secs(60));
/// serve_until(listener, service_fn(|_req| async { Ok::<_, std::convert::Infallible>(http::Response::new(full("ok"))) }), stop).await
/// # }
/// ```
pub async fn serve_until<S, B, F>(
    listener: tokio::net::TcpListener,
    service: S,
    stop: F,
) -> std::io::Result<()>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<crate::BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<crate::BoxError>,
    F: std::future::Future<Output = ()>,
{
    serve_with(listener, service, stop, ServeOptions::default()).await
}

/// As [`serve_until`], with `options`: TLS (ALPN `h2` and `http/1.1`), limits, timeouts.
///
/// # Example
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// use hyper::service::service_fn;
/// use ssekit_hyper::server::{full, serve_with, ServeOptions};
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let options = ServeOptions::default().max_concurrent_streams(1000);
/// let service = service_fn(|_req| async { Ok::<_, std::convert::Infallible>(http::Response::new(full("ok"))) });
/// serve_with(listener, service, std::future::pending(), options).await
/// # }
/// ```
pub async fn serve_with<S, B, F>(
    listener: tokio::net::TcpListener,
    service: S,
    stop: F,
    options: ServeOptions,
) -> std::io::Result<()>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<crate::BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<crate::BoxError>,
    F: std::future::Future<Output = ()>,
{
    // Every connection holds a receiver: `send(true)` asks them to close, and the sender's
    // `closed()` completes when the last one has.
    let (closing, closing_rx) = tokio::sync::watch::channel(false);
    let builder = options.connection_builder(
        hyper_util::rt::TokioExecutor::new(),
        hyper_util::rt::TokioTimer::new(),
    );
    #[cfg(feature = "rustls")]
    let tls = options
        .tls_config()
        .cloned()
        .map(tokio_rustls::TlsAcceptor::from);
    let mut stop = std::pin::pin!(stop);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = &mut stop => break,
        };
        let (stream, _) = match accepted {
            Ok(conn) => conn,
            // Out of file descriptors and the like: back off briefly instead of spinning.
            Err(_) => {
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let (service, builder, closing) = (service.clone(), builder.clone(), closing_rx.clone());
        #[cfg(feature = "rustls")]
        if let Some(tls) = tls.clone() {
            tokio::spawn(async move {
                let handshake = tokio::time::timeout(TLS_HANDSHAKE_TIMEOUT, tls.accept(stream));
                if let Ok(Ok(stream)) = handshake.await {
                    serve_connection(&builder, stream, service, closing).await;
                }
            });
            continue;
        }
        tokio::spawn(async move { serve_connection(&builder, stream, service, closing).await });
    }
    drop(listener);
    drop(closing_rx);
    let _ = closing.send(true);
    closing.closed().await;
    Ok(())
}

/// Serves one connection until it ends, or, once `closing` says so, until the response it
/// is sending is done.
async fn serve_connection<IO, S, B>(
    builder: &hyper_util::server::conn::auto::Builder<hyper_util::rt::TokioExecutor>,
    io: IO,
    service: S,
    mut closing: tokio::sync::watch::Receiver<bool>,
) where
    IO: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<crate::BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<crate::BoxError>,
{
    let conn = builder.serve_connection(hyper_util::rt::TokioIo::new(io), service);
    let mut conn = std::pin::pin!(conn);
    tokio::select! {
        _ = conn.as_mut() => return,
        _ = closing.wait_for(|closing| *closing) => {}
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}

impl From<SseBody> for AnyBody {
    /// # Example
    /// ```
    /// use ssekit_hyper::server::{response, AnyBody, SseBody};
    /// let resp: http::Response<AnyBody> = response(SseBody::new(futures_util::stream::empty()).into());
    /// assert_eq!(resp.headers()["content-type"], "text/event-stream");
    /// ```
    fn from(body: SseBody) -> Self {
        AnyBody::new(body)
    }
}

/// A complete body (JSON, an error page) for handlers that answer beside [`SseBody`].
///
/// # Example
/// ```
/// let body = ssekit_hyper::server::full("{\"status\":\"ok\"}");
/// assert_eq!(http_body::Body::size_hint(&body).exact(), Some(15));
/// ```
pub fn full(bytes: impl Into<Bytes>) -> http_body_util::Full<Bytes> {
    http_body_util::Full::new(bytes.into())
}
