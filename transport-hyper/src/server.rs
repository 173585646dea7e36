//! The server side on tokio: `ssekit-http`'s server, written once for every runtime, named
//! on [`Tokio`]. [`SseBody`] is a streaming response body with keep-alive comments,
//! [`channel`] a bounded per-stream queue, [`Broadcast`] one live stream for many clients
//! with `Last-Event-ID` replay, [`serve`] / [`serve_until`] / [`serve_with`] the accept loop
//! on a `tokio::net::TcpListener` (HTTP/1.1 and HTTP/2, TLS with ALPN, graceful shutdown).
//! How slow and vanished clients are bounded: see [`ssekit_http::server`].

use std::future::Future;

use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

pub use ssekit_http::server::{
    full, last_event_id, response, Accept, AnyBody, HttpService, Message, ResponseBody, Sender,
    ServeOptions, TrySendError, TLS_HANDSHAKE_TIMEOUT,
};

use crate::runtime::Tokio;

/// A streaming `text/event-stream` response body on tokio: [`ssekit_http::server::SseBody`]
/// (all its constructors and options) with tokio's timer and cooperative budget. With
/// feature `axum`, an axum handler returns it as it is.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use ssekit::Event;
/// use ssekit_hyper::server::{response, SseBody};
///
/// let events = futures_util::stream::iter(vec![Event::message("hello"), Event::message("world")]);
/// let resp = response(SseBody::new(events).keep_alive(Duration::from_secs(15)));
/// assert_eq!(resp.headers()["content-type"], "text/event-stream");
/// ```
pub type SseBody = ssekit_http::server::SseBody<Tokio>;

/// One live stream for many clients, whose bodies run on tokio:
/// [`ssekit_http::server::Broadcast`].
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use ssekit::{server::ReplayBuffer, Event};
/// let hub = ssekit_hyper::server::Broadcast::new(ReplayBuffer::new(1024, 4 << 20), 64);
/// hub.publish(&Event::builder().id("1")?.data("first").build())?;
/// let resp = ssekit_hyper::server::response(hub.subscribe(Some("1"))?);
/// # let _ = resp; Ok(()) }
/// ```
pub type Broadcast = ssekit_http::server::Broadcast<Tokio>;

/// A bounded per-stream queue whose body runs on tokio: [`ssekit_http::server::channel`].
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::server::TrySendError> {
/// let (tx, body) = ssekit_hyper::server::channel(16);
/// tx.send(&ssekit::Event::message("first")).await?;
/// let resp = ssekit_hyper::server::response(body); // return this from the handler
/// # let _ = resp; Ok(()) }
/// ```
pub fn channel(capacity: usize) -> (Sender, SseBody) {
    ssekit_http::server::channel(capacity)
}

/// Accepts connections on `listener` forever, serving each with `service` on its own tokio
/// task with the default [`ServeOptions`]. [`serve_until`] stops gracefully; [`serve_with`]
/// takes options (TLS with ALPN, limits, timeouts).
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
pub async fn serve<S: HttpService<B>, B: ResponseBody>(
    listener: TcpListener,
    service: S,
) -> std::io::Result<()> {
    serve_with(
        listener,
        service,
        std::future::pending(),
        ServeOptions::default(),
    )
    .await
}

/// As [`serve`], until `stop` completes; then it closes gracefully (see
/// [`ssekit_http::server::serve_with`]).
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
pub async fn serve_until<S: HttpService<B>, B: ResponseBody>(
    listener: TcpListener,
    service: S,
    stop: impl Future<Output = ()>,
) -> std::io::Result<()> {
    serve_with(listener, service, stop, ServeOptions::default()).await
}

/// As [`serve_until`], with `options`: TLS (ALPN `h2` and `http/1.1`), limits, timeouts.
/// The accept loop is [`ssekit_http::server::serve_with`] on [`Tokio`].
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
pub async fn serve_with<S: HttpService<B>, B: ResponseBody>(
    listener: TcpListener,
    service: S,
    stop: impl Future<Output = ()>,
    options: ServeOptions,
) -> std::io::Result<()> {
    ssekit_http::server::serve_with(Tokio::default(), listener, service, stop, options).await
}

/// tokio's listener as the accept loop's: `TCP_NODELAY` on each connection, TLS through
/// tokio-rustls (feature `rustls`).
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> std::io::Result<()> {
/// use ssekit_hyper::{runtime::Tokio, server::Accept};
/// let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// let tokio = Tokio::default();
/// let (accepted, _client) = tokio::join!(Accept::accept(&listener, &tokio), tokio::net::TcpStream::connect(addr));
/// assert!(accepted.is_ok());
/// # Ok(()) }
/// ```
impl Accept<Tokio> for TcpListener {
    type Conn = TokioIo<TcpStream>;

    async fn accept(&self, _: &Tokio) -> std::io::Result<Self::Conn> {
        let (stream, _) = TcpListener::accept(self).await?;
        let _ = stream.set_nodelay(true);
        Ok(TokioIo::new(stream))
    }

    #[cfg(feature = "rustls")]
    async fn accept_tls(
        _: &Tokio,
        config: std::sync::Arc<rustls::ServerConfig>,
        conn: Self::Conn,
    ) -> std::io::Result<Box<dyn ssekit_http::runtime::Connection>> {
        let tls = tokio_rustls::TlsAcceptor::from(config);
        let stream = tls.accept(conn.into_inner()).await?;
        Ok(Box::new(TokioIo::new(stream)))
    }
}
