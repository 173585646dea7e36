//! The IO-free client: what an `EventSource` reports ([`Item`], [`Ended`]), the request it
//! makes ([`RequestSpec`]), and the state that drives it ([`Session`]).
//!
//! A transport builds a [`RequestSpec`], turns it into a [`Session`], and loops:
//! ```text
//!  poll(now) ─▶ Item(item)          ─▶ hand it to the caller
//!            ─▶ Connect{request}    ─▶ HTTP exchange ─▶ handle_head(status, headers) | handle_connect_error(e)
//!            ─▶ Close               ─▶ drop the connection (idle timeout)
//!            ─▶ Wait{deadline, ..}  ─▶ next body frame ─▶ handle_data / handle_end;  or deadline ─▶ handle_timeout
//!            ─▶ End(error?)         ─▶ the stream ends
//! ```
//! Every decision (headers, `Last-Event-ID`, backoff, `retry:`, idle timeout, 204, giving
//! up, duplicate suppression) is the core [`Reconnect`]'s; decoding is the core
//! [`Decoder`]'s. Redirects are followed here, within one connection attempt, by the rules of
//! the [`redirect`] module.

use std::collections::VecDeque;
use std::fmt;
use std::time::Duration;

use bytes::Bytes;
use http::header::{
    HeaderName, HeaderValue, ACCEPT_ENCODING, CONTENT_ENCODING, CONTENT_TYPE, HOST, LOCATION,
};
use http::{HeaderMap, Method, Request, Uri};
use ssekit::client::{
    Action, Delivery, Disconnect, Failure, GiveUpReason, Reconnect, ReconnectConfig, ResponseError,
};

use ssekit::{Config, DecodeError, Decoder, Event, Frame, Instant, StreamEnd, Utf8Bytes};

use crate::redirect::{self, BODY_HEADERS, CREDENTIAL_HEADERS};

mod drive;
#[cfg(feature = "pool")]
mod pool;
mod source;
mod validated;
use crate::{
    entropy, redacted_url, retry_after, ContentCoding, Error, RedirectError, Refused, RequestError,
    RequestErrorKind,
};
pub use drive::{Drive, Io};
#[cfg(feature = "pool")]
pub use pool::{Dial, Pool, PooledBody};
pub use source::{schemes, ClientOptions, Connect, EventSource, Http, Items, StreamIo};
pub use validated::validated;

/// The most items decoded ahead of the application (see `Session::drain`).
const DRAIN_BATCH: usize = 32;

/// How long the body of a refused response is read for its error message, at most.
const REFUSED_BODY_TIME: Duration = Duration::from_secs(2);

/// What an `EventSource` reports: events, and what happened to the connection.
///
/// # Example
/// ```
/// use ssekit_http::client::Item;
/// let item = Item::Event(ssekit::Event::message("x"));
/// assert!(matches!(item, Item::Event(ref e) if e.data() == "x"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Item {
    /// A response was accepted (`200 text/event-stream`); `attempt` is 0 for the first
    /// connection; for a reconnect, the number of consecutive failures before it, or 1
    /// when there were none (after a clean end, or a connection that delivered events).
    Connected {
        /// The retry number.
        attempt: u32,
    },
    /// An event to deliver (duplicates and filtered types are not reported).
    Event(Event),
    /// A comment, usually a keep-alive.
    Comment(Utf8Bytes),
    /// The server set the reconnection time (milliseconds).
    Retry(u64),
    /// The connection ended or failed.
    Disconnected(Ended),
    /// The next connection attempt starts after this wait.
    Reconnecting {
        /// The wait.
        after: Duration,
    },
    /// [`OnLimit::Resync`](ssekit::decode::OnLimit::Resync) only: a line or an event went over a decoder limit and was
    /// dropped; the stream goes on from the next blank line. (With the default
    /// [`OnLimit::FailStop`](ssekit::decode::OnLimit::FailStop) the error ends the stream instead.)
    Skipped(DecodeError),
    /// [`Mode::Raw`](ssekit::decode::Mode::Raw) only: a block that named an event type or
    /// set an id but had no `data:` line, which a browser does not dispatch.
    Dataless(Event),
    /// The server redirected the request (`status`, one of 301, 302, 303, 307 and 308); the
    /// next request of this attempt goes to `to`. Reconnects start again from the URL the
    /// stream was opened with.
    Redirected {
        /// The redirect status.
        status: u16,
        /// Where the request goes now.
        to: Uri,
    },
}

/// The event in a stream item, if it is one: what an `EventSource`'s `events()` keeps.
/// Errors are kept too, so the stream still ends with the error that ended it.
///
/// # Example
/// ```
/// use ssekit_http::client::{only_events, Item};
/// assert!(only_events(Ok(Item::Retry(5))).is_none());
/// let ev = only_events(Ok(Item::Event(ssekit::Event::message("x"))));
/// assert!(matches!(ev, Some(Ok(e)) if e.data() == "x"));
/// assert!(matches!(only_events(Err(ssekit_http::Error::Status(404))), Some(Err(_))));
/// ```
pub fn only_events(item: Result<Item, Error>) -> Option<Result<Event, Error>> {
    match item {
        Ok(Item::Event(ev)) => Some(Ok(ev)),
        Ok(_) => None,
        Err(e) => Some(Err(e)),
    }
}

/// How a connection ended, in [`Item::Disconnected`]: clean end, truncation and transport
/// error are different outcomes. A failure keeps its [`Error`] and a refusal its
/// [`Refused`], to match on; two `Failed` are equal when their messages are.
///
/// # Example
/// ```
/// use ssekit_http::client::Ended;
/// assert_eq!(Ended::Clean.to_string(), "the server ended the stream cleanly");
/// assert_eq!(Ended::Truncated.to_string(), "the stream was cut inside an event");
/// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
/// let failed = Ended::Failed(reset.into());
/// assert!(matches!(&failed, Ended::Failed(ssekit_http::Error::Io(e)) if e.kind() == std::io::ErrorKind::ConnectionReset));
/// assert_eq!(failed.to_string(), "the connection failed: I/O error: connection reset");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Ended {
    /// The body ended after a complete event.
    Clean,
    /// The body ended inside a line or an event; the partial event was discarded.
    Truncated,
    /// The connection failed (refused, reset, TLS, no response in time, ...): the error.
    Failed(Error),
    /// No bytes arrived within the idle timeout; the client closed the connection.
    IdleTimeout,
    /// The server refused the request with a status that is retried (5xx, 408, 429): the
    /// status, with the start of the body it sent.
    Refused(Refused),
}

impl PartialEq for Ended {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Ended::Clean, Ended::Clean)
            | (Ended::Truncated, Ended::Truncated)
            | (Ended::IdleTimeout, Ended::IdleTimeout) => true,
            (Ended::Failed(a), Ended::Failed(b)) => a.to_string() == b.to_string(),
            (Ended::Refused(a), Ended::Refused(b)) => a == b,
            _ => false,
        }
    }
}

impl Eq for Ended {}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ended::Clean => f.write_str("the server ended the stream cleanly"),
            Ended::Truncated => f.write_str("the stream was cut inside an event"),
            Ended::Failed(why) => write!(f, "the connection failed: {why}"),
            Ended::IdleTimeout => f.write_str("no bytes within the idle timeout"),
            Ended::Refused(refused) => refused.fmt(f),
        }
    }
}

/// A hook called on every request just before it is sent.
pub type Hook = Box<dyn FnMut(&mut Request<Bytes>) + Send>;

/// Which request target a [`Session`] writes.
///
/// # Example
/// ```
/// use ssekit_http::client::{RequestSpec, Step, Target};
/// let mut s = RequestSpec::get("http://127.0.0.1:8/a?b", &["http"])?.into_session(Target::Origin);
/// let Step::Connect { request, .. } = s.poll(ssekit::Instant::ZERO) else { panic!() };
/// assert_eq!(request.uri(), "/a?b");
/// assert_eq!(request.headers()["host"], "127.0.0.1:8");
/// # Ok::<(), ssekit_http::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Target {
    /// The whole URL (for a client with a connection pool, such as hyper-util's).
    Absolute,
    /// The path and query, with the authority in `Host` (for one HTTP/1.1 connection).
    Origin,
}

/// Rewrites a request with an absolute URL to origin form, for one HTTP/1.1 connection:
/// the path and query as the target, the host and port in `Host`. Credentials in the URL
/// (`user:password@`) are not sent: `Host` carries no userinfo, which would put the password
/// in plain text in a header that must not hold it.
///
/// # Example
/// ```
/// let mut req = http::Request::new(bytes::Bytes::new());
/// *req.uri_mut() = "http://127.0.0.1:8/a?b".parse()?;
/// ssekit_http::client::origin_form(&mut req)?;
/// assert_eq!(req.uri(), "/a?b");
/// assert_eq!(req.headers()["host"], "127.0.0.1:8");
/// *req.uri_mut() = "http://user:secret@[::1]:9/".parse()?;
/// ssekit_http::client::origin_form(&mut req)?;
/// assert_eq!(req.headers()["host"], "[::1]:9");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn origin_form<B>(req: &mut Request<B>) -> Result<(), Error> {
    let uri = req.uri().clone();
    let path = uri.path_and_query().map_or("/", |p| p.as_str());
    *req.uri_mut() = path.parse().map_err(|e| {
        RequestError::new(RequestErrorKind::Path, format!("bad path {path:?}")).with_source(e)
    })?;
    if let Some(authority) = uri.authority() {
        let host = match authority.port_u16() {
            Some(port) => format!("{}:{port}", authority.host()),
            None => authority.host().to_owned(),
        };
        let host = HeaderValue::from_str(&host)
            .map_err(|e| RequestError::new(RequestErrorKind::Header, "bad host").with_source(e))?;
        req.headers_mut().insert(HOST, host);
    }
    Ok(())
}

/// How often a client pings an HTTP/2 connection while it carries streams (the transports'
/// `ClientOptions::http2_keep_alive` default). Streams to one origin share a connection, so
/// a connection that died without a word (a balancer or NAT dropped it) must be found, or
/// every reconnect would open its stream on the dead connection again.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::client::HTTP2_KEEP_ALIVE_INTERVAL.as_secs(), 30);
/// ```
pub const HTTP2_KEEP_ALIVE_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a client waits for the answer to its HTTP/2 ping before it closes the
/// connection, failing its streams, which then reconnect on a new one.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::client::HTTP2_KEEP_ALIVE_TIMEOUT.as_secs(), 10);
/// ```
pub const HTTP2_KEEP_ALIVE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Everything an `EventSource` sends, without any IO: method, URL, body (sent again,
/// unchanged, on every reconnect), headers, reconnect policy, decoder limits, response
/// timeout and a per-request hook. Each transport's `EventSource` builder fills one in.
///
/// Every request also carries `Accept-Encoding: identity` (the decoder reads no
/// compressed body; a response in another coding is refused with
/// [`Error::ContentEncoding`]), and the policy's jitter is seeded from the OS unless it
/// sets a seed (see [`into_session`](Self::into_session)).
///
/// # Example
/// ```
/// use ssekit_http::client::RequestSpec;
/// let spec = RequestSpec::post("http://127.0.0.1:1/call", "{}", &["http"])?
///     .header("authorization", "Bearer t")?;
/// assert_eq!(spec.uri(), "http://127.0.0.1:1/call");
/// assert!(RequestSpec::get("ftp://127.0.0.1/", &["http"]).is_err());
/// # Ok::<(), ssekit_http::Error>(())
/// ```
pub struct RequestSpec {
    method: Method,
    uri: Uri,
    body: Bytes,
    config: ReconnectConfig,
    headers: Vec<(Utf8Bytes, Utf8Bytes)>,
    decoder: Config,
    hook: Option<Hook>,
    response_timeout: Duration,
    schemes: Vec<String>,
    max_redirects: u32,
    /// Headers added with `secret_header`: dropped on a redirect to another origin.
    secrets: Vec<HeaderName>,
}

impl fmt::Debug for RequestSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // A query may hold a key (a UTCP API key's `location: query`): left out.
        f.debug_struct("RequestSpec")
            .field("method", &self.method)
            .field("uri", &redacted_url(&self.uri.to_string()))
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl RequestSpec {
    /// `method url` with `body`; the URL's scheme must be one of `schemes` and it must name
    /// a host.
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::new(http::Method::PUT, "http://127.0.0.1:1/x", "{}", &["http"])?;
    /// # let _ = spec; Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn new(
        method: Method,
        url: &str,
        body: impl Into<Bytes>,
        schemes: &[&str],
    ) -> Result<Self, Error> {
        let uri: Uri = url.parse().map_err(|e| {
            RequestError::new(
                RequestErrorKind::Url,
                format!("bad URL {:?}", redacted_url(url)),
            )
            .with_source(e)
        })?;
        let scheme_ok = uri.scheme_str().is_some_and(|s| schemes.contains(&s));
        let port_ok = uri
            .authority()
            .is_some_and(|a| redirect::port_is_valid(a.as_str()));
        if !scheme_ok || uri.host().is_none() || !port_ok {
            let schemes: Vec<String> = schemes.iter().map(|s| format!("{s}://")).collect();
            return Err(RequestError::new(
                RequestErrorKind::Url,
                format!(
                    "bad URL {:?}: expected {}host[:port]/...",
                    redacted_url(url),
                    schemes.join(" or ")
                ),
            )
            .into());
        }
        Ok(RequestSpec {
            method,
            uri,
            body: body.into(),
            config: ReconnectConfig::default(),
            headers: Vec::new(),
            decoder: Config::default(),
            hook: None,
            response_timeout: Duration::from_secs(30),
            schemes: schemes.iter().map(|s| (*s).to_owned()).collect(),
            max_redirects: 10,
            secrets: Vec::new(),
        })
    }

    /// `GET url`.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_http::client::RequestSpec::get("not a url", &["http"]).is_err());
    /// assert!(ssekit_http::client::RequestSpec::get("http://h:65616/", &["http"]).is_err());
    /// ```
    pub fn get(url: &str, schemes: &[&str]) -> Result<Self, Error> {
        RequestSpec::new(Method::GET, url, Bytes::new(), schemes)
    }

    /// `POST url` with `body`.
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::post("http://127.0.0.1:1/call", "{}", &["http"])?;
    /// # let _ = spec; Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn post(url: &str, body: impl Into<Bytes>, schemes: &[&str]) -> Result<Self, Error> {
        RequestSpec::new(Method::POST, url, body, schemes)
    }

    /// The URL.
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?;
    /// assert_eq!(spec.uri().port_u16(), Some(1));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn uri(&self) -> &Uri {
        &self.uri
    }

    /// The reconnect policy. Headers added with [`header`](Self::header) are kept, in either
    /// order, and win over headers of the same name in `config`. Without a
    /// [`jitter_seed`](ReconnectConfig::jitter_seed) in `config`, each session draws one from
    /// the OS (see [`into_session`](Self::into_session)).
    ///
    /// # Example
    /// ```
    /// use ssekit::client::ReconnectConfig;
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?
    ///     .reconnect(ReconnectConfig::default().max_attempts(Some(3)));
    /// # let _ = spec; Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn reconnect(mut self, config: ReconnectConfig) -> Self {
        self.config = config;
        self
    }

    /// Adds a request header, sent on every connection. The core refuses names that are not
    /// tokens and values with control characters (no header injection, `Last-Event-ID`
    /// included). An `Accept-Encoding` set here (or by the hook) replaces the session's
    /// `identity`, but the stream still only reads `identity`: a response in another
    /// coding ends it with [`Error::ContentEncoding`].
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?;
    /// assert!(spec.header("last-event-id", "1\r\nx-injected: yes").is_err());
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let (name, value) = (
            Utf8Bytes::copy_from_str(name),
            Utf8Bytes::copy_from_str(value),
        );
        // Validated now, applied to the policy when the session starts.
        let _checked = ReconnectConfig::default()
            .header(name.clone(), value.clone())
            .map_err(|e| {
                RequestError::new(RequestErrorKind::Header, format!("header {name:?}"))
                    .with_source(e)
            })?;
        self.headers.push((name, value));
        Ok(self)
    }

    /// Adds a request header that carries a credential (an API key, a token): sent on every
    /// connection like [`header`](Self::header), marked sensitive (left out of `Debug` output
    /// and of HTTP/2 header compression tables), and dropped by a redirect to another origin,
    /// for the rest of the connection attempt, as `Authorization`, `Cookie` and
    /// `Proxy-Authorization` always are, whoever set them (the hook included).
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?
    ///     .secret_header("x-api-key", "s3cret")?;
    /// # let _ = spec; Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn secret_header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        self = self.header(name, value)?;
        let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| {
            RequestError::new(RequestErrorKind::Header, format!("header {name:?}")).with_source(e)
        })?;
        self.secrets.push(name);
        Ok(self)
    }

    /// The decoder's limits and mode.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Config, Limits};
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?
    ///     .decoder(Config::default().limits(Limits::default().max_event(1 << 20)));
    /// # let _ = spec; Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn decoder(mut self, config: Config) -> Self {
        self.decoder = config;
        self
    }

    /// How long to wait for the response head of each request: each connection attempt, and
    /// each redirect it follows (default 30 s). Past it the attempt counts as a network
    /// failure and the policy decides on the retry.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?
    ///     .response_timeout(Duration::from_secs(5));
    /// assert_eq!(spec.response_timeout_value(), Duration::from_secs(5));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// The response timeout.
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?;
    /// assert_eq!(spec.response_timeout_value(), std::time::Duration::from_secs(30));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn response_timeout_value(&self) -> Duration {
        self.response_timeout
    }

    /// How many redirects one connection attempt follows (default 10; 0: none, a redirect
    /// ends the stream with [`Error::Refused`]). More end the stream with
    /// [`Error::Redirect`], as does a redirect to a scheme the transport cannot speak, from
    /// `https` to `http`, or with `Location` fields that name no single target (several
    /// different ones, an empty one). See the [`redirect`] module for the rules.
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?
    ///     .max_redirects(0);
    /// assert_eq!(spec.max_redirects_value(), 0);
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn max_redirects(mut self, max: u32) -> Self {
        self.max_redirects = max;
        self
    }

    /// How many redirects one connection attempt follows.
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?;
    /// assert_eq!(spec.max_redirects_value(), 10);
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn max_redirects_value(&self) -> u32 {
        self.max_redirects
    }

    /// Calls `hook` on every request just before it is sent, redirected ones included, with
    /// its absolute URL (the origin form, when the session writes one, comes after): refresh
    /// a token, or change the body of a resumed call. After a redirect to another origin, the
    /// credential headers and `Host` are removed from what the hook returns too.
    ///
    /// # Example
    /// ```
    /// let spec = ssekit_http::client::RequestSpec::get("http://127.0.0.1:1/", &["http"])?
    ///     .on_connect(|req| {
    ///         req.headers_mut().insert("authorization", http::HeaderValue::from_static("Bearer fresh"));
    ///     });
    /// # let _ = spec; Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn on_connect(mut self, hook: impl FnMut(&mut Request<Bytes>) + Send + 'static) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// The state that drives requests of this description, writing `target`s.
    ///
    /// Unless the reconnect policy sets a
    /// [`jitter_seed`](ssekit::client::ReconnectConfig::jitter_seed), the session's jitter
    /// is seeded from the OS ([`entropy::os_seed`]): every session, in every process, draws
    /// its own reconnect delays, so that a fleet of clients does not reconnect in lockstep.
    /// A policy with a seed gets exactly that seed's delays (for tests).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::client::{RequestSpec, Target};
    /// let session = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// # let _ = session; Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn into_session(self, target: Target) -> Session {
        let mut config = own_jitter_seed(self.config);
        for (name, value) in self.headers {
            // Checked in `header`, so this cannot fail; a refused header is left out.
            config = match config.clone().header(name, value) {
                Ok(with) => with,
                Err(_) => config,
            };
        }
        let rc = Reconnect::new(config);
        let mut decoder = Decoder::with_config(self.decoder);
        // A configured `Last-Event-ID` seeded the policy; the decoder, whose id is the one
        // copied back at each disconnect, starts from it too.
        decoder.set_last_event_id(Utf8Bytes::copy_from_str(rc.last_event_id()));
        Session {
            rc,
            decoder,
            current: Outgoing {
                method: self.method.clone(),
                uri: self.uri.clone(),
                body: self.body.clone(),
            },
            opened: Outgoing {
                method: self.method,
                uri: self.uri,
                body: self.body,
            },
            headers: Vec::new(),
            schemes: self.schemes,
            max_redirects: self.max_redirects,
            secrets: self.secrets,
            redirects: 0,
            body_dropped: false,
            left_origin: false,
            redirected: None,
            hook: self.hook,
            response_timeout: self.response_timeout,
            target,
            attempt: 0,
            connected: false,
            out: VecDeque::new(),
            failed: None,
            last_error: None,
            refusal: None,
            finished: false,
        }
    }
}

/// `config` as it is when it sets a jitter seed, else with one from the OS: the seed of a
/// client built for real use, which must differ between clients.
pub(crate) fn own_jitter_seed(config: ReconnectConfig) -> ReconnectConfig {
    match config.jitter_seed_value() {
        Some(_) => config,
        None => config.jitter_seed(u64::from_le_bytes(entropy::os_seed())),
    }
}

/// What a [`Session`] wants done next.
///
/// # Example
/// ```
/// use ssekit_http::client::{RequestSpec, Step, Target};
/// let mut s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
/// assert!(matches!(s.poll(ssekit::Instant::ZERO), Step::Connect { attempt: 0, .. }));
/// # Ok::<(), ssekit_http::Error>(())
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Step {
    /// Hand this item to the caller.
    Item(Item),
    /// Send this request (within [`Session::response_timeout`]) to [`Session::uri`] and
    /// report the outcome with [`Session::handle_head`] (or [`Session::handle_response`])
    /// or [`Session::handle_connect_error`].
    Connect {
        /// The request.
        request: Request<Bytes>,
        /// The retry number (0 for the first; a redirected request keeps its attempt's).
        attempt: u32,
    },
    /// Drop the connection: the idle timeout fired, or enough of a refused response's body
    /// was read.
    Close,
    /// Wait for the next body frame (when `read`) or until `deadline`, whichever comes first.
    Wait {
        /// Read the response body.
        read: bool,
        /// Call [`Session::handle_timeout`] at this moment.
        deadline: Option<Instant>,
    },
    /// The stream is over: after a 204 or a clean end without reconnecting (`None`), or with
    /// the error that ended it ([`Error::Truncated`] for an end inside an event without
    /// reconnecting).
    End(Option<Error>),
}

/// The IO-free state of one `EventSource` stream: the core [`Reconnect`] and [`Decoder`],
/// the request to send, and the items not yet handed out. See the [module](self) docs for
/// the loop.
///
/// # Example
/// ```
/// use ssekit::Instant;
/// use ssekit_http::client::{Ended, Item, RequestSpec, Step, Target};
/// let mut s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
/// let Step::Connect { .. } = s.poll(Instant::ZERO) else { panic!() };
/// s.handle_response(Instant::ZERO, 200, Some("text/event-stream"));
/// s.handle_data(Instant::ZERO, bytes::Bytes::from_static(b"id: 7\ndata: x"));
/// s.handle_end(Instant::from_millis(5), None);
/// assert!(matches!(s.poll(Instant::ZERO), Step::Item(Item::Connected { attempt: 0 })));
/// assert!(matches!(s.poll(Instant::ZERO), Step::Item(Item::Disconnected(Ended::Truncated))));
/// assert!(matches!(s.poll(Instant::ZERO), Step::Item(Item::Reconnecting { .. })));
/// # Ok::<(), ssekit_http::Error>(())
/// ```
pub struct Session {
    rc: Reconnect,
    decoder: Decoder,
    /// The request the stream was opened with, where every connection attempt starts.
    opened: Outgoing,
    /// The request of this attempt, after its redirects.
    current: Outgoing,
    /// The policy's headers for this attempt (`Last-Event-ID` and the configured ones).
    headers: Vec<ssekit::client::Header>,
    /// URL schemes the transport speaks, which a redirect may go to.
    schemes: Vec<String>,
    max_redirects: u32,
    /// Headers that carry credentials besides `CREDENTIAL_HEADERS`.
    secrets: Vec<HeaderName>,
    /// Redirects followed in this attempt.
    redirects: u32,
    /// Whether a redirect of this attempt dropped the body (and the headers describing it).
    body_dropped: bool,
    /// Whether a redirect of this attempt left the opened origin (and dropped credentials).
    left_origin: bool,
    /// The request a redirect asks for, sent at the next `poll`.
    redirected: Option<Request<Bytes>>,
    hook: Option<Hook>,
    response_timeout: Duration,
    target: Target,
    attempt: u32,
    connected: bool,
    out: VecDeque<Item>,
    /// An error that ends the stream once the queued items are out.
    failed: Option<Error>,
    /// The last connection failure, reported if the policy gives up on it.
    last_error: Option<Error>,
    /// A refused response whose body is being read for the error.
    refusal: Option<Refusal>,
    finished: bool,
}

/// A refused response, while its body is read (up to [`Refused::BODY_LIMIT`] bytes, until
/// it ends or [`REFUSED_BODY_TIME`] has passed) so that the error can say what it said.
struct Refusal {
    status: u16,
    headers: HeaderMap,
    content_type: Option<String>,
    retry_after: Option<Duration>,
    body: Vec<u8>,
    /// When the response head came: the policy's wait before a retry starts there.
    at: Instant,
    /// When to stop waiting for more of the body.
    until: Instant,
    /// Whether the transport still holds the body (it did not end).
    open: bool,
}

impl Refusal {
    fn is_complete(&self, now: Instant) -> bool {
        !self.open || self.body.len() > Refused::BODY_LIMIT || now >= self.until
    }
}

/// The method, URL and body of a request: the one a [`Session`] was opened with, or the
/// one of its current attempt.
#[derive(Clone)]
struct Outgoing {
    method: Method,
    uri: Uri,
    body: Bytes,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("uri", &redacted_url(&self.current.uri.to_string()))
            .field("connected", &self.connected)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// The URL the request of the current attempt goes to: the one the stream was opened
    /// with, or where a redirect sent it (the host and port to connect to).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::client::{RequestSpec, Target};
    /// let s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// assert_eq!(s.uri().host(), Some("127.0.0.1"));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn uri(&self) -> &Uri {
        &self.current.uri
    }

    /// The last event ID the stream has reached, sent as `Last-Event-ID` by the next
    /// connection when not empty: that of the last block (with data or not) of the
    /// connections before, or the configured one. Kept when the session ends, so a stream
    /// opened again elsewhere (after a 401, with a new token) resumes from it.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::ReconnectConfig;
    /// use ssekit_http::client::{RequestSpec, Target};
    /// let config = ReconnectConfig::default().header("Last-Event-ID", "7")?;
    /// let s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?
    ///     .reconnect(config)
    ///     .into_session(Target::Absolute);
    /// assert_eq!(s.last_event_id(), "7");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn last_event_id(&self) -> &str {
        self.rc.last_event_id()
    }

    /// How long a [`Step::Connect`] may wait for the response head.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::client::{RequestSpec, Target};
    /// let s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// assert_eq!(s.response_timeout(), std::time::Duration::from_secs(30));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn response_timeout(&self) -> Duration {
        self.response_timeout
    }

    /// What to do next, at `now`.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::client::{RequestSpec, Step, Target};
    /// let mut s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// let Step::Connect { request, .. } = s.poll(ssekit::Instant::ZERO) else { panic!() };
    /// assert_eq!(request.uri(), "http://127.0.0.1:1/");
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    #[must_use]
    pub fn poll(&mut self, now: Instant) -> Step {
        if let Some(refusal) = &self.refusal {
            if !refusal.is_complete(now) {
                return Step::Wait {
                    read: true,
                    deadline: Some(refusal.until),
                };
            }
            if self.refused() {
                return Step::Close;
            }
        }
        loop {
            if self.out.is_empty() {
                self.fill(DRAIN_BATCH);
            }
            if let Some(item) = self.out.pop_front() {
                return Step::Item(item);
            }
            if let Some(e) = self.failed.take() {
                self.finish();
                return Step::End(Some(e));
            }
            if self.finished {
                return Step::End(None);
            }
            if let Some(request) = self.redirected.take() {
                return Step::Connect {
                    request,
                    attempt: self.attempt,
                };
            }
            match self.rc.poll_action() {
                Some(Action::Connect { headers, attempt }) => match self.start_attempt(headers) {
                    Ok(request) => {
                        self.attempt = attempt;
                        return Step::Connect { request, attempt };
                    }
                    Err(e) => self.failed = Some(e),
                },
                Some(Action::Close(_)) => {
                    // The items of a stream come before its `Disconnected`.
                    self.fill(usize::MAX);
                    self.connected = false;
                    self.keep_last_event_id();
                    self.out.push_back(Item::Disconnected(Ended::IdleTimeout));
                    self.schedule(now);
                    return Step::Close;
                }
                Some(Action::GiveUp(reason)) => {
                    self.finish();
                    return Step::End(self.give_up(reason));
                }
                Some(_) => {}
                None => {
                    let deadline = self.rc.poll_timeout();
                    if !self.connected && deadline.is_none() {
                        // Nothing to wait for and nothing to do: the machine is stopped.
                        self.finish();
                        return Step::End(None);
                    }
                    return Step::Wait {
                        read: self.connected,
                        deadline,
                    };
                }
            }
        }
    }

    /// The connection attempt failed before a response (refused, reset, TLS, no response
    /// within the timeout): a retry, as the policy says, except for a refused TLS
    /// certificate ([`Error::is_certificate_rejected`]), which ends the stream with that
    /// error at once.
    ///
    /// # Example
    /// ```
    /// use ssekit::Instant;
    /// use ssekit_http::client::{Ended, Item, RequestSpec, Step, Target};
    /// let mut s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// let _connect = s.poll(Instant::ZERO);
    /// s.handle_connect_error(Instant::ZERO, std::io::Error::other("refused").into());
    /// assert!(matches!(s.poll(Instant::ZERO), Step::Item(Item::Disconnected(Ended::Failed(_)))));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn handle_connect_error(&mut self, now: Instant, error: Error) {
        self.out
            .push_back(Item::Disconnected(Ended::Failed(error.clone())));
        if error.is_certificate_rejected() {
            // The same certificate would be refused again: no retry.
            self.rc.stop();
            self.failed = Some(error);
            return;
        }
        self.last_error = Some(error);
        self.rc.handle_closed(now, Disconnect::Error);
        self.schedule(now);
    }

    /// The response head arrived; `true` when its body should be read: an accepted
    /// stream's, or a refused response's. A refused response (any status but 200, 204 and a
    /// followed redirect; a 200 that is not `text/event-stream`) has its first
    /// [`Refused::BODY_LIMIT`] bytes read, for at most 2 s, so that the error says what the
    /// server said ([`Error::Refused`], or [`Item::Disconnected`]`(`[`Ended::Refused`]`)`
    /// when it is retried); its `Retry-After` lengthens the wait before the retry. The
    /// transport then gets a [`Step::Close`] if the body has not ended.
    /// A redirect (301, 302, 303, 307 or 308 with a `Location`) is followed: the next
    /// [`poll`](Self::poll) asks for the redirected request, after an [`Item::Redirected`];
    /// one whose `Location` fields name no single target ([`redirect::location`]) ends the
    /// stream with [`Error::Redirect`]. Any other answer is checked as by
    /// [`handle_response`](Self::handle_response), and its `Content-Encoding` too: a 200
    /// event stream in any coding but `identity` (the request asks for `identity`) ends the
    /// stream with [`Error::ContentEncoding`], without a retry.
    ///
    /// # Example
    /// ```
    /// use ssekit::Instant;
    /// use ssekit_http::client::{Item, RequestSpec, Step, Target};
    /// let mut s = RequestSpec::get("http://127.0.0.1:1/old", &["http"])?.into_session(Target::Absolute);
    /// let _connect = s.poll(Instant::ZERO);
    /// let mut head = http::HeaderMap::new();
    /// head.insert("location", http::HeaderValue::from_static("/new"));
    /// assert!(!s.handle_head(Instant::ZERO, 308, &head));
    /// assert!(matches!(s.poll(Instant::ZERO), Step::Item(Item::Redirected { status: 308, .. })));
    /// let Step::Connect { request, attempt: 0 } = s.poll(Instant::ZERO) else { panic!() };
    /// assert_eq!(request.uri(), "http://127.0.0.1:1/new");
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn handle_head(&mut self, now: Instant, status: u16, headers: &HeaderMap) -> bool {
        let retry_after = retry_after::retry_after(headers);
        if redirect::is_redirect(status) && self.max_redirects > 0 && headers.contains_key(LOCATION)
        {
            if let Err(e) = self.follow(status, headers) {
                self.failed = Some(e);
            }
            return false;
        }
        let content_type = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok());
        let mut codings = headers.get_all(CONTENT_ENCODING).iter().peekable();
        let content_encoding = codings.peek().is_some().then(|| {
            codings
                .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
                .collect::<Vec<_>>()
                .join(", ")
        });
        self.respond(
            now,
            status,
            Some(headers),
            content_type,
            content_encoding.as_deref(),
            retry_after,
        )
    }

    /// Prepares the request a `status` redirect with these `headers` (which hold a
    /// `Location`) asks for.
    fn follow(&mut self, status: u16, headers: &HeaderMap) -> Result<(), Error> {
        if self.redirects >= self.max_redirects {
            return Err(RedirectError::TooMany {
                max: self.max_redirects,
                from: redacted_url(&self.opened.uri.to_string()),
            }
            .into());
        }
        let hop = redirect::next_hop(
            &self.current.uri,
            &self.current.method,
            status,
            headers,
            &self.schemes,
        )?;
        // Once dropped, headers stay dropped for the rest of the attempt: a later hop that
        // stays on the new origin, or keeps the (now empty) body, does not bring them back.
        self.left_origin |= !hop.same_origin;
        if !hop.keep_body {
            self.current.body = Bytes::new();
            self.body_dropped = true;
        }
        self.redirects += 1;
        self.current.method = hop.method;
        self.current.uri = hop.to.clone();
        let request = self.request()?;
        self.out.push_back(Item::Redirected { status, to: hop.to });
        self.redirected = Some(request);
        Ok(())
    }

    /// The response head arrived, by its status and `Content-Type` (no redirects are
    /// followed: [`handle_head`](Self::handle_head) does); `true` when its body should be
    /// read: the stream's, or a refused response's (see [`handle_head`](Self::handle_head)).
    ///
    /// # Example
    /// ```
    /// use ssekit::Instant;
    /// use ssekit_http::client::{RequestSpec, Step, Target};
    /// let mut s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// let _connect = s.poll(Instant::ZERO);
    /// assert!(s.handle_response(Instant::ZERO, 404, Some("application/json")));
    /// assert!(matches!(s.poll(Instant::ZERO), Step::Wait { read: true, .. }));
    /// s.handle_data(Instant::ZERO, bytes::Bytes::from_static(br#"{"detail":"Not Found"}"#));
    /// s.handle_end(Instant::ZERO, None);
    /// let Step::End(Some(error)) = s.poll(Instant::ZERO) else { panic!() };
    /// assert_eq!(error.to_string(), r#"the server answered 404 Not Found: {"detail":"Not Found"}"#);
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn handle_response(
        &mut self,
        now: Instant,
        status: u16,
        content_type: Option<&str>,
    ) -> bool {
        self.respond(now, status, None, content_type, None, None)
    }

    /// A response head that is no redirect to follow, by its status, `Content-Type`,
    /// `Content-Encoding` and `Retry-After`; `true` when its body should be read: the
    /// stream's, or a refused response's, for its error.
    fn respond(
        &mut self,
        now: Instant,
        status: u16,
        headers: Option<&HeaderMap>,
        content_type: Option<&str>,
        content_encoding: Option<&str>,
        retry_after: Option<Duration>,
    ) -> bool {
        match self
            .rc
            .handle_response_head(now, status, content_type, content_encoding)
        {
            Ok(()) => {
                self.decoder.reset();
                self.connected = true;
                self.out.push_back(Item::Connected {
                    attempt: self.attempt,
                });
                true
            }
            Err(ResponseError::ContentEncoding) => {
                let coding = ContentCoding::new(content_encoding.unwrap_or_default());
                self.last_error = Some(Error::ContentEncoding(coding));
                false
            }
            Err(refused @ (ResponseError::Status(_) | ResponseError::ContentType)) => {
                if refused.is_retryable()
                    && let Some(wait) = retry_after
                {
                    self.rc.handle_retry_after(wait);
                }
                // Read what the server says about it, then report it (`refused`).
                self.refusal = Some(Refusal {
                    status,
                    headers: headers.cloned().unwrap_or_default(),
                    content_type: content_type.map(str::to_owned),
                    retry_after,
                    body: Vec::new(),
                    at: now,
                    until: now.saturating_add(REFUSED_BODY_TIME),
                    open: true,
                });
                true
            }
            Err(_) => false,
        }
    }

    /// A body frame arrived. A decode error ends the stream (after the items before it), or
    /// with [`OnLimit::Resync`](ssekit::decode::OnLimit::Resync) is reported as [`Item::Skipped`] while the stream goes on.
    /// Its bytes reset the idle timer and keep the stream alive for the policy's
    /// [`reset_after`](ReconnectConfig::reset_after); an empty frame does neither.
    ///
    /// # Example
    /// ```
    /// use ssekit::Instant;
    /// use ssekit_http::client::{Item, RequestSpec, Step, Target};
    /// let mut s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// let _connect = s.poll(Instant::ZERO);
    /// s.handle_response(Instant::ZERO, 200, Some("text/event-stream"));
    /// s.handle_data(Instant::ZERO, bytes::Bytes::from_static(b"retry: 70\n\n"));
    /// let _connected = s.poll(Instant::ZERO);
    /// assert!(matches!(s.poll(Instant::ZERO), Step::Item(Item::Retry(70))));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn handle_data(&mut self, now: Instant, data: Bytes) {
        // An empty frame carries no bytes: no sign of life for the idle timer.
        if data.is_empty() {
            return;
        }
        if let Some(refusal) = &mut self.refusal {
            let room = (Refused::BODY_LIMIT + 1).saturating_sub(refusal.body.len());
            refusal
                .body
                .extend_from_slice(data.get(..room).unwrap_or(&data));
            return;
        }
        self.rc.handle_bytes(now);
        // A short frame is copied (into the decoder's staging buffer, which consecutive
        // short frames share): handed over, each event read from it would share, and so
        // hold alive, the HTTP stack's whole read buffer (hyper's are 8 KiB and up), for as
        // long as the application keeps the event.
        // Its frames are decoded as `poll` hands them out.
        let fed = if data.len() < Decoder::COPY_BELOW {
            self.decoder.feed_slice(&data)
        } else {
            self.decoder.feed(data)
        };
        if let Err(e) = fed {
            self.failed = Some(e.into());
        }
    }

    /// The body ended: cleanly (`error: None`; the decoder tells a clean end from a cut one)
    /// or with a transport error. Without reconnecting, a clean end ends the stream with
    /// [`Step::End`]`(None)`, a cut one with `Step::End(Some(`[`Error::Truncated`]`))`.
    ///
    /// # Example
    /// ```
    /// use ssekit::Instant;
    /// use ssekit_http::client::{Ended, Item, RequestSpec, Step, Target};
    /// let mut s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// let _connect = s.poll(Instant::ZERO);
    /// s.handle_response(Instant::ZERO, 200, Some("text/event-stream"));
    /// let reset = std::io::Error::from(std::io::ErrorKind::ConnectionReset);
    /// s.handle_end(Instant::ZERO, Some(reset.into()));
    /// let _connected = s.poll(Instant::ZERO);
    /// assert!(matches!(s.poll(Instant::ZERO), Step::Item(Item::Disconnected(Ended::Failed(_)))));
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn handle_end(&mut self, now: Instant, error: Option<Error>) {
        if let Some(refusal) = &mut self.refusal {
            refusal.open = false;
            return;
        }
        // The items of a stream come before its `Disconnected`.
        self.fill(usize::MAX);
        self.connected = false;
        self.keep_last_event_id();
        let (how, ended) = match (error, self.decoder.finish()) {
            (Some(e), _) => {
                self.last_error = Some(e.clone());
                (Disconnect::Error, Ended::Failed(e))
            }
            (None, StreamEnd::Clean) => (Disconnect::Eof, Ended::Clean),
            (None, _) => (Disconnect::Truncated, Ended::Truncated),
        };
        self.out.push_back(Item::Disconnected(ended));
        self.rc.handle_closed(now, how);
        self.schedule(now);
    }

    /// The deadline of the last [`Step::Wait`] passed.
    ///
    /// # Example
    /// ```
    /// use ssekit::Instant;
    /// use ssekit_http::client::{RequestSpec, Target};
    /// let mut s = RequestSpec::get("http://127.0.0.1:1/", &["http"])?.into_session(Target::Absolute);
    /// s.handle_timeout(Instant::from_millis(10)); // spurious calls are harmless
    /// # Ok::<(), ssekit_http::Error>(())
    /// ```
    pub fn handle_timeout(&mut self, now: Instant) {
        self.rc.handle_timeout(now);
    }

    fn finish(&mut self) {
        self.finished = true;
        self.connected = false;
    }

    fn give_up(&mut self, reason: GiveUpReason) -> Option<Error> {
        match reason {
            GiveUpReason::NoContent
            | GiveUpReason::Ended
            | GiveUpReason::ReconnectDisabled { last: Failure::Eof } => None,
            GiveUpReason::Status(s) => Some(self.last_error.take().unwrap_or(Error::Status(s))),
            GiveUpReason::ContentType => {
                Some(self.last_error.take().unwrap_or(Error::ContentType(None)))
            }
            GiveUpReason::ReconnectDisabled {
                last: Failure::Truncated,
            } => Some(Error::Truncated),
            GiveUpReason::MaxAttempts { attempts, .. } => Some(match self.last_error.take() {
                Some(last) => Error::Exhausted {
                    attempts,
                    last: Box::new(last),
                },
                None => Error::GaveUp(reason),
            }),
            other => Some(self.last_error.take().unwrap_or(Error::GaveUp(other))),
        }
    }

    /// The body of a refused response was read (all of it, its first 4 KiB, or what came
    /// in time): the error is kept for the give-up, or, when the policy retries, reported
    /// in `Disconnected` before the wait. `true` when the transport still holds the body
    /// and should drop it.
    fn refused(&mut self) -> bool {
        let Some(refusal) = self.refusal.take() else {
            return false;
        };
        let refused = Refused::new(refusal.status, refusal.content_type, &refusal.body)
            .retry_after(refusal.retry_after)
            .headers(refusal.headers);
        if !self.rc.is_stopped() {
            // Retried: each refusal is told once, here; a give-up tells only the last.
            self.out
                .push_back(Item::Disconnected(Ended::Refused(refused.clone())));
            self.schedule(refusal.at);
        }
        self.last_error = Some(Error::Refused(refused));
        refusal.open
    }

    /// After a disconnect the policy was told of at `now`: report the wait it chose.
    fn schedule(&mut self, now: Instant) {
        if let Some(at) = self.rc.poll_timeout() {
            let after = at.saturating_duration_since(now);
            self.out.push_back(Item::Reconnecting { after });
        }
    }

    /// A new connection attempt with the policy's `headers`: it starts from the request the
    /// stream was opened with.
    fn start_attempt(
        &mut self,
        headers: Vec<ssekit::client::Header>,
    ) -> Result<Request<Bytes>, Error> {
        self.current = self.opened.clone();
        self.headers = headers;
        // The failure of an earlier attempt is not this one's.
        self.last_error = None;
        self.redirects = 0;
        self.body_dropped = false;
        self.left_origin = false;
        self.request()
    }

    /// The request of this attempt as it stands: method, URL (absolute), body,
    /// `Accept-Encoding: identity` and the policy's headers (a configured `Accept-Encoding`
    /// replaces it), then the hook; then, when a redirect of this attempt dropped the
    /// body, the headers that describe one, and when one left the opened origin, the
    /// credentials and `Host`, whoever set them (the hook included); then the target form.
    fn request(&mut self) -> Result<Request<Bytes>, Error> {
        let mut req = Request::new(self.current.body.clone());
        *req.method_mut() = self.current.method.clone();
        *req.uri_mut() = self.current.uri.clone();
        // The decoder reads the body as it comes: no compression, from the server or from a
        // proxy (RFC 9110 lets them compress when the request names no coding).
        req.headers_mut()
            .insert(ACCEPT_ENCODING, HeaderValue::from_static("identity"));
        for (name, value) in &self.headers {
            let bad = |e: Box<dyn std::error::Error + Send + Sync>| {
                RequestError::new(RequestErrorKind::Header, format!("header {name:?}"))
                    .with_source(e)
            };
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|e| bad(e.into()))?;
            let mut value = HeaderValue::from_bytes(value.as_bytes()).map_err(|e| bad(e.into()))?;
            if self.credentials().any(|c| *c == name) {
                value.set_sensitive(true);
            }
            req.headers_mut().insert(name, value);
        }
        if let Some(hook) = self.hook.as_mut() {
            hook(&mut req);
        }
        let headers = req.headers_mut();
        if self.body_dropped {
            for name in &BODY_HEADERS {
                headers.remove(name);
            }
        }
        if self.left_origin {
            for name in self.credentials() {
                headers.remove(name);
            }
            headers.remove(HOST);
        }
        if self.target == Target::Origin {
            // A `Host` set by the caller (or the hook) wins over the URL's, as it is sent.
            let host = req.headers().get(HOST).cloned();
            origin_form(&mut req)?;
            if let Some(host) = host {
                req.headers_mut().insert(HOST, host);
            }
        }
        Ok(req)
    }

    /// The headers that carry credentials: `CREDENTIAL_HEADERS` and those set with
    /// `secret_header`.
    fn credentials(&self) -> impl Iterator<Item = &HeaderName> {
        CREDENTIAL_HEADERS.iter().chain(&self.secrets)
    }

    /// The connection is over: the decoder's last event ID (set by any block, with data or
    /// not) is what the next request sends.
    fn keep_last_event_id(&mut self) {
        self.rc
            .set_last_event_id(self.decoder.last_event_id_bytes().clone());
    }

    /// [`drain`](Self::drain) unless the stream already failed; a decode error ends it
    /// (after the items before it).
    fn fill(&mut self, batch: usize) {
        if self.failed.is_none()
            && let Err(e) = self.drain(batch)
        {
            self.failed = Some(e.into());
        }
    }

    /// Frames from the decoder into the queue until it holds `batch` items or the decoder
    /// has no whole frame. Draining a few at a time leaves the rest of a body frame as
    /// bytes in the decoder (bounded by its `max_buffered`) rather than as queued items,
    /// which take about 50 times the bytes of a short comment.
    fn drain(&mut self, batch: usize) -> Result<(), DecodeError> {
        while self.out.len() < batch {
            let frame = match self.decoder.next_frame() {
                Ok(Some(frame)) => frame,
                Ok(None) => return Ok(()),
                // The decoder has dropped what went over the limit and goes on.
                Err(e) if !self.decoder.has_stopped() => {
                    self.out.push_back(Item::Skipped(e));
                    continue;
                }
                Err(e) => return Err(e),
            };
            match frame {
                Frame::Event(ev) if self.rc.handle_event(&ev) == Delivery::Deliver => {
                    self.out.push_back(Item::Event(ev));
                }
                Frame::Comment(text) => self.out.push_back(Item::Comment(text)),
                Frame::Retry(ms) => {
                    self.rc.handle_retry(ms);
                    self.out.push_back(Item::Retry(ms));
                }
                Frame::Dataless(ev) => self.out.push_back(Item::Dataless(ev)),
                _ => {}
            }
        }
        Ok(())
    }
}
