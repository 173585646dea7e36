//! The umbrella error of the transport: [`Error`].

use std::fmt;

use ssekit::chunk::ChunkError;
use ssekit::client::GiveUpReason;
use ssekit::sequence::SequenceError;
use ssekit::{DecodeError, EncodeError};

/// A boxed error from hyper, hyper-util or rustls.
///
/// # Example
/// ```
/// let e: ssekit_hyper::BoxError = "connection reset".into();
/// assert_eq!(ssekit_hyper::Error::Http(e).to_string(), "HTTP error: connection reset");
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong between an SSE server and client. Each variant prints as one
/// line meant for people.
///
/// # Example
/// ```
/// use ssekit_hyper::Error;
/// assert_eq!(Error::Status(404).to_string(), "the server answered HTTP 404");
/// let refused = Error::ContentType(Some("text/html".into()));
/// assert_eq!(refused.to_string(), "the response is not an event stream (Content-Type: text/html)");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The byte stream broke a decoder limit.
    Decode(DecodeError),
    /// The events broke the protocol's order rules, or the stream ended before its terminal event.
    Sequence(SequenceError),
    /// A socket error (refused, reset, ...).
    Io(std::io::Error),
    /// An HTTP-level failure from hyper (connection closed mid-message, TLS, bad URL, ...).
    Http(BoxError),
    /// The server answered with a status that ends the stream (not 200, not retried).
    Status(u16),
    /// The server answered 200 with a `Content-Type` other than `text/event-stream`.
    ContentType(Option<String>),
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
            Error::ContentType(Some(ct)) => write!(
                f,
                "the response is not an event stream (Content-Type: {ct})"
            ),
            Error::ContentType(None) => {
                f.write_str("the response is not an event stream (no Content-Type)")
            }
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

impl From<hyper::Error> for Error {
    fn from(e: hyper::Error) -> Self {
        Error::Http(Box::new(e))
    }
}

impl From<hyper_util::client::legacy::Error> for Error {
    fn from(e: hyper_util::client::legacy::Error) -> Self {
        Error::Http(Box::new(e))
    }
}
