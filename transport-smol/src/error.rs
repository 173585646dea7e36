//! The umbrella error of the transport: [`Error`].

use std::fmt;

use ssekit::client::GiveUpReason;
use ssekit::{DecodeError, EncodeError};

/// A boxed error from hyper.
///
/// # Example
/// ```
/// let e: ssekit_smol::BoxError = "connection reset".into();
/// assert_eq!(ssekit_smol::Error::Http(e).to_string(), "HTTP error: connection reset");
/// ```
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Everything that can go wrong between an SSE server and client; each variant prints as
/// one line meant for people.
///
/// # Example
/// ```
/// use ssekit_smol::Error;
/// assert_eq!(Error::Status(404).to_string(), "the server answered HTTP 404");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// The byte stream broke a decoder limit.
    Decode(DecodeError),
    /// A socket error (refused, reset, ...).
    Io(std::io::Error),
    /// An HTTP-level failure from hyper (connection closed mid-message, bad URL, ...).
    Http(BoxError),
    /// The server answered with a status that ends the stream (not 200, not retried).
    Status(u16),
    /// The server answered 200 with a `Content-Type` other than `text/event-stream`.
    ContentType(Option<String>),
    /// An event could not be encoded (a CR or LF where none may be).
    Encode(EncodeError),
    /// The reconnect policy gave up.
    GaveUp(GiveUpReason),
    /// The request could not be built (a bad URL or header).
    Request(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Decode(e) => write!(f, "undecodable event stream: {e}"),
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
            Error::ContentType(Some(ct)) => {
                write!(
                    f,
                    "the response is not an event stream (Content-Type: {ct})"
                )
            }
            Error::ContentType(None) => {
                f.write_str("the response is not an event stream (no Content-Type)")
            }
            Error::Encode(e) => write!(f, "cannot encode event: {e}"),
            Error::GaveUp(r) => write!(f, "stopped reconnecting: {r}"),
            Error::Request(msg) => write!(f, "invalid request: {msg}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Decode(e) => Some(e),
            Error::Io(e) => Some(e),
            Error::Encode(e) => Some(e),
            Error::GaveUp(e) => Some(e),
            _ => None,
        }
    }
}

impl From<DecodeError> for Error {
    fn from(e: DecodeError) -> Self {
        Error::Decode(e)
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e)
    }
}

impl From<EncodeError> for Error {
    fn from(e: EncodeError) -> Self {
        Error::Encode(e)
    }
}

#[cfg(feature = "http")]
impl From<hyper::Error> for Error {
    fn from(e: hyper::Error) -> Self {
        Error::Http(Box::new(e))
    }
}
