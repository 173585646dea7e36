//! The client side: [`EventSource`], a reconnecting SSE client for any request (GET, or POST
//! with a body that is sent again on every reconnect), as a [`Stream`] of [`Item`]s.
//!
//! The drive loop, once per item:
//! ```text
//!  Session::poll ─▶ Connect{request} ─▶ hyper-util client ─▶ Session::handle_head(status, headers)
//!       ▲                                                   │ accepted
//!       └── handle_timeout ◀── Timer(deadline) ◀── Wait ──▶ body frame ─▶ Session::handle_data / handle_end
//! ```
//! The [`Session`](ssekit_http::client::Session) (from `ssekit-http`, shared with `ssekit-smol`) holds the core
//! `Reconnect` and `Decoder`: every decision (headers, `Last-Event-ID`, backoff, `retry:`,
//! idle timeout, 204, giving up, duplicate suppression) is the core's. This module only
//! connects, reads and waits.
//!
//! Redirects (301, 302, 303, 307, 308) are followed by the [`Session`](ssekit_http::client::Session), up to
//! `max_redirects` per attempt (10 by default), by the rules of [`ssekit_http::redirect`];
//! each is reported as an [`Item::Redirected`]. Any other 3xx gives up with
//! [`Error::Refused`] (the status, `Content-Type` and start of the body), as any status but
//! 200, 204 and the retried ones does.

use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use http::Request;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper_util::rt::TokioExecutor;
use ssekit::Event;
use ssekit_http::client::{
    only_events, Drive, Io, RequestSpec, Target, HTTP2_KEEP_ALIVE_INTERVAL,
    HTTP2_KEEP_ALIVE_TIMEOUT,
};
pub use ssekit_http::client::{Ended, Item};
use ssekit_http::io::HttpIo;

use crate::runtime::Tokio;
use crate::Error;

/// The URL schemes the client connects to.
#[cfg(feature = "rustls")]
pub(crate) const SCHEMES: &[&str] = &["http", "https"];
#[cfg(not(feature = "rustls"))]
pub(crate) const SCHEMES: &[&str] = &["http"];

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
        with_tls(tls, ProxyConnector::new(options.proxy)),
        options.keep_alive,
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

/// How to build an [`HttpClient`]: its proxies and (feature `rustls`) its TLS
/// configuration. One client is meant to be shared by many `EventSource`s (its pool, its
/// HTTP/2 connections, its TLS configuration): clone it into each.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// use ssekit_hyper::client::{ClientOptions, EventSource, Proxy};
/// let client = ClientOptions::default()
///     .proxy(Proxy::all("http://proxy.internal:3128")?.no_proxy("localhost,.corp.example"))
///     .build()?;
/// let a = EventSource::get("https://api.example.com/a")?.client(client.clone());
/// let b = EventSource::get("https://api.example.com/b")?.client(client);
/// # let _ = (a, b); Ok(()) }
/// ```
#[derive(Clone, Debug)]
#[must_use]
pub struct ClientOptions {
    proxy: Proxy,
    #[cfg(feature = "rustls")]
    tls: Option<rustls::ClientConfig>,
    keep_alive: (Option<Duration>, Duration),
}

impl Default for ClientOptions {
    /// The environment's proxies ([`Proxy::from_env`]), the Mozilla roots, HTTP/2 pings
    /// every [`HTTP2_KEEP_ALIVE_INTERVAL`] while streams are open.
    fn default() -> Self {
        ClientOptions {
            proxy: Proxy::from_env(),
            #[cfg(feature = "rustls")]
            tls: None,
            keep_alive: (Some(HTTP2_KEEP_ALIVE_INTERVAL), HTTP2_KEEP_ALIVE_TIMEOUT),
        }
    }
}

impl ClientOptions {
    /// Connects through `proxy` ([`Proxy::none`] to go direct whatever the environment says).
    ///
    /// # Example
    /// See [`ClientOptions`].
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// Uses this rustls configuration for `https://` (its ALPN list must be empty).
    ///
    /// # Example
    /// ```
    /// # fn doc(tls: rustls::ClientConfig) {
    /// let options = ssekit_hyper::client::ClientOptions::default().tls(tls);
    /// # let _ = options; }
    /// ```
    #[cfg(feature = "rustls")]
    pub fn tls(mut self, config: rustls::ClientConfig) -> Self {
        self.tls = Some(config);
        self
    }

    /// Pings an HTTP/2 connection every `interval` while it carries streams (`None`: never)
    /// and closes it when a ping is not answered within `timeout`: its streams fail and
    /// reconnect on a new connection instead of waiting on a dead one (default
    /// [`HTTP2_KEEP_ALIVE_INTERVAL`], [`HTTP2_KEEP_ALIVE_TIMEOUT`]).
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let options = ssekit_hyper::client::ClientOptions::default()
    ///     .http2_keep_alive(Duration::from_secs(15), Duration::from_secs(5));
    /// # let _ = options;
    /// ```
    pub fn http2_keep_alive(
        mut self,
        interval: impl Into<Option<Duration>>,
        timeout: Duration,
    ) -> Self {
        self.keep_alive = (interval.into(), timeout);
        self
    }

    /// The client.
    ///
    /// # Example
    /// See [`ClientOptions`].
    pub fn build(self) -> Result<HttpClient, Error> {
        let connector = ProxyConnector::new(self.proxy);
        let keep_alive = self.keep_alive;
        #[cfg(feature = "rustls")]
        {
            if let Some(tls) = self.tls {
                return Ok(build_client(with_tls(tls, connector), keep_alive));
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

/// A reconnecting SSE client. Build it, then take [`stream`](Self::stream) (everything) or
/// [`events`](Self::events) (events only).
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
#[derive(Debug)]
pub struct EventSource {
    spec: RequestSpec,
    client: Option<HttpClient>,
    options: ClientOptions,
}

impl EventSource {
    pub(crate) fn from_spec(spec: RequestSpec) -> Self {
        EventSource {
            spec,
            client: None,
            options: ClientOptions::default(),
        }
    }

    ssekit_http::event_source_builder!(ssekit_hyper, SCHEMES);

    /// Uses this HTTP client (to share a pool, or for a private TLS root).
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// let client = ssekit_hyper::client::http_client()?;
    /// let source = ssekit_hyper::client::EventSource::get("http://127.0.0.1:1/")?.client(client);
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn client(mut self, client: HttpClient) -> Self {
        self.client = Some(client);
        self
    }

    /// Uses this rustls configuration for `https://` (a private root, a client
    /// certificate): the stream gets a client of its own (replacing one set with
    /// [`client`](Self::client); to share one, build it with [`ClientOptions::tls`] and pass
    /// it to each stream instead).
    ///
    /// # Example
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    /// let tls = rustls::ClientConfig::builder_with_provider(provider)
    ///     .with_safe_default_protocol_versions().unwrap()
    ///     .with_root_certificates(rustls::RootCertStore::empty())
    ///     .with_no_client_auth();
    /// let source = ssekit_hyper::client::EventSource::get("https://127.0.0.1:1/")?.tls(tls);
    /// # let _ = source; Ok(()) }
    /// ```
    #[cfg(feature = "rustls")]
    pub fn tls(mut self, config: rustls::ClientConfig) -> Self {
        self.options = self.options.tls(config);
        self.client = None;
        self
    }

    /// Connects through `proxy` (a `CONNECT` tunnel, for `https://` and `http://` alike)
    /// instead of the environment's proxies ([`Proxy::from_env`], the default);
    /// [`Proxy::none`] goes direct. As [`tls`](Self::tls), the stream gets a client of its
    /// own.
    ///
    /// # Example
    /// ```
    /// use ssekit_hyper::client::{EventSource, Proxy};
    /// let source = EventSource::get("https://api.example.com/events")?
    ///     .proxy(Proxy::all("http://proxy.internal:3128")?);
    /// # let _ = source; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.options = self.options.proxy(proxy);
        self.client = None;
        self
    }

    /// Everything that happens, as a stream: connections, events, comments, `retry:`,
    /// disconnects and waits. It ends after a 204, or a clean end without reconnecting
    /// (without an error), or with the error that made the policy give up: without
    /// reconnecting, a stream cut inside an event ends with [`Error::Truncated`] after its
    /// `Disconnected(Ended::Truncated)`. Dropping it closes the connection.
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// use futures_util::StreamExt;
    /// use ssekit_hyper::client::{EventSource, Item};
    /// let mut items = EventSource::get("http://127.0.0.1:8080/events")?.stream();
    /// while let Some(item) = items.next().await {
    ///     match item? {
    ///         Item::Event(ev) => println!("{}: {}", ev.event_type(), ev.data()),
    ///         Item::Disconnected(why) => eprintln!("{why}"),
    ///         _ => {}
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn stream(self) -> Items {
        let client = match self.client {
            Some(client) => client,
            None => match self.options.build() {
                Ok(client) => client,
                Err(err) => return Box::pin(futures_util::stream::once(async { Err(err) })),
            },
        };
        let io = HyperIo {
            runtime: Tokio::default(),
            client,
        };
        let drive = Drive::new(self.spec.into_session(Target::Absolute), io);
        Box::pin(futures_util::stream::unfold(drive, |mut d| async move {
            d.next().await.map(|item| (item, d))
        }))
    }

    /// Only the events. The stream ends with `None` when the stream (or the policy) ends
    /// cleanly, and with the error that ended it otherwise: without reconnecting, a stream
    /// cut inside an event ends with `Some(Err(`[`Error::Truncated`]`))`, a compressed
    /// response with [`Error::ContentEncoding`].
    ///
    /// # Example
    /// ```no_run
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
    /// use futures_util::StreamExt;
    /// let mut events = ssekit_hyper::client::EventSource::get("http://127.0.0.1:8080/events")?.events();
    /// let first = events.next().await.transpose()?;
    /// # let _ = first; Ok(()) }
    /// ```
    pub fn events(self) -> Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>> {
        use futures_util::StreamExt;
        Box::pin(
            self.stream()
                .filter_map(|item| std::future::ready(only_events(item))),
        )
    }
}

/// What the protocol clients written once over [`HttpIo`] (the UTCP provider, the ORS
/// client) do their IO with on hyper: one pooled HTTP client for their requests and
/// streams, tokio's timer.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// use ssekit_http::io::HttpIo;
/// let own = ssekit_hyper::client::HyperHttp::new()?;
/// let shared = ssekit_hyper::client::HyperHttp::with_client(ssekit_hyper::client::http_client()?);
/// # let _ = (own, shared); Ok(()) }
/// ```
#[derive(Clone)]
pub struct HyperHttp {
    http: HttpClient,
    runtime: Tokio,
}

impl std::fmt::Debug for HyperHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HyperHttp").finish_non_exhaustive()
    }
}

impl HyperHttp {
    /// Uses this HTTP client (to share a pool, or for a private TLS root).
    ///
    /// # Example
    /// See [`HyperHttp`].
    pub fn with_client(http: HttpClient) -> Self {
        HyperHttp {
            http,
            runtime: Tokio::default(),
        }
    }
}

impl HttpIo for HyperHttp {
    const SCHEMES: &'static [&'static str] = SCHEMES;
    type Events = Items;

    fn new() -> Result<Self, Error> {
        http_client().map(HyperHttp::with_client)
    }

    fn events(&self, spec: RequestSpec) -> Items {
        EventSource::from_spec(spec)
            .client(self.http.clone())
            .stream()
    }

    async fn next(events: &mut Items) -> Option<Result<Item, Error>> {
        futures_util::StreamExt::next(events).await
    }

    async fn request(&self, req: Request<Bytes>) -> Result<http::Response<Bytes>, Error> {
        self.request_limited(req, ssekit_http::ors::MAX_JSON_ANSWER)
            .await
    }

    async fn request_limited(
        &self,
        req: Request<Bytes>,
        limit: usize,
    ) -> Result<http::Response<Bytes>, Error> {
        let resp = self.http.request(req.map(Full::new)).await?;
        ssekit_http::io::collect(resp, limit).await
    }

    type Runtime = Tokio;

    fn runtime(&self) -> &Tokio {
        &self.runtime
    }
}

/// What [`EventSource::stream`] returns.
pub type Items = Pin<Box<dyn Stream<Item = Result<Item, Error>> + Send>>;

/// The IO of one stream on hyper-util's client: [`Drive`] decides, this sends.
struct HyperIo {
    runtime: Tokio,
    client: HttpClient,
}

impl Io for HyperIo {
    type Runtime = Tokio;
    type Body = Incoming;

    fn runtime(&self) -> &Tokio {
        &self.runtime
    }

    async fn send(
        &mut self,
        _uri: &http::Uri,
        req: Request<Bytes>,
    ) -> Result<http::Response<Incoming>, Error> {
        Ok(self.client.request(req.map(Full::new)).await?)
    }
}
