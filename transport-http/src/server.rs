//! The IO-free server pieces: [`response`] headers, the client's [`last_event_id`], and
//! [`TrySendError`] for the transports' bounded queues.

use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};

/// Wraps a body in a `200` response with the headers that keep every hop from buffering:
/// `Content-Type: text/event-stream`, `Cache-Control: no-cache`, `X-Accel-Buffering: no`
/// (nginx). No `Content-Encoding` is set: compress an event stream and a proxy will hold it.
///
/// # Example
/// ```
/// let resp = ssekit_http::server::response("body");
/// assert_eq!(resp.status(), 200);
/// assert_eq!(resp.headers()["content-type"], "text/event-stream");
/// assert_eq!(resp.headers()["cache-control"], "no-cache");
/// assert_eq!(resp.headers()["x-accel-buffering"], "no");
/// ```
pub fn response<B>(body: B) -> http::Response<B> {
    let mut resp = http::Response::new(body);
    let headers = resp.headers_mut();
    headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
    resp
}

/// The `Last-Event-ID` a reconnecting client sent, if any (empty and non-UTF-8 values count
/// as none).
///
/// # Example
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert("last-event-id", http::HeaderValue::from_static("41"));
/// assert_eq!(ssekit_http::server::last_event_id(&headers), Some("41"));
/// headers.insert("last-event-id", http::HeaderValue::from_static(""));
/// assert_eq!(ssekit_http::server::last_event_id(&headers), None);
/// ```
pub fn last_event_id(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
}

/// Why an event was not queued for a client.
///
/// # Example
/// ```
/// use ssekit_http::server::TrySendError;
/// assert_eq!(TrySendError::Full.to_string(), "the client is not keeping up: its queue is full");
/// assert_eq!(TrySendError::Closed.to_string(), "the client went away");
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum TrySendError {
    /// The queue is full: the client is not reading fast enough.
    Full,
    /// The response body was dropped: the client went away.
    Closed,
    /// The event could not be encoded.
    Encode(ssekit::EncodeError),
}

impl std::fmt::Display for TrySendError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrySendError::Full => f.write_str("the client is not keeping up: its queue is full"),
            TrySendError::Closed => f.write_str("the client went away"),
            TrySendError::Encode(e) => write!(f, "cannot encode event: {e}"),
        }
    }
}

impl std::error::Error for TrySendError {}
