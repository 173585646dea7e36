//! The umbrella error of both transports: [`Error`].

use std::fmt;
use std::time::Duration;

use ssekit::chunk::ChunkError;
use ssekit::client::GiveUpReason;
use ssekit::sequence::SequenceError;
use ssekit::{DecodeError, EncodeError};

/// A boxed error from the HTTP stack (hyper, hyper-util, rustls).
///
/// # Example
/// ```
/// let e: ssekit_http::BoxError = "connection reset".into();
/// assert_eq!(ssekit_http::Error::Http(e).to_string(), "HTTP error: connection reset");
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
/// let gzip = Error::ContentEncoding("gzip".into());
/// assert_eq!(gzip.to_string(), "the response is compressed (Content-Encoding: gzip); the client reads identity only");
/// assert_eq!(Error::Truncated.to_string(), "the stream was cut inside a line or an event (the partial event was discarded)");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The byte stream broke a decoder limit.
    Decode(DecodeError),
    /// The events broke the protocol's order rules, or the stream ended before its terminal
    /// event (the ORS client).
    Sequence(SequenceError),
    /// A socket error (refused, reset, ...).
    Io(std::io::Error),
    /// An HTTP-level failure (connection closed mid-message, TLS, no response in time, ...).
    Http(BoxError),
    /// The server answered with a status that ends the stream (not 200, not retried).
    Status(u16),
    /// A redirect that is not followed: too many, `Location` fields with different values,
    /// an empty one or one that is not UTF-8, a `Location` that does not resolve to a URL
    /// with a host, a scheme the transport does not speak, or `https` to `http`
    /// ([`redirect::next_hop`](crate::redirect::next_hop) names each).
    Redirect(String),
    /// The server answered 200 with a `Content-Type` other than `text/event-stream`.
    ContentType(Option<String>),
    /// The server answered a 200 event stream with this `Content-Encoding`, not `identity`
    /// (`gzip`, `br`, ...): a compressed body, which the client does not decode (it asks for
    /// `Accept-Encoding: identity`). Not retried, as a retry would be compressed too.
    ContentEncoding(String),
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
    Json(serde_json::Error),
    /// The server sent an ORS `error` event (the tool could not run).
    Tool(String),
    /// The request could not be built (a bad URL, header or method).
    Request(String),
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
        Error::Http(e.into())
    }

    /// The failure of a connection attempt whose response head did not come within `limit`.
    ///
    /// # Example
    /// ```
    /// let e = ssekit_http::Error::no_response(std::time::Duration::from_millis(100));
    /// assert_eq!(e.to_string(), "HTTP error: no response within 0.1 s");
    /// ```
    pub fn no_response(limit: Duration) -> Self {
        Error::Http(format!("no response within {:.1} s", limit.as_secs_f64()).into())
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
            Error::Tool(msg) => write!(f, "the server reported an error: {msg}"),
            Error::Request(msg) => write!(f, "invalid request: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Decode(e) => Some(e),
            Error::Sequence(e) => Some(e),
            Error::Io(e) => Some(e),
            Error::Encode(e) => Some(e),
            Error::Chunk(e) => Some(e),
            Error::GaveUp(e) => Some(e),
            Error::Json(e) => Some(e),
            _ => None,
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
    std::io::Error => Io,
    EncodeError => Encode,
    ChunkError => Chunk,
    GiveUpReason => GaveUp,
    serde_json::Error => Json,
}

#[cfg(feature = "hyper")]
impl From<hyper::Error> for Error {
    fn from(e: hyper::Error) -> Self {
        Error::Http(Box::new(e))
    }
}

#[cfg(feature = "hyper-util")]
impl From<hyper_util::client::legacy::Error> for Error {
    fn from(e: hyper_util::client::legacy::Error) -> Self {
        Error::Http(Box::new(e))
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
