//! The accept loop of every runtime: [`serve_with`] accepts on a [`Runtime`]'s listener,
//! shakes hands (TLS, ALPN), and serves each connection with hyper (HTTP/1.1 and HTTP/2) on
//! a task of that runtime, until a stop signal; then it closes gracefully.
//!
//! ```text
//!  R::accept ─┬─ error: back off 10 ms, doubling to 1 s (reset by the next accept) ─┐
//!             ├─ over max_connections: "503, Retry-After: 1", close ───────────────┤
//!             └─ [R::accept_tls within TLS_HANDSHAKE_TIMEOUT] ─▶ R::spawn(connection):
//!                     first bytes: the HTTP/2 preface or not ─▶ hyper HTTP/2 or HTTP/1.1
//!                     watchdog on R's timer: no request head within request_head_timeout of
//!                     accept, or no request in flight for idle_timeout ─▶ closed
//!  stop ─▶ listener dropped ─▶ every connection: graceful_shutdown ─▶ serve_with returns
//! ```

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use atomic_waker::AtomicWaker;
use bytes::Bytes;
use http::{Request, Response};
use http_body::{Body, Frame, SizeHint};
use hyper::body::Incoming;
use hyper_util::server::conn::auto::Builder;
use ssekit::Instant;

use super::ServeOptions;
use crate::io::first_of;
use crate::observe::{self, log, Open};
use crate::runtime::{Connection, Executor, Runtime, Timer};
use crate::BoxError;

/// A listening socket of the runtime `R`: what [`serve_with`] accepts connections on.
/// ssekit-hyper implements it for `tokio::net::TcpListener` on `Tokio`, ssekit-smol for
/// `smol::net::TcpListener` on `Smol` (a trait of this crate, named after a type of
/// theirs, so each transport can implement it for a listener type it does not own).
///
/// # Example
/// A listener that hands out in-memory connections (a test harness, a simulation):
/// ```
/// use ssekit_http::runtime::{Connection, Runtime};
/// use ssekit_http::server::Accept;
///
/// struct Queue<C>(smol::channel::Receiver<C>);
/// impl<R: Runtime, C: Connection> Accept<R> for Queue<C> {
///     type Conn = C;
///     async fn accept(&self, _runtime: &R) -> std::io::Result<C> {
///         self.0.recv().await.map_err(|_| std::io::ErrorKind::NotConnected.into())
///     }
/// }
/// ```
pub trait Accept<R: Runtime>: Send + Sync + 'static {
    /// An accepted connection.
    type Conn: Connection;

    /// The next connection, ready for HTTP (`TCP_NODELAY` set, as an event stream's small
    /// writes want).
    fn accept(&self, runtime: &R) -> impl Future<Output = std::io::Result<Self::Conn>> + Send;

    /// The address of the peer of `conn`, for the logs (feature `tracing`); `None` (the default)
    /// where the transport cannot tell.
    ///
    /// # Example
    /// ```
    /// # use ssekit_http::{runtime::Runtime, server::Accept};
    /// # async fn peer<R: Runtime, L: Accept<R>>(listener: &L, rt: &R) -> std::io::Result<()> {
    /// let conn = listener.accept(rt).await?;
    /// println!("from {:?}", L::peer_addr(&conn));
    /// # Ok(()) }
    /// ```
    fn peer_addr(conn: &Self::Conn) -> Option<std::net::SocketAddr> {
        let _ = conn;
        None
    }

    /// The TLS handshake of an accepted connection, as the server `config` says (ALPN
    /// `h2` and `http/1.1`). The default refuses: a listener without TLS.
    ///
    /// # Example
    /// ```
    /// # use ssekit_http::{runtime::Runtime, server::Accept};
    /// # async fn tls<R: Runtime, L: Accept<R>>(listener: &L, rt: &R, config: std::sync::Arc<rustls::ServerConfig>) -> std::io::Result<()> {
    /// let conn = listener.accept(rt).await?;
    /// let conn = L::accept_tls(rt, config, conn).await?;
    /// # let _ = conn; Ok(()) }
    /// ```
    #[cfg(feature = "rustls")]
    fn accept_tls(
        runtime: &R,
        config: Arc<rustls::ServerConfig>,
        conn: Self::Conn,
    ) -> impl Future<Output = std::io::Result<Box<dyn Connection>>> + Send {
        let _ = (runtime, config, conn);
        std::future::ready(Err(std::io::ErrorKind::Unsupported.into()))
    }
}

/// A hyper service that `serve_with` can run: it answers a request with a response whose
/// body is a [`ResponseBody`]. Any `service_fn` of an async handler qualifies, and so does
/// the ORS `Server`.
///
/// # Example
/// ```
/// use ssekit_http::server::{full, HttpService};
/// fn accepts<S: HttpService<http_body_util::Full<bytes::Bytes>>>(_: S) {}
/// accepts(hyper::service::service_fn(|_req| async {
///     Ok::<_, std::convert::Infallible>(http::Response::new(full("ok")))
/// }));
/// ```
pub trait HttpService<B>:
    hyper::service::Service<
        Request<Incoming>,
        Response = Response<B>,
        Future: Send + 'static,
        Error: Into<BoxError>,
    > + Clone
    + Send
    + 'static
{
}

impl<T, B> HttpService<B> for T where
    T: hyper::service::Service<
            Request<Incoming>,
            Response = Response<B>,
            Future: Send + 'static,
            Error: Into<BoxError>,
        > + Clone
        + Send
        + 'static
{
}

/// A response body `serve_with` can send: bytes, any error type that converts to a
/// [`BoxError`]. An [`SseBody`](super::SseBody), an [`AnyBody`](super::AnyBody), hyper's and
/// http-body-util's bodies all are.
///
/// # Example
/// ```
/// fn sendable<B: ssekit_http::server::ResponseBody>(_: B) {}
/// sendable(ssekit_http::server::full("ok"));
/// ```
pub trait ResponseBody: Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static {}

impl<B: Body<Data = Bytes, Error: Into<BoxError>> + Send + 'static> ResponseBody for B {}

/// A complete body (JSON, an error page) for handlers that answer beside an
/// [`SseBody`](super::SseBody).
///
/// # Example
/// ```
/// let body = ssekit_http::server::full("{\"status\":\"ok\"}");
/// assert_eq!(http_body::Body::size_hint(&body).exact(), Some(15));
/// ```
pub fn full(bytes: impl Into<Bytes>) -> http_body_util::Full<Bytes> {
    http_body_util::Full::new(bytes.into())
}

/// Accepts connections on `listener` forever, serving each with `service` on its own task
/// of the listener's runtime, with the default [`ServeOptions`]: HTTP/1.1 and HTTP/2 (h2c
/// by prior knowledge, as `curl --http2-prior-knowledge` sends it), a write buffer of
/// [`WRITE_BUFFER`](super::WRITE_BUFFER) per connection, vectored writes. The runtime is the
/// one the listener's [`Accept`] names (a `tokio::net::TcpListener` serves on ssekit-hyper's
/// `Tokio`, a `smol::net::TcpListener` on ssekit-smol's `Smol`), so a call names none.
/// [`serve_until`] stops gracefully; [`serve_with`] takes options (TLS with ALPN, limits,
/// timeouts); [`serve_on`] takes the runtime value too.
///
/// # Example
/// ```
/// use ssekit_http::runtime::Runtime;
/// use ssekit_http::server::{response, serve, Accept, SseBody};
///
/// async fn run<R: Runtime + Default>(listener: impl Accept<R>) -> std::io::Result<()> {
///     serve(listener, hyper::service::service_fn(|_req| async {
///         let events = futures_lite::stream::iter(vec![ssekit::Event::message("hi")]);
///         Ok::<_, std::convert::Infallible>(response(SseBody::<R>::new(events)))
///     }))
///     .await
/// }
/// ```
pub async fn serve<R, L, S, B>(listener: L, service: S) -> std::io::Result<()>
where
    R: Runtime + Default,
    L: Accept<R>,
    S: HttpService<B>,
    B: ResponseBody,
{
    let options = ServeOptions::default();
    serve_on(
        R::default(),
        listener,
        service,
        std::future::pending(),
        options,
    )
    .await
}

/// As [`serve`], until `stop` completes: then the listener is closed (no new connections),
/// every connection finishes the response it is sending and closes (idle keep-alive
/// connections at once), and this returns when all are closed. Open event streams keep
/// their connection until they end: end them first (the ORS server's `shutdown` does), or
/// bound the wait with a timeout.
///
/// # Example
/// ```
/// use ssekit_http::runtime::Runtime;
/// use ssekit_http::server::{full, serve_until, Accept};
///
/// async fn run<R: Runtime + Default>(listener: impl Accept<R>, stop: impl Future<Output = ()>) -> std::io::Result<()> {
///     let service = hyper::service::service_fn(|_req| async {
///         Ok::<_, std::convert::Infallible>(http::Response::new(full("ok")))
///     });
///     serve_until(listener, service, stop).await
/// }
/// ```
pub async fn serve_until<R, L, S, B>(
    listener: L,
    service: S,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()>
where
    R: Runtime + Default,
    L: Accept<R>,
    S: HttpService<B>,
    B: ResponseBody,
{
    serve_on(
        R::default(),
        listener,
        service,
        stop,
        ServeOptions::default(),
    )
    .await
}

/// As [`serve_until`], with `options`: TLS (ALPN `h2` and `http/1.1`, feature `rustls`),
/// limits, timeouts.
///
/// # Example
/// ```
/// use ssekit_http::runtime::Runtime;
/// use ssekit_http::server::{full, serve_with, Accept, ServeOptions};
///
/// async fn run<R: Runtime + Default>(listener: impl Accept<R>) -> std::io::Result<()> {
///     let service = hyper::service::service_fn(|_req| async {
///         Ok::<_, std::convert::Infallible>(http::Response::new(full("ok")))
///     });
///     let options = ServeOptions::default().max_concurrent_streams(1000);
///     serve_with(listener, service, std::future::pending(), options).await
/// }
/// ```
pub async fn serve_with<R, L, S, B>(
    listener: L,
    service: S,
    stop: impl Future<Output = ()>,
    options: ServeOptions,
) -> std::io::Result<()>
where
    R: Runtime + Default,
    L: Accept<R>,
    S: HttpService<B>,
    B: ResponseBody,
{
    serve_on(R::default(), listener, service, stop, options).await
}

/// The accept loop of [`serve`], [`serve_until`] and [`serve_with`], on the runtime value
/// given (a simulation's, one shared with the rest of a server). Each connection is served
/// on its own task of `runtime`; a failed accept (out of file descriptors and the like) is
/// retried after 10 ms, doubling to 1 s while it keeps failing, instead of spinning, and
/// open connections are served meanwhile; a TLS handshake gets
/// [`TLS_HANDSHAKE_TIMEOUT`](super::TLS_HANDSHAKE_TIMEOUT). A connection is closed when it
/// completes no request head within [`ServeOptions::request_head_timeout`] of accept, or has
/// no request in flight for [`ServeOptions::idle_timeout`] (a response being sent, however
/// silent, is in flight); above [`ServeOptions::max_connections`] a new one is answered
/// `503` with `Retry-After: 1` and closed.
///
/// # Example
/// ```
/// use ssekit_http::runtime::Runtime;
/// use ssekit_http::server::{full, serve_on, Accept, ServeOptions};
///
/// async fn run<R: Runtime>(runtime: R, listener: impl Accept<R>) -> std::io::Result<()> {
///     let service = hyper::service::service_fn(|_req| async {
///         Ok::<_, std::convert::Infallible>(http::Response::new(full("ok")))
///     });
///     serve_on(runtime, listener, service, std::future::pending(), ServeOptions::default()).await
/// }
/// ```
pub async fn serve_on<R, L, S, B>(
    runtime: R,
    listener: L,
    service: S,
    stop: impl Future<Output = ()>,
    options: ServeOptions,
) -> std::io::Result<()>
where
    R: Runtime,
    L: Accept<R>,
    S: HttpService<B>,
    B: ResponseBody,
{
    // Every connection holds a receiver: `send(true)` asks them to close, and the sender's
    // `closed()` completes when the last one has.
    let (closing, closing_rx) = tokio::sync::watch::channel(false);
    let builder = options.connection_builder(Executor(runtime.clone()), Timer(runtime.clone()));
    let builders = Arc::new(Builders {
        http1: builder.clone().http1_only(),
        http2: builder.http2_only(),
    });
    let limits = Limits {
        head: options.request_head_timeout_value(),
        idle: options.idle_timeout_value(),
        write_buffer: options.write_buffer_size(),
    };
    let max_connections = options.max_connections_allowed();
    let served = Arc::new(AtomicUsize::new(0));
    let lingering = Arc::new(AtomicUsize::new(0));
    let mut backoff = ACCEPT_BACKOFF_MIN;
    let mut stop = std::pin::pin!(stop);
    while let Some(accepted) = first_of(listener.accept(&runtime), stop.as_mut()).await {
        let conn = match accepted {
            Ok(conn) => {
                backoff = ACCEPT_BACKOFF_MIN;
                conn
            }
            Err(error) => {
                // Out of file descriptors (EMFILE, ENFILE) and the like: the listener stays
                // readable, so retrying at once would spin. Existing connections are served
                // meanwhile (their tasks do not wait on this loop).
                observe::count(observe::ACCEPT_ERRORS_TOTAL, 1);
                log!(warn, target: "ssekit::serve", %error, wait_ms = backoff.as_millis() as u64, "accept failed; retrying");
                let _ = &error;
                if first_of(runtime.sleep(backoff), stop.as_mut())
                    .await
                    .is_none()
                {
                    break;
                }
                backoff = (backoff * 2).min(ACCEPT_BACKOFF_MAX);
                continue;
            }
        };
        let accepted_at = runtime.now();
        let peer = L::peer_addr(&conn);
        let Some(slot) = Slot::take(&served, max_connections) else {
            observe::count(observe::CONNECTIONS_SHED_TOTAL, 1);
            log!(debug, target: "ssekit::serve", peer = ?peer, max_connections, "over the connection cap: shed");
            #[cfg(feature = "rustls")]
            if options.tls_config().is_some() {
                // Plain text would be garbage inside TLS: closed at once.
                drop(conn);
                continue;
            }
            match Slot::take(&lingering, (max_connections / 8).clamp(1, SHED_LINGERING)) {
                Some(lingers) => runtime.spawn(shed(runtime.clone(), conn, lingers)),
                None => shed_now(conn),
            }
            continue;
        };
        observe::count(observe::CONNECTIONS_TOTAL, 1);
        let open = Open::new(observe::CONNECTIONS_OPEN);
        log!(debug, target: "ssekit::serve", peer = ?peer, "connection accepted");
        let watch = Arc::new(Watch::new(accepted_at, limits.write_buffer));
        let service = Traced::new(service.clone(), peer, runtime.clone(), watch.clone());
        let (builders, closing) = (builders.clone(), closing_rx.clone());
        let rt = runtime.clone();
        #[cfg(feature = "rustls")]
        if let Some(tls) = options.tls_config().cloned() {
            runtime.spawn(async move {
                let timeout = rt.sleep(super::TLS_HANDSHAKE_TIMEOUT);
                let handshake = first_of(L::accept_tls(&rt, tls, conn), async {
                    timeout.await;
                })
                .await;
                match handshake {
                    Some(Ok(conn)) => {
                        let conn = Watched::new(conn, watch.clone());
                        serve_connection(&rt, &builders, conn, service, &watch, limits, closing)
                            .await
                    }
                    Some(Err(error)) => {
                        log!(debug, target: "ssekit::serve", peer = ?peer, %error, "TLS handshake failed");
                        let _ = error;
                    }
                    None => {
                        log!(debug, target: "ssekit::serve", peer = ?peer, "TLS handshake timed out");
                    }
                }
                drop((open, slot));
            });
            continue;
        }
        runtime.spawn(async move {
            let conn = Watched::new(conn, watch.clone());
            serve_connection(&rt, &builders, conn, service, &watch, limits, closing).await;
            log!(debug, target: "ssekit::serve", peer = ?peer, "connection closed");
            drop((open, slot));
        });
    }
    drop(listener);
    drop(closing_rx);
    log!(info, target: "ssekit::serve", "stopped accepting; closing connections gracefully");
    let _ = closing.send(true);
    closing.closed().await;
    Ok(())
}

/// The first wait after a failed `accept`; each failure in a row doubles it, up to
/// [`ACCEPT_BACKOFF_MAX`]; an accepted connection sets it back.
const ACCEPT_BACKOFF_MIN: Duration = Duration::from_millis(10);
/// The longest wait between two `accept` calls that fail (out of file descriptors).
const ACCEPT_BACKOFF_MAX: Duration = Duration::from_secs(1);
/// The most shed connections kept open at once while their `503` is read (and at most an
/// eighth of the cap, so that they cannot use up the room left under the open-file limit);
/// beyond, a shed connection is closed at once.
const SHED_LINGERING: usize = 64;
/// How long a shed connection is kept, at most, for its client to read the `503`.
const SHED_LINGER: Duration = Duration::from_secs(1);
/// How long an idle connection asked to close (`GOAWAY` over HTTP/2) has to do so before it
/// is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(1);

/// What a shed connection is answered: small, complete, and closing.
const SHED_RESPONSE: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: text/plain; charset=utf-8\r\n\
retry-after: 1\r\n\
cache-control: no-store\r\n\
connection: close\r\n\
content-length: 38\r\n\
\r\n\
over capacity: retry after 1 second\r\n";

/// One of at most `max` units of a shared count (a connection under the cap, a shed
/// connection lingering), given back when dropped.
struct Slot(Arc<AtomicUsize>);

impl Slot {
    fn take(count: &Arc<AtomicUsize>, max: usize) -> Option<Slot> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < max).then_some(n + 1)
            })
            .ok()
            .map(|_| Slot(count.clone()))
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Answers a connection over the cap [`SHED_RESPONSE`], closes its writing half, and reads
/// what the client sent until it closes too (so that the close sends no reset that could
/// destroy the answer before it is read), for at most [`SHED_LINGER`].
async fn shed<R: Runtime, C: Connection>(runtime: R, mut conn: C, lingers: Slot) {
    let answer = async {
        let mut written = 0;
        while written < SHED_RESPONSE.len() {
            let rest = SHED_RESPONSE.get(written..).unwrap_or_default();
            let n = std::future::poll_fn(|cx| {
                hyper::rt::Write::poll_write(Pin::new(&mut conn), cx, rest)
            })
            .await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            written += n;
        }
        std::future::poll_fn(|cx| hyper::rt::Write::poll_shutdown(Pin::new(&mut conn), cx)).await?;
        let mut buf = [std::mem::MaybeUninit::<u8>::uninit(); 1024];
        let mut read = 0usize;
        while read < 64 << 10 {
            let n = std::future::poll_fn(|cx| {
                let mut into = hyper::rt::ReadBuf::uninit(&mut buf);
                match hyper::rt::Read::poll_read(Pin::new(&mut conn), cx, into.unfilled()) {
                    Poll::Ready(Ok(())) => Poll::Ready(Ok(into.filled().len())),
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await?;
            if n == 0 {
                break;
            }
            read += n;
        }
        Ok::<(), std::io::Error>(())
    };
    let _ = first_of(answer, async {
        runtime.sleep(SHED_LINGER).await;
    })
    .await;
    drop(lingers);
}

/// Answers a connection over the cap [`SHED_RESPONSE`] if its socket takes it at once, and
/// closes it: what is left when too many shed connections linger already.
fn shed_now<C: Connection>(mut conn: C) {
    let mut cx = Context::from_waker(Waker::noop());
    let _ = hyper::rt::Write::poll_write(Pin::new(&mut conn), &mut cx, SHED_RESPONSE);
}

/// The timeouts and the write bound of every connection.
#[derive(Clone, Copy, Debug)]
struct Limits {
    head: Option<Duration>,
    idle: Option<Duration>,
    write_buffer: usize,
}

/// One connection's state, shared by its watchdog, its service (requests in flight) and its
/// IO (bytes handed to the socket).
///
/// hyper bounds an HTTP/1.1 connection's read buffer and write queue with one number; that
/// number is set for the request head (64 KiB by default), and this keeps a response's
/// unsent bytes within the write buffer instead: a response body is not polled while the
/// body bytes handed to hyper but not yet to the socket reach the write buffer. `unsent`
/// never counts more than hyper holds (every byte written takes away from it, the head and
/// the chunk framing included, and it starts again from 0 with each response), so hyper
/// always has bytes to flush while a body waits, and the wait ends when the socket takes
/// some.
struct Watch {
    /// Requests whose response is being made or sent.
    in_flight: AtomicUsize,
    /// Whether a request head has been read on this connection.
    started: AtomicBool,
    /// When the connection was accepted, or the last response ended: the runtime's
    /// milliseconds.
    idle_since: AtomicU64,
    /// HTTP/1.1 response bytes handed to hyper and not yet to the socket (at most).
    unsent: AtomicUsize,
    /// Whether a body waits for the socket to take bytes (its waker in `waker`).
    parked: AtomicBool,
    waker: AtomicWaker,
    /// Whether [`serve_connection`] is polling the connection (hyper, the body, the socket)
    /// right now: a body unparked meanwhile is polled again in the same turn, without a
    /// wake and a trip through the runtime's queue.
    polling: AtomicBool,
    /// A body was unparked while `polling`: poll the connection again.
    again: AtomicBool,
    write_buffer: usize,
}

impl Watch {
    fn new(accepted: Instant, write_buffer: usize) -> Self {
        Watch {
            in_flight: AtomicUsize::new(0),
            started: AtomicBool::new(false),
            idle_since: AtomicU64::new(millis(accepted)),
            unsent: AtomicUsize::new(0),
            parked: AtomicBool::new(false),
            waker: AtomicWaker::new(),
            polling: AtomicBool::new(false),
            again: AtomicBool::new(false),
            write_buffer,
        }
    }

    /// Whether an HTTP/1.1 body must wait before its next frame: a write buffer's worth of
    /// its bytes is unsent. If so, `cx` is woken when the socket takes bytes again (hyper,
    /// finding the body pending, flushes what it holds, so a write comes).
    fn must_wait(&self, cx: &Context<'_>) -> bool {
        if self.unsent.load(Ordering::SeqCst) < self.write_buffer {
            return false;
        }
        self.waker.register(cx.waker());
        self.parked.store(true, Ordering::SeqCst);
        // The socket may have taken bytes between the first look and the park.
        self.unsent.load(Ordering::SeqCst) >= self.write_buffer
    }

    /// The socket took `n` bytes (an error: the connection is ending, nothing is owed).
    fn wrote(&self, taken: Result<usize, ()>) {
        match taken {
            Ok(0) => return,
            Ok(n) => {
                let _ = self
                    .unsent
                    .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |u| {
                        Some(u.saturating_sub(n))
                    });
            }
            Err(()) => self.unsent.store(0, Ordering::SeqCst),
        }
        self.unpark();
    }

    /// A response ended: what it left unsent is no reason for the next one to wait.
    fn response_ended(&self) {
        self.unsent.store(0, Ordering::SeqCst);
        self.unpark();
    }

    /// Lets a parked body go on: polled again at once if the connection is being polled
    /// (the socket took bytes during hyper's flush, the common case), woken otherwise.
    fn unpark(&self) {
        if !self.parked.swap(false, Ordering::SeqCst) {
            return;
        }
        // `again` before `polling`: a poll that ends between the two still sees `again`,
        // or this sees it ended and wakes (see `Watch::poll`).
        self.again.store(true, Ordering::SeqCst);
        if self.polling.load(Ordering::SeqCst) {
            return;
        }
        self.waker.wake();
    }

    /// Polls `conn` (hyper's connection), again while a body it parked was unparked during
    /// the poll, at most [`REPOLLS`] times; then the next wake polls it. Without this, each
    /// frame of a fast stream would wait for a wake (hyper polls a body before it flushes,
    /// and a frame is larger than the write buffer), halving a busy server's throughput.
    fn poll<F: Future>(&self, mut conn: Pin<&mut F>, cx: &mut Context<'_>) -> Poll<F::Output> {
        for _ in 0..REPOLLS {
            self.again.store(false, Ordering::SeqCst);
            self.polling.store(true, Ordering::SeqCst);
            let polled = conn.as_mut().poll(cx);
            self.polling.store(false, Ordering::SeqCst);
            if polled.is_ready() {
                return polled;
            }
            if !self.again.swap(false, Ordering::SeqCst) {
                return Poll::Pending;
            }
        }
        cx.waker().wake_by_ref();
        Poll::Pending
    }
}

/// The most polls of a connection in one turn while its body is unparked by its own writes
/// (four frames make one body's turn, see [`TURN_BYTES`](super::TURN_BYTES)).
const REPOLLS: usize = 6;

/// The HTTP/2 connection preface (RFC 9113 §3.4): a connection that starts with it speaks
/// HTTP/2 by prior knowledge (h2c, or TLS with ALPN `h2`).
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";

/// The most a connection's first read takes: a whole request head, usually.
const FIRST_READ: usize = 4 << 10;

/// The two connection builders of [`serve_on`]: which one serves a connection, its first
/// bytes tell ([`Watched::sniff`]).
struct Builders<R: Runtime> {
    http1: Builder<Executor<R>>,
    http2: Builder<Executor<R>>,
}

fn millis(at: Instant) -> u64 {
    u64::try_from(at.since_origin().as_millis()).unwrap_or(u64::MAX)
}

/// Why a connection's watchdog closed it.
#[derive(Clone, Copy, Debug)]
enum Expired {
    /// No request head within the request head timeout of accept.
    Head,
    /// No request in flight for the idle timeout.
    Idle,
}

/// Completes when the connection has outlived its limits: no request head within
/// `limits.head` of accept, or no request in flight for `limits.idle` since the last
/// response ended. A response in flight is never expired, however silent.
async fn watchdog<R: Runtime>(runtime: &R, watch: &Watch, limits: Limits) -> Expired {
    loop {
        let started = watch.started.load(Ordering::SeqCst);
        let (limit, why) = if started {
            (limits.idle, Expired::Idle)
        } else {
            (limits.head, Expired::Head)
        };
        let now = runtime.now();
        let at = match limit {
            // No limit before a first request: look again later, when the idle one may apply.
            None => match limits.idle {
                Some(idle) => now.saturating_add(idle),
                None => std::future::pending().await,
            },
            // A response in flight, however silent: look again later.
            Some(limit) if watch.in_flight.load(Ordering::SeqCst) > 0 => now.saturating_add(limit),
            Some(limit) => {
                let since = Instant::from_millis(watch.idle_since.load(Ordering::SeqCst));
                let deadline = since.saturating_add(limit);
                if now >= deadline {
                    return why;
                }
                deadline
            }
        };
        runtime.sleep_until(at).await;
    }
}

/// A connection as hyper reads and writes it, telling its [`Watch`] how the socket takes
/// bytes.
///
/// It reads the connection's first bytes itself ([`sniff`](Self::sniff)) and hands them to
/// hyper's first read whole: hyper-util's own detection would hand hyper 24 bytes first, and
/// hyper, finding the head incomplete, would double its 8 KiB read buffer for the rest.
struct Watched<C> {
    io: C,
    watch: Arc<Watch>,
    /// The first bytes, read by `sniff`, not yet read by hyper.
    first: Bytes,
}

impl<C> Watched<C> {
    fn new(io: C, watch: Arc<Watch>) -> Self {
        Watched {
            io,
            watch,
            first: Bytes::new(),
        }
    }
}

impl<C: Connection> Watched<C> {
    /// Reads the connection's first bytes (what its first read gives, up to [`FIRST_READ`];
    /// more only while they could still be the HTTP/2 preface) and tells from them whether
    /// it speaks HTTP/2; `None` when it closes before a byte.
    async fn sniff(&mut self) -> std::io::Result<Option<bool>> {
        let mut buf = vec![0; FIRST_READ];
        let mut filled = 0;
        let http2 = loop {
            let n = std::future::poll_fn(|cx| {
                let mut into = hyper::rt::ReadBuf::new(buf.get_mut(filled..).unwrap_or_default());
                match Pin::new(&mut self.io).poll_read(cx, into.unfilled()) {
                    Poll::Ready(Ok(())) => Poll::Ready(Ok(into.filled().len())),
                    Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
                    Poll::Pending => Poll::Pending,
                }
            })
            .await?;
            if n == 0 && filled == 0 {
                return Ok(None);
            }
            filled += n;
            let seen = buf.get(..filled.min(H2_PREFACE.len())).unwrap_or_default();
            if n == 0 || !H2_PREFACE.starts_with(seen) {
                break false;
            }
            if seen.len() == H2_PREFACE.len() {
                break true;
            }
        };
        buf.truncate(filled);
        self.first = Bytes::from(buf);
        Ok(Some(http2))
    }
}

impl<C: Connection> hyper::rt::Read for Watched<C> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        if self.first.is_empty() {
            return Pin::new(&mut self.io).poll_read(cx, buf);
        }
        let n = self.first.len().min(buf.remaining());
        let first = std::mem::take(&mut self.first);
        buf.put_slice(first.get(..n).unwrap_or_default());
        // The rest, if any; once all is read, the allocation goes.
        self.first = first.slice(n..);
        Poll::Ready(Ok(()))
    }
}

impl<C: Connection> hyper::rt::Write for Watched<C> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write(cx, buf);
        self.watch.wrote(taken(&polled));
        polled
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.io).poll_write_vectored(cx, bufs);
        self.watch.wrote(taken(&polled));
        polled
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// What a write took, for [`Watch::wrote`]: nothing when pending, `Err` on an error (the
/// connection is ending; a parked body must not wait on it).
fn taken(polled: &Poll<std::io::Result<usize>>) -> Result<usize, ()> {
    match polled {
        Poll::Pending => Ok(0),
        Poll::Ready(Ok(n)) => Ok(*n),
        Poll::Ready(Err(_)) => Err(()),
    }
}

/// A request in flight on a connection, from its head to the end of its response (the
/// body's end, or its drop when the client goes away).
struct InFlight<R: Runtime> {
    watch: Arc<Watch>,
    runtime: R,
}

impl<R: Runtime> InFlight<R> {
    fn new(watch: Arc<Watch>, runtime: R) -> Self {
        watch.started.store(true, Ordering::SeqCst);
        watch.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight { watch, runtime }
    }
}

impl<R: Runtime> Drop for InFlight<R> {
    fn drop(&mut self) {
        self.watch
            .idle_since
            .store(millis(self.runtime.now()), Ordering::SeqCst);
        self.watch.response_ended();
        self.watch.in_flight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// A response body that keeps its request [`InFlight`] until it ends, and, over HTTP/1.1,
/// waits while a write buffer's worth of it is unsent (see [`Watch`]).
pub struct Tracked<B, R: Runtime> {
    body: Pin<Box<B>>,
    flight: InFlight<R>,
    bounded: bool,
}

impl<B: ResponseBody, R: Runtime> Body for Tracked<B, R> {
    type Data = Bytes;
    type Error = B::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, B::Error>>> {
        let this = self.get_mut();
        if this.bounded && this.flight.watch.must_wait(cx) {
            return Poll::Pending;
        }
        let polled = this.body.as_mut().poll_frame(cx);
        if this.bounded
            && let Poll::Ready(Some(Ok(frame))) = &polled
            && let Some(data) = frame.data_ref()
        {
            this.flight
                .watch
                .unsent
                .fetch_add(data.len(), Ordering::SeqCst);
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}

/// The service, with an `info` span per request (method, path, peer) around its future when
/// the `tracing` feature is on (the access-log line of a stream made in the handler is written
/// in that span), and each request [`InFlight`] until its response ends.
#[derive(Clone)]
struct Traced<S, R: Runtime> {
    service: S,
    runtime: R,
    watch: Arc<Watch>,
    #[cfg(feature = "tracing")]
    peer: Option<std::net::SocketAddr>,
}

impl<S, R: Runtime> Traced<S, R> {
    fn new(service: S, peer: Option<std::net::SocketAddr>, runtime: R, watch: Arc<Watch>) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = peer;
        Traced {
            service,
            runtime,
            watch,
            #[cfg(feature = "tracing")]
            peer,
        }
    }
}

/// The future of [`Traced`]'s response.
type Responding<B, R, E> = Pin<Box<dyn Future<Output = Result<Response<Tracked<B, R>>, E>> + Send>>;

impl<S, R, B> hyper::service::Service<Request<Incoming>> for Traced<S, R>
where
    S: hyper::service::Service<Request<Incoming>, Response = Response<B>, Future: Send + 'static>,
    R: Runtime,
    B: ResponseBody,
{
    type Response = Response<Tracked<B, R>>;
    type Error = S::Error;
    type Future = Responding<B, R, S::Error>;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        let flight = InFlight::new(self.watch.clone(), self.runtime.clone());
        // HTTP/2 bounds each stream's send buffer itself.
        let bounded = req.version() < http::Version::HTTP_2;
        #[cfg(feature = "tracing")]
        let future = {
            use tracing::Instrument;
            let span = tracing::info_span!(
                target: "ssekit::serve",
                "request",
                method = %req.method(),
                path = req.uri().path(),
                peer = self.peer.map(tracing::field::display),
            );
            let _in = span.enter();
            let future = self.service.call(req);
            drop(_in);
            future.instrument(span)
        };
        #[cfg(not(feature = "tracing"))]
        let future = self.service.call(req);
        Box::pin(async move {
            let resp = future.await?;
            Ok(resp.map(|body| Tracked {
                body: Box::pin(body),
                flight,
                bounded,
            }))
        })
    }
}

/// Serves one connection until it ends, it outlives its limits (see [`watchdog`]), or, once
/// `closing` says so, until the response it is sending is done. Its first bytes tell
/// HTTP/1.1 from HTTP/2 ([`Watched::sniff`]), within the same limits as the head they begin.
async fn serve_connection<R, S, B, C>(
    runtime: &R,
    builders: &Builders<R>,
    mut conn: Watched<C>,
    service: Traced<S, R>,
    watch: &Watch,
    limits: Limits,
    mut closing: tokio::sync::watch::Receiver<bool>,
) where
    R: Runtime,
    S: HttpService<B>,
    B: ResponseBody,
    C: Connection,
{
    enum End {
        Done,
        Asked,
        Expired(Expired),
    }
    let mut asked = std::pin::pin!(async {
        let _ = closing.wait_for(|closing| *closing).await;
    });
    let mut expired = std::pin::pin!(watchdog(runtime, watch, limits));
    let sniffed = {
        let mut sniff = std::pin::pin!(conn.sniff());
        std::future::poll_fn(|cx| {
            if let Poll::Ready(sniffed) = sniff.as_mut().poll(cx) {
                return Poll::Ready(Ok(sniffed));
            }
            if asked.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(End::Asked));
            }
            expired.as_mut().poll(cx).map(|why| Err(End::Expired(why)))
        })
        .await
    };
    let builder = match sniffed {
        Ok(Ok(Some(true))) => &builders.http2,
        Ok(Ok(Some(false))) => &builders.http1,
        // Closed, failed or asked to close before a byte came: nothing to answer.
        Ok(Ok(None) | Err(_)) | Err(End::Asked | End::Done) => return,
        Err(End::Expired(why)) => return expire(why),
    };
    let conn = builder.serve_connection(conn, service);
    let mut conn = std::pin::pin!(conn);
    let end = std::future::poll_fn(|cx| {
        if watch.poll(conn.as_mut(), cx).is_ready() {
            return Poll::Ready(End::Done);
        }
        if asked.as_mut().poll(cx).is_ready() {
            return Poll::Ready(End::Asked);
        }
        expired.as_mut().poll(cx).map(End::Expired)
    })
    .await;
    match end {
        End::Done => {}
        End::Asked => {
            conn.as_mut().graceful_shutdown();
            let _ = conn.await;
        }
        End::Expired(Expired::Head) => expire(Expired::Head),
        End::Expired(Expired::Idle) => {
            expire(Expired::Idle);
            // HTTP/2 says GOAWAY; a request that raced in is answered; then it closes, or is
            // dropped once nothing has been in flight for CLOSE_GRACE.
            conn.as_mut().graceful_shutdown();
            let grace = async {
                loop {
                    runtime.sleep(CLOSE_GRACE).await;
                    if watch.in_flight.load(Ordering::SeqCst) == 0 {
                        break;
                    }
                }
            };
            let _ = first_of(conn, grace).await;
        }
    }
}

/// Counts and logs a connection closed by its watchdog. With no head in time there is
/// nothing to answer and nothing to be polite to: the descriptor goes back at once.
fn expire(why: Expired) {
    match why {
        Expired::Head => {
            observe::count_by(observe::CONNECTIONS_EXPIRED_TOTAL, "reason", "head", 1);
            log!(debug, target: "ssekit::serve", "no request head in time: connection closed");
        }
        Expired::Idle => {
            observe::count_by(observe::CONNECTIONS_EXPIRED_TOTAL, "reason", "idle", 1);
            log!(debug, target: "ssekit::serve", "idle: connection closed");
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    use super::*;
    use crate::sync::WakeCount;

    /// What hyper does with an always-ready body over a fast socket, `frames` times a poll
    /// at most: a frame of 16 KiB is queued, the body parks on the next poll (a write
    /// buffer's worth unsent), the flush hands the frame to the socket and unparks it.
    fn connection<'a>(watch: &'a Watch, polls: &'a AtomicUsize) -> impl Future<Output = ()> + 'a {
        std::future::poll_fn(move |cx| {
            polls.fetch_add(1, Ordering::SeqCst);
            assert!(!watch.must_wait(cx), "polled while parked");
            watch.unsent.fetch_add(16 << 10, Ordering::SeqCst);
            assert!(watch.must_wait(cx));
            watch.wrote(Ok(16 << 10));
            Poll::Pending
        })
    }

    #[test]
    fn a_body_unparked_by_its_own_flush_is_polled_again_in_the_same_turn() {
        let watch = Watch::new(Instant::ZERO, 8 << 10);
        let polls = AtomicUsize::new(0);
        let wakes = Arc::new(WakeCount::default());
        let waker = Waker::from(wakes.clone());
        let mut cx = Context::from_waker(&waker);
        let mut conn = std::pin::pin!(connection(&watch, &polls));
        assert!(watch.poll(conn.as_mut(), &mut cx).is_pending());
        // REPOLLS polls without a wake in between, then one wake for the next turn.
        assert_eq!(polls.load(Ordering::SeqCst), REPOLLS);
        assert_eq!(wakes.get(), 1);
    }

    #[test]
    fn a_body_unparked_outside_a_poll_is_woken() {
        let watch = Watch::new(Instant::ZERO, 8 << 10);
        let wakes = Arc::new(WakeCount::default());
        let waker = Waker::from(wakes.clone());
        let cx = Context::from_waker(&waker);
        watch.unsent.fetch_add(16 << 10, Ordering::SeqCst);
        assert!(watch.must_wait(&cx));
        // A socket write seen while nobody polls (a write on another thread).
        watch.wrote(Ok(4 << 10));
        assert_eq!(wakes.get(), 1);
        // A connection that parks and is not unparked is polled once and not woken.
        let polls = AtomicUsize::new(0);
        let mut conn = std::pin::pin!(std::future::poll_fn(|cx| {
            polls.fetch_add(1, Ordering::SeqCst);
            assert!(watch.must_wait(cx));
            Poll::<()>::Pending
        }));
        let mut cx = Context::from_waker(&waker);
        assert!(watch.poll(conn.as_mut(), &mut cx).is_pending());
        assert_eq!(polls.load(Ordering::SeqCst), 1);
        assert_eq!(wakes.get(), 1);
    }
}
