//! [`Resume`]: where a client stands in a Responses stream, and the reconnect that asks for
//! the rest.

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http::{Method, Request, Uri};
use serde::Deserialize;
use ssekit::Event;

/// The response id and the last `sequence_number` a client received, shared between the
/// code reading the stream ([`observe`](Self::observe)) and the reconnect hook
/// ([`hook`](Self::hook)), which turns a reconnect of `POST {base}/responses` into
/// `GET {base}/responses/{id}?stream=true&starting_after={last}`. Before the response id is
/// known (no `response.created` read yet) a reconnect is sent as it was.
///
/// # Example
/// ```
/// use ssekit::Event;
/// use ssekit_http::responses::Resume;
///
/// let resume = Resume::new();
/// resume.observe(&Event::message(
///     r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp_1"}}"#,
/// ));
/// resume.observe(&Event::message(r#"{"type":"response.output_text.delta","sequence_number":1,"delta":"Hi"}"#));
/// let mut req = http::Request::post("https://api.example/v1/responses")
///     .header("content-type", "application/json")
///     .body(bytes::Bytes::from_static(b"{\"stream\":true}"))?;
/// (resume.hook())(&mut req);
/// assert_eq!(req.method(), http::Method::GET);
/// assert_eq!(
///     req.uri(),
///     "https://api.example/v1/responses/resp_1?stream=true&starting_after=1"
/// );
/// assert!(req.body().is_empty() && req.headers().get("content-type").is_none());
/// # Ok::<(), http::Error>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct Resume {
    cursor: Arc<Mutex<Cursor>>,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct Cursor {
    response_id: Option<String>,
    last: Option<u64>,
}

/// The fields of an event [`Resume`] reads; serde skips the others unread.
#[derive(Deserialize)]
struct Seen<'a> {
    sequence_number: Option<u64>,
    #[serde(borrow)]
    response: Option<SeenResponse<'a>>,
}

#[derive(Deserialize)]
struct SeenResponse<'a> {
    #[serde(borrow)]
    id: Option<std::borrow::Cow<'a, str>>,
}

impl Resume {
    /// Nothing received yet.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_http::responses::Resume::new().position(), None);
    /// ```
    pub fn new() -> Self {
        Resume::default()
    }

    /// Reads one received event: the first `response.id` any event carries, and its
    /// `sequence_number`. Data that is not such JSON changes nothing.
    ///
    /// # Example
    /// See [`Resume`].
    pub fn observe(&self, event: &Event) {
        let Ok(seen) = serde_json::from_str::<Seen<'_>>(event.data()) else {
            return;
        };
        let mut cursor = crate::sync::lock(&self.cursor);
        if cursor.response_id.is_none()
            && let Some(id) = seen.response.and_then(|r| r.id)
        {
            cursor.response_id = Some(id.into_owned());
        }
        if let Some(n) = seen.sequence_number {
            cursor.last = Some(cursor.last.map_or(n, |last| last.max(n)));
        }
    }

    /// The response id and the last sequence number received, once the id is known.
    ///
    /// # Example
    /// ```
    /// let resume = ssekit_http::responses::Resume::new();
    /// resume.observe(&ssekit::Event::message(r#"{"sequence_number":0,"response":{"id":"r"}}"#));
    /// assert_eq!(resume.position(), Some(("r".to_owned(), Some(0))));
    /// ```
    pub fn position(&self) -> Option<(String, Option<u64>)> {
        let cursor = crate::sync::lock(&self.cursor);
        Some((cursor.response_id.clone()?, cursor.last))
    }

    /// The request hook for [`on_connect`](crate::client::RequestSpec::on_connect) (and
    /// `EventSource::on_connect`): once the response id is known, every request becomes the
    /// resume `GET` of that response after the last sequence number received (from its
    /// start when none was). The `POST`'s body and its `content-type` and `content-length`
    /// go; other headers (credentials) stay.
    ///
    /// # Example
    /// See [`Resume`].
    pub fn hook(&self) -> impl FnMut(&mut Request<Bytes>) + Send + 'static {
        let resume = self.clone();
        move |req| resume.rewrite(req)
    }

    /// What [`hook`](Self::hook) does to `req`, for a hook of one's own that does more.
    ///
    /// # Example
    /// ```
    /// let resume = ssekit_http::responses::Resume::new();
    /// let mut req = http::Request::post("http://h/v1/responses").body(bytes::Bytes::new())?;
    /// resume.rewrite(&mut req); // no response id yet: unchanged
    /// assert_eq!(req.method(), http::Method::POST);
    /// # Ok::<(), http::Error>(())
    /// ```
    pub fn rewrite(&self, req: &mut Request<Bytes>) {
        let Some((id, last)) = self.position() else {
            return;
        };
        let Some(uri) = resume_uri(req.uri(), &id, last) else {
            return;
        };
        *req.uri_mut() = uri;
        *req.method_mut() = Method::GET;
        *req.body_mut() = Bytes::new();
        req.headers_mut().remove(http::header::CONTENT_TYPE);
        req.headers_mut().remove(http::header::CONTENT_LENGTH);
    }
}

/// `{path}/{id}?stream=true[&starting_after=N]` on the origin of `uri`, whose path is the
/// `POST` that created the response (`…/responses`, or already a resume of it).
fn resume_uri(uri: &Uri, id: &str, last: Option<u64>) -> Option<Uri> {
    // The id is the server's: it goes into the path escaped, whatever it holds.
    let escaped: String = id
        .bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                char::from(b).to_string()
            }
            other => format!("%{other:02X}"),
        })
        .collect();
    let path = uri.path().trim_end_matches('/');
    let own = format!("/{escaped}");
    let base = path.strip_suffix(own.as_str()).unwrap_or(path);
    let mut path_and_query = format!("{base}/{escaped}?stream=true");
    if let Some(last) = last {
        path_and_query.push_str(&format!("&starting_after={last}"));
    }
    let mut parts = uri.clone().into_parts();
    parts.path_and_query = Some(path_and_query.parse().ok()?);
    Uri::from_parts(parts).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn post(uri: &str) -> Request<Bytes> {
        Request::post(uri)
            .header("authorization", "Bearer k")
            .header("content-length", "2")
            .body(Bytes::from_static(b"{}"))
            .unwrap()
    }

    #[test]
    fn before_the_response_id_a_reconnect_is_sent_as_it_was() {
        let resume = Resume::new();
        resume.observe(&Event::message(r#"{"sequence_number":3}"#));
        let mut req = post("http://h/v1/responses");
        (resume.hook())(&mut req);
        assert_eq!(
            (req.method(), req.uri().path()),
            (&Method::POST, "/v1/responses")
        );
    }

    #[test]
    fn the_resume_keeps_credentials_and_the_highest_sequence_number() {
        let resume = Resume::new();
        for data in [
            r#"{"type":"response.created","sequence_number":0,"response":{"id":"resp 1/x"}}"#,
            r#"{"type":"response.in_progress","sequence_number":2,"response":{"id":"other"}}"#,
            r#"{"type":"late","sequence_number":1}"#,
            "[DONE]",
            r#"{"sequence_number":"9"}"#,
        ] {
            resume.observe(&Event::message(data));
        }
        let mut req = post("http://h:8/base/v1/responses/");
        (resume.hook())(&mut req);
        assert_eq!(
            req.uri(),
            "http://h:8/base/v1/responses/resp%201%2Fx?stream=true&starting_after=2"
        );
        assert_eq!(req.headers()["authorization"], "Bearer k");
        assert!(req.headers().get("content-length").is_none());
        // A second reconnect, from the resume's own URL, asks for the same response.
        (resume.hook())(&mut req);
        assert_eq!(req.uri().path(), "/base/v1/responses/resp%201%2Fx");
    }
}
