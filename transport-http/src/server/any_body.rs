//! [`AnyBody`]: one body type for every route of a server that mixes event streams and
//! ordinary answers.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use http_body::{Body, Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::BodyExt;

use crate::Error;

/// The body of any route of a server that mixes event streams and ordinary answers: a
/// transport's `SseBody` (ssekit-hyper's and ssekit-smol's convert with `.into()`), or a
/// complete body (`String`, `&'static str`, `Vec<u8>`, `Bytes`, JSON text), each `.into()`
/// this one type, so a handler returns `Response<AnyBody>` without boxing body types by
/// hand. Both transports re-export it from their `server` module.
///
/// # Example
/// ```
/// use ssekit_http::server::AnyBody;
/// fn route(path: &str) -> http::Response<AnyBody> {
///     match path {
///         "/health" => http::Response::new(r#"{"status":"ok"}"#.into()),
///         _ => http::Response::builder().status(404).body(AnyBody::from("not found")).unwrap(),
///     }
/// }
/// assert_eq!(http_body::Body::size_hint(route("/health").body()).exact(), Some(15));
/// ```
pub struct AnyBody(UnsyncBoxBody<Bytes, Error>);

impl AnyBody {
    /// Any body of `Bytes` whose errors are ssekit's [`Error`] (a transport's `SseBody`).
    ///
    /// # Example
    /// ```
    /// let body = ssekit_http::server::AnyBody::new(
    ///     http_body_util::Full::new(bytes::Bytes::from("ok")).map_err(|never| match never {}),
    /// );
    /// # use http_body_util::BodyExt;
    /// # let _ = body;
    /// ```
    pub fn new<B>(body: B) -> Self
    where
        B: Body<Data = Bytes, Error = Error> + Send + 'static,
    {
        AnyBody(body.boxed_unsync())
    }
}

impl std::fmt::Debug for AnyBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("AnyBody").finish()
    }
}

impl From<Bytes> for AnyBody {
    fn from(bytes: Bytes) -> Self {
        AnyBody::new(http_body_util::Full::new(bytes).map_err(|never| match never {}))
    }
}

impl From<String> for AnyBody {
    fn from(text: String) -> Self {
        AnyBody::from(Bytes::from(text))
    }
}

impl From<&'static str> for AnyBody {
    fn from(text: &'static str) -> Self {
        AnyBody::from(Bytes::from_static(text.as_bytes()))
    }
}

impl From<Vec<u8>> for AnyBody {
    fn from(bytes: Vec<u8>) -> Self {
        AnyBody::from(Bytes::from(bytes))
    }
}

impl Body for AnyBody {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        Pin::new(&mut self.0).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.0.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.0.size_hint()
    }
}
