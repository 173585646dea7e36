//! The server side on smol: [`SseBody`], a streaming response body with keep-alive
//! comments on an [`async_io::Timer`]; [`response`] for the headers; a bounded [`channel`];
//! [`Broadcast`] with `Last-Event-ID` replay from the core [`ReplayBuffer`]; [`AnyBody`]
//! for routes beside the event streams; and [`serve`] / [`serve_with`], hyper's HTTP/1.1
//! and HTTP/2 server on smol's executor (h2c, or TLS with ALPN through futures-rustls).
//!
//! ```text
//!  app ──Sender / Broadcast──▶ bounded queue ──▶ SseBody::poll_frame ──▶ hyper (smol) ──▶ socket
//!                                                    ▲ ": ping" after `interval` of silence (core KeepAlive)
//! ```
//!
//! Slow clients are bounded as in `ssekit-hyper`: hyper polls the body only when its write
//! buffer ([`WRITE_BUFFER`](ssekit_http::server::WRITE_BUFFER) in [`serve`]) has room, each
//! queue holds `capacity` events, and a [`Broadcast`] drops a subscriber whose queue is full
//! (it reconnects with `Last-Event-ID` and is replayed).
//!
//! Fast sources are bounded too: smol has no cooperative budget, so the body itself yields
//! after [`TURN_BYTES`](ssekit_http::server::TURN_BYTES) in one turn (see [`SseBody`]).

use std::pin::Pin;
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_lite::{Stream, StreamExt};
use http_body::{Body, Frame};
use smol::net::TcpListener;
use smol_hyper::rt::{FuturesIo, SmolTimer};
use ssekit::server::{Gap, KeepAlive, ReplayBuffer};
use ssekit::{EncodeError, Encoder, Event};

pub use ssekit_http::server::{
    last_event_id, response, AnyBody, Message, ServeOptions, TrySendError, TLS_HANDSHAKE_TIMEOUT,
};
use ssekit_http::server::{Frames, Hub};

use crate::runtime::Smol;
use crate::time::{Clock, Pinger};
use crate::{BoxError, Error};

type Source = Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>;

/// A streaming `text/event-stream` response body: each event is written as soon as it is
/// ready, one event per frame when events are few and frames of up to
/// [`FRAME_BYTES`](ssekit_http::server::FRAME_BYTES) when many are ready together; after
/// `interval` of silence the core [`KeepAlive`]'s `: ping` is sent.
///
/// # Fair under load
/// smol's executor has no cooperative budget and a plain `Stream` that is always ready
/// never returns `Pending`, so after [`TURN_BYTES`](ssekit_http::server::TURN_BYTES) in one
/// turn the body wakes itself and answers `Pending`: the connection's task goes behind every
/// other stream, timer and accept. The body holds at most one frame and one event besides
/// its source's queue.
///
/// # Example
/// ```
/// use ssekit::Event;
/// use ssekit_smol::server::{response, SseBody};
/// let events = futures_lite::stream::iter(vec![Event::message("hello")]);
/// let resp = response(SseBody::new(events).keep_alive(std::time::Duration::from_secs(15)));
/// assert_eq!(resp.headers()["content-type"], "text/event-stream");
/// ```
pub struct SseBody {
    frames: Frames<Source, Error>,
    clock: Clock,
    pinger: Option<Pinger>,
}

impl std::fmt::Debug for SseBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseBody")
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

fn encode(encoder: &Encoder, event: &Event) -> Result<Bytes, EncodeError> {
    let mut out = BytesMut::with_capacity(encoder.encoded_len(event));
    encoder.encode(event, &mut out)?;
    Ok(out.freeze())
}

impl SseBody {
    /// A body that encodes each event of `events` and ends when it ends. No keep-alive
    /// until [`keep_alive`](Self::keep_alive).
    ///
    /// # Example
    /// ```
    /// let body = ssekit_smol::server::SseBody::new(futures_lite::stream::empty());
    /// # let _ = body;
    /// ```
    pub fn new<S>(events: S) -> Self
    where
        S: Stream<Item = Event> + Send + 'static,
    {
        let encoder = Encoder::new();
        Self::from_source(Box::pin(
            events.map(move |ev| encode(&encoder, &ev).map_err(Error::from)),
        ))
    }

    /// A body of already encoded SSE blocks (from a [`ReplayBuffer`] or your own
    /// [`Encoder`]).
    ///
    /// # Example
    /// ```
    /// let wire = futures_lite::stream::iter(vec![bytes::Bytes::from_static(b"data: x\n\n")]);
    /// let body = ssekit_smol::server::SseBody::from_bytes(wire);
    /// # let _ = body;
    /// ```
    pub fn from_bytes<S>(frames: S) -> Self
    where
        S: Stream<Item = Bytes> + Send + 'static,
    {
        Self::from_source(Box::pin(frames.map(Ok)))
    }

    /// A body of [`Message`]s: events, comments and `retry:` lines from one stream (an
    /// [`Event`] is a message too). It ends when the stream ends.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use ssekit_smol::server::{Message, SseBody};
    /// let items = vec![Message::retry(Duration::from_secs(1)), Message::from(ssekit::Event::message("hi"))];
    /// let body = SseBody::from_messages(futures_lite::stream::iter(items));
    /// # let _ = body;
    /// ```
    pub fn from_messages<S, M>(messages: S) -> Self
    where
        S: Stream<Item = M> + Send + 'static,
        M: Into<Message>,
    {
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
    /// let rows = futures_lite::stream::iter(vec![Ok(Event::message("row 1")), Err(std::io::Error::other("db gone"))]);
    /// let body = ssekit_smol::server::SseBody::try_from_stream(rows, |e| eprintln!("stream ended: {e}"));
    /// # let _ = body;
    /// ```
    pub fn try_from_stream<S, M, E, F>(messages: S, on_error: F) -> Self
    where
        S: Stream<Item = Result<M, E>> + Send + 'static,
        M: Into<Message> + 'static,
        E: 'static,
        F: FnOnce(E) + Send + 'static,
    {
        let blocks = ssekit_http::server::encode_messages(messages, on_error);
        Self::from_source(Box::pin(blocks.map(Ok)))
    }

    fn from_source(source: Source) -> Self {
        SseBody {
            frames: Frames::new(source),
            clock: Clock::new(),
            pinger: None,
        }
    }

    /// Sends `: ping` whenever nothing was written for `interval` ([`KeepAlive::ORS`] is 10 s).
    ///
    /// # Example
    /// ```
    /// let body = ssekit_smol::server::SseBody::new(futures_lite::stream::empty())
    ///     .keep_alive(ssekit::server::KeepAlive::ORS);
    /// # let _ = body;
    /// ```
    pub fn keep_alive(self, interval: Duration) -> Self {
        let now = self.clock.now();
        self.keep_alive_with(KeepAlive::new(interval, now))
    }

    /// Uses a configured [`KeepAlive`]; its clock starts at [`ssekit::Instant::ZERO`], when
    /// the body was created.
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::KeepAlive, Instant};
    /// let ka = KeepAlive::new(KeepAlive::ORS, Instant::ZERO).with_comment("keep-alive")?;
    /// let body = ssekit_smol::server::SseBody::new(futures_lite::stream::empty()).keep_alive_with(ka);
    /// # let _ = body; Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn keep_alive_with(mut self, keep_alive: KeepAlive) -> Self {
        self.pinger = Some(Pinger::new(keep_alive, self.clock));
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
        this.frames
            .poll_frame(this.pinger.as_mut(), cx)
            .map(|frame| frame.map(|bytes| bytes.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_end_stream()
    }
}

/// A bounded per-stream queue: a [`Sender`] for the application, an [`SseBody`] for the
/// response; at most `capacity` events (at least 1, at most
/// [`MAX_QUEUED`](ssekit_http::server::MAX_QUEUED)) wait in it. The queue (`async-channel`'s)
/// is allocated whole when it is made, about 40 bytes per slot: a capacity of 1,000 costs
/// 40 KB per stream whether events wait or not.
///
/// # Example
/// ```
/// # smol::block_on(async {
/// let (tx, body) = ssekit_smol::server::channel(16);
/// tx.send(&ssekit::Event::message("first")).await?;
/// let resp = ssekit_smol::server::response(body);
/// # let _ = resp; Ok::<(), ssekit_smol::server::TrySendError>(()) }).unwrap();
/// ```
pub fn channel(capacity: usize) -> (Sender, SseBody) {
    let (tx, rx) = async_channel::bounded(ssekit_http::server::queue_capacity(capacity));
    let sender = Sender {
        tx,
        encoder: Encoder::new(),
    };
    (sender, SseBody::from_bytes(rx))
}

/// The application's half of [`channel`]; clones are more producers on the same stream,
/// which ends when every clone is dropped.
///
/// # Example
/// ```
/// use ssekit_smol::server::{channel, TrySendError};
/// let (tx, body) = channel(1);
/// assert!(tx.try_send(&ssekit::Event::message("a")).is_ok());
/// assert!(matches!(tx.try_send(&ssekit::Event::message("b")), Err(TrySendError::Full)));
/// drop(body);
/// assert!(matches!(tx.try_send(&ssekit::Event::message("c")), Err(TrySendError::Closed)));
/// ```
#[derive(Clone, Debug)]
pub struct Sender {
    tx: async_channel::Sender<Bytes>,
    encoder: Encoder,
}

impl Sender {
    /// Queues an event, waiting while the queue is full (backpressure).
    ///
    /// # Example
    /// ```
    /// # smol::block_on(async {
    /// let (tx, _body) = ssekit_smol::server::channel(4);
    /// tx.send(&ssekit::Event::message("x")).await?;
    /// # Ok::<(), ssekit_smol::server::TrySendError>(()) }).unwrap();
    /// ```
    pub async fn send(&self, event: &Event) -> Result<(), TrySendError> {
        let wire = encode(&self.encoder, event).map_err(TrySendError::Encode)?;
        self.send_bytes(wire).await
    }

    /// Queues already encoded SSE blocks, waiting while the queue is full.
    ///
    /// # Example
    /// ```
    /// # smol::block_on(async {
    /// let (tx, _body) = ssekit_smol::server::channel(4);
    /// tx.send_bytes(bytes::Bytes::from_static(b": hello\n\n")).await?;
    /// # Ok::<(), ssekit_smol::server::TrySendError>(()) }).unwrap();
    /// ```
    pub async fn send_bytes(&self, wire: Bytes) -> Result<(), TrySendError> {
        self.tx.send(wire).await.map_err(|_| TrySendError::Closed)
    }

    /// [`try_send`](Self::try_send) for already encoded blocks.
    ///
    /// # Example
    /// ```
    /// let (tx, _body) = ssekit_smol::server::channel(1);
    /// assert!(tx.try_send_bytes(bytes::Bytes::from_static(b"data: x\n\n")).is_ok());
    /// ```
    pub fn try_send_bytes(&self, wire: Bytes) -> Result<(), TrySendError> {
        self.tx.try_send(wire).map_err(|e| match e {
            async_channel::TrySendError::Full(_) => TrySendError::Full,
            async_channel::TrySendError::Closed(_) => TrySendError::Closed,
        })
    }

    /// Queues an event without waiting; [`TrySendError::Full`] when the client is behind.
    ///
    /// # Example
    /// ```
    /// let (tx, _body) = ssekit_smol::server::channel(1);
    /// assert!(tx.try_send(&ssekit::Event::message("x")).is_ok());
    /// ```
    pub fn try_send(&self, event: &Event) -> Result<(), TrySendError> {
        let wire = encode(&self.encoder, event).map_err(TrySendError::Encode)?;
        self.try_send_bytes(wire)
    }

    /// Whether the client went away (the body was dropped).
    ///
    /// # Example
    /// ```
    /// let (tx, body) = ssekit_smol::server::channel(1);
    /// drop(body);
    /// assert!(tx.is_closed());
    /// ```
    pub fn is_closed(&self) -> bool {
        self.tx.is_closed()
    }
}

/// One live stream for many clients: each [`publish`](Self::publish)ed event is encoded
/// once, kept in a core [`ReplayBuffer`] and queued to every subscriber; a client that
/// reconnects with `Last-Event-ID` gets what it missed, then the live events. A subscriber
/// whose queue (`per_client` events) is full is dropped and will resume by replay.
///
/// # Example
/// ```
/// use ssekit::{server::ReplayBuffer, Event};
/// let hub = ssekit_smol::server::Broadcast::new(ReplayBuffer::new(1024, 4 << 20), 64);
/// hub.publish(&Event::builder().id("1")?.data("first").build())?;
/// let body = hub.subscribe(Some("1"))?; // resumes after id 1
/// # let _ = body; Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone)]
pub struct Broadcast {
    hub: Arc<Mutex<Hub<async_channel::Sender<Bytes>>>>,
    per_client: usize,
}

impl std::fmt::Debug for Broadcast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broadcast")
            .field("per_client", &self.per_client)
            .finish_non_exhaustive()
    }
}

impl Broadcast {
    /// A hub keeping recent events in `replay`, queueing at most `per_client` (at least 1,
    /// at most [`MAX_QUEUED`](ssekit_http::server::MAX_QUEUED)) events per client. A
    /// queue's memory grows with the events in it: an idle client costs the same whatever
    /// `per_client` is.
    ///
    /// # Example
    /// ```
    /// let hub = ssekit_smol::server::Broadcast::new(ssekit::server::ReplayBuffer::default(), 8);
    /// # let _ = hub;
    /// ```
    pub fn new(replay: ReplayBuffer, per_client: usize) -> Self {
        Broadcast {
            hub: Arc::new(Mutex::new(Hub::new(replay))),
            per_client: ssekit_http::server::queue_capacity(per_client),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Hub<async_channel::Sender<Bytes>>> {
        self.hub.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `event` (give it an id) to every subscriber; returns how many got it.
    ///
    /// # Example
    /// ```
    /// let hub = ssekit_smol::server::Broadcast::new(ssekit::server::ReplayBuffer::default(), 8);
    /// assert_eq!(hub.publish(&ssekit::Event::message("nobody listens"))?, 0);
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn publish(&self, event: &Event) -> Result<usize, EncodeError> {
        let per_client = self.per_client;
        // The queues are unbounded (a bounded one is allocated whole up front), so the bound
        // is checked here; publishers take turns under the lock, and a client's reads only
        // shorten its queue, so it cannot be passed.
        self.lock().publish(event, |tx, wire| {
            tx.len() < per_client && tx.try_send(wire).is_ok()
        })
    }

    /// A body for a new client: the events after `last_event_id` (none for `None`), then
    /// the live ones; `Err(Gap)` when they can no longer all be replayed.
    ///
    /// # Example
    /// ```
    /// use ssekit::server::{Gap, ReplayBuffer};
    /// let hub = ssekit_smol::server::Broadcast::new(ReplayBuffer::default(), 8);
    /// assert!(matches!(hub.subscribe(Some("never-sent")), Err(Gap::Unknown)));
    /// ```
    pub fn subscribe(&self, last_event_id: Option<&str>) -> Result<SseBody, Gap> {
        let (tx, rx) = async_channel::unbounded();
        let missed = self
            .lock()
            .subscribe(last_event_id, tx, async_channel::Sender::is_closed)?;
        Ok(SseBody::from_bytes(
            futures_lite::stream::iter(missed).chain(rx),
        ))
    }

    /// Ends every current client's stream after what is queued; they reconnect and resume.
    ///
    /// # Example
    /// ```
    /// let hub = ssekit_smol::server::Broadcast::new(ssekit::server::ReplayBuffer::default(), 8);
    /// hub.disconnect_all();
    /// ```
    pub fn disconnect_all(&self) {
        self.lock().disconnect_all();
    }

    /// Clients currently subscribed (including ones that left since the last publish).
    ///
    /// # Example
    /// ```
    /// let hub = ssekit_smol::server::Broadcast::new(ssekit::server::ReplayBuffer::default(), 8);
    /// let _body = hub.subscribe(None);
    /// assert_eq!(hub.subscribers(), 1);
    /// ```
    pub fn subscribers(&self) -> usize {
        self.lock().subscribers()
    }
}

impl From<SseBody> for AnyBody {
    /// # Example
    /// ```
    /// use ssekit_smol::server::{response, AnyBody, SseBody};
    /// let resp: http::Response<AnyBody> = response(SseBody::new(futures_lite::stream::empty()).into());
    /// assert_eq!(resp.headers()["content-type"], "text/event-stream");
    /// ```
    fn from(body: SseBody) -> Self {
        AnyBody::new(body)
    }
}

/// Accepts connections on `listener` forever, serving each with `service` on a task of
/// smol's global executor (hyper with smol's timer, via `smol-hyper`) with the default
/// [`ServeOptions`]: HTTP/1.1 and HTTP/2 (h2c: prior knowledge, as
/// `curl --http2-prior-knowledge` sends it), a write buffer of
/// [`WRITE_BUFFER`](ssekit_http::server::WRITE_BUFFER) per connection and vectored writes
/// (`smol-hyper`'s adapter does not tell hyper that the socket has them, and without them
/// hyper copies every frame into one buffer that grows to its cap). [`serve_until`] stops
/// gracefully; [`serve_with`] takes options (TLS with ALPN, limits, timeouts).
///
/// # Example
/// ```no_run
/// use hyper::service::service_fn;
/// use ssekit_smol::server::{response, serve, SseBody};
/// # smol::block_on(async {
/// let listener = smol::net::TcpListener::bind("127.0.0.1:0").await?;
/// serve(listener, service_fn(|_req| async {
///     let events = futures_lite::stream::iter(vec![ssekit::Event::message("hi")]);
///     Ok::<_, std::convert::Infallible>(response(SseBody::new(events)))
/// }))
/// .await
/// # }).unwrap();
/// ```
pub async fn serve<S, B>(listener: TcpListener, service: S) -> std::io::Result<()>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
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
/// # smol::block_on(async {
/// use hyper::service::service_fn;
/// let listener = smol::net::TcpListener::bind("127.0.0.1:0").await?;
/// let stop = async_io::Timer::after(std::time::Duration::from_secs(60));
/// let stop = async move { stop.await; };
/// ssekit_smol::server::serve_until(listener, service_fn(|_req| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(bytes::Bytes::from("ok"))))
/// }), stop).await
/// # }).unwrap();
/// ```
pub async fn serve_until<S, B, F>(listener: TcpListener, service: S, stop: F) -> std::io::Result<()>
where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Clone
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    F: std::future::Future<Output = ()>,
{
    serve_with(listener, service, stop, ServeOptions::default()).await
}

/// As [`serve_until`], with `options`: TLS (feature `rustls`; ALPN `h2` and `http/1.1`),
/// limits, timeouts.
///
/// # Example
/// ```no_run
/// # smol::block_on(async {
/// use hyper::service::service_fn;
/// use ssekit_smol::server::{serve_with, ServeOptions};
/// let listener = smol::net::TcpListener::bind("127.0.0.1:0").await?;
/// let options = ServeOptions::default().max_concurrent_streams(1000);
/// let service = service_fn(|_req| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(http_body_util::Full::new(bytes::Bytes::from("ok"))))
/// });
/// serve_with(listener, service, std::future::pending(), options).await
/// # }).unwrap();
/// ```
pub async fn serve_with<S, B, F>(
    listener: TcpListener,
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
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
    F: std::future::Future<Output = ()>,
{
    // Closing `closing` asks every connection to close; `open` ends (all its senders, one
    // per connection, dropped) when the last one has.
    let (closing, closing_rx) = async_channel::bounded::<()>(1);
    let (open, all_closed) = async_channel::bounded::<()>(1);
    let builder =
        std::sync::Arc::new(options.connection_builder(Smol::default(), SmolTimer::new()));
    #[cfg(feature = "rustls")]
    let tls = options
        .tls_config()
        .cloned()
        .map(futures_rustls::TlsAcceptor::from);
    let mut stop = std::pin::pin!(stop);
    loop {
        let accepted = futures_lite::future::or(async { Some(listener.accept().await) }, async {
            (&mut stop).await;
            None
        })
        .await;
        let Some(accepted) = accepted else { break };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            // Out of file descriptors and the like: back off instead of spinning.
            Err(_) => {
                async_io::Timer::after(Duration::from_millis(10)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let service = service.clone();
        let (builder, closing, open) = (builder.clone(), closing_rx.clone(), open.clone());
        #[cfg(feature = "rustls")]
        if let Some(tls) = tls.clone() {
            smol::spawn(async move {
                let _open = open;
                let handshake =
                    futures_lite::future::or(async { tls.accept(stream).await.ok() }, async {
                        async_io::Timer::after(ssekit_http::server::TLS_HANDSHAKE_TIMEOUT).await;
                        None
                    });
                if let Some(stream) = handshake.await {
                    serve_connection(&builder, stream, service, closing).await;
                }
            })
            .detach();
            continue;
        }
        smol::spawn(async move {
            let _open = open;
            serve_connection(&builder, stream, service, closing).await;
        })
        .detach();
    }
    drop(listener);
    closing.close();
    drop(open);
    let _ = all_closed.recv().await;
    Ok(())
}

/// Serves one connection until it ends, or, once `closing` is closed, until the response
/// it is sending is done.
async fn serve_connection<IO, S, B>(
    builder: &hyper_util::server::conn::auto::Builder<Smol>,
    io: IO,
    service: S,
    closing: async_channel::Receiver<()>,
) where
    IO: futures_io::AsyncRead + futures_io::AsyncWrite + Unpin + Send + 'static,
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + Send
        + 'static,
    S::Future: Send + 'static,
    S::Error: Into<BoxError>,
    B: Body<Data = Bytes> + Send + 'static,
    B::Error: Into<BoxError>,
{
    let conn = builder.serve_connection(FuturesIo::new(io), service);
    let mut conn = std::pin::pin!(conn);
    let served = futures_lite::future::or(async { Some(conn.as_mut().await) }, async {
        let _ = closing.recv().await;
        None
    })
    .await;
    if served.is_none() {
        conn.as_mut().graceful_shutdown();
        let _ = conn.await;
    }
}
