//! [`SseBody`]: the streaming `text/event-stream` response body of every runtime.

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use futures_lite::StreamExt;
use http_body::{Body, Frame, SizeHint};
use ssekit::server::KeepAlive;
use ssekit::{Encoder, Event};

use super::{encode_messages, Frames, Message};
use crate::keep_alive::Pinger;
use crate::runtime::Runtime;
use crate::Error;

type Source = Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>;

/// A streaming `text/event-stream` response body on the runtime `R`. Each event is written
/// as soon as the source yields it, and no event ever waits for another: one event per frame
/// when events are few; when many are ready together they share frames of up to
/// [`FRAME_BYTES`](super::FRAME_BYTES). When the source is silent for the keep-alive
/// interval a `: ping` comment is sent, timed on `R`'s clock.
///
/// The transports name it on their runtime: `ssekit_hyper::server::SseBody` is
/// `SseBody<Tokio>`, `ssekit_smol::server::SseBody` is `SseBody<Smol>`.
///
/// # Fair under load
/// A source that is always ready (an iterator, a channel that a fast producer keeps full)
/// does not take the executor: each frame is polled within the runtime's cooperative budget
/// ([`Runtime::budgeted`], tokio's `coop`), and after [`TURN_BYTES`](super::TURN_BYTES) in
/// one turn the body wakes itself and answers `Pending` (smol has no budget; this bounds it
/// alone), so the connection's task goes behind every other stream, timer and accept. The
/// body holds at most one frame and one event besides its source's queue.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use ssekit::Event;
/// use ssekit_http::runtime::Runtime;
/// use ssekit_http::server::{response, SseBody};
///
/// fn handler<R: Runtime + Default>() -> http::Response<SseBody<R>> {
///     let events = futures_lite::stream::iter(vec![Event::message("hello"), Event::message("world")]);
///     response(SseBody::new(events).keep_alive(Duration::from_secs(15)))
/// }
/// ```
pub struct SseBody<R: Runtime> {
    frames: Frames<Source, Error>,
    pinger: Option<Pinger<R>>,
    runtime: R,
}

impl<R: Runtime> std::fmt::Debug for SseBody<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SseBody")
            .field("keep_alive", &self.pinger)
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl<R: Runtime + Default> SseBody<R> {
    /// A body that encodes each event of `events`; it ends when the stream ends. Keep-alive
    /// is off until [`keep_alive`](Self::keep_alive) is set.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let body = ssekit_http::server::SseBody::<R>::new(futures_lite::stream::empty());
    /// # let _ = body; }
    /// ```
    pub fn new<S>(events: S) -> Self
    where
        S: Stream<Item = Event> + Send + 'static,
    {
        let encoder = Encoder::new();
        Self::from_source(Box::pin(events.map(move |event| {
            let mut out = BytesMut::with_capacity(encoder.encoded_len(&event));
            encoder.encode(&event, &mut out)?;
            Ok(out.freeze())
        })))
    }

    /// A body of already encoded frames (from a [`ReplayBuffer`](ssekit::server::ReplayBuffer),
    /// a [`TaskRegistry`](ssekit::server::TaskRegistry), or an [`Encoder`] of your own). Each
    /// item must be whole SSE blocks.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let wire = futures_lite::stream::iter(vec![bytes::Bytes::from_static(b"data: x\n\n")]);
    /// let body = ssekit_http::server::SseBody::<R>::from_bytes(wire);
    /// # let _ = body; }
    /// ```
    pub fn from_bytes<S>(frames: S) -> Self
    where
        S: Stream<Item = Bytes> + Send + 'static,
    {
        Self::from_source(Box::pin(frames.map(Ok)))
    }

    /// A body of [`Message`]s: events, comments and `retry:` lines from one stream (an
    /// [`Event`] is a message too). It ends when the stream ends.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// use std::time::Duration;
    /// use ssekit_http::server::{Message, SseBody};
    /// let items = vec![Message::retry(Duration::from_secs(1)), Message::from(ssekit::Event::message("hi"))];
    /// let body = SseBody::<R>::from_messages(futures_lite::stream::iter(items));
    /// # let _ = body; }
    /// ```
    pub fn from_messages<S, M>(messages: S) -> Self
    where
        S: Stream<Item = M> + Send + 'static,
        M: Into<Message>,
    {
        Self::from_source(Box::pin(
            messages.map(|message| Ok(message.into().encode())),
        ))
    }

    /// A body of a fallible stream of [`Message`]s (or [`Event`]s): at its first `Err` the
    /// body ends cleanly, after what was sent (the client sees an end, not a broken
    /// connection, and reconnects as after any end), and the error goes to `on_error`.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// use ssekit::Event;
    /// let rows = futures_lite::stream::iter(vec![Ok(Event::message("row 1")), Err(std::io::Error::other("db gone"))]);
    /// let body = ssekit_http::server::SseBody::<R>::try_from_stream(rows, |e| eprintln!("stream ended: {e}"));
    /// # let _ = body; }
    /// ```
    pub fn try_from_stream<S, M, E, F>(messages: S, on_error: F) -> Self
    where
        S: Stream<Item = Result<M, E>> + Send + 'static,
        M: Into<Message> + 'static,
        E: 'static,
        F: FnOnce(E) + Send + 'static,
    {
        Self::from_source(Box::pin(encode_messages(messages, on_error).map(Ok)))
    }

    fn from_source(source: Source) -> Self {
        SseBody::on(R::default(), source)
    }
}

impl<R: Runtime> SseBody<R> {
    /// As [`from_bytes`](Self::from_bytes), on `runtime` (one at hand, such as a server's,
    /// rather than `R::default()`).
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime>(rt: R) {
    /// let wire = futures_lite::stream::iter(vec![bytes::Bytes::from_static(b"data: x\n\n")]);
    /// let body = ssekit_http::server::SseBody::from_bytes_on(rt, wire);
    /// # let _ = body; }
    /// ```
    pub fn from_bytes_on<S>(runtime: R, frames: S) -> Self
    where
        S: Stream<Item = Bytes> + Send + 'static,
    {
        SseBody::on(runtime, Box::pin(frames.map(Ok)))
    }

    fn on(runtime: R, source: Source) -> Self {
        SseBody {
            frames: Frames::new(source),
            pinger: None,
            runtime,
        }
    }

    /// Times the keep-alive on `runtime` (one made by other means than `R::default()`: a
    /// clock shared with the rest of a server, a simulation). Set it before
    /// [`keep_alive`](Self::keep_alive).
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>(rt: R) {
    /// let body = ssekit_http::server::SseBody::<R>::new(futures_lite::stream::empty()).runtime(rt);
    /// # let _ = body; }
    /// ```
    #[must_use]
    pub fn runtime(mut self, runtime: R) -> Self {
        self.runtime = runtime;
        self
    }

    /// Sends `: ping` whenever nothing was written for `interval` (core [`KeepAlive`]).
    /// ORS asks for 10 s ([`KeepAlive::ORS`]); the official ORS client gives up after 30 s.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// use ssekit::server::KeepAlive;
    /// let body = ssekit_http::server::SseBody::<R>::new(futures_lite::stream::empty())
    ///     .keep_alive(KeepAlive::ORS);
    /// # let _ = body; }
    /// ```
    #[must_use]
    pub fn keep_alive(self, interval: Duration) -> Self {
        let now = self.runtime.now();
        self.keep_alive_with(KeepAlive::new(interval, now))
    }

    /// Uses a configured [`KeepAlive`] (another comment text, a first ping sooner); its
    /// clock is the runtime's, whose [`ssekit::Instant::ZERO`] is when the runtime value
    /// was made.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>(rt: R) -> Result<(), ssekit::EncodeError> {
    /// use ssekit::server::KeepAlive;
    /// let ka = KeepAlive::new(KeepAlive::ORS, rt.now()).with_comment("keep-alive")?;
    /// let body = ssekit_http::server::SseBody::<R>::new(futures_lite::stream::empty())
    ///     .runtime(rt)
    ///     .keep_alive_with(ka);
    /// # let _ = body; Ok(()) }
    /// ```
    #[must_use]
    pub fn keep_alive_with(mut self, keep_alive: KeepAlive) -> Self {
        self.pinger = Some(Pinger::new(keep_alive, self.runtime.clone()));
        self
    }
}

impl<R: Runtime> Body for SseBody<R> {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        let (frames, pinger) = (&mut this.frames, &mut this.pinger);
        let frame = this
            .runtime
            .budgeted(cx, |cx| frames.poll_frame(pinger.as_mut(), cx));
        frame.map(|frame| frame.map(|bytes| bytes.map(Frame::data)))
    }

    fn is_end_stream(&self) -> bool {
        self.frames.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        SizeHint::default()
    }
}

/// With feature `axum`: an axum handler returns an [`SseBody`] as it is, with the headers
/// of [`response`](super::response) (`text/event-stream`, no caching, no proxy buffering).
///
/// # Example
/// ```
/// # #[cfg(feature = "axum")] fn doc<R: ssekit_http::runtime::Runtime + Default>() {
/// use axum_core::response::IntoResponse;
/// let events = futures_lite::stream::iter(vec![ssekit::Event::message("hi")]);
/// let resp = ssekit_http::server::SseBody::<R>::new(events).into_response();
/// assert_eq!(resp.headers()["content-type"], "text/event-stream");
/// # }
/// ```
#[cfg(feature = "axum")]
impl<R: Runtime> axum_core::response::IntoResponse for SseBody<R> {
    fn into_response(self) -> axum_core::response::Response {
        super::response(axum_core::body::Body::new(self))
    }
}

#[cfg(feature = "hyper")]
impl<R: Runtime> From<SseBody<R>> for super::AnyBody {
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// use ssekit_http::server::{response, AnyBody, SseBody};
    /// let resp: http::Response<AnyBody> = response(SseBody::<R>::new(futures_lite::stream::empty()).into());
    /// assert_eq!(resp.headers()["content-type"], "text/event-stream");
    /// # }
    /// ```
    fn from(body: SseBody<R>) -> Self {
        super::AnyBody::new(body)
    }
}
