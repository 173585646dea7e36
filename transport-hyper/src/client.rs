//! The client side on tokio: [`EventSource`], a reconnecting SSE client for any request
//! (GET, or POST with a body that is sent again on every reconnect), as a `Stream` of
//! [`Item`]s: `ssekit-http`'s, written once, on hyper-util's pooled client.
//!
//! ```text
//!  Session::poll ─▶ Connect{request} ─▶ StreamIo::send (hyper-util client) ─▶ Session::handle_head(status, headers)
//!       ▲                                                                  │ accepted
//!       └── handle_timeout ◀── Tokio timer(deadline) ◀── Wait ──▶ body frame ─▶ Session::handle_data / handle_end
//! ```
//! The [`Session`](ssekit_http::client::Session) holds the core `Reconnect` and `Decoder`:
//! every decision (headers, `Last-Event-ID`, backoff, `retry:`, idle timeout, 204, giving
//! up, duplicate suppression) is the core's, and [`Drive`](ssekit_http::client::Drive) makes
//! every call. This module only builds the HTTP client and sends a request.
//!
//! Redirects (301, 302, 303, 307, 308) are followed by the [`Session`](ssekit_http::client::Session), up to
//! `max_redirects` per attempt (10 by default), by the rules of [`ssekit_http::redirect`];
//! each is reported as an [`Item::Redirected`]. Any other 3xx gives up with
//! [`Error::Refused`] (the status, `Content-Type` and start of the body), as any status but
//! 200, 204 and the retried ones does.

use std::time::Duration;

use bytes::Bytes;
use http::Request;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioExecutor;
use ssekit_http::client::{Connect, Target};
pub use ssekit_http::client::{Ended, Item, Items};

use crate::runtime::Tokio;
use crate::Error;

pub use crate::proxy::ProxyConnector;
/// The reconnect policy and the decoder's configuration, as the builder's
/// [`reconnect`](EventSource::reconnect) and [`decoder`](EventSource::decoder) take them (the
/// core's types, named here so that the builder's signatures link to them).
pub use ssekit::client::{GiveUpReason, ReconnectConfig};
pub use ssekit::decode::{Config, Limits, Mode, OnLimit};
pub use ssekit_http::proxy::Proxy;

/// The connector of [`HttpClient`]: TLS (feature `rustls`) over [`ProxyConnector`].
#[cfg(feature = "rustls")]
pub type Connector = hyper_rustls::HttpsConnector<ProxyConnector>;
/// The connector of [`HttpClient`]: [`ProxyConnector`].
#[cfg(not(feature = "rustls"))]
pub type Connector = ProxyConnector;

/// The HTTP client the transport uses: hyper-util's pooled client, HTTP/1.1 and (with the
/// `rustls` feature) `https://`, where ALPN picks HTTP/2 when the server offers it: then
/// every stream to that origin shares one connection. Cheap to clone; share one between
/// streams (and their TLS configuration and pool).
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// let shared: ssekit_hyper::client::HttpClient = ssekit_hyper::client::http_client()?;
/// let a = ssekit_hyper::client::EventSource::get("http://127.0.0.1:1/a")?.client(shared.clone());
/// let b = ssekit_hyper::client::EventSource::get("http://127.0.0.1:1/b")?.client(shared);
/// # let _ = (a, b); Ok(()) }
/// ```
pub type HttpClient = hyper_util::client::legacy::Client<Connector, Full<Bytes>>;

/// A client for `http://` and (feature `rustls`) `https://` URLs that trusts the Mozilla
/// roots, through the proxies of the environment (`HTTPS_PROXY`, `http_proxy`, `ALL_PROXY`,
/// `NO_PROXY`: [`Proxy::from_env`]); [`ClientOptions`] sets them otherwise.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// let client = ssekit_hyper::client::http_client()?;
/// # let _ = client; Ok(()) }
/// ```
pub fn http_client() -> Result<HttpClient, Error> {
    ClientOptions::default().build()
}

/// A client whose `https://` connections use this rustls configuration (a private root,
/// a client certificate), through the environment's proxies. Its ALPN list must be empty
/// (the client offers `h2` and `http/1.1` itself).
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
/// let tls = rustls::ClientConfig::builder_with_provider(provider)
///     .with_safe_default_protocol_versions().unwrap()
///     .with_root_certificates(rustls::RootCertStore::empty())
///     .with_no_client_auth();
/// let client = ssekit_hyper::client::https_client(tls);
/// # let _ = client; }
/// ```
#[cfg(feature = "rustls")]
pub fn https_client(tls: rustls::ClientConfig) -> HttpClient {
    // The defaults (proxies, keep-alive) of `ClientOptions`, with this TLS configuration.
    let options = ClientOptions::default();
    build_client(
        with_tls(tls, ProxyConnector::new(options.proxy_config().clone())),
        options.http2_keep_alive_config(),
    )
}

#[cfg(feature = "rustls")]
fn with_tls(tls: rustls::ClientConfig, connector: ProxyConnector) -> Connector {
    hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_all_versions()
        .wrap_connector(connector)
}

/// How to build an [`HttpClient`]: its proxies, (feature `rustls`) its TLS configuration and
/// its HTTP/2 keep-alive: [`ssekit_http::client::ClientOptions`] on tokio.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// use ssekit_hyper::client::{ClientOptions, EventSource, Proxy};
/// let client = ClientOptions::default().proxy(Proxy::none()).build()?;
/// let source = EventSource::get("http://127.0.0.1:1/")?.client(client);
/// # let _ = source; Ok(()) }
/// ```
pub type ClientOptions = ssekit_http::client::ClientOptions<Tokio>;

/// A reconnecting SSE client on tokio: [`ssekit_http::client::EventSource`]. Build it, then
/// take [`stream`](ssekit_http::client::EventSource::stream) (everything) or
/// [`events`](ssekit_http::client::EventSource::events) (events only).
///
/// # Example
/// ```no_run
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// use futures_util::StreamExt;
/// use ssekit_hyper::client::EventSource;
///
/// let mut events = EventSource::post("http://127.0.0.1:8080/v1/responses", r#"{"input":"hi"}"#)?
///     .header("content-type", "application/json")?
///     .events();
/// while let Some(event) = events.next().await {
///     println!("{}", event?.data());
/// }
/// # Ok(()) }
/// ```
pub type EventSource = ssekit_http::client::EventSource<Tokio>;

/// hyper-util's pooled client as the HTTP client of [`EventSource`] on tokio.
impl Connect for Tokio {
    type Client = HttpClient;
    type Body = Incoming;
    const SCHEMES: &'static [&'static str] = ssekit_http::client::schemes(cfg!(feature = "rustls"));
    const TARGET: Target = Target::Absolute;

    fn client(options: ClientOptions) -> Result<HttpClient, Error> {
        let connector = ProxyConnector::new(options.proxy_config().clone());
        let keep_alive = options.http2_keep_alive_config();
        #[cfg(feature = "rustls")]
        {
            if let Some(tls) = options.tls_config() {
                return Ok(build_client(with_tls(tls.clone(), connector), keep_alive));
            }
            let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
            let connector = hyper_rustls::HttpsConnectorBuilder::new()
                .with_provider_and_webpki_roots(provider)
                .map_err(Error::http)?
                .https_or_http()
                .enable_all_versions()
                .wrap_connector(connector);
            Ok(build_client(connector, keep_alive))
        }
        #[cfg(not(feature = "rustls"))]
        {
            Ok(build_client(connector, keep_alive))
        }
    }

    async fn request_limited(
        client: &HttpClient,
        req: Request<Bytes>,
        limit: usize,
    ) -> Result<http::Response<Bytes>, Error> {
        let resp = client.request(req.map(Full::new)).await?;
        ssekit_http::io::collect(resp, limit).await
    }

    async fn send(
        client: &HttpClient,
        _uri: &http::Uri,
        req: Request<Bytes>,
    ) -> Result<http::Response<Incoming>, Error> {
        Ok(client.request(req.map(Full::new)).await?)
    }
}

fn build_client(
    connector: Connector,
    (interval, timeout): (Option<Duration>, Duration),
) -> HttpClient {
    hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_timer(hyper_util::rt::TokioTimer::new())
        .timer(hyper_util::rt::TokioTimer::new())
        .http2_keep_alive_interval(interval)
        .http2_keep_alive_timeout(timeout)
        .build(connector)
}

/// What the protocol clients written once over `HttpIo` (the UTCP provider, the ORS
/// client) do their IO with on tokio: one pooled HTTP client for their requests and streams,
/// tokio's timer: [`ssekit_http::client::Http`] on [`Tokio`].
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// use ssekit_http::io::HttpIo;
/// let own = ssekit_hyper::client::HyperHttp::new()?;
/// let shared = ssekit_hyper::client::HyperHttp::with_client(ssekit_hyper::client::http_client()?);
/// # let _ = (own, shared); Ok(()) }
/// ```
pub type HyperHttp = ssekit_http::client::Http<Tokio>;
