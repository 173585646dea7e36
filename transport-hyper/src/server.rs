//! The server side on tokio: `ssekit-http`'s server, written once for every runtime, named
//! on [`Tokio`]. [`SseBody`] is a streaming response body with keep-alive comments,
//! [`channel`] a bounded per-stream queue, [`Broadcast`] one live stream for many clients
//! with `Last-Event-ID` replay, [`serve`] / [`serve_until`] / [`serve_with`] the accept loop
//! on a `tokio::net::TcpListener` (HTTP/1.1 and HTTP/2, TLS with ALPN, graceful shutdown).
//! How slow and vanished clients are bounded: see [`ssekit_http::server`].

use hyper_util::rt::TokioIo;
use tokio::net::{TcpListener, TcpStream};

pub use ssekit_http::server::{
    full, gap_event, last_event_id, response, serve, serve_on, serve_until, serve_with, Accept,
    AnyBody, HttpService, Message, Overflow, ResponseBody, Sender, ServeOptions, TrySendError,
    GAP_EVENT, IDLE_TIMEOUT, MAX_REQUEST_HEAD, MAX_UNSENT, REQUEST_HEAD_TIMEOUT,
    TLS_HANDSHAKE_TIMEOUT, WAIT_AT_MOST,
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

    fn peer_addr(conn: &Self::Conn) -> Option<std::net::SocketAddr> {
        conn.inner().peer_addr().ok()
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
