//! The server side on smol: `ssekit-http`'s server, written once for every runtime, named
//! on [`Smol`]. [`SseBody`] is a streaming response body with keep-alive comments,
//! [`channel`] a bounded per-stream queue, [`Broadcast`] one live stream for many clients
//! with `Last-Event-ID` replay, [`serve`] / [`serve_until`] / [`serve_with`] the accept loop
//! on a `smol::net::TcpListener` (HTTP/1.1 and HTTP/2, TLS with ALPN through futures-rustls,
//! graceful shutdown), with no tokio runtime. How slow and vanished clients are bounded: see
//! [`ssekit_http::server`].

use smol::net::{TcpListener, TcpStream};
use smol_hyper::rt::FuturesIo;

pub use ssekit_http::server::{
    full, gap_event, last_event_id, response, serve, serve_on, serve_until, serve_with, Accept,
    AnyBody, HttpService, Message, Overflow, ResponseBody, Sender, ServeOptions, TrySendError,
    GAP_EVENT, IDLE_TIMEOUT, MAX_REQUEST_HEAD, MAX_UNSENT, REQUEST_HEAD_TIMEOUT,
    TLS_HANDSHAKE_TIMEOUT, WAIT_AT_MOST,
};

use crate::runtime::Smol;

/// A streaming `text/event-stream` response body on smol:
/// [`ssekit_http::server::SseBody`] (all its constructors and options) with `async-io`
/// timers for the keep-alive.
///
/// # Example
/// ```
/// use ssekit::Event;
/// use ssekit_smol::server::{response, SseBody};
/// let events = futures_lite::stream::iter(vec![Event::message("hello")]);
/// let resp = response(SseBody::new(events).keep_alive(std::time::Duration::from_secs(15)));
/// assert_eq!(resp.headers()["content-type"], "text/event-stream");
/// ```
pub type SseBody = ssekit_http::server::SseBody<Smol>;

/// One live stream for many clients, whose bodies run on smol:
/// [`ssekit_http::server::Broadcast`].
///
/// # Example
/// ```
/// use ssekit::{server::ReplayBuffer, Event};
/// let hub = ssekit_smol::server::Broadcast::new(ReplayBuffer::new(1024, 4 << 20), 64);
/// hub.publish(&Event::builder().id("1")?.data("first").build())?;
/// let body = hub.subscribe(Some("1"))?; // resumes after id 1
/// # let _ = body; Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub type Broadcast = ssekit_http::server::Broadcast<Smol>;

/// A bounded per-stream queue whose body runs on smol: [`ssekit_http::server::channel`].
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
pub fn channel(capacity: usize) -> (Sender, SseBody) {
    ssekit_http::server::channel(capacity)
}

/// smol's listener as the accept loop's: `TCP_NODELAY` on each connection, TLS through
/// futures-rustls (feature `rustls`).
///
/// # Example
/// ```
/// # smol::block_on(async {
/// use ssekit_smol::{runtime::Smol, server::Accept};
/// let listener = smol::net::TcpListener::bind("127.0.0.1:0").await?;
/// let addr = listener.local_addr()?;
/// let client = smol::net::TcpStream::connect(addr);
/// let smol_rt = Smol::default();
/// let (accepted, _client) = futures_lite::future::zip(Accept::accept(&listener, &smol_rt), client).await;
/// assert!(accepted.is_ok());
/// # Ok::<(), std::io::Error>(()) }).unwrap();
/// ```
impl Accept<Smol> for TcpListener {
    type Conn = FuturesIo<TcpStream>;

    async fn accept(&self, _: &Smol) -> std::io::Result<Self::Conn> {
        let (stream, _) = TcpListener::accept(self).await?;
        let _ = stream.set_nodelay(true);
        Ok(FuturesIo::new(stream))
    }

    fn peer_addr(conn: &Self::Conn) -> Option<std::net::SocketAddr> {
        conn.get_ref().peer_addr().ok()
    }

    #[cfg(feature = "rustls")]
    async fn accept_tls(
        _: &Smol,
        config: std::sync::Arc<rustls::ServerConfig>,
        conn: Self::Conn,
    ) -> std::io::Result<Box<dyn ssekit_http::runtime::Connection>> {
        let tls = futures_rustls::TlsAcceptor::from(config);
        let stream = tls.accept(conn.into_inner()).await?;
        Ok(Box::new(FuturesIo::new(stream)))
    }
}
