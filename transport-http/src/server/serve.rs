//! The accept loop of every runtime: [`serve_with`] accepts on a [`Runtime`]'s listener,
//! shakes hands (TLS, ALPN), and serves each connection with hyper (HTTP/1.1 and HTTP/2) on
//! a task of that runtime, until a stop signal; then it closes gracefully.
//!
//! ```text
//!  R::accept ─▶ [R::accept_tls within TLS_HANDSHAKE_TIMEOUT] ─▶ R::spawn(hyper auto connection)
//!  stop ─▶ listener dropped ─▶ every connection: graceful_shutdown ─▶ serve_with returns
//! ```

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Request, Response};
use http_body::Body;
use hyper::body::Incoming;
use hyper_util::server::conn::auto::Builder;

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
/// retried after 10 ms instead of spinning; a TLS handshake gets
/// [`TLS_HANDSHAKE_TIMEOUT`](super::TLS_HANDSHAKE_TIMEOUT).
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
    let builder =
        Arc::new(options.connection_builder(Executor(runtime.clone()), Timer(runtime.clone())));
    let mut stop = std::pin::pin!(stop);
    while let Some(accepted) = first_of(listener.accept(&runtime), stop.as_mut()).await {
        let conn = match accepted {
            Ok(conn) => conn,
            Err(error) => {
                observe::count(observe::ACCEPT_ERRORS_TOTAL, 1);
                log!(warn, target: "ssekit::serve", %error, "accept failed; retrying in 10 ms");
                let _ = &error;
                runtime.sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        observe::count(observe::CONNECTIONS_TOTAL, 1);
        let open = Open::new(observe::CONNECTIONS_OPEN);
        let peer = L::peer_addr(&conn);
        log!(debug, target: "ssekit::serve", peer = ?peer, "connection accepted");
        let service = Traced::new(service.clone(), peer);
        let (builder, closing) = (builder.clone(), closing_rx.clone());
        #[cfg(feature = "rustls")]
        if let Some(tls) = options.tls_config().cloned() {
            let rt = runtime.clone();
            runtime.spawn(async move {
                let timeout = rt.sleep(super::TLS_HANDSHAKE_TIMEOUT);
                let handshake = first_of(L::accept_tls(&rt, tls, conn), async {
                    timeout.await;
                })
                .await;
                match handshake {
                    Some(Ok(conn)) => serve_connection(&builder, conn, service, closing).await,
                    Some(Err(error)) => {
                        log!(debug, target: "ssekit::serve", peer = ?peer, %error, "TLS handshake failed");
                        let _ = error;
                    }
                    None => {
                        log!(debug, target: "ssekit::serve", peer = ?peer, "TLS handshake timed out");
                    }
                }
                drop(open);
            });
            continue;
        }
        runtime.spawn(async move {
            serve_connection(&builder, conn, service, closing).await;
            log!(debug, target: "ssekit::serve", peer = ?peer, "connection closed");
            drop(open);
        });
    }
    drop(listener);
    drop(closing_rx);
    log!(info, target: "ssekit::serve", "stopped accepting; closing connections gracefully");
    let _ = closing.send(true);
    closing.closed().await;
    Ok(())
}

/// The service, with an `info` span per request (method, path, peer) around its future when
/// the `tracing` feature is on: the access-log line of a stream made in the handler is written
/// in that span. Without the feature, the service itself.
#[derive(Clone)]
struct Traced<S> {
    service: S,
    #[cfg(feature = "tracing")]
    peer: Option<std::net::SocketAddr>,
}

impl<S> Traced<S> {
    fn new(service: S, peer: Option<std::net::SocketAddr>) -> Self {
        #[cfg(not(feature = "tracing"))]
        let _ = peer;
        Traced {
            service,
            #[cfg(feature = "tracing")]
            peer,
        }
    }
}

impl<S> hyper::service::Service<Request<Incoming>> for Traced<S>
where
    S: hyper::service::Service<Request<Incoming>>,
{
    type Response = S::Response;
    type Error = S::Error;
    #[cfg(feature = "tracing")]
    type Future = tracing::instrument::Instrumented<S::Future>;
    #[cfg(not(feature = "tracing"))]
    type Future = S::Future;

    fn call(&self, req: Request<Incoming>) -> Self::Future {
        #[cfg(feature = "tracing")]
        {
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
        }
        #[cfg(not(feature = "tracing"))]
        self.service.call(req)
    }
}

/// Serves one connection until it ends, or, once `closing` says so, until the response it
/// is sending is done.
async fn serve_connection<R, S, B>(
    builder: &Builder<Executor<R>>,
    conn: impl Connection,
    service: S,
    mut closing: tokio::sync::watch::Receiver<bool>,
) where
    R: Runtime,
    S: HttpService<B>,
    B: ResponseBody,
{
    let conn = builder.serve_connection(conn, service);
    let mut conn = std::pin::pin!(conn);
    let asked = async {
        let _ = closing.wait_for(|closing| *closing).await;
    };
    if first_of(conn.as_mut(), asked).await.is_some() {
        return;
    }
    conn.as_mut().graceful_shutdown();
    let _ = conn.await;
}
