//! The client side on smol: [`EventSource`], a reconnecting SSE client for any request
//! (GET, or POST with a body sent again on every reconnect), as a `Stream` of [`Item`]s.
//! `http://`, and with the `rustls` feature `https://` (futures-rustls around the socket,
//! HTTP/2 when the server's ALPN agrees). An [`HttpClient`] (proxies, TLS configuration,
//! connection pool) can be shared by many streams: over HTTP/2 they share one connection.
//!
//! ```text
//!  Session::poll ─▶ Connect{request} ─▶ HttpClient (pool, hyper on smol) ─▶ Session::handle_head(status, headers)
//!       ▲                                                        │ accepted
//!       └── handle_timeout ◀── async_io::Timer(deadline) ◀── Wait ──▶ body frame ─▶ Session::handle_data / handle_end
//! ```
//! The [`Session`](ssekit_http::client::Session) (from `ssekit-http`, shared with `ssekit-hyper`) holds the core
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

use bytes::Bytes;
use futures_lite::{Stream, StreamExt};
use http::Request;
use hyper::body::Incoming;
/// The reconnect policy and the decoder's configuration, as the builder's
/// [`reconnect`](EventSource::reconnect) and [`decoder`](EventSource::decoder) take them (the
/// core's types, named here so that the builder's signatures link to them).
pub use ssekit::client::{GiveUpReason, ReconnectConfig};
pub use ssekit::decode::{Config, Limits, Mode, OnLimit};
use ssekit::Event;
use ssekit_http::client::{only_events, Drive, Io, RequestSpec, Target};
pub use ssekit_http::client::{Ended, Item};
use ssekit_http::io::HttpIo;
pub use ssekit_http::proxy::Proxy;

use crate::runtime::Smol;
use crate::Error;

mod pool;
pub use pool::{ClientOptions, HttpClient};
use pool::{Exchange, Held};

/// A reconnecting SSE client on smol (`http://`; `https://` with the `rustls` feature). Build it, then take
/// [`stream`](Self::stream) (everything) or [`events`](Self::events) (events only). The
/// builder and the drive state are `ssekit-http`'s, shared with `ssekit-hyper`.
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
#[derive(Debug)]
pub struct EventSource {
    spec: RequestSpec,
    client: HttpClient,
}

/// The URL schemes the client connects to.
#[cfg(feature = "rustls")]
pub(crate) const SCHEMES: &[&str] = &["http", "https"];
#[cfg(not(feature = "rustls"))]
pub(crate) const SCHEMES: &[&str] = &["http"];

impl EventSource {
    pub(crate) fn from_spec(spec: RequestSpec) -> Self {
        EventSource {
            spec,
            client: HttpClient::new(),
        }
    }

    ssekit_http::event_source_builder!(ssekit_smol, SCHEMES);

    /// Uses this rustls configuration for `https://` (a private root, a client
    /// certificate); without it the Mozilla roots of `webpki-roots` are trusted.
    ///
    /// # Example
    /// ```
    /// let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    /// let tls = rustls::ClientConfig::builder_with_provider(provider)
    ///     .with_safe_default_protocol_versions()?
    ///     .with_root_certificates(rustls::RootCertStore::empty())
    ///     .with_no_client_auth();
    /// let source = ssekit_smol::client::EventSource::get("https://127.0.0.1:1/")?.tls(tls);
    /// # let _ = source; Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "rustls")]
    pub fn tls(mut self, config: rustls::ClientConfig) -> Self {
        self.client = self.client.options().tls(config).client();
        self
    }

    /// Connects through `proxy` (a `CONNECT` tunnel, for `https://` and `http://` alike)
    /// instead of the environment's proxies ([`Proxy::from_env`], the default);
    /// [`Proxy::none`] goes direct.
    ///
    /// # Example
    /// ```
    /// use ssekit_smol::client::{EventSource, Proxy};
    /// let source = EventSource::get("https://api.example.com/events")?
    ///     .proxy(Proxy::all("http://proxy.internal:3128")?);
    /// # let _ = source; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.client = self.client.options().proxy(proxy).client();
        self
    }

    /// Uses this client (its proxies, TLS configuration and connection pool, shared with
    /// every stream and request given a clone of it) in place of one of its own.
    ///
    /// # Example
    /// See [`HttpClient`].
    pub fn client(mut self, client: HttpClient) -> Self {
        self.client = client;
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
    /// use futures_lite::StreamExt;
    /// use ssekit_smol::client::{EventSource, Item};
    /// # smol::block_on(async {
    /// let mut items = EventSource::get("http://127.0.0.1:8080/events")?.stream();
    /// while let Some(item) = items.next().await {
    ///     if let Item::Disconnected(why) = item? { eprintln!("{why}") }
    /// }
    /// # Ok::<(), ssekit_smol::Error>(()) }).unwrap();
    /// ```
    pub fn stream(self) -> Items {
        let io = SmolIo {
            runtime: Smol::default(),
            client: self.client,
        };
        let driver = Drive::new(self.spec.into_session(Target::Origin), io);
        Box::pin(futures_lite::stream::unfold(driver, |mut d| async move {
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
    /// use futures_lite::StreamExt;
    /// # smol::block_on(async {
    /// let mut events = ssekit_smol::client::EventSource::get("http://127.0.0.1:8080/events")?.events();
    /// let first = events.next().await.transpose()?;
    /// # let _ = first; Ok::<(), ssekit_smol::Error>(()) }).unwrap();
    /// ```
    pub fn events(self) -> Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>> {
        Box::pin(self.stream().filter_map(only_events))
    }
}

/// What the protocol clients written once over [`HttpIo`] (the ORS client, the UTCP
/// provider) do their IO with on smol: an [`HttpClient`] for their requests and streams
/// (an idle HTTP/1.1 connection carries the next request; HTTP/2 carries them all),
/// `async_io` timers.
///
/// # Example
/// ```
/// use ssekit_http::io::HttpIo;
/// let io = ssekit_smol::client::SmolHttp::new()?;
/// # let _ = io; Ok::<(), ssekit_smol::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SmolHttp {
    runtime: Smol,
    client: HttpClient,
}

impl SmolHttp {
    /// Uses this client (its proxies, TLS configuration and connection pool), shared with
    /// whatever else holds a clone of it.
    ///
    /// # Example
    /// ```
    /// use ssekit_smol::client::{ClientOptions, SmolHttp};
    /// let client = ClientOptions::default().build()?;
    /// let ors = ssekit_smol::ors::Client::new("http://127.0.0.1:1")?
    ///     .io(SmolHttp::with_client(client.clone()));
    /// # let _ = ors; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn with_client(client: HttpClient) -> Self {
        SmolHttp {
            runtime: Smol::default(),
            client,
        }
    }

    /// Uses this rustls configuration for `https://` (a private root, a client
    /// certificate), in its streams and requests alike, as [`EventSource::tls`] does for one
    /// stream.
    ///
    /// # Example
    /// ```
    /// let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    /// let tls = rustls::ClientConfig::builder_with_provider(provider)
    ///     .with_safe_default_protocol_versions().unwrap()
    ///     .with_root_certificates(rustls::RootCertStore::empty())
    ///     .with_no_client_auth();
    /// let ors = ssekit_smol::ors::Client::new("https://127.0.0.1:1")?
    ///     .io(ssekit_smol::client::SmolHttp::with_tls(tls));
    /// # let _ = ors; Ok::<(), ssekit_smol::Error>(())
    /// ```
    #[cfg(feature = "rustls")]
    pub fn with_tls(config: rustls::ClientConfig) -> Self {
        SmolHttp::with_client(ClientOptions::default().tls(config).client())
    }

    /// Connects through `proxy` instead of the environment's, in its streams and requests
    /// alike, as [`EventSource::proxy`] does for one stream.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::io::HttpIo;
    /// use ssekit_smol::client::{Proxy, SmolHttp};
    /// let io = SmolHttp::new()?.with_proxy(Proxy::none());
    /// # let _ = io; Ok::<(), ssekit_smol::Error>(())
    /// ```
    #[must_use]
    pub fn with_proxy(mut self, proxy: Proxy) -> Self {
        self.client = self.client.options().proxy(proxy).client();
        self
    }
}

impl HttpIo for SmolHttp {
    const SCHEMES: &'static [&'static str] = SCHEMES;
    type Events = Items;

    fn new() -> Result<Self, Error> {
        Ok(SmolHttp::with_client(HttpClient::new()))
    }

    fn events(&self, spec: RequestSpec) -> Items {
        let source = EventSource {
            spec,
            client: self.client.clone(),
        };
        source.stream()
    }

    async fn next(events: &mut Items) -> Option<Result<Item, Error>> {
        events.next().await
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
        let uri = req.uri().clone();
        let Exchange { response, held } = self.client.send(&uri, req).await?;
        let collected = ssekit_http::io::collect(response, limit).await?;
        // Read to its end: the connection can carry the next request.
        self.client.release(held);
        Ok(collected)
    }

    type Runtime = Smol;

    fn runtime(&self) -> &Smol {
        &self.runtime
    }
}

/// What [`EventSource::stream`] returns.
pub type Items = Pin<Box<dyn Stream<Item = Result<Item, Error>> + Send>>;

/// A response body and the connection it holds (dropping it closes the connection, or
/// resets the HTTP/2 stream).
struct HeldBody {
    body: Incoming,
    _held: Held,
}

impl http_body::Body for HeldBody {
    type Data = Bytes;
    type Error = hyper::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<http_body::Frame<Bytes>, hyper::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }
}

/// The IO of one stream on smol: [`Drive`] decides, this sends on the pool.
struct SmolIo {
    runtime: Smol,
    client: HttpClient,
}

impl Io for SmolIo {
    type Runtime = Smol;
    type Body = HeldBody;

    fn runtime(&self) -> &Smol {
        &self.runtime
    }

    async fn send(
        &mut self,
        uri: &http::Uri,
        req: Request<Bytes>,
    ) -> Result<http::Response<HeldBody>, Error> {
        let Exchange { response, held } = self.client.send(uri, req).await?;
        Ok(response.map(|body| HeldBody { body, _held: held }))
    }
}
