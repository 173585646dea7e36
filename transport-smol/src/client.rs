//! The client side on smol: [`EventSource`], a reconnecting SSE client for any request
//! (GET, or POST with a body sent again on every reconnect), as a `Stream` of [`Item`]s.
//! `http://`, and with the `rustls` feature `https://` (futures-rustls around the socket,
//! HTTP/2 when the server's ALPN agrees). An [`HttpClient`] (proxies, TLS configuration,
//! connection pool) can be shared by many streams: over HTTP/2 they share one connection.
//!
//! ```text
//!  Session::poll ─▶ Connect{request} ─▶ StreamIo::send (HttpClient: pool, hyper on smol) ─▶ Session::handle_head(status, headers)
//!       ▲                                                                          │ accepted
//!       └── handle_timeout ◀── async_io::Timer(deadline) ◀── Wait ──▶ body frame ─▶ Session::handle_data / handle_end
//! ```
//! `EventSource` is `ssekit-http`'s, written once: the [`Session`](ssekit_http::client::Session)
//! holds the core `Reconnect` and `Decoder` (every decision: headers, `Last-Event-ID`,
//! backoff, `retry:`, idle timeout, 204, giving up, duplicate suppression), and
//! [`Drive`](ssekit_http::client::Drive) makes every call. This module builds the pool and
//! sends a request.
//!
//! Redirects (301, 302, 303, 307, 308) are followed by the [`Session`](ssekit_http::client::Session), up to
//! `max_redirects` per attempt (10 by default), by the rules of [`ssekit_http::redirect`];
//! each is reported as an [`Item::Redirected`]. Any other 3xx gives up with
//! [`Error::Refused`] (the status, `Content-Type` and start of the body), as any status but
//! 200, 204 and the retried ones does.

use bytes::Bytes;
use http::Request;
/// The reconnect policy and the decoder's configuration, as the builder's
/// [`reconnect`](EventSource::reconnect) and [`decoder`](EventSource::decoder) take them (the
/// core's types, named here so that the builder's signatures link to them).
pub use ssekit::client::{GiveUpReason, ReconnectConfig};
pub use ssekit::decode::{Config, Limits, Mode, OnLimit};
use ssekit_http::client::{Connect, Dial, PooledBody, Target};
pub use ssekit_http::client::{Ended, Item, Items};
pub use ssekit_http::proxy::Proxy;

use crate::runtime::Smol;
use crate::Error;

/// How to build an [`HttpClient`]: its proxies, (feature `rustls`) its TLS configuration
/// (when its ALPN list is empty the client offers `h2` and `http/1.1`) and its HTTP/2
/// keep-alive: [`ssekit_http::client::ClientOptions`] on smol. Building cannot fail on smol.
///
/// # Example
/// ```
/// use ssekit_smol::client::{ClientOptions, EventSource, Proxy};
/// let client = ClientOptions::default()
///     .proxy(Proxy::all("http://proxy.internal:3128")?.no_proxy("localhost,.corp.example"))
///     .build()?;
/// let a = EventSource::get("https://api.example.com/a")?.client(client.clone());
/// let b = EventSource::get("https://api.example.com/b")?.client(client);
/// # let _ = (a, b); Ok::<(), ssekit_smol::Error>(())
/// ```
pub type ClientOptions = ssekit_http::client::ClientOptions<Smol>;

/// One HTTP client for many streams and requests on smol: [`ssekit_http::client::Pool`]
/// (proxies, TLS configuration, a pool of HTTP/1.1 and HTTP/2 connections) on smol's
/// sockets. Clone it into every [`EventSource`] and [`SmolHttp`] that should share it.
///
/// # Example
/// ```
/// use ssekit_smol::client::{EventSource, HttpClient};
/// let client = HttpClient::new();
/// let a = EventSource::get("https://api.example.com/a")?.client(client.clone());
/// let b = EventSource::get("https://api.example.com/b")?.client(client);
/// # let _ = (a, b); Ok::<(), ssekit_smol::Error>(())
/// ```
pub type HttpClient = ssekit_http::client::Pool<Smol>;

/// smol's TCP sockets as the pool's.
impl Dial for Smol {
    type Tcp = smol::net::TcpStream;

    async fn tcp(host: &str, port: u16) -> std::io::Result<smol::net::TcpStream> {
        let tcp = smol::net::TcpStream::connect((host, port)).await?;
        let _ = tcp.set_nodelay(true);
        Ok(tcp)
    }
}

/// A reconnecting SSE client on smol (`http://`; `https://` with the `rustls` feature):
/// [`ssekit_http::client::EventSource`]. Build it, then take
/// [`stream`](ssekit_http::client::EventSource::stream) (everything) or
/// [`events`](ssekit_http::client::EventSource::events) (events only).
///
/// # Example
/// ```no_run
/// use futures_lite::StreamExt;
/// # smol::block_on(async {
/// let mut events = ssekit_smol::client::EventSource::get("http://127.0.0.1:8080/events")?.events();
/// while let Some(event) = events.next().await {
///     println!("{}", event?.data());
/// }
/// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
/// ```
pub type EventSource = ssekit_http::client::EventSource<Smol>;

/// smol's pool as the HTTP client of [`EventSource`].
impl Connect for Smol {
    type Client = HttpClient;
    type Body = PooledBody;
    const SCHEMES: &'static [&'static str] = ssekit_http::client::schemes(cfg!(feature = "rustls"));
    const TARGET: Target = Target::Origin;

    fn client(options: ClientOptions) -> Result<HttpClient, Error> {
        Ok(HttpClient::with_options(options))
    }

    async fn request_limited(
        client: &HttpClient,
        req: Request<Bytes>,
        limit: usize,
    ) -> Result<http::Response<Bytes>, Error> {
        client.request_limited(req, limit).await
    }

    async fn send(
        client: &HttpClient,
        uri: &http::Uri,
        req: Request<Bytes>,
    ) -> Result<http::Response<PooledBody>, Error> {
        client.send(uri, req).await
    }
}

/// What the protocol clients written once over `HttpIo` (the ORS client, the UTCP
/// provider) do their IO with on smol: an [`HttpClient`] for their requests and streams (an
/// idle HTTP/1.1 connection carries the next request; HTTP/2 carries them all), `async_io`
/// timers: [`ssekit_http::client::Http`] on [`Smol`].
///
/// # Example
/// ```
/// use ssekit_http::io::HttpIo;
/// use ssekit_smol::client::{Proxy, SmolHttp};
/// let io = SmolHttp::new()?.with_proxy(Proxy::none())?;
/// # let _ = io; Ok::<(), ssekit_smol::Error>(())
/// ```
pub type SmolHttp = ssekit_http::client::Http<Smol>;
