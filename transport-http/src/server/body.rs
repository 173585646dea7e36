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

use super::unsent::Unsent;
use super::{encode_messages, Frames, Message};
use crate::keep_alive::Pinger;
use crate::observe::{self, Open};
use crate::runtime::Runtime;
use crate::Error;

type Source = Pin<Box<dyn Stream<Item = Result<Bytes, Error>> + Send>>;

/// A streaming `text/event-stream` response body on the runtime `R`. Each event is written
/// as soon as the source yields it, and no event ever waits for another: one event per frame
/// when events are few; when many are ready together they share frames of up to
/// [`FRAME_BYTES`](super::FRAME_BYTES). When the source is silent for the keep-alive
/// interval ([`DEFAULT_KEEP_ALIVE`], 15 s, unless set otherwise) a `: ping` comment is sent,
/// timed on `R`'s clock: a silent stream survives proxies that time reads out (nginx's
/// default `proxy_read_timeout` is 60 s).
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
/// # Bounded under any server
/// The frames a server has taken and not yet written count against the body: past
/// [`MAX_UNSENT`](super::MAX_UNSENT) bytes it yields nothing more until the server lets go
/// of some, so a slow reader costs that much whichever server polls the body (hyper's own
/// write buffer would take sixteen frames).
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
    watch: Watch<R>,
    unsent: Unsent,
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
        let watch = Watch::new(&runtime);
        let keep_alive = KeepAlive::new(DEFAULT_KEEP_ALIVE, runtime.now());
        SseBody {
            frames: Frames::new(source),
            pinger: Some(Pinger::new(keep_alive, runtime.clone())),
            runtime,
            watch,
            unsent: Unsent::default(),
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
        self.watch.clock(&runtime);
        self.pinger = self.pinger.map(|pinger| pinger.on_clock(runtime.clone()));
        self.runtime = runtime;
        self
    }

    /// Sends `: ping` whenever nothing was written for `interval` (core [`KeepAlive`]),
    /// instead of the default [`DEFAULT_KEEP_ALIVE`]. ORS asks for 10 s
    /// ([`KeepAlive::ORS`]); the official ORS client gives up after 30 s.
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

    /// No keep-alive comments at all: for a stream that is never silent for long, or one
    /// whose protocol sends its own pings.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let body = ssekit_http::server::SseBody::<R>::new(futures_lite::stream::empty()).without_keep_alive();
    /// # let _ = body; }
    /// ```
    #[must_use]
    pub fn without_keep_alive(mut self) -> Self {
        self.pinger = None;
        self
    }
}

/// The keep-alive interval of an [`SseBody`] unless set otherwise: below the read timeouts
/// of the proxies and balancers in front of most servers (nginx 60 s, AWS ALB 60 s idle).
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::DEFAULT_KEEP_ALIVE, std::time::Duration::from_secs(15));
/// ```
pub const DEFAULT_KEEP_ALIVE: Duration = Duration::from_secs(15);

impl<R: Runtime> Body for SseBody<R> {
    type Data = Bytes;
    type Error = Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, Error>>> {
        let this = self.get_mut();
        let runtime = &this.runtime;
        if this.unsent.poll_room(cx, || runtime.now()).is_pending() {
            return Poll::Pending;
        }
        let (frames, pinger) = (&mut this.frames, &mut this.pinger);
        let frame = this
            .runtime
            .budgeted(cx, |cx| frames.poll_frame(pinger.as_mut(), cx));
        if let Poll::Ready(polled) = &frame {
            this.watch.saw(polled, frames);
        }
        let unsent = &mut this.unsent;
        frame.map(|frame| frame.map(|bytes| bytes.map(|b| Frame::data(unsent.track(b)))))
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
/// What a stream did, for its access-log line (feature `tracing`) and its meters (feature
/// `metrics`); without either, only the zero-sized gauge guard.
#[derive(Debug)]
struct Watch<R: Runtime> {
    /// One in [`observe::STREAMS_OPEN`] while the body lives.
    _open: Open,
    /// The span current when the body was made (the request's, the ORS call's): the
    /// access-log line is written in it, wherever the body is polled and dropped.
    #[cfg(feature = "tracing")]
    span: tracing::Span,
    /// The clock the duration is read from.
    #[cfg(feature = "tracing")]
    runtime: R,
    #[cfg(any(feature = "tracing", feature = "metrics"))]
    seen: Seen,
    #[cfg(not(feature = "tracing"))]
    runtime: std::marker::PhantomData<fn() -> R>,
}

/// The counts a [`Watch`] reports.
#[cfg(any(feature = "tracing", feature = "metrics"))]
#[derive(Debug, Default)]
struct Seen {
    started: ssekit::Instant,
    items: u64,
    keep_alives: u64,
    bytes: u64,
    /// Why the body ended, once it has: `None` when it is dropped first (the client went
    /// away, or the server closed the connection).
    end: Option<&'static str>,
}

impl<R: Runtime> Watch<R> {
    fn new(runtime: &R) -> Self {
        observe::count(observe::STREAMS_TOTAL, 1);
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        let _ = runtime;
        Watch {
            _open: Open::new(observe::STREAMS_OPEN),
            #[cfg(feature = "tracing")]
            span: tracing::Span::current(),
            #[cfg(feature = "tracing")]
            runtime: runtime.clone(),
            #[cfg(not(feature = "tracing"))]
            runtime: std::marker::PhantomData,
            #[cfg(any(feature = "tracing", feature = "metrics"))]
            seen: Seen {
                started: runtime.now(),
                ..Seen::default()
            },
        }
    }

    /// Reads the duration from `runtime`'s clock from now on.
    fn clock(&mut self, runtime: &R) {
        #[cfg(feature = "tracing")]
        {
            self.runtime = runtime.clone();
        }
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        {
            self.seen.started = runtime.now();
        }
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        let _ = runtime;
    }

    /// Counts what a ready poll handed out.
    #[inline]
    fn saw(&mut self, polled: &Option<Result<Bytes, Error>>, frames: &Frames<Source, Error>) {
        #[cfg(not(any(feature = "tracing", feature = "metrics")))]
        let _ = (polled, frames);
        #[cfg(any(feature = "tracing", feature = "metrics"))]
        {
            let seen = &mut self.seen;
            let (items, keep_alives) = (frames.items(), frames.keep_alives());
            observe::count(observe::EVENTS_TOTAL, items - seen.items);
            observe::count(observe::KEEPALIVES_TOTAL, keep_alives - seen.keep_alives);
            (seen.items, seen.keep_alives) = (items, keep_alives);
            match polled {
                Some(Ok(bytes)) => {
                    let len = bytes.len() as u64;
                    observe::count(observe::BYTES_TOTAL, len);
                    seen.bytes += len;
                }
                Some(Err(_)) if seen.end.is_none() => seen.end = Some("error"),
                None if seen.end.is_none() => seen.end = Some("end"),
                _ => {}
            }
        }
    }
}

#[cfg(feature = "tracing")]
impl<R: Runtime> Drop for Watch<R> {
    fn drop(&mut self) {
        let seen = &self.seen;
        let close = seen.end.unwrap_or("client gone");
        let duration = self.runtime.now().saturating_duration_since(seen.started);
        let _in = self.span.enter();
        tracing::info!(
            target: "ssekit::access",
            duration_ms = duration.as_millis() as u64,
            events = seen.items,
            bytes = seen.bytes,
            keep_alives = seen.keep_alives,
            close,
            "stream closed"
        );
    }
}

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

/// Everything `body` has ready now, as text, and whether it has ended: what a connection
/// would write if it polled the body until it is pending (the tests of the queues behind it).
#[cfg(test)]
pub(crate) fn ready(body: &mut SseBody<crate::runtime::manual::Manual>) -> (String, bool) {
    let mut cx = Context::from_waker(std::task::Waker::noop());
    let mut text = String::new();
    loop {
        match Pin::new(&mut *body).poll_frame(&mut cx) {
            Poll::Ready(Some(Ok(frame))) => {
                let data = frame.into_data().unwrap_or_default();
                text.push_str(std::str::from_utf8(&data).unwrap());
            }
            Poll::Ready(None) => return (text, true),
            Poll::Ready(Some(Err(e))) => panic!("{e}"),
            Poll::Pending => return (text, false),
        }
    }
}

#[cfg(test)]
mod tests {
    use metrics_util::debugging::DebuggingRecorder;

    use super::*;
    use crate::observe::testing::{capture_logs, Meters};
    use crate::runtime::manual::Manual;

    /// Reads every frame of `body`, as a server would, then drops it.
    fn drain(mut body: SseBody<Manual>) -> usize {
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut bytes = 0;
        while let Poll::Ready(Some(frame)) = Pin::new(&mut body).poll_frame(&mut cx) {
            bytes += frame
                .ok()
                .and_then(|f| f.into_data().ok())
                .map_or(0, |d| d.len());
        }
        bytes
    }

    #[test]
    fn a_silent_stream_pings_every_15_s_unless_told_otherwise() {
        let runtime = Manual::default();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut body = SseBody::from_bytes_on(runtime.clone(), futures_lite::stream::pending());
        assert!(Pin::new(&mut body).poll_frame(&mut cx).is_pending());
        runtime.set(14_999);
        assert!(Pin::new(&mut body).poll_frame(&mut cx).is_pending());
        runtime.set(15_000);
        let ping = Pin::new(&mut body).poll_frame(&mut cx);
        let Poll::Ready(Some(Ok(frame))) = ping else {
            panic!("no ping at 15 s: {ping:?}")
        };
        assert_eq!(frame.into_data().unwrap(), ": ping\n");
        // A body made on one clock and moved to another pings on the second.
        let other = Manual::default();
        let mut moved =
            SseBody::<Manual>::new(futures_lite::stream::pending()).runtime(other.clone());
        other.set(15_000);
        assert!(Pin::new(&mut moved).poll_frame(&mut cx).is_ready());
        let mut quiet = SseBody::from_bytes_on(runtime.clone(), futures_lite::stream::pending())
            .without_keep_alive();
        runtime.set(1_000_000);
        assert!(Pin::new(&mut quiet).poll_frame(&mut cx).is_pending());
    }

    #[test]
    fn a_stream_counts_its_events_and_bytes_and_holds_the_open_gauge_while_alive() {
        let recorder = DebuggingRecorder::new();
        let mut meters = Meters::new(&recorder);
        metrics::with_local_recorder(&recorder, || {
            let events = [Event::message("a"), Event::message("bc")];
            let body = SseBody::<Manual>::new(futures_lite::stream::iter(events));
            assert_eq!(meters.value(observe::STREAMS_OPEN), 1.0);
            assert_eq!(meters.value(observe::STREAMS_TOTAL), 1.0);
            let bytes = drain(body);
            assert_eq!(bytes, "data: a\n\ndata: bc\n\n".len());
            assert_eq!(meters.value(observe::STREAMS_OPEN), 0.0);
            assert_eq!(meters.value(observe::EVENTS_TOTAL), 2.0);
            assert_eq!(meters.value(observe::BYTES_TOTAL), bytes as f64);
        });
    }

    #[test]
    fn a_stream_writes_one_access_line_at_its_end_in_the_span_it_was_made_in() {
        let runtime = Manual::default();
        let ((), text) = capture_logs(|| {
            let span = tracing::info_span!("request", path = "/ticks");
            let body = span.in_scope(|| {
                SseBody::from_bytes_on(
                    runtime.clone(),
                    futures_lite::stream::iter([Bytes::from_static(b"data: a\n\n")]),
                )
            });
            runtime.set(1_500);
            drain(body);
            // A body dropped before its end: the client went away.
            let cut = SseBody::from_bytes_on(runtime.clone(), futures_lite::stream::pending());
            drop(cut);
        });
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        for expected in [
            "INFO",
            "request{path=\"/ticks\"}",
            "ssekit::access",
            "stream closed",
            "duration_ms=1500",
            "events=1",
            "bytes=9",
            "close=\"end\"",
        ] {
            assert!(
                lines[0].contains(expected),
                "{expected} missing in {}",
                lines[0]
            );
        }
        assert!(lines[1].contains("close=\"client gone\""), "{}", lines[1]);
    }
}
