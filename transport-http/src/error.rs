//! The umbrella error of both transports: [`Error`].

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use ssekit::chunk::ChunkError;
use ssekit::client::GiveUpReason;
use ssekit::sequence::SequenceError;
use ssekit::{DecodeError, EncodeError};

use crate::redirect::RedirectError;

/// A boxed error from the HTTP stack (hyper, hyper-util, rustls).
///
/// # Example
/// ```
/// let e: ssekit_http::BoxError = "connection reset".into();
/// assert_eq!(ssekit_http::Error::http(e).to_string(), "HTTP error: connection reset");
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong between an SSE server and client, on either transport.
/// Each variant prints as one line meant for people.
///
/// # Example
/// ```
/// use ssekit_http::Error;
/// assert_eq!(Error::Status(404).to_string(), "the server answered HTTP 404");
/// let refused = Error::ContentType(Some("text/html".into()));
/// assert_eq!(refused.to_string(), "the response is not an event stream (Content-Type: text/html)");
/// let gzip = Error::ContentEncoding(ssekit_http::ContentCoding::new("gzip"));
/// assert_eq!(gzip.to_string(), "the response is compressed (Content-Encoding: gzip); the client reads identity only");
/// assert_eq!(Error::Truncated.to_string(), "the stream was cut inside a line or an event (the partial event was discarded)");
/// ```
///
/// Every cause is kept as a value to match on, with [`source`](std::error::Error::source)
/// returning it: the socket's [`std::io::Error`], the HTTP stack's error, a
/// [`RedirectError`], a [`ContentCoding`], a [`ToolError`], a [`RequestError`]. Errors are
/// `Clone` (the causes that are not, such as `std::io::Error`, are shared in an [`Arc`]), so
/// one can be both reported in a stream item and returned.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub enum Error {
    /// The byte stream broke a decoder limit.
    Decode(DecodeError),
    /// The events broke the protocol's order rules, or the stream ended before its terminal
    /// event (the ORS client).
    Sequence(SequenceError),
    /// A socket error (refused, reset, ...); match on its
    /// [`kind`](std::io::Error::kind).
    Io(Arc<std::io::Error>),
    /// An HTTP-level failure (connection closed mid-message, TLS, no response in time, ...):
    /// the HTTP stack's error (`hyper::Error`, ...), to downcast.
    Http(Arc<dyn std::error::Error + Send + Sync>),
    /// The server answered with a status that ends the stream (not 200, not retried), where
    /// no body was read (see [`Error::Refused`] for one that was).
    Status(u16),
    /// The server refused the request: a status other than 200, or a 200 that is not
    /// `text/event-stream`, with its `Content-Type` and the first 4 KiB of its body, which
    /// usually says why (`{"detail": "Session not found"}`, `overloaded, come back`).
    Refused(Refused),
    /// The reconnect policy gave up after `attempts` consecutive retries without progress;
    /// `last` is the failure that would have needed one more (a refused response with its
    /// body, a connection error, a cut stream).
    Exhausted {
        /// Retries made.
        attempts: u32,
        /// The last failure.
        last: Box<Error>,
    },
    /// A redirect that is not followed: too many, `Location` fields with different values,
    /// an empty one or one that is not UTF-8, a `Location` that does not resolve to a URL
    /// with a host, a scheme the transport does not speak, or `https` to `http`
    /// ([`RedirectError`] names each).
    Redirect(RedirectError),
    /// The server answered 200 with a `Content-Type` other than `text/event-stream`.
    ContentType(Option<String>),
    /// The server answered a 200 event stream with this `Content-Encoding`, not `identity`
    /// (`gzip`, `br`, ...): a compressed body, which the client does not decode (it asks for
    /// `Accept-Encoding: identity`). Not retried, as a retry would be compressed too.
    ContentEncoding(ContentCoding),
    /// Without reconnecting, the stream ended inside a line or an event: cut, and not ended
    /// cleanly (a clean end ends it without an error). The partial event was discarded.
    Truncated,
    /// An event could not be encoded (a CR or LF where none may be).
    Encode(EncodeError),
    /// A result could not be chunked into events.
    Chunk(ChunkError),
    /// The reconnect policy gave up.
    GaveUp(GiveUpReason),
    /// A JSON body or payload did not parse.
    Json(Arc<serde_json::Error>),
    /// The tool call failed: the server sent an ORS `error` event (the tool could not run),
    /// or the call ended without an answer ([`ToolError`] says which).
    Tool(ToolError),
    /// The request could not be built or sent (a bad URL, header or proxy; [`RequestError`]
    /// says which).
    Request(RequestError),
    /// The stream ended in its provider's failure event (an `error` after a `200`,
    /// `response.failed`): a valid end, but not a success. The provider's event, code and
    /// message ([`EventSource::validated`](crate::client::EventSource::validated)).
    Provider(ssekit::sequence::Failure),
}

impl Error {
    /// An HTTP-level failure from any error type of the HTTP stack.
    ///
    /// # Example
    /// ```
    /// let e = ssekit_http::Error::http(std::io::Error::other("closed"));
    /// assert_eq!(e.to_string(), "HTTP error: closed");
    /// ```
    pub fn http(e: impl Into<BoxError>) -> Self {
        Error::Http(Arc::from(e.into()))
    }

    /// Whether the server's TLS certificate was refused (an unknown issuer, expired, not
    /// valid for the name, ...; feature `rustls`): the same certificate would be refused
    /// again, so an `EventSource` gives up at once instead of reconnecting.
    ///
    /// # Example
    /// ```
    /// let refused = std::io::Error::new(
    ///     std::io::ErrorKind::InvalidData,
    ///     rustls::Error::InvalidCertificate(rustls::CertificateError::UnknownIssuer),
    /// );
    /// assert!(ssekit_http::Error::from(refused).is_certificate_rejected());
    /// assert!(!ssekit_http::Error::http(std::io::Error::other("reset")).is_certificate_rejected());
    /// ```
    pub fn is_certificate_rejected(&self) -> bool {
        #[cfg(feature = "rustls")]
        {
            let root: &(dyn std::error::Error + 'static) = match self {
                Error::Io(e) => &**e,
                Error::Http(e) => &**e,
                _ => return false,
            };
            rejects_certificate(Some(root))
        }
        #[cfg(not(feature = "rustls"))]
        {
            false
        }
    }

    /// The failure of a connection attempt whose response head did not come within `limit`.
    ///
    /// # Example
    /// ```
    /// let e = ssekit_http::Error::no_response(std::time::Duration::from_millis(100));
    /// assert_eq!(e.to_string(), "HTTP error: no response within 0.1 s");
    /// ```
    pub fn no_response(limit: Duration) -> Self {
        Error::http(NoResponse { limit })
    }

    /// The HTTP status the server answered, when this error is a refused response
    /// ([`Error::Status`], [`Error::Refused`], or the last failure of [`Error::Exhausted`]).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{Error, Refused};
    /// assert_eq!(Error::Status(404).status(), Some(404));
    /// assert_eq!(Error::Refused(Refused::new(503, None, b"busy")).status(), Some(503));
    /// assert_eq!(Error::Truncated.status(), None);
    /// ```
    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Status(status) => Some(*status),
            Error::Refused(refused) => Some(refused.status()),
            Error::Exhausted { last, .. } => last.status(),
            _ => None,
        }
    }
}

/// No response head came within `limit`: what [`Error::no_response`] carries, in
/// [`Error::Http`].
///
/// # Example
/// ```
/// use std::time::Duration;
/// use ssekit_http::{Error, NoResponse};
/// let e = Error::no_response(Duration::from_secs(2));
/// let Error::Http(cause) = &e else { panic!() };
/// let no_response = cause.downcast_ref::<NoResponse>().map(|n| n.limit);
/// assert_eq!(no_response, Some(Duration::from_secs(2)));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub struct NoResponse {
    /// How long the client waited.
    pub limit: Duration,
}

impl fmt::Display for NoResponse {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "no response within {:.1} s", self.limit.as_secs_f64())
    }
}

impl std::error::Error for NoResponse {}

/// The `Content-Encoding` of a response the client refused ([`Error::ContentEncoding`]): the
/// field's value as the server sent it (several fields joined with `, `; bytes that are not
/// UTF-8 shown as U+FFFD).
///
/// # Example
/// ```
/// use ssekit_http::ContentCoding;
/// let coding = ContentCoding::new("gzip, br");
/// assert_eq!(coding.as_str(), "gzip, br");
/// assert_eq!(coding.codings().collect::<Vec<_>>(), ["gzip", "br"]);
/// assert!(coding.contains("BR"));
/// assert_eq!(coding, "gzip, br");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ContentCoding(String);

impl ContentCoding {
    /// A `Content-Encoding` value.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_http::ContentCoding::new("gzip").to_string(), "gzip");
    /// ```
    pub fn new(value: impl Into<String>) -> Self {
        ContentCoding(value.into())
    }

    /// The value, as sent.
    ///
    /// # Example
    /// See [`ContentCoding`].
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The codings it names, in the order they were applied, without the empty ones.
    ///
    /// # Example
    /// See [`ContentCoding`].
    pub fn codings(&self) -> impl Iterator<Item = &str> {
        self.0
            .split(',')
            .map(|c| c.trim_matches([' ', '\t']))
            .filter(|c| !c.is_empty())
    }

    /// Whether it names `coding` (coding names are case-insensitive).
    ///
    /// # Example
    /// See [`ContentCoding`].
    pub fn contains(&self, coding: &str) -> bool {
        self.codings().any(|c| c.eq_ignore_ascii_case(coding))
    }
}

impl fmt::Display for ContentCoding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for ContentCoding {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for ContentCoding {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

/// Why a tool call failed ([`Error::Tool`]).
///
/// # Example
/// ```
/// use ssekit_http::{Error, ToolError};
/// let e = Error::Tool(ToolError::Reported("Session not found".into()));
/// assert_eq!(e.to_string(), "the server reported an error: Session not found");
/// assert!(matches!(&e, Error::Tool(ToolError::Reported(m)) if m == "Session not found"));
/// assert_eq!(ToolError::NoResult.to_string(), "the call ended without a result");
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ToolError {
    /// The server's `error` event: its message, as the server sent it (remote text, for
    /// people; not parsed).
    Reported(String),
    /// The call was stopped before it ended (its retry policy stopped).
    Stopped,
    /// The stream ended without a result.
    NoResult,
    /// The server's reply named no session id.
    NoSessionId,
}

impl ToolError {
    /// The server's own message, for a [`ToolError::Reported`].
    ///
    /// # Example
    /// ```
    /// use ssekit_http::ToolError;
    /// assert_eq!(ToolError::Reported("busy".into()).reported(), Some("busy"));
    /// assert_eq!(ToolError::Stopped.reported(), None);
    /// ```
    pub fn reported(&self) -> Option<&str> {
        match self {
            ToolError::Reported(message) => Some(message),
            _ => None,
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToolError::Reported(message) => f.write_str(message),
            ToolError::Stopped => f.write_str("the call was stopped"),
            ToolError::NoResult => f.write_str("the call ended without a result"),
            ToolError::NoSessionId => f.write_str("no session id in the reply"),
        }
    }
}

impl std::error::Error for ToolError {}

/// What was wrong with a request that could not be built or sent ([`RequestError::kind`]).
///
/// # Example
/// ```
/// use ssekit_http::{Error, RequestErrorKind};
/// let err = ssekit_http::client::RequestSpec::get("ftp://h/", &["http"]).unwrap_err();
/// assert!(matches!(err, Error::Request(e) if e.kind() == RequestErrorKind::Url));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RequestErrorKind {
    /// A URL that does not parse, or without a scheme the transport speaks, a host or a
    /// valid port.
    Url,
    /// A request target (path and query) that does not parse.
    Path,
    /// A header name or value that may not be sent (a control character, a name that is
    /// not a token, ...), or a value such as an API key or a token that makes none.
    Header,
    /// A proxy URL that is not `http://host[:port]`.
    ProxyUrl,
    /// The proxy's answer to `CONNECT` is not HTTP, or it closed the connection first.
    Proxy,
    /// A host name that is not a valid TLS server name.
    ServerName,
    /// A variable the request needs (a UTCP `${VAR}`) is not defined.
    Variable,
    /// An input the request needs (a UTCP URL's `{path}` parameter) was not given.
    Input,
    /// The connection closed before the request could be sent.
    NotSent,
    /// Something else the request needs is missing or wrong.
    Other,
}

/// A request that could not be built or sent ([`Error::Request`]): a
/// [`kind`](Self::kind) to match on, a message saying what (URLs in it are
/// [`redacted_url`]s), and the error that caused it, if any, as its
/// [`source`](std::error::Error::source) (`http::uri::InvalidUri`,
/// `http::header::InvalidHeaderValue`, ...).
///
/// # Example
/// ```
/// use std::error::Error as _;
/// use ssekit_http::{RequestError, RequestErrorKind};
/// let cause = "a b".parse::<http::Uri>().unwrap_err();
/// let e = RequestError::new(RequestErrorKind::Url, "bad URL \"a b\"").with_source(cause);
/// assert_eq!(e.kind(), RequestErrorKind::Url);
/// assert_eq!(e.to_string(), "bad URL \"a b\": invalid uri character");
/// assert!(e.source().is_some_and(|s| s.is::<http::uri::InvalidUri>()));
/// ```
#[derive(Clone, Debug)]
pub struct RequestError {
    kind: RequestErrorKind,
    message: String,
    source: Option<Arc<dyn std::error::Error + Send + Sync>>,
}

impl RequestError {
    /// An error of `kind` described by `message`.
    ///
    /// # Example
    /// See [`RequestError`].
    pub fn new(kind: RequestErrorKind, message: impl Into<String>) -> Self {
        RequestError {
            kind,
            message: message.into(),
            source: None,
        }
    }

    /// With the error that caused it (its message is printed after this one's).
    ///
    /// # Example
    /// See [`RequestError`].
    #[must_use]
    pub fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.source = Some(Arc::from(source.into()));
        self
    }

    /// What was wrong.
    ///
    /// # Example
    /// See [`RequestError`].
    pub fn kind(&self) -> RequestErrorKind {
        self.kind
    }

    /// What was wrong, in words (without the source's message).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{RequestError, RequestErrorKind};
    /// assert_eq!(RequestError::new(RequestErrorKind::Other, "no body").message(), "no body");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl fmt::Display for RequestError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(source) = &self.source {
            write!(f, ": {source}")?;
        }
        Ok(())
    }
}

impl std::error::Error for RequestError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.source
            .as_deref()
            .map(|e| e as &(dyn std::error::Error + 'static))
    }
}

/// A response the client refused, as [`Error::Refused`] carries it: the status, the
/// `Content-Type`, the first [`Refused::BODY_LIMIT`] bytes of the body (as UTF-8, invalid
/// sequences replaced) and a `Retry-After` when the server sent one.
///
/// It prints as one line meant for people: the status with its reason phrase, then the
/// body with its runs of white space (line breaks included) made one space.
///
/// # Example
/// ```
/// use ssekit_http::Refused;
/// let refused = Refused::new(503, Some("text/plain".into()), b"overloaded,\n  come back\n");
/// assert_eq!(refused.to_string(), "the server answered 503 Service Unavailable: overloaded, come back");
/// assert_eq!(refused.body(), "overloaded,\n  come back\n");
/// let html = Refused::new(200, Some("text/html".into()), b"<p>login</p>");
/// assert_eq!(html.to_string(), "the server answered 200 OK with Content-Type text/html, not text/event-stream: <p>login</p>");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refused {
    status: u16,
    /// Boxed: a `HeaderMap` would make every `Result<_, Error>` 96 bytes larger.
    headers: Box<http::HeaderMap>,
    content_type: Option<String>,
    body: String,
    truncated: bool,
    retry_after: Option<Duration>,
}

impl Refused {
    /// How much of a refused response's body is kept: 4 KiB.
    pub const BODY_LIMIT: usize = 4096;

    /// A refused response: `status`, its `Content-Type`, and its body, of which the first
    /// [`BODY_LIMIT`](Self::BODY_LIMIT) bytes are kept.
    ///
    /// # Example
    /// ```
    /// let refused = ssekit_http::Refused::new(404, None, &[b'x'; 5000]);
    /// assert_eq!(refused.body().len(), 4096);
    /// assert!(refused.is_truncated());
    /// ```
    pub fn new(status: u16, content_type: Option<String>, body: &[u8]) -> Self {
        let kept = body.get(..Self::BODY_LIMIT).unwrap_or(body);
        Refused {
            status,
            headers: Box::default(),
            content_type,
            body: String::from_utf8_lossy(kept).into_owned(),
            truncated: body.len() > Self::BODY_LIMIT,
            retry_after: None,
        }
    }

    /// With the wait the server asked for in `Retry-After`.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// let refused = ssekit_http::Refused::new(429, None, b"").retry_after(Some(Duration::from_secs(2)));
    /// assert_eq!(refused.retry_after_value(), Some(Duration::from_secs(2)));
    /// ```
    #[must_use]
    pub fn retry_after(mut self, wait: Option<Duration>) -> Self {
        self.retry_after = wait;
        self
    }

    /// With the response's headers (the clients keep them all).
    ///
    /// # Example
    /// ```
    /// let mut headers = http::HeaderMap::new();
    /// headers.insert("x-request-id", http::HeaderValue::from_static("r-42"));
    /// let refused = ssekit_http::Refused::new(500, None, b"").headers(headers);
    /// assert_eq!(refused.header_map()["x-request-id"], "r-42");
    /// ```
    #[must_use]
    pub fn headers(mut self, headers: http::HeaderMap) -> Self {
        self.headers = Box::new(headers);
        self
    }

    /// The response's headers (empty where the response was not kept whole, as in a
    /// [`Refused::new`] of one's own).
    ///
    /// # Example
    /// See [`headers`](Self::headers).
    pub fn header_map(&self) -> &http::HeaderMap {
        &self.headers
    }

    /// The status.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_http::Refused::new(404, None, b"").status(), 404);
    /// ```
    pub fn status(&self) -> u16 {
        self.status
    }

    /// The `Content-Type`, if the response had one.
    ///
    /// # Example
    /// ```
    /// let refused = ssekit_http::Refused::new(404, Some("application/json".into()), b"{}");
    /// assert_eq!(refused.content_type(), Some("application/json"));
    /// ```
    pub fn content_type(&self) -> Option<&str> {
        self.content_type.as_deref()
    }

    /// The body's first [`BODY_LIMIT`](Self::BODY_LIMIT) bytes, as text.
    ///
    /// # Example
    /// ```
    /// let refused = ssekit_http::Refused::new(404, None, br#"{"detail":"Session not found"}"#);
    /// assert_eq!(refused.body(), r#"{"detail":"Session not found"}"#);
    /// ```
    pub fn body(&self) -> &str {
        &self.body
    }

    /// Whether the body was longer than what was kept.
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit_http::Refused::new(404, None, b"short").is_truncated());
    /// ```
    pub fn is_truncated(&self) -> bool {
        self.truncated
    }

    /// The `Retry-After` the server sent, as a wait from the response.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_http::Refused::new(503, None, b"").retry_after_value(), None);
    /// ```
    pub fn retry_after_value(&self) -> Option<Duration> {
        self.retry_after
    }
}

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the server answered {}", self.status)?;
        if let Some(reason) = http::StatusCode::from_u16(self.status)
            .ok()
            .and_then(|status| status.canonical_reason())
        {
            write!(f, " {reason}")?;
        }
        if self.status == 200 {
            match &self.content_type {
                Some(ct) => write!(f, " with Content-Type {ct}, not text/event-stream")?,
                None => f.write_str(" without a Content-Type, not text/event-stream")?,
            }
        }
        let mut words = self.body.split_whitespace();
        if let Some(first) = words.next() {
            write!(f, ": {first}")?;
            for word in words {
                write!(f, " {word}")?;
            }
            if self.truncated {
                f.write_str(" ...")?;
            }
        }
        Ok(())
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Decode(e) => write!(f, "undecodable event stream: {e}"),
            Error::Sequence(e) => write!(f, "protocol violation: {e}"),
            Error::Io(e) => write!(f, "I/O error: {e}"),
            Error::Http(e) => {
                write!(f, "HTTP error: {e}")?;
                let mut source = e.source();
                while let Some(inner) = source {
                    write!(f, ": {inner}")?;
                    source = inner.source();
                }
                Ok(())
            }
            Error::Status(s) => write!(f, "the server answered HTTP {s}"),
            Error::Refused(refused) => refused.fmt(f),
            Error::Exhausted { attempts, last } => {
                let plural = if *attempts == 1 { "retry" } else { "retries" };
                write!(f, "stopped reconnecting after {attempts} {plural} in a row: {last}")
            }
            Error::Redirect(why) => write!(f, "redirect not followed: {why}"),
            Error::ContentType(Some(ct)) => write!(
                f,
                "the response is not an event stream (Content-Type: {ct})"
            ),
            Error::ContentType(None) => {
                f.write_str("the response is not an event stream (no Content-Type)")
            }
            Error::ContentEncoding(coding) => write!(
                f,
                "the response is compressed (Content-Encoding: {coding}); the client reads identity only"
            ),
            Error::Truncated => f.write_str(
                "the stream was cut inside a line or an event (the partial event was discarded)",
            ),
            Error::Encode(e) => write!(f, "cannot encode event: {e}"),
            Error::Chunk(e) => write!(f, "cannot chunk result: {e}"),
            Error::GaveUp(r) => write!(f, "stopped reconnecting: {r}"),
            Error::Json(e) => write!(f, "invalid JSON: {e}"),
            Error::Tool(e) => write!(f, "the server reported an error: {e}"),
            Error::Request(e) => write!(f, "invalid request: {e}"),
            Error::Provider(e) => write!(f, "the provider reported a failure: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Decode(e) => Some(e),
            Error::Sequence(e) => Some(e),
            Error::Io(e) => Some(&**e),
            Error::Http(e) => Some(&**e),
            Error::Redirect(e) => Some(e),
            Error::Encode(e) => Some(e),
            Error::Chunk(e) => Some(e),
            Error::GaveUp(e) => Some(e),
            Error::Json(e) => Some(&**e),
            Error::Tool(e) => Some(e),
            Error::Request(e) => Some(e),
            Error::Provider(e) => Some(e),
            Error::Exhausted { last, .. } => Some(last.as_ref()),
            Error::Status(_)
            | Error::Refused(_)
            | Error::ContentType(_)
            | Error::ContentEncoding(_)
            | Error::Truncated => None,
        }
    }
}

macro_rules! from {
    ($($ty:ty => $variant:ident),* $(,)?) => {$(
        impl From<$ty> for Error {
            fn from(e: $ty) -> Self {
                Error::$variant(e)
            }
        }
    )*};
}

from! {
    DecodeError => Decode,
    SequenceError => Sequence,
    EncodeError => Encode,
    ChunkError => Chunk,
    GiveUpReason => GaveUp,
    RedirectError => Redirect,
    ToolError => Tool,
    RequestError => Request,
}

/// An error that cannot happen (a body that cannot fail, such as http-body-util's `Empty`
/// or `Full`), so such a body is accepted wherever ssekit's errors are.
impl From<std::convert::Infallible> for Error {
    fn from(never: std::convert::Infallible) -> Self {
        match never {}
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(Arc::new(e))
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Json(Arc::new(e))
    }
}

#[cfg(feature = "hyper")]
impl From<hyper::Error> for Error {
    fn from(e: hyper::Error) -> Self {
        Error::Http(Arc::new(e))
    }
}

#[cfg(feature = "hyper-util")]
impl From<hyper_util::client::legacy::Error> for Error {
    /// A connect error of ssekit's own (a proxy's refusal of `CONNECT`, say) comes out as
    /// itself, not wrapped in hyper-util's error.
    fn from(e: hyper_util::client::legacy::Error) -> Self {
        use std::error::Error as _;
        if e.is_connect()
            && let Some(own @ (Error::Refused(_) | Error::Request(_))) =
                e.source().and_then(|s| s.downcast_ref::<Error>())
        {
            return own.clone();
        }
        Error::Http(Arc::new(e))
    }
}

/// A URL as error messages quote it: without user info (`user:password@`), and with
/// `?<redacted>` for a query or fragment (where API keys go), so a message can be logged.
/// It works on text as given, so it also serves a URL that does not parse.
///
/// # Example
/// ```
/// use ssekit_http::redacted_url;
/// assert_eq!(redacted_url("https://u:pw@h:8/a?key=k"), "https://h:8/a?<redacted>");
/// assert_eq!(redacted_url("http://h/a b"), "http://h/a b");
/// assert_eq!(redacted_url("pw@h/x#f"), "h/x?<redacted>");
/// ```
pub fn redacted_url(url: &str) -> String {
    let (before_query, has_query) = match url.find(['?', '#']) {
        Some(end) => (&url[..end], true),
        None => (url, false),
    };
    let authority_start = before_query
        .find("://")
        .map_or(0, |scheme_end| scheme_end + 3);
    let authority_end = before_query[authority_start..]
        .find('/')
        .map_or(before_query.len(), |slash| authority_start + slash);
    let mut shown = String::with_capacity(before_query.len() + 12);
    match before_query[authority_start..authority_end].rfind('@') {
        Some(at) => {
            shown.push_str(&before_query[..authority_start]);
            shown.push_str(&before_query[authority_start + at + 1..]);
        }
        None => shown.push_str(before_query),
    }
    if has_query {
        shown.push_str("?<redacted>");
    }
    shown
}

/// Whether `error` or one of its sources (looking inside `io::Error`s too, whose `source`
/// skips the error they wrap) is rustls refusing a certificate.
#[cfg(feature = "rustls")]
fn rejects_certificate(mut error: Option<&(dyn std::error::Error + 'static)>) -> bool {
    while let Some(e) = error {
        if let Some(tls) = e.downcast_ref::<rustls::Error>() {
            return matches!(tls, rustls::Error::InvalidCertificate(_));
        }
        let wrapped = e
            .downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref);
        if let Some(inner) = wrapped
            && rejects_certificate(Some(inner))
        {
            return true;
        }
        error = e.source();
    }
    false
}
