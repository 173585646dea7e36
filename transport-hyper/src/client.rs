//! The client side: [`EventSource`], a reconnecting SSE client for any request (GET, or POST
//! with a body that is sent again on every reconnect), as a [`Stream`] of [`Item`]s.
//!
//! The drive loop, once per item:
//! ```text
//!  Reconnect::poll_action ─▶ Connect{headers} ─▶ hyper request ─▶ handle_response(status, type)
//!          ▲                                                         │ accepted
//!          └── handle_timeout ◀── Timer(poll_timeout) ◀── wait ──▶ body frame ─▶ handle_bytes
//!                                                                    ─▶ Decoder ─▶ handle_event / handle_retry
//! ```
//! Every decision (headers, `Last-Event-ID`, backoff, `retry:`, idle timeout, 204, giving up,
//! duplicate suppression) is the core [`Reconnect`]'s.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;
use ssekit::client::{Action, Delivery, Disconnect, GiveUpReason, Reconnect, ReconnectConfig};
use ssekit::{Config, Decoder, Event, Frame, StreamEnd, Utf8Bytes};

use crate::time::Clock;
use crate::Error;

#[cfg(feature = "rustls")]
type Connector = hyper_rustls::HttpsConnector<HttpConnector>;
#[cfg(not(feature = "rustls"))]
type Connector = HttpConnector;

/// The HTTP client the transport uses: hyper-util's pooled client (HTTP/1.1; with the
/// `rustls` feature, `https://` too). Cheap to clone; share one between streams.
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
/// roots.
///
/// # Example
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> Result<(), ssekit_hyper::Error> {
/// let client = ssekit_hyper::client::http_client()?;
/// # let _ = client; Ok(()) }
/// ```
pub fn http_client() -> Result<HttpClient, Error> {
    #[cfg(feature = "rustls")]
    {
        let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
        let connector = hyper_rustls::HttpsConnectorBuilder::new()
            .with_provider_and_webpki_roots(provider)
            .map_err(|e| Error::Http(Box::new(e)))?
            .https_or_http()
            .enable_http1()
            .wrap_connector(http_connector());
        Ok(build_client(connector))
    }
    #[cfg(not(feature = "rustls"))]
    {
        Ok(build_client(http_connector()))
    }
}

/// A client whose `https://` connections use this rustls configuration (a private root,
/// a client certificate). Its ALPN list must be empty.
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
    let connector = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_or_http()
        .enable_http1()
        .wrap_connector(http_connector());
    build_client(connector)
}

fn http_connector() -> HttpConnector {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_nodelay(true);
    http.set_connect_timeout(Some(Duration::from_secs(10)));
    http
}

fn build_client(connector: Connector) -> HttpClient {
    hyper_util::client::legacy::Client::builder(TokioExecutor::new())
        .pool_timer(hyper_util::rt::TokioTimer::new())
        .build(connector)
}

/// What an [`EventSource`] reports: events, and what happened to the connection.
///
/// # Example
/// ```
/// use ssekit_hyper::client::Item;
/// let item = Item::Event(ssekit::Event::message("x"));
/// assert!(matches!(item, Item::Event(ref e) if e.data() == "x"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Item {
    /// A response was accepted (`200 text/event-stream`); `attempt` is 0 for the first
    /// connection and after a healthy stream, else the retry number.
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
}

/// How a connection ended, in [`Item::Disconnected`]: clean end, truncation and transport
/// error are different outcomes.
///
/// # Example
/// ```
/// use ssekit_hyper::client::Ended;
/// assert_eq!(Ended::Clean.to_string(), "the server ended the stream cleanly");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// The body ended after a complete event.
    Clean,
    /// The body ended inside a line or an event; the partial event was discarded.
    Truncated,
    /// The connection failed (refused, reset, TLS, ...), or the response was refused.
    Failed(String),
    /// No bytes arrived within the idle timeout; the client closed the connection.
    IdleTimeout,
}

impl fmt::Display for Ended {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Ended::Clean => f.write_str("the server ended the stream cleanly"),
            Ended::Truncated => f.write_str("the stream was cut inside an event"),
            Ended::Failed(why) => write!(f, "the connection failed: {why}"),
            Ended::IdleTimeout => f.write_str("no bytes within the idle timeout"),
        }
    }
}

type Hook = Box<dyn FnMut(&mut Request<Bytes>) + Send>;

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
pub struct EventSource {
    method: Method,
    uri: Uri,
    body: Bytes,
    config: ReconnectConfig,
    headers: Vec<(Utf8Bytes, Utf8Bytes)>,
    decoder: Config,
    client: Option<HttpClient>,
    hook: Option<Hook>,
    response_timeout: Duration,
}

impl fmt::Debug for EventSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSource")
            .field("method", &self.method)
            .field("uri", &self.uri)
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl EventSource {
    /// A source for `method url` with `body` (sent again, unchanged, on every reconnect).
    ///
    /// # Example
    /// ```
    /// let source = ssekit_hyper::client::EventSource::new(http::Method::PUT, "http://127.0.0.1:1/x", "{}")?;
    /// # let _ = source; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn new(method: Method, url: &str, body: impl Into<Bytes>) -> Result<Self, Error> {
        let uri: Uri = url
            .parse()
            .map_err(|e| Error::Request(format!("bad URL {url:?}: {e}")))?;
        match uri.scheme_str() {
            Some("http") => {}
            #[cfg(feature = "rustls")]
            Some("https") => {}
            _ => {
                return Err(Error::Request(format!(
                    "bad URL {url:?}: expected http:// or https://"
                )))
            }
        }
        Ok(EventSource {
            method,
            uri,
            body: body.into(),
            config: ReconnectConfig::default(),
            headers: Vec::new(),
            decoder: Config::default(),
            client: None,
            hook: None,
            response_timeout: Duration::from_secs(30),
        })
    }

    /// `GET url`.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_hyper::client::EventSource::get("not a url").is_err());
    /// ```
    pub fn get(url: &str) -> Result<Self, Error> {
        EventSource::new(Method::GET, url, Bytes::new())
    }

    /// `POST url` with `body`, replayed on every reconnect.
    ///
    /// # Example
    /// ```
    /// let source = ssekit_hyper::client::EventSource::post("http://127.0.0.1:1/call", "{}")?;
    /// # let _ = source; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn post(url: &str, body: impl Into<Bytes>) -> Result<Self, Error> {
        EventSource::new(Method::POST, url, body)
    }

    /// Sets the reconnect policy. Headers added with [`header`](Self::header) are kept, in
    /// either order, and win over headers of the same name in `config`.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::ReconnectConfig;
    /// let source = ssekit_hyper::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .reconnect(ReconnectConfig::default().max_attempts(Some(3)));
    /// # let _ = source; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn reconnect(mut self, config: ReconnectConfig) -> Self {
        self.config = config;
        self
    }

    /// Adds a request header, sent on every connection.
    ///
    /// # Example
    /// ```
    /// let source = ssekit_hyper::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .header("authorization", "Bearer t")?;
    /// # let _ = source; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let (name, value) = (
            Utf8Bytes::copy_from_str(name),
            Utf8Bytes::copy_from_str(value),
        );
        // Validated now (the core refuses non-token names and CR/LF/NUL in values), applied
        // to the policy when the stream starts.
        let _checked = ReconnectConfig::default()
            .header(name.clone(), value.clone())
            .map_err(|e| Error::Request(format!("header {name:?}: {e}")))?;
        self.headers.push((name, value));
        Ok(self)
    }

    /// Sets the decoder's limits and mode.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Config, Limits};
    /// let source = ssekit_hyper::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .decoder(Config::default().limits(Limits::default().max_event(1 << 20)));
    /// # let _ = source; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn decoder(mut self, config: Config) -> Self {
        self.decoder = config;
        self
    }

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

    /// How long to wait for the response head of each connection attempt (default 30 s).
    /// A server that accepts the connection and never answers counts as a network failure,
    /// and the policy decides on the retry.
    ///
    /// # Example
    /// ```
    /// let source = ssekit_hyper::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .response_timeout(std::time::Duration::from_secs(5));
    /// # let _ = source; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Calls `hook` on every request just before it is sent: refresh a token, or change the
    /// body of a resumed call (ORS puts the `task_id` there).
    ///
    /// # Example
    /// ```
    /// let source = ssekit_hyper::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .on_connect(|req| {
    ///         req.headers_mut().insert("authorization", http::HeaderValue::from_static("Bearer fresh"));
    ///     });
    /// # let _ = source; Ok::<(), ssekit_hyper::Error>(())
    /// ```
    pub fn on_connect(mut self, hook: impl FnMut(&mut Request<Bytes>) + Send + 'static) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// Everything that happens, as a stream: connections, events, comments, `retry:`,
    /// disconnects and waits. It ends after a 204 (without an error), or with the error that
    /// made the policy give up. Dropping it closes the connection.
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
    pub fn stream(self) -> Pin<Box<dyn Stream<Item = Result<Item, Error>> + Send>> {
        let mut config = self.config;
        for (name, value) in self.headers {
            // Checked in `header`, so this cannot fail; a refused header is left out.
            config = match config.clone().header(name, value) {
                Ok(with) => with,
                Err(_) => config,
            };
        }
        let driver = Driver {
            rc: Reconnect::new(config),
            decoder: Decoder::with_config(self.decoder),
            clock: Clock::tokio(),
            client: self.client,
            method: self.method,
            uri: self.uri,
            body: self.body,
            hook: self.hook,
            response_timeout: self.response_timeout,
            response: None,
            out: VecDeque::new(),
            last_error: None,
            finished: false,
        };
        Box::pin(futures_util::stream::unfold(driver, |mut d| async move {
            d.next().await.map(|item| (item, d))
        }))
    }

    /// Only the events.
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
        Box::pin(self.stream().filter_map(|item| async move {
            match item {
                Ok(Item::Event(ev)) => Some(Ok(ev)),
                Ok(_) => None,
                Err(e) => Some(Err(e)),
            }
        }))
    }
}

struct Driver {
    rc: Reconnect,
    decoder: Decoder,
    clock: Clock,
    client: Option<HttpClient>,
    method: Method,
    uri: Uri,
    body: Bytes,
    hook: Option<Hook>,
    response_timeout: Duration,
    response: Option<Incoming>,
    out: VecDeque<Item>,
    last_error: Option<Error>,
    finished: bool,
}

impl Driver {
    async fn next(&mut self) -> Option<Result<Item, Error>> {
        loop {
            if let Some(item) = self.out.pop_front() {
                return Some(Ok(item));
            }
            if self.finished {
                return None;
            }
            if let Some(action) = self.rc.poll_action() {
                match action {
                    Action::Connect { headers, attempt } => {
                        if let Err(e) = self.connect(headers, attempt).await {
                            self.finished = true;
                            return Some(Err(e));
                        }
                    }
                    Action::Close(_) => {
                        self.response = None;
                        self.out.push_back(Item::Disconnected(Ended::IdleTimeout));
                        self.schedule(self.clock.now());
                    }
                    Action::GiveUp(reason) => {
                        self.finished = true;
                        self.response = None;
                        return self.give_up(reason).map(Err);
                    }
                    _ => {}
                }
                continue;
            }
            if let Err(e) = self.wait().await {
                self.finished = true;
                self.response = None;
                return Some(Err(e));
            }
        }
    }

    fn give_up(&mut self, reason: GiveUpReason) -> Option<Error> {
        use ssekit::client::Failure;
        match reason {
            GiveUpReason::NoContent | GiveUpReason::ReconnectDisabled { last: Failure::Eof } => {
                None
            }
            GiveUpReason::Status(s) => Some(Error::Status(s)),
            GiveUpReason::ContentType => {
                Some(self.last_error.take().unwrap_or(Error::ContentType(None)))
            }
            GiveUpReason::MaxAttempts {
                last: Failure::Network,
                ..
            }
            | GiveUpReason::ReconnectDisabled {
                last: Failure::Network,
            } => Some(self.last_error.take().unwrap_or(Error::GaveUp(reason))),
            other => Some(Error::GaveUp(other)),
        }
    }

    /// After a disconnect the policy was told of at `now`: report the wait it chose.
    fn schedule(&mut self, now: ssekit::Instant) {
        if let Some(at) = self.rc.poll_timeout() {
            let after = at.saturating_duration_since(now);
            self.out.push_back(Item::Reconnecting { after });
        }
    }

    async fn connect(
        &mut self,
        headers: Vec<ssekit::client::Header>,
        attempt: u32,
    ) -> Result<(), Error> {
        let client = match &self.client {
            Some(c) => c.clone(),
            None => {
                let c = http_client()?;
                self.client = Some(c.clone());
                c
            }
        };
        let mut req = Request::new(self.body.clone());
        *req.method_mut() = self.method.clone();
        *req.uri_mut() = self.uri.clone();
        for (name, value) in &headers {
            let name = HeaderName::from_bytes(name.as_bytes())
                .map_err(|e| Error::Request(format!("header {name:?}: {e}")))?;
            let value = HeaderValue::from_bytes(value.as_bytes())
                .map_err(|e| Error::Request(format!("header {name:?}: {e}")))?;
            req.headers_mut().insert(name, value);
        }
        if let Some(hook) = self.hook.as_mut() {
            hook(&mut req);
        }
        let req = req.map(Full::new);
        let answer = match tokio::time::timeout(self.response_timeout, client.request(req)).await {
            Ok(result) => result.map_err(Error::from),
            Err(_) => Err(Error::Http(
                format!(
                    "no response within {:.1} s",
                    self.response_timeout.as_secs_f64()
                )
                .into(),
            )),
        };
        match answer {
            Err(err) => {
                self.out
                    .push_back(Item::Disconnected(Ended::Failed(err.to_string())));
                self.last_error = Some(err);
                let now = self.clock.now();
                self.rc.handle_closed(now, Disconnect::Error);
                self.schedule(now);
            }
            Ok(resp) => {
                let status = resp.status().as_u16();
                let content_type = resp
                    .headers()
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                let now = self.clock.now();
                match self
                    .rc
                    .handle_response(now, status, content_type.as_deref())
                {
                    Ok(()) => {
                        self.decoder.reset();
                        self.response = Some(resp.into_body());
                        self.out.push_back(Item::Connected { attempt });
                    }
                    Err(refused) => {
                        if status == 200 {
                            self.last_error = Some(Error::ContentType(content_type));
                        } else {
                            self.last_error = Some(Error::Status(status));
                        }
                        if refused.is_retryable() {
                            self.out.push_back(Item::Disconnected(Ended::Failed(format!(
                                "HTTP {status}"
                            ))));
                            self.schedule(now);
                        }
                    }
                }
            }
        }
        Ok(())
    }

    /// Waits for the body or the policy's deadline, whichever comes first.
    async fn wait(&mut self) -> Result<(), Error> {
        let deadline = self.rc.poll_timeout();
        let sleep = async {
            match deadline {
                Some(at) => self.clock.sleep_until(at).await,
                None => std::future::pending().await,
            }
        };
        let Some(body) = self.response.as_mut() else {
            if deadline.is_none() {
                // Nothing to wait for and nothing to do: the machine is stopped.
                self.finished = true;
                return Ok(());
            }
            sleep.await;
            self.rc.handle_timeout(self.clock.now());
            return Ok(());
        };
        tokio::select! {
            frame = body.frame() => match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.rc.handle_bytes(self.clock.now());
                        self.decoder.feed(data)?;
                        self.drain()?;
                    }
                }
                Some(Err(e)) => self.closed(Disconnect::Error, Some(e.to_string())),
                None => self.closed(Disconnect::Eof, None),
            },
            () = sleep => self.rc.handle_timeout(self.clock.now()),
        }
        Ok(())
    }

    fn drain(&mut self) -> Result<(), Error> {
        while let Some(frame) = self.decoder.next_frame()? {
            match frame {
                Frame::Event(ev) if self.rc.handle_event(&ev) == Delivery::Deliver => {
                    self.out.push_back(Item::Event(ev));
                }
                Frame::Comment(text) => self.out.push_back(Item::Comment(text)),
                Frame::Retry(ms) => {
                    self.rc.handle_retry(ms);
                    self.out.push_back(Item::Retry(ms));
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn closed(&mut self, how: Disconnect, error: Option<String>) {
        self.response = None;
        self.rc
            .set_last_event_id(self.decoder.last_event_id_bytes().clone());
        let end = self.decoder.finish();
        let ended = match (error, end) {
            (Some(e), _) => Ended::Failed(e),
            (None, StreamEnd::Clean) => Ended::Clean,
            (None, _) => Ended::Truncated,
        };
        self.out.push_back(Item::Disconnected(ended));
        let now = self.clock.now();
        self.rc.handle_closed(now, how);
        self.schedule(now);
    }
}
