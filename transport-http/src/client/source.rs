//! [`EventSource`], the reconnecting client of every transport, and [`ClientOptions`], how
//! its HTTP client is built: written once over [`Connect`], which a transport implements
//! for its runtime type (its HTTP client, and the [`Io`] of one stream on it).

use std::fmt;
use std::future::Future;
use std::marker::PhantomData;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use futures_lite::StreamExt;
use http::{Method, Request, Response, Uri};
use http_body::Body;
use ssekit::client::ReconnectConfig;
use ssekit::{Config, Event};

use super::{
    only_events, Drive, Io, Item, RequestSpec, Target, HTTP2_KEEP_ALIVE_INTERVAL,
    HTTP2_KEEP_ALIVE_TIMEOUT,
};
use crate::io::HttpIo;
use crate::proxy::Proxy;
use crate::runtime::Runtime;
use crate::Error;

/// The URL schemes of a transport: `http`, and `https` when it was built with TLS.
///
/// # Example
/// ```
/// use ssekit_http::client::schemes;
/// assert_eq!((schemes(true), schemes(false)), (&["http", "https"][..], &["http"][..]));
/// ```
pub const fn schemes(tls: bool) -> &'static [&'static str] {
    if tls {
        &["http", "https"]
    } else {
        &["http"]
    }
}

/// What [`EventSource::stream`] returns.
pub type Items = Pin<Box<dyn Stream<Item = Result<Item, Error>> + Send>>;

/// A runtime's HTTP client, as [`EventSource`] uses it: how to build one, and how to send a
/// request on it. ssekit-hyper implements it for `Tokio` (hyper-util's pooled client),
/// ssekit-smol for `Smol` (its own pool); a third runtime implements it for its runtime
/// type.
///
/// # Example
/// ```
/// use ssekit_http::client::{Connect, EventSource};
/// fn open<C: Connect>(url: &str) -> Result<EventSource<C>, ssekit_http::Error> {
///     EventSource::get(url)
/// }
/// ```
pub trait Connect: Runtime + Default {
    /// The HTTP client (a connection pool), cloned cheaply and shared by streams.
    type Client: Clone + Send + Sync + 'static;
    /// A response body (with whatever keeps its connection).
    type Body: Body<Data = Bytes, Error: Into<Error>> + Send + Unpin + 'static;
    /// The URL schemes the client connects to.
    const SCHEMES: &'static [&'static str];
    /// The request target the client wants: absolute (`GET http://host/path`, for a client
    /// that picks the connection from the URL) or origin form (`GET /path`).
    const TARGET: Target;
    /// A client as `options` say.
    fn client(options: ClientOptions<Self>) -> Result<Self::Client, Error>;
    /// Sends `request` (absolute URL) on `client` and reads its whole body, at most `limit`
    /// bytes (see [`HttpIo::request_limited`]).
    fn request_limited(
        client: &Self::Client,
        request: Request<Bytes>,
        limit: usize,
    ) -> impl Future<Output = Result<Response<Bytes>, Error>> + Send;
    /// Sends `request` to `uri` on `client` and returns the response as soon as its head
    /// arrived (see [`Io::send`]).
    fn send(
        client: &Self::Client,
        uri: &Uri,
        request: Request<Bytes>,
    ) -> impl Future<Output = Result<Response<Self::Body>, Error>> + Send;
}

/// The [`Io`] of one event stream on a [`Connect`] client: [`Drive`] decides, this sends.
/// [`EventSource::stream`] makes one.
///
/// # Example
/// ```
/// use ssekit_http::client::{Connect, Drive, RequestSpec, StreamIo};
/// fn drive<C: Connect>(client: C::Client, spec: RequestSpec) -> Drive<StreamIo<C>> {
///     Drive::new(spec.into_session(C::TARGET), StreamIo::new(C::default(), client))
/// }
/// ```
pub struct StreamIo<C: Connect> {
    runtime: C,
    client: C::Client,
}

impl<C: Connect> StreamIo<C> {
    /// The IO of a stream on `client`, timed on `runtime`.
    ///
    /// # Example
    /// See [`StreamIo`].
    pub fn new(runtime: C, client: C::Client) -> Self {
        StreamIo { runtime, client }
    }
}

impl<C: Connect> Io for StreamIo<C> {
    type Runtime = C;
    type Body = C::Body;

    fn runtime(&self) -> &C {
        &self.runtime
    }

    async fn send(
        &mut self,
        uri: &Uri,
        request: Request<Bytes>,
    ) -> Result<Response<C::Body>, Error> {
        C::send(&self.client, uri, request).await
    }
}

/// How a transport's HTTP client is built: its proxies, (feature `rustls`) its TLS
/// configuration, and the HTTP/2 keep-alive that finds a dead connection. The transports name
/// it on their runtime (`ssekit_hyper::client::ClientOptions`).
///
/// # Example
/// ```
/// use std::time::Duration;
/// use ssekit_http::client::{ClientOptions, Connect};
/// use ssekit_http::proxy::Proxy;
/// fn options<C: Connect>() -> Result<C::Client, ssekit_http::Error> {
///     ClientOptions::<C>::default()
///         .proxy(Proxy::none())
///         .http2_keep_alive(Duration::from_secs(15), Duration::from_secs(5))
///         .build()
/// }
/// ```
#[must_use]
pub struct ClientOptions<C> {
    proxy: Proxy,
    #[cfg(feature = "rustls")]
    tls: Option<rustls::ClientConfig>,
    keep_alive: (Option<Duration>, Duration),
    transport: PhantomData<fn() -> C>,
}

impl<C> Clone for ClientOptions<C> {
    fn clone(&self) -> Self {
        ClientOptions {
            proxy: self.proxy.clone(),
            #[cfg(feature = "rustls")]
            tls: self.tls.clone(),
            keep_alive: self.keep_alive,
            transport: PhantomData,
        }
    }
}

impl<C> fmt::Debug for ClientOptions<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientOptions")
            .field("proxy", &self.proxy)
            .field("http2_keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

impl<C> Default for ClientOptions<C> {
    /// The environment's proxies ([`Proxy::from_env`]), the Mozilla roots, HTTP/2 pings
    /// every [`HTTP2_KEEP_ALIVE_INTERVAL`] while streams are open.
    fn default() -> Self {
        ClientOptions {
            proxy: Proxy::from_env(),
            #[cfg(feature = "rustls")]
            tls: None,
            keep_alive: (Some(HTTP2_KEEP_ALIVE_INTERVAL), HTTP2_KEEP_ALIVE_TIMEOUT),
            transport: PhantomData,
        }
    }
}

impl<C> ClientOptions<C> {
    /// Connects through `proxy` ([`Proxy::none`] to go direct whatever the environment says).
    ///
    /// # Example
    /// See [`ClientOptions`].
    pub fn proxy(mut self, proxy: Proxy) -> Self {
        self.proxy = proxy;
        self
    }

    /// Uses this rustls configuration for `https://` (a private root, a client certificate).
    /// Its ALPN list is the transport's to set (`h2` and `http/1.1` where it speaks both):
    /// leave it empty.
    ///
    /// # Example
    /// ```
    /// # fn doc<C>(tls: rustls::ClientConfig) {
    /// let options = ssekit_http::client::ClientOptions::<C>::default().tls(tls);
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
    /// See [`ClientOptions`].
    pub fn http2_keep_alive(
        mut self,
        interval: impl Into<Option<Duration>>,
        timeout: Duration,
    ) -> Self {
        self.keep_alive = (interval.into(), timeout);
        self
    }

    /// The proxies, for the transport that builds the client.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{client::ClientOptions, proxy::Proxy};
    /// let options = ClientOptions::<()>::default().proxy(Proxy::none());
    /// assert_eq!(options.proxy_config(), &Proxy::none());
    /// ```
    pub fn proxy_config(&self) -> &Proxy {
        &self.proxy
    }

    /// The TLS configuration given, if any, for the transport that builds the client.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_http::client::ClientOptions::<()>::default().tls_config().is_none());
    /// ```
    #[cfg(feature = "rustls")]
    pub fn tls_config(&self) -> Option<&rustls::ClientConfig> {
        self.tls.as_ref()
    }

    /// The HTTP/2 keep-alive `(interval, timeout)`, for the transport that builds the client.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::client::{ClientOptions, HTTP2_KEEP_ALIVE_INTERVAL, HTTP2_KEEP_ALIVE_TIMEOUT};
    /// let (interval, timeout) = ClientOptions::<()>::default().http2_keep_alive_config();
    /// assert_eq!((interval, timeout), (Some(HTTP2_KEEP_ALIVE_INTERVAL), HTTP2_KEEP_ALIVE_TIMEOUT));
    /// ```
    pub fn http2_keep_alive_config(&self) -> (Option<Duration>, Duration) {
        self.keep_alive
    }
}

impl<C: Connect> ClientOptions<C> {
    /// The client.
    ///
    /// # Example
    /// See [`ClientOptions`].
    pub fn build(self) -> Result<C::Client, Error> {
        C::client(self)
    }
}

/// A reconnecting SSE client for any request (GET, or POST with a body that is sent again
/// on every reconnect), as a `Stream` of [`Item`]s, on the transport `C`. Every decision
/// (headers, `Last-Event-ID`, backoff, `retry:`, idle timeout, 204, redirects, giving up,
/// duplicate suppression) is the [`Session`](super::Session)'s; [`Drive`] runs it on `C`'s
/// [`Io`]. The transports name it on their runtime (`ssekit_hyper::client::EventSource`).
///
/// # Example
/// ```
/// use ssekit_http::client::{Connect, EventSource, Item};
/// use futures_lite::StreamExt;
///
/// async fn watch<C: Connect>() -> Result<(), ssekit_http::Error> {
///     let mut items = EventSource::<C>::get("http://127.0.0.1:8080/events")?
///         .header("authorization", "Bearer t")?
///         .stream();
///     while let Some(item) = items.next().await {
///         if let Item::Event(ev) = item? {
///             println!("{}: {}", ev.event_type(), ev.data());
///         }
///     }
///     Ok(())
/// }
/// ```
pub struct EventSource<C: Connect> {
    spec: RequestSpec,
    client: Option<C::Client>,
    options: ClientOptions<C>,
}

impl<C: Connect> fmt::Debug for EventSource<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSource")
            .field("spec", &self.spec)
            .field("own_client", &self.client.is_none())
            .field("options", &self.options)
            .finish()
    }
}

impl<C: Connect> EventSource<C> {
    /// A stream of the request `spec` describes (the protocol clients build one).
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", C::SCHEMES)?;
    /// let source = ssekit_http::client::EventSource::<C>::from_spec(spec);
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn from_spec(spec: RequestSpec) -> Self {
        EventSource {
            spec,
            client: None,
            options: ClientOptions::default(),
        }
    }

    /// A stream of any request: `method`, `url`, and a `body` sent again on every reconnect.
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::new(http::Method::PUT, "http://127.0.0.1:1/x", "{}")?;
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn new(method: Method, url: &str, body: impl Into<Bytes>) -> Result<Self, Error> {
        RequestSpec::new(method, url, body, C::SCHEMES).map(Self::from_spec)
    }

    /// A `GET` stream (what a browser's `EventSource` opens). A URL that does not parse, or
    /// whose scheme the transport does not speak, is an error here.
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() {
    /// assert!(ssekit_http::client::EventSource::<C>::get("not a url").is_err());
    /// # }
    /// ```
    pub fn get(url: &str) -> Result<Self, Error> {
        Self::new(Method::GET, url, Bytes::new())
    }

    /// A `POST` stream (an LLM API's, an ORS call's): `body` is sent again on every reconnect.
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::post("http://127.0.0.1:1/call", "{}")?;
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn post(url: &str, body: impl Into<Bytes>) -> Result<Self, Error> {
        Self::new(Method::POST, url, body)
    }

    /// The reconnect policy (the core's [`ReconnectConfig`]: backoff, jitter, attempts,
    /// idle timeout, which statuses are retried).
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// use ssekit::client::ReconnectConfig;
    /// let source = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:1/")?
    ///     .reconnect(ReconnectConfig::default().max_attempts(Some(3)));
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn reconnect(mut self, config: ReconnectConfig) -> Self {
        self.spec = self.spec.reconnect(config);
        self
    }

    /// A header sent on every attempt (an invalid name or value is an error here).
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:1/")?
    ///     .header("x-tenant", "acme")?;
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        self.spec = self.spec.header(name, value)?;
        Ok(self)
    }

    /// A header that carries a credential: sent as [`header`](Self::header) is, marked
    /// sensitive, and dropped when a redirect leaves the origin.
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:1/")?
    ///     .secret_header("x-api-key", "s3cret")?;
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn secret_header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        self.spec = self.spec.secret_header(name, value)?;
        Ok(self)
    }

    /// The decoder's limits, dispatch mode and limit policy (the core's [`Config`]).
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// use ssekit::{Config, Limits};
    /// let source = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:1/")?
    ///     .decoder(Config::default().limits(Limits::default().max_event(1 << 20)));
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn decoder(mut self, config: Config) -> Self {
        self.spec = self.spec.decoder(config);
        self
    }

    /// How long an attempt waits for the response head before it counts as failed.
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:1/")?
    ///     .response_timeout(std::time::Duration::from_secs(5));
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.spec = self.spec.response_timeout(timeout);
        self
    }

    /// How many redirects an attempt follows (10 by default; 0 refuses every redirect).
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:1/")?.max_redirects(0);
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn max_redirects(mut self, max: u32) -> Self {
        self.spec = self.spec.max_redirects(max);
        self
    }

    /// A hook that edits each attempt's request just before it is sent (a fresh token, a
    /// signature).
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:1/")?
    ///     .on_connect(|req| { req.headers_mut().insert("x-attempt", http::HeaderValue::from_static("1")); });
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn on_connect(mut self, hook: impl FnMut(&mut Request<Bytes>) + Send + 'static) -> Self {
        self.spec = self.spec.on_connect(hook);
        self
    }

    /// Uses this HTTP client (to share a pool, or for a private TLS root).
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>(client: C::Client) -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:1/")?.client(client);
    /// # let _ = source; Ok(()) }
    /// ```
    pub fn client(mut self, client: C::Client) -> Self {
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
    /// # fn doc<C: ssekit_http::client::Connect>(tls: rustls::ClientConfig) -> Result<(), ssekit_http::Error> {
    /// let source = ssekit_http::client::EventSource::<C>::get("https://127.0.0.1:1/")?.tls(tls);
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
    /// # fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// use ssekit_http::proxy::Proxy;
    /// let source = ssekit_http::client::EventSource::<C>::get("https://api.example.com/events")?
    ///     .proxy(Proxy::all("http://proxy.internal:3128")?);
    /// # let _ = source; Ok(()) }
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
    /// `Disconnected(Ended::Truncated)`. A client that cannot be built is the first and last
    /// item. Dropping it closes the connection.
    ///
    /// # Example
    /// See [`EventSource`].
    pub fn stream(self) -> Items {
        let client = match self.client {
            Some(client) => client,
            None => match C::client(self.options) {
                Ok(client) => client,
                Err(err) => return Box::pin(futures_lite::stream::once(Err(err))),
            },
        };
        let io = StreamIo::new(C::default(), client);
        let drive = Drive::new(self.spec.into_session(C::TARGET), io);
        Box::pin(futures_lite::stream::unfold(drive, |mut d| async move {
            d.next().await.map(|item| (item, d))
        }))
    }

    /// Only the events. The stream ends with `None` when the stream (or the policy) ends
    /// cleanly, and with the error that ended it otherwise: without reconnecting, a stream
    /// cut inside an event ends with `Some(Err(`[`Error::Truncated`]`))`, a compressed
    /// response with [`Error::ContentEncoding`].
    ///
    /// # Example
    /// ```
    /// # async fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// use futures_lite::StreamExt;
    /// let mut events = ssekit_http::client::EventSource::<C>::get("http://127.0.0.1:8080/events")?.events();
    /// let first = events.next().await.transpose()?;
    /// # let _ = first; Ok(()) }
    /// ```
    pub fn events(self) -> Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>> {
        Box::pin(self.stream().filter_map(only_events))
    }

    /// The events, checked by `profile` ([`validated`](super::validated)): the terminal
    /// event ends the stream, a provider's failure event (an `error` after a `200`) ends it
    /// with [`Error::Provider`] carrying the provider's message, and a stream that stops
    /// before its terminal event ends with a [`Error::Sequence`] `Unterminated`, never as a
    /// success.
    ///
    /// # Example
    /// ```
    /// # async fn doc<C: ssekit_http::client::Connect>() -> Result<(), ssekit_http::Error> {
    /// use futures_lite::StreamExt;
    /// use ssekit::profile::responses::Stream;
    /// let source = ssekit_http::client::EventSource::<C>::post("http://127.0.0.1:8080/v1/responses", "{}")?;
    /// let mut events = source.validated(Stream::new());
    /// while let Some(event) = events.next().await {
    ///     let event = event?; // Error::Provider: the model failed, with its message
    ///     # let _ = event;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn validated<P>(
        self,
        profile: P,
    ) -> Pin<Box<dyn Stream<Item = Result<Event, Error>> + Send>>
    where
        P: ssekit::sequence::Profile + Send + 'static,
    {
        super::validated(self.stream(), profile)
    }
}

/// What the protocol clients written once over [`HttpIo`] (the ORS client, the UTCP
/// provider) do their IO with on the transport `C`: one HTTP client for their requests and
/// streams, `C`'s timers. ssekit-hyper names it `HyperHttp`, ssekit-smol `SmolHttp`.
///
/// # Example
/// ```
/// use ssekit_http::client::{ClientOptions, Connect, Http};
/// fn shared<C: Connect>() -> Result<(Http<C>, Http<C>), ssekit_http::Error> {
///     let client = ClientOptions::<C>::default().build()?;
///     Ok((Http::with_client(client.clone()), Http::with_client(client)))
/// }
/// ```
pub struct Http<C: Connect> {
    client: C::Client,
    options: ClientOptions<C>,
    runtime: C,
}

impl<C: Connect> Clone for Http<C> {
    fn clone(&self) -> Self {
        Http {
            client: self.client.clone(),
            options: self.options.clone(),
            runtime: self.runtime.clone(),
        }
    }
}

impl<C: Connect> fmt::Debug for Http<C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Http")
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl<C: Connect> Http<C> {
    /// Uses this HTTP client (to share a pool, or for a private TLS root).
    ///
    /// # Example
    /// See [`Http`].
    pub fn with_client(client: C::Client) -> Self {
        Http {
            client,
            options: ClientOptions::default(),
            runtime: C::default(),
        }
    }

    /// A client of its own, as `options` say.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::client::{ClientOptions, Connect, Http};
    /// fn direct<C: Connect>() -> Result<Http<C>, ssekit_http::Error> {
    ///     Http::with_options(ClientOptions::default().proxy(ssekit_http::proxy::Proxy::none()))
    /// }
    /// ```
    pub fn with_options(options: ClientOptions<C>) -> Result<Self, Error> {
        let client = C::client(options.clone())?;
        Ok(Http {
            client,
            options,
            runtime: C::default(),
        })
    }

    /// Uses this rustls configuration for `https://` (a private root, a client
    /// certificate), in its streams and requests alike, as [`EventSource::tls`] does for one
    /// stream.
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>(tls: rustls::ClientConfig) -> Result<(), ssekit_http::Error> {
    /// let io = ssekit_http::client::Http::<C>::with_tls(tls)?;
    /// # let _ = io; Ok(()) }
    /// ```
    #[cfg(feature = "rustls")]
    pub fn with_tls(config: rustls::ClientConfig) -> Result<Self, Error> {
        Http::with_options(ClientOptions::default().tls(config))
    }

    /// Connects through `proxy` instead of the environment's, in its streams and requests
    /// alike, as [`EventSource::proxy`] does for one stream (the other options are those
    /// this one was built with, or the defaults after [`with_client`](Self::with_client)).
    ///
    /// # Example
    /// ```
    /// # fn doc<C: ssekit_http::client::Connect>(io: ssekit_http::client::Http<C>) -> Result<(), ssekit_http::Error> {
    /// let io = io.with_proxy(ssekit_http::proxy::Proxy::none())?;
    /// # let _ = io; Ok(()) }
    /// ```
    pub fn with_proxy(self, proxy: Proxy) -> Result<Self, Error> {
        Http::with_options(self.options.proxy(proxy))
    }
}

impl<C: Connect> HttpIo for Http<C> {
    const SCHEMES: &'static [&'static str] = C::SCHEMES;
    type Events = Items;
    type Runtime = C;

    fn new() -> Result<Self, Error> {
        Http::with_options(ClientOptions::default())
    }

    fn events(&self, spec: RequestSpec) -> Items {
        EventSource::<C>::from_spec(spec)
            .client(self.client.clone())
            .stream()
    }

    async fn next(events: &mut Items) -> Option<Result<Item, Error>> {
        events.next().await
    }

    async fn request(&self, req: Request<Bytes>) -> Result<Response<Bytes>, Error> {
        C::request_limited(&self.client, req, crate::ors::MAX_JSON_ANSWER).await
    }

    async fn request_limited(
        &self,
        req: Request<Bytes>,
        limit: usize,
    ) -> Result<Response<Bytes>, Error> {
        C::request_limited(&self.client, req, limit).await
    }

    fn runtime(&self) -> &C {
        &self.runtime
    }
}
