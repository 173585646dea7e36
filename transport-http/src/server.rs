//! The server side, written once for every [`Runtime`]:
//! [`SseBody`], a streaming response body with keep-alive comments; [`channel`], a bounded
//! per-stream queue; [`Broadcast`], one live stream for many clients with `Last-Event-ID`
//! replay; [`serve`] / [`serve_until`] / [`serve_with`], the accept loop (HTTP/1.1 and HTTP/2, TLS with ALPN, graceful
//! shutdown); [`response`] for the headers and [`last_event_id`] for a reconnecting
//! client's id. The transports name these on their runtime (`ssekit_hyper::server::SseBody`
//! is `SseBody<Tokio>`) and re-export the rest.
//!
//! ```text
//!  app ──Sender / Broadcast──▶ bounded queue ──▶ SseBody::poll_frame ──▶ hyper ──▶ socket
//!                                                   ▲       │ ready events, frames ≤ FRAME_BYTES,
//!                                        KeepAlive ─┘       │ yield after TURN_BYTES a turn
//!                                                           └ ": ping" after `interval` of silence
//! ```
//!
//! # Slow and vanished clients
//! Nothing grows without bound. hyper polls the body only when its write buffer has room
//! ([`serve_with`] caps it at [`WRITE_BUFFER`]; hyper's own default is 400 KiB), plus the
//! kernel's socket buffer, so a client that stops reading stops the body being polled: a
//! slow reader costs that buffer, one frame and its queue. Behind it, a [`channel`] queue
//! holds at most `capacity` events; then [`Sender::send`] waits (backpressure onto the
//! producer) and [`Sender::try_send`] answers [`TrySendError::Full`] at once, so a
//! broadcaster can drop that one subscriber instead of waiting on it (the client reconnects
//! with `Last-Event-ID` and is served from a [`ReplayBuffer`](ssekit::server::ReplayBuffer),
//! or learns of the gap). When the client goes away hyper drops the body, and every later
//! send answers [`TrySendError::Closed`]; keep-alive pings make a dead peer visible within
//! one interval even when the application has nothing to send.

use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};

use crate::keep_alive::Pinger;
use crate::runtime::Runtime;

mod message;
pub use message::{encode_messages, Message};
#[cfg(feature = "hyper")]
mod any_body;
#[cfg(feature = "hyper")]
pub use any_body::AnyBody;
mod body;
pub use body::{SseBody, DEFAULT_KEEP_ALIVE};
#[cfg(feature = "server")]
mod broadcast;
#[cfg(feature = "server")]
mod channel;
#[cfg(feature = "server")]
pub use broadcast::{Broadcast, WAIT_AT_MOST};
#[cfg(feature = "server")]
mod overflow;
mod unsent;
#[cfg(feature = "server")]
pub use channel::{channel, channel_with, Sender};
#[cfg(feature = "server")]
pub use overflow::{gap_event, Overflow, GAP_EVENT};
#[cfg(feature = "hyper-server")]
mod serve;
#[cfg(feature = "hyper-server")]
mod serve_options;
#[cfg(feature = "hyper-server")]
pub use serve::{
    full, serve, serve_on, serve_until, serve_with, Accept, HttpService, ResponseBody,
};
#[cfg(feature = "hyper-server")]
pub use serve_options::{
    ServeOptions, IDLE_TIMEOUT, MAX_REQUEST_HEAD, REQUEST_HEAD_TIMEOUT, TLS_HANDSHAKE_TIMEOUT,
};

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
/// as none). Ids are UTF-8 (the encoder accepts any id without CR, LF or NUL, and a browser
/// sends the id it last saw), so a non-ASCII id is returned too, not only the visible ASCII
/// that [`http::HeaderValue::to_str`] accepts.
///
/// # Example
/// ```
/// let mut headers = http::HeaderMap::new();
/// headers.insert("last-event-id", http::HeaderValue::from_static("41"));
/// assert_eq!(ssekit_http::server::last_event_id(&headers), Some("41"));
/// headers.insert("last-event-id", http::HeaderValue::from_bytes("é1".as_bytes()).unwrap());
/// assert_eq!(ssekit_http::server::last_event_id(&headers), Some("é1"));
/// headers.insert("last-event-id", http::HeaderValue::from_static(""));
/// assert_eq!(ssekit_http::server::last_event_id(&headers), None);
/// ```
pub fn last_event_id(headers: &http::HeaderMap) -> Option<&str> {
    headers
        .get("last-event-id")
        .and_then(|v| core::str::from_utf8(v.as_bytes()).ok())
        .filter(|v| !v.is_empty())
}

/// The most events a per-client queue holds (a [`channel`]'s capacity, a [`Broadcast`]'s
/// `per_client`): larger values are lowered to it. Far above what a client that keeps up
/// needs, it keeps a configured "no limit" (`usize::MAX`) from panicking in tokio's `mpsc`
/// underneath, whose bound is a semaphore with a largest permit count.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::MAX_QUEUED, 1 << 20);
/// ```
pub const MAX_QUEUED: usize = 1 << 20;

/// The capacity of a per-client queue asked for with `requested`: at least 1, at most
/// [`MAX_QUEUED`].
///
/// # Example
/// ```
/// use ssekit_http::server::{queue_capacity, MAX_QUEUED};
/// assert_eq!((queue_capacity(0), queue_capacity(8)), (1, 8));
/// assert_eq!(queue_capacity(usize::MAX), MAX_QUEUED);
/// ```
pub fn queue_capacity(requested: usize) -> usize {
    requested.clamp(1, MAX_QUEUED)
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

/// The IO-free half of a broadcast: one live stream for many subscribers, each event
/// encoded once into a core [`ReplayBuffer`](ssekit::server::ReplayBuffer) and offered to
/// every subscriber's queue; a subscriber resuming with `Last-Event-ID` first gets what it
/// missed. The queue type `S` is the transport's (a bounded channel's sender); the
/// transport wraps a `Hub` in a mutex and makes the response bodies.
///
/// # Example
/// ```
/// use std::sync::mpsc::{sync_channel, SyncSender};
/// use ssekit::{server::ReplayBuffer, Event};
/// use ssekit_http::server::Hub;
///
/// let mut hub: Hub<SyncSender<bytes::Bytes>> = Hub::new(ReplayBuffer::default());
/// let offer = |tx: &SyncSender<bytes::Bytes>, wire| tx.try_send(wire).is_ok();
/// hub.publish(&Event::builder().id("1")?.data("first").build(), offer)?;
/// hub.publish(&Event::builder().id("2")?.data("second").build(), offer)?;
/// // A client that saw "1" reconnects: it is served "2" from the replay buffer, then lives.
/// let (tx, rx) = sync_channel(8);
/// let missed = hub.subscribe(Some("1"), tx, |_| false)?; // a std channel cannot tell
/// assert_eq!(missed, [bytes::Bytes::from_static(b"id: 2\ndata: second\n\n")]);
/// assert_eq!(hub.publish(&Event::builder().id("3")?.data("third").build(), offer)?, 1);
/// assert_eq!(rx.try_recv()?, bytes::Bytes::from_static(b"id: 3\ndata: third\n\n"));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct Hub<S> {
    replay: ssekit::server::ReplayBuffer,
    subscribers: Vec<S>,
    /// How many subscribers there were after the last sweep of those gone (see
    /// [`subscribe`](Self::subscribe)).
    swept: usize,
}

impl<S> Hub<S> {
    /// A hub that keeps recent events in `replay`.
    ///
    /// # Example
    /// ```
    /// let hub: ssekit_http::server::Hub<()> = ssekit_http::server::Hub::new(Default::default());
    /// assert_eq!(hub.subscribers(), 0);
    /// ```
    pub fn new(replay: ssekit::server::ReplayBuffer) -> Self {
        Hub {
            replay,
            subscribers: Vec::new(),
            swept: 0,
        }
    }

    /// Encodes `event` once, keeps it for replay, and `offer`s it to every subscriber;
    /// a subscriber whose offer fails (its queue is full, or it is gone) is dropped.
    /// Returns how many subscribers took it.
    ///
    /// # Example
    /// ```
    /// let mut hub: ssekit_http::server::Hub<()> = ssekit_http::server::Hub::new(Default::default());
    /// assert_eq!(hub.publish(&ssekit::Event::message("nobody listens"), |_, _| true)?, 0);
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn publish(
        &mut self,
        event: &ssekit::Event,
        mut offer: impl FnMut(&S, bytes::Bytes) -> bool,
    ) -> Result<usize, ssekit::EncodeError> {
        let wire = self.replay.push(event)?;
        self.subscribers.retain(|s| offer(s, wire.clone()));
        self.swept = self.subscribers.len();
        Ok(self.subscribers.len())
    }

    /// Registers `subscriber` and returns the encoded events after `last_event_id` (none
    /// for `None`), read under the same borrow, so no event falls between the replay and
    /// the live ones. `Err(Gap)` (and no registration) when they can no longer all be
    /// replayed.
    ///
    /// Subscribers whose client left (`gone`, such as a closed channel) are let go here
    /// too, whenever their number has doubled since the last sweep: a hub that gets clients
    /// but no events does not keep every one that ever came (amortized O(1) per call).
    ///
    /// # Example
    /// ```
    /// use ssekit::server::Gap;
    /// let mut hub = ssekit_http::server::Hub::new(Default::default());
    /// assert!(matches!(hub.subscribe(Some("never-sent"), (), |_| false), Err(Gap::Unknown)));
    /// assert_eq!(hub.subscribe(None, (), |_| false).map(|m| m.len()), Ok(0));
    /// assert_eq!(hub.subscribers(), 1);
    /// // Clients that come and go with no event published are not all kept.
    /// let mut hub = ssekit_http::server::Hub::new(Default::default());
    /// for _ in 0..1000 {
    ///     let _ = hub.subscribe(None, false, |open| !open);
    /// }
    /// assert!(hub.subscribers() <= 32);
    /// ```
    pub fn subscribe(
        &mut self,
        last_event_id: Option<&str>,
        subscriber: S,
        gone: impl FnMut(&S) -> bool,
    ) -> Result<Vec<bytes::Bytes>, ssekit::server::Gap> {
        let missed = match last_event_id {
            Some(id) => self.replay.since(id)?.collect(),
            None => Vec::new(),
        };
        if self.subscribers.len() >= 2 * self.swept.max(16) {
            self.sweep(gone);
        }
        self.subscribers.push(subscriber);
        Ok(missed)
    }

    /// Lets go of the subscribers whose client left.
    fn sweep(&mut self, mut gone: impl FnMut(&S) -> bool) {
        self.subscribers.retain(|s| !gone(s));
        self.swept = self.subscribers.len();
    }

    /// Forgets every subscriber (their streams end after what is queued).
    ///
    /// # Example
    /// ```
    /// let mut hub = ssekit_http::server::Hub::new(Default::default());
    /// let _ = hub.subscribe(None, (), |_| false);
    /// hub.disconnect_all();
    /// assert_eq!(hub.subscribers(), 0);
    /// ```
    pub fn disconnect_all(&mut self) {
        self.subscribers.clear();
        self.swept = 0;
    }

    /// Subscribers (including ones that left since the last publish).
    ///
    /// # Example
    /// ```
    /// let hub: ssekit_http::server::Hub<()> = ssekit_http::server::Hub::new(Default::default());
    /// assert_eq!(hub.subscribers(), 0);
    /// ```
    pub fn subscribers(&self) -> usize {
        self.subscribers.len()
    }
}

/// The most bytes of events that are ready together one response body frame carries (an
/// event larger than this is a frame of its own). Small enough that a body holds little
/// while its frame waits for the socket, large enough that a burst of small events is one
/// write, not one per event.
///
/// Chosen with the `load` example of `ssekit-benches` (24-byte events, loopback, 2 cores,
/// `--quick`, ssekit-hyper): the 64 KiB frames of before and hyper's 400 KiB write buffer
/// held 402 MiB for 1 000 slow readers (axum: 29 MiB); 16 KiB frames with a 16 KiB
/// [`WRITE_BUFFER`] 56 MiB, with an 8 KiB one 38 MiB; 8 KiB frames 37 MiB but half the
/// events/s of 16 KiB ones (8.5 M against 11-17 M for 64 always-ready streams; axum 1.3 M).
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::FRAME_BYTES, 16 << 10);
/// ```
pub const FRAME_BYTES: usize = 16 << 10;

/// The most bytes a response body hands its connection in one turn, that is between two
/// `Pending`s. Past it the body wakes itself and answers `Pending`, so the connection's task
/// yields to the executor even when the source never returns `Pending` itself: every other
/// stream, timer and accept runs before this one writes again. A turn is four full frames,
/// some tens of microseconds of copying on loopback, so 64 always-ready streams delay a new
/// connection or a timer by about 64 turns; before, a connection's task kept its thread until
/// the socket was full (tokio's budget counts a write, whatever its size) or, on smol, for
/// ever: new connections waited 3.4 s on tokio and timed out on smol.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::TURN_BYTES, 64 << 10);
/// ```
pub const TURN_BYTES: usize = 64 << 10;

/// The most bytes an [`SseBody`] has ready beyond what its socket took, under any server:
/// the frames it handed out that the server still holds (in a write buffer, not yet
/// written). The body yields another frame only while it fits, and a frame's drop (once
/// written, or copied by the server) makes room again. A stream starts with one frame
/// ([`FRAME_BYTES`]) of room and earns this much once its reader has taken 5 MiB (more
/// than the kernel's buffers hold for a reader that does not read) without a wait of a
/// second for room (on the body's runtime clock); such a wait makes it cautious again. So a
/// slow reader costs one frame, not hyper's default write buffer of sixteen frames (256 KiB),
/// whether the body is mounted in axum, in tower, in a hand-written hyper server or under
/// [`serve`]. The bound holds from the first frame the server lets go of on: a consumer
/// that keeps every frame to the end (`BodyExt::collect`) is never made to wait on itself.
/// One event larger than a frame goes out whole, above it.
///
/// A server must let go of each frame once it has written it, as hyper (HTTP/1.1 and
/// HTTP/2), axum and tower's layers do; one that held written frames until more came
/// would wait on a body that waits on it. A server that copies each frame into a buffer of
/// its own (hyper over an IO without vectored writes) bounds the stream by that buffer.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::MAX_UNSENT, 64 << 10);
/// ```
pub const MAX_UNSENT: usize = 64 << 10;

/// The write buffer of each HTTP/1.1 connection `serve` serves
/// (`ServeOptions::write_buffer`): a body is not polled while this much of it waits for
/// the socket, so a slow reader holds less than this plus one [`FRAME_BYTES`] frame,
/// whatever the producer's pace. (HTTP/2 bounds each stream's send buffer by it.)
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::WRITE_BUFFER, 8 << 10);
/// ```
pub const WRITE_BUFFER: usize = 8 << 10;

/// The loop of a response body, the same on every runtime: the source's ready items go out
/// in frames of at most [`FRAME_BYTES`] (one event per frame when events are few, batched
/// when many), at most [`TURN_BYTES`] a turn before the body yields, and a keep-alive
/// comment when the source has been silent (the transport's [`Pinger`]). The body never
/// holds more than one frame and one event besides what its source queues. Each item counts
/// as 16 bytes at least, so a source of empty or tiny items is bounded too (1,024 a frame).
///
/// # Example
/// ```
/// use std::task::{Context, Poll, Waker};
/// use bytes::Bytes;
/// use ssekit_http::keep_alive::Pinger;
/// use ssekit_http::server::{Frames, FRAME_BYTES, TURN_BYTES};
/// # #[derive(Clone)] struct NoClock;
/// # impl ssekit_http::runtime::Runtime for NoClock {
/// #     type Sleep = std::future::Pending<()>;
/// #     fn now(&self) -> ssekit::Instant { ssekit::Instant::ZERO }
/// #     fn sleep_until(&self, _: ssekit::Instant) -> Self::Sleep { std::future::pending() }
/// #     fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(&self, _: F) {}
/// # }
///
/// // A source that is always ready (64-byte events): the body still yields after a turn's
/// // bytes, in frames of FRAME_BYTES.
/// let event = Bytes::from(format!("data: {}\n\n", "x".repeat(56)));
/// let mut frames = Frames::new(futures_lite::stream::repeat(Ok::<_, ()>(event)));
/// let mut cx = Context::from_waker(Waker::noop());
/// let mut turn = Vec::new();
/// while let Poll::Ready(Some(Ok(frame))) = frames.poll_frame(None::<&mut Pinger<NoClock>>, &mut cx) {
///     turn.push(frame.len());
/// }
/// assert_eq!(turn, [FRAME_BYTES; 4]);
/// assert_eq!(turn.iter().sum::<usize>(), TURN_BYTES);
/// // The next poll starts a new turn.
/// assert!(frames.poll_frame(None::<&mut Pinger<NoClock>>, &mut cx).is_ready());
/// ```
pub struct Frames<S, E> {
    source: S,
    /// An item that did not fit in the last frame; it starts the next.
    held: Option<Bytes>,
    /// Bytes handed out since the last `Pending`.
    spent: usize,
    /// An error met while batching, reported on the next poll.
    failed: Option<E>,
    done: bool,
    /// Source items and keep-alive comments handed out so far.
    items: u64,
    keep_alives: u64,
}

impl<S, E> std::fmt::Debug for Frames<S, E> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Frames")
            .field("spent", &self.spent)
            .field("done", &self.done)
            .finish_non_exhaustive()
    }
}

impl<S, E> Frames<S, E>
where
    S: Stream<Item = Result<Bytes, E>> + Unpin,
{
    /// Frames of the whole SSE blocks that `source` yields.
    ///
    /// # Example
    /// See [`Frames`].
    pub fn new(source: S) -> Self {
        Frames {
            source,
            held: None,
            spent: 0,
            failed: None,
            done: false,
            items: 0,
            keep_alives: 0,
        }
    }

    /// How many items of the source (events, comments, `retry:`) the frames so far carried.
    ///
    /// # Example
    /// ```
    /// # use std::task::{Context, Waker};
    /// use ssekit_http::server::Frames;
    /// let item = || Ok::<_, ()>(bytes::Bytes::from_static(b"data: a\n\n"));
    /// let items = futures_lite::stream::iter([item(), item(), item()]);
    /// let mut frames = Frames::new(items);
    /// let mut cx = Context::from_waker(Waker::noop());
    /// # #[derive(Clone)] struct NoClock;
    /// # impl ssekit_http::runtime::Runtime for NoClock {
    /// #     type Sleep = std::future::Pending<()>;
    /// #     fn now(&self) -> ssekit::Instant { ssekit::Instant::ZERO }
    /// #     fn sleep_until(&self, _: ssekit::Instant) -> Self::Sleep { std::future::pending() }
    /// #     fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(&self, _: F) {}
    /// # }
    /// let _ = frames.poll_frame(None::<&mut ssekit_http::keep_alive::Pinger<NoClock>>, &mut cx);
    /// assert_eq!((frames.items(), frames.keep_alives()), (3, 0));
    /// ```
    pub fn items(&self) -> u64 {
        self.items
    }

    /// How many keep-alive comments the frames so far carried.
    ///
    /// # Example
    /// See [`items`](Self::items).
    pub fn keep_alives(&self) -> u64 {
        self.keep_alives
    }

    /// Whether the body has ended (it answers `Ready(None)` from now on).
    ///
    /// # Example
    /// ```
    /// let frames = ssekit_http::server::Frames::new(futures_lite::stream::empty::<Result<bytes::Bytes, ()>>());
    /// assert!(!frames.is_end_stream());
    /// ```
    pub fn is_end_stream(&self) -> bool {
        self.done && self.failed.is_none() && self.held.is_none()
    }

    /// The next frame: `Ready(Some(Ok(bytes)))` with the ready events (or a keep-alive
    /// comment), `Ready(Some(Err(_)))` once when the source fails, `Ready(None)` at the end,
    /// `Pending` when nothing is ready or the turn's bytes are spent (then the task is woken
    /// again at once, behind the others).
    ///
    /// # Example
    /// See [`Frames`].
    pub fn poll_frame<R: Runtime>(
        &mut self,
        pinger: Option<&mut Pinger<R>>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, E>>> {
        if let Some(e) = self.failed.take() {
            self.done = true;
            self.held = None;
            return Poll::Ready(Some(Err(e)));
        }
        if self.done && self.held.is_none() {
            return Poll::Ready(None);
        }
        if self.spent >= TURN_BYTES {
            self.spent = 0;
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        let first = match self.held.take() {
            Some(first) => first,
            None => match Pin::new(&mut self.source).poll_next(cx) {
                Poll::Ready(Some(Ok(first))) => first,
                Poll::Ready(Some(Err(e))) => {
                    self.done = true;
                    return Poll::Ready(Some(Err(e)));
                }
                Poll::Ready(None) => {
                    self.done = true;
                    return Poll::Ready(None);
                }
                Poll::Pending => {
                    self.spent = 0;
                    return match pinger {
                        Some(pinger) => pinger.poll_ping(cx).map(|ping| {
                            self.keep_alives += 1;
                            Some(Ok(ping))
                        }),
                        None => Poll::Pending,
                    };
                }
            },
        };
        if let Some(pinger) = pinger {
            pinger.wrote();
        }
        self.items += 1;
        let (frame, work) = self.batch(first, cx);
        self.spent += work;
        Poll::Ready(Some(Ok(frame)))
    }

    /// Appends to `first` the items the source has ready now, up to [`FRAME_BYTES`]; the
    /// first `Pending` ends the frame, and nothing waits. Returns the frame and its cost
    /// (see [`cost`]).
    fn batch(&mut self, first: Bytes, cx: &mut Context<'_>) -> (Bytes, usize) {
        let mut work = cost(&first);
        let mut batch: Option<BytesMut> = None;
        while !self.done && work < FRAME_BYTES {
            let len = batch.as_ref().map_or(first.len(), BytesMut::len);
            match Pin::new(&mut self.source).poll_next(cx) {
                Poll::Ready(Some(Ok(more))) => {
                    if len + more.len() > FRAME_BYTES {
                        self.held = Some(more);
                        break;
                    }
                    work += cost(&more);
                    self.items += 1;
                    let buf = batch.get_or_insert_with(|| {
                        // Room for a few more of the same size; when more than that are
                        // ready, the source is busy and the frame grows to its cap at once,
                        // so a frame costs at most two allocations and never holds more
                        // than FRAME_BYTES (doubling would overshoot it by half).
                        let room = (4 * (first.len() + more.len())).min(FRAME_BYTES);
                        let mut buf = BytesMut::with_capacity(room);
                        buf.extend_from_slice(&first);
                        buf
                    });
                    if buf.capacity() - buf.len() < more.len() {
                        let mut grown = BytesMut::with_capacity(FRAME_BYTES);
                        grown.extend_from_slice(buf);
                        *buf = grown;
                    }
                    buf.extend_from_slice(&more);
                }
                Poll::Ready(Some(Err(e))) => {
                    self.failed = Some(e);
                    break;
                }
                Poll::Ready(None) => self.done = true,
                Poll::Pending => break,
            }
        }
        (batch.map_or(first, BytesMut::freeze), work)
    }
}

/// What an item costs the frame's and the turn's budgets: its bytes, and at least 16, so
/// that a source of empty (or tiny) items is bounded too: at most 1,024 items a frame.
fn cost(item: &Bytes) -> usize {
    item.len().max(16)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::task::Waker;

    use crate::runtime::manual::Manual;

    /// Polls until the body first answers `Pending`; returns the frames and bytes before.
    fn one_turn<S: Stream<Item = Result<Bytes, ()>> + Unpin>(
        frames: &mut Frames<S, ()>,
    ) -> (usize, usize) {
        let mut cx = Context::from_waker(Waker::noop());
        let (mut count, mut bytes) = (0, 0);
        while let Poll::Ready(Some(Ok(frame))) =
            frames.poll_frame(None::<&mut Pinger<Manual>>, &mut cx)
        {
            count += 1;
            bytes += frame.len();
            assert!(count <= 1_000, "the turn never ends");
        }
        (count, bytes)
    }

    #[test]
    fn a_source_of_empty_items_still_yields() {
        let mut frames = Frames::new(futures_lite::stream::repeat(Ok(Bytes::new())));
        let (count, bytes) = one_turn(&mut frames);
        assert_eq!((count, bytes), (TURN_BYTES / FRAME_BYTES, 0));
    }

    #[test]
    fn frames_stay_within_their_cap_and_an_item_that_does_not_fit_starts_the_next() {
        // 1,000-byte items: 16 fit a 16 KiB frame, the 17th waits for the next.
        let item = Bytes::from(vec![b'x'; 1000]);
        let mut frames = Frames::new(futures_lite::stream::repeat(Ok::<_, ()>(item)));
        let mut cx = Context::from_waker(Waker::noop());
        for _ in 0..3 {
            let Poll::Ready(Some(Ok(frame))) =
                frames.poll_frame(None::<&mut Pinger<Manual>>, &mut cx)
            else {
                panic!("a frame")
            };
            assert_eq!(frame.len(), 16_000);
        }
        // A large item is a frame of its own; the turn ends after TURN_BYTES.
        let big = Bytes::from(vec![b'y'; 3 * FRAME_BYTES]);
        let mut frames = Frames::new(futures_lite::stream::repeat(Ok(big)));
        let (count, bytes) = one_turn(&mut frames);
        assert_eq!((count, bytes), (2, 6 * FRAME_BYTES));
    }

    #[test]
    fn a_few_ready_events_go_out_at_once_and_the_end_follows() {
        let items = ["a", "b", "c"].map(|s| Ok::<_, ()>(Bytes::from_static(s.as_bytes())));
        let mut frames = Frames::new(futures_lite::stream::iter(items));
        let mut cx = Context::from_waker(Waker::noop());
        let first = frames.poll_frame(None::<&mut Pinger<Manual>>, &mut cx);
        assert!(matches!(first, Poll::Ready(Some(Ok(ref f))) if f == "abc"));
        assert!(frames.is_end_stream());
        assert!(matches!(
            frames.poll_frame(None::<&mut Pinger<Manual>>, &mut cx),
            Poll::Ready(None)
        ));
    }
}
