//! The client side on smol: [`EventSource`], a reconnecting SSE client for any request
//! (GET, or POST with a body sent again on every reconnect), as a `Stream` of [`Item`]s.
//!
//! ```text
//!  Reconnect::poll_action ─▶ Connect{headers} ─▶ TCP + hyper http1 on smol ─▶ handle_response(status, type)
//!          ▲                                                         │ accepted
//!          └── handle_timeout ◀── async_io::Timer(poll_timeout) ◀── wait ──▶ body frame ─▶ handle_bytes
//!                                                                    ─▶ Decoder ─▶ handle_event / handle_retry
//! ```
//! Every decision (headers, `Last-Event-ID`, backoff, `retry:`, idle timeout, 204, giving
//! up, duplicate suppression) is the core [`Reconnect`]'s.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::time::Duration;

use async_io::Timer;
use bytes::Bytes;
use futures_lite::{Stream, StreamExt};
use http::header::{HeaderName, HeaderValue, CONTENT_TYPE, HOST};
use http::{Method, Request, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use smol_hyper::rt::FuturesIo;
use ssekit::client::{
    Action, Delivery, Disconnect, Failure, GiveUpReason, Reconnect, ReconnectConfig,
};
use ssekit::{Config, Decoder, Event, Frame, StreamEnd, Utf8Bytes};

use crate::time::Clock;
use crate::Error;

/// What an [`EventSource`] reports: events, and what happened to the connection.
///
/// # Example
/// ```
/// use ssekit_smol::client::Item;
/// let item = Item::Event(ssekit::Event::message("x"));
/// assert!(matches!(item, Item::Event(ref e) if e.data() == "x"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Item {
    /// A response was accepted (`200 text/event-stream`).
    Connected {
        /// 0 for the first connection and after a healthy stream, else the retry number.
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

/// How a connection ended: clean end, truncation and transport error are different outcomes.
///
/// # Example
/// ```
/// assert_eq!(ssekit_smol::client::Ended::Truncated.to_string(), "the stream was cut inside an event");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Ended {
    /// The body ended after a complete event.
    Clean,
    /// The body ended inside a line or an event; the partial event was discarded.
    Truncated,
    /// The connection failed (refused, reset, ...), or the response was refused.
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

/// A reconnecting SSE client on smol (`http://` only). Build it, then take
/// [`stream`](Self::stream) (everything) or [`events`](Self::events) (events only).
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
pub struct EventSource {
    method: Method,
    uri: Uri,
    body: Bytes,
    config: ReconnectConfig,
    headers: Vec<(Utf8Bytes, Utf8Bytes)>,
    decoder: Config,
    hook: Option<Hook>,
    response_timeout: Duration,
}

impl fmt::Debug for EventSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventSource")
            .field("method", &self.method)
            .field("uri", &self.uri)
            .finish_non_exhaustive()
    }
}

impl EventSource {
    /// A source for `method url` with `body` (sent again, unchanged, on every reconnect).
    ///
    /// # Example
    /// ```
    /// let source = ssekit_smol::client::EventSource::new(http::Method::PUT, "http://127.0.0.1:1/x", "{}")?;
    /// # let _ = source; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn new(method: Method, url: &str, body: impl Into<Bytes>) -> Result<Self, Error> {
        let uri: Uri = url
            .parse()
            .map_err(|e| Error::Request(format!("bad URL {url:?}: {e}")))?;
        if uri.scheme_str() != Some("http") || uri.host().is_none() {
            return Err(Error::Request(format!(
                "bad URL {url:?}: expected http://host[:port]/..."
            )));
        }
        Ok(EventSource {
            method,
            uri,
            body: body.into(),
            config: ReconnectConfig::default(),
            headers: Vec::new(),
            decoder: Config::default(),
            hook: None,
            response_timeout: Duration::from_secs(30),
        })
    }

    /// `GET url`.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_smol::client::EventSource::get("not a url").is_err());
    /// ```
    pub fn get(url: &str) -> Result<Self, Error> {
        EventSource::new(Method::GET, url, Bytes::new())
    }

    /// `POST url` with `body`, replayed on every reconnect.
    ///
    /// # Example
    /// ```
    /// let source = ssekit_smol::client::EventSource::post("http://127.0.0.1:1/call", "{}")?;
    /// # let _ = source; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn post(url: &str, body: impl Into<Bytes>) -> Result<Self, Error> {
        EventSource::new(Method::POST, url, body)
    }

    /// Sets the reconnect policy; headers from [`header`](Self::header) win over the
    /// policy's own of the same name.
    ///
    /// # Example
    /// ```
    /// use ssekit::client::ReconnectConfig;
    /// let source = ssekit_smol::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .reconnect(ReconnectConfig::default().max_attempts(Some(3)));
    /// # let _ = source; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn reconnect(mut self, config: ReconnectConfig) -> Self {
        self.config = config;
        self
    }

    /// Adds a request header, sent on every connection.
    ///
    /// # Example
    /// ```
    /// let source = ssekit_smol::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .header("authorization", "Bearer t")?;
    /// # let _ = source; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn header(mut self, name: &str, value: &str) -> Result<Self, Error> {
        let (name, value) = (
            Utf8Bytes::copy_from_str(name),
            Utf8Bytes::copy_from_str(value),
        );
        // Checked by the core now, applied to the policy when the stream starts.
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
    /// let source = ssekit_smol::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .decoder(Config::default().limits(Limits::default().max_event(1 << 20)));
    /// # let _ = source; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn decoder(mut self, config: Config) -> Self {
        self.decoder = config;
        self
    }

    /// How long to wait for each response head (default 30 s); past it the attempt counts
    /// as a network failure and the policy decides on the retry.
    ///
    /// # Example
    /// ```
    /// let source = ssekit_smol::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .response_timeout(std::time::Duration::from_secs(5));
    /// # let _ = source; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn response_timeout(mut self, timeout: Duration) -> Self {
        self.response_timeout = timeout;
        self
    }

    /// Calls `hook` on every request just before it is sent (refresh a token, change the
    /// body of a resumed call).
    ///
    /// # Example
    /// ```
    /// let source = ssekit_smol::client::EventSource::get("http://127.0.0.1:1/")?
    ///     .on_connect(|req| {
    ///         req.headers_mut().insert("authorization", http::HeaderValue::from_static("Bearer fresh"));
    ///     });
    /// # let _ = source; Ok::<(), ssekit_smol::Error>(())
    /// ```
    pub fn on_connect(mut self, hook: impl FnMut(&mut Request<Bytes>) + Send + 'static) -> Self {
        self.hook = Some(Box::new(hook));
        self
    }

    /// Everything that happens, as a stream: connections, events, comments, `retry:`,
    /// disconnects and waits. It ends after a 204 (without an error) or with the error that
    /// made the policy give up. Dropping it closes the connection.
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
    pub fn stream(self) -> Pin<Box<dyn Stream<Item = Result<Item, Error>> + Send>> {
        let mut config = self.config;
        for (name, value) in self.headers {
            // Checked in `header`, so this cannot fail.
            config = match config.clone().header(name, value) {
                Ok(with) => with,
                Err(_) => config,
            };
        }
        let driver = Driver {
            rc: Reconnect::new(config),
            decoder: Decoder::with_config(self.decoder),
            clock: Clock::new(),
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
        Box::pin(futures_lite::stream::unfold(driver, |mut d| async move {
            d.next().await.map(|item| (item, d))
        }))
    }

    /// Only the events.
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
        Box::pin(self.stream().filter_map(|item| match item {
            Ok(Item::Event(ev)) => Some(Ok(ev)),
            Ok(_) => None,
            Err(e) => Some(Err(e)),
        }))
    }
}

/// A response body and the task driving its connection (dropping it closes the socket).
type Open = (Incoming, smol::Task<()>);

struct Driver {
    rc: Reconnect,
    decoder: Decoder,
    clock: Clock,
    method: Method,
    uri: Uri,
    body: Bytes,
    hook: Option<Hook>,
    response_timeout: Duration,
    response: Option<Open>,
    out: VecDeque<Item>,
    last_error: Option<Error>,
    finished: bool,
}

enum Woke {
    Frame(Option<Result<http_body::Frame<Bytes>, hyper::Error>>),
    Timer,
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

    fn request(&mut self, headers: Vec<ssekit::client::Header>) -> Result<Request<Bytes>, Error> {
        let mut req = Request::new(self.body.clone());
        *req.method_mut() = self.method.clone();
        // HTTP/1.1 origin-form: the path here, the authority in Host.
        let path = self.uri.path_and_query().map_or("/", |p| p.as_str());
        *req.uri_mut() = path
            .parse()
            .map_err(|e| Error::Request(format!("bad path {path:?}: {e}")))?;
        if let Some(authority) = self.uri.authority() {
            let host = HeaderValue::from_str(authority.as_str())
                .map_err(|e| Error::Request(format!("bad host: {e}")))?;
            req.headers_mut().insert(HOST, host);
        }
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
        Ok(req)
    }

    /// One TCP connection, one HTTP/1.1 exchange (an event stream holds its connection for
    /// its whole life, so there is no pool to share).
    async fn send(
        uri: Uri,
        req: Request<Bytes>,
    ) -> Result<(http::Response<Incoming>, smol::Task<()>), Error> {
        let host = uri.host().unwrap_or_default().trim_matches(['[', ']']);
        let port = uri.port_u16().unwrap_or(80);
        let tcp = smol::net::TcpStream::connect((host, port)).await?;
        let _ = tcp.set_nodelay(true);
        let (mut sender, conn) = hyper::client::conn::http1::handshake(FuturesIo::new(tcp)).await?;
        let task = smol::spawn(async move {
            let _ = conn.await;
        });
        let resp = sender.send_request(req.map(Full::new)).await?;
        Ok((resp, task))
    }

    async fn connect(
        &mut self,
        headers: Vec<ssekit::client::Header>,
        attempt: u32,
    ) -> Result<(), Error> {
        let req = self.request(headers)?;
        let timeout = self.response_timeout;
        let answer = futures_lite::future::or(Self::send(self.uri.clone(), req), async {
            Timer::after(timeout).await;
            Err(Error::Http(
                format!("no response within {:.1} s", timeout.as_secs_f64()).into(),
            ))
        })
        .await;
        match answer {
            Err(err) => {
                self.out
                    .push_back(Item::Disconnected(Ended::Failed(err.to_string())));
                self.last_error = Some(err);
                let now = self.clock.now();
                self.rc.handle_closed(now, Disconnect::Error);
                self.schedule(now);
            }
            Ok((resp, task)) => {
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
                        self.response = Some((resp.into_body(), task));
                        self.out.push_back(Item::Connected { attempt });
                    }
                    Err(refused) => {
                        self.last_error = Some(if status == 200 {
                            Error::ContentType(content_type)
                        } else {
                            Error::Status(status)
                        });
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
        let clock = self.clock;
        let sleep = async move {
            match deadline {
                Some(at) => {
                    Timer::at(clock.at(at)).await;
                }
                None => std::future::pending::<()>().await,
            }
            Woke::Timer
        };
        let Some((body, _)) = self.response.as_mut() else {
            if deadline.is_none() {
                // Nothing to wait for and nothing to do: the machine is stopped.
                self.finished = true;
                return Ok(());
            }
            sleep.await;
            self.rc.handle_timeout(self.clock.now());
            return Ok(());
        };
        let woke = futures_lite::future::or(async { Woke::Frame(body.frame().await) }, sleep).await;
        match woke {
            Woke::Frame(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    self.rc.handle_bytes(self.clock.now());
                    self.decoder.feed(data)?;
                    self.drain()?;
                }
            }
            Woke::Frame(Some(Err(e))) => self.closed(Disconnect::Error, Some(e.to_string())),
            Woke::Frame(None) => self.closed(Disconnect::Eof, None),
            Woke::Timer => self.rc.handle_timeout(self.clock.now()),
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
        let ended = match (error, self.decoder.finish()) {
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
