//! What a server does with a client that reads slower than events come: [`Overflow`], and
//! the queue behind [`Overflow::Gap`], which drops the oldest events and tells the client so
//! with a [`GAP_EVENT`].
//!
//! Every policy keeps a slow client's memory bounded by its queue's capacity; which one fits
//! depends on what the stream carries:
//!
//! | policy | the publisher | the slow client | counted as |
//! |---|---|---|---|
//! | backpressure: `Sender::send(..).await` | waits for room | gets every event, late | nothing (no loss) |
//! | bounded backpressure: `Broadcast::publish_wait` | waits for room, [`WAIT_AT_MOST`](super::WAIT_AT_MOST) at most (`Broadcast::wait_at_most`) | gets every event, late; still full past the bound, cut as under `Disconnect` | `slow_consumers_total{action="cut"}` past the bound |
//! | [`Overflow::Disconnect`] (the default) | never waits | its stream ends after `retry: N`; it reconnects with `Last-Event-ID` and is replayed what it missed (through `Broadcast::resume`, past the replay buffer: a `gap` event with how many it missed first) | `slow_consumers_total{action="cut"}`, `replay_gaps_total` |
//! | [`Overflow::Gap`] | never waits | the oldest queued events are dropped; before the next one it reads, a `gap` event says how many and from which id to resume | `slow_consumers_total{action="gap"}` (per event dropped) |

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use ssekit::{Encoder, Event};

use crate::observe;

/// The event type of the event a stream under [`Overflow::Gap`] sends where it dropped
/// events. Its data is JSON: `{"missed": N, "last_event_id": "ID"}`, `last_event_id` being
/// the id of the last event the client received before the gap (`null` when it had none):
/// a client that needs every event reconnects with it as `Last-Event-ID` (or reads the
/// missed ones from its own store); the gap event itself has no `id:`, so the browser's
/// `lastEventId` stays on that last received event.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::GAP_EVENT, "gap");
/// ```
pub const GAP_EVENT: &str = "gap";

/// What a non-waiting publisher does when a client's queue is full.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use ssekit_http::server::Overflow;
/// assert_eq!(Overflow::default(), Overflow::Disconnect { retry: Duration::from_secs(1) });
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Overflow {
    /// End the client's stream after what it has queued, with `retry:` set to `retry`, so
    /// that it reconnects after that long with its `Last-Event-ID` and is replayed what it
    /// missed (as far as the replay buffer goes; beyond it, the server meets a `Gap` and
    /// chooses). The default, with `retry` 1 s.
    Disconnect {
        /// The reconnection time the ended stream asks for.
        retry: Duration,
    },
    /// Drop the oldest queued events to make room, and send a [`GAP_EVENT`] before the
    /// next event the client reads.
    Gap,
}

impl Default for Overflow {
    fn default() -> Self {
        Overflow::Disconnect {
            retry: Duration::from_secs(1),
        }
    }
}

/// The `retry:` frame a stream cut under [`Overflow::Disconnect`] ends with.
pub(crate) fn retry_frame(retry: Duration) -> Bytes {
    Bytes::from(format!("retry: {}\n\n", retry.as_millis()))
}

/// A bounded queue that drops its oldest entries when full, for [`Overflow::Gap`]: the
/// publisher's side never waits; the stream's side (see [`GapQueue::stream`]) reports each
/// run of dropped events as one [`GAP_EVENT`].
#[derive(Debug)]
pub(crate) struct GapQueue {
    state: Mutex<GapState>,
    capacity: usize,
    /// Told when the stream is dropped (see [`gone`](Self::gone)).
    left: tokio::sync::Notify,
}

#[derive(Debug, Default)]
struct GapState {
    /// Encoded events, with their ids.
    queue: VecDeque<(Option<Arc<str>>, Bytes)>,
    /// Events dropped since the client last read.
    missed: u64,
    /// The id of the last event the client read.
    delivered: Option<Arc<str>>,
    /// The stream's task, waiting for an event.
    waker: Option<Waker>,
    /// No more events will come (every publisher let go, or the broadcast forgot it).
    closed: bool,
    /// The stream was dropped: the client went away.
    gone: bool,
}

impl GapQueue {
    /// A queue of `capacity` events (at least 1) for a client that has read up to the event
    /// with id `delivered` (the id a gap before its first read event names).
    pub(crate) fn new(capacity: usize, delivered: Option<Arc<str>>) -> Arc<Self> {
        Arc::new(GapQueue {
            state: Mutex::new(GapState {
                delivered,
                ..GapState::default()
            }),
            capacity: capacity.max(1),
            left: tokio::sync::Notify::new(),
        })
    }

    /// Completes when the client has gone (the stream was dropped).
    pub(crate) async fn gone(&self) {
        let notified = self.left.notified();
        let mut notified = std::pin::pin!(notified);
        notified.as_mut().enable();
        if self.is_gone() {
            return;
        }
        notified.await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GapState> {
        crate::sync::lock(&self.state)
    }

    /// Queues an event (`id` and its encoding), dropping the oldest when full. `false` when
    /// the client has gone, so the publisher can forget it.
    pub(crate) fn push(&self, id: Option<Arc<str>>, wire: Bytes) -> bool {
        let waker = {
            let mut state = self.lock();
            if state.gone {
                return false;
            }
            if state.queue.len() >= self.capacity {
                state.queue.pop_front();
                state.missed += 1;
                observe::count_by(observe::SLOW_CONSUMERS_TOTAL, "action", "gap", 1);
            }
            state.queue.push_back((id, wire));
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
        true
    }

    /// Whether the client has gone.
    pub(crate) fn is_gone(&self) -> bool {
        self.lock().gone
    }

    /// No more events: the stream ends after what is queued.
    pub(crate) fn close(&self) {
        let waker = {
            let mut state = self.lock();
            state.closed = true;
            state.waker.take()
        };
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// The stream of the queue's events, a gap event before each event that follows
    /// dropped ones: what the client's response body reads.
    pub(crate) fn stream(self: &Arc<Self>) -> GapStream {
        GapStream {
            queue: Arc::clone(self),
        }
    }
}

/// The reading side of a [`GapQueue`]; dropping it tells the publishers the client left.
#[derive(Debug)]
pub(crate) struct GapStream {
    queue: Arc<GapQueue>,
}

impl Stream for GapStream {
    type Item = Bytes;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let mut state = self.queue.lock();
        if state.missed > 0 {
            let missed = std::mem::take(&mut state.missed);
            let frame = gap_event(Some(missed), state.delivered.as_deref());
            return Poll::Ready(Some(frame));
        }
        match state.queue.pop_front() {
            Some((id, wire)) => {
                if id.is_some() {
                    state.delivered = id;
                }
                Poll::Ready(Some(wire))
            }
            None if state.closed => Poll::Ready(None),
            None => {
                state.waker = Some(cx.waker().clone());
                Poll::Pending
            }
        }
    }
}

impl Drop for GapStream {
    fn drop(&mut self) {
        {
            let mut state = self.queue.lock();
            state.gone = true;
            state.queue.clear();
        }
        self.queue.left.notify_waiters();
    }
}

/// The encoded [`GAP_EVENT`] for `missed` events (`None`: an unknown number) after the one
/// with id `delivered`: what [`Overflow::Gap`] sends, and what a server sends a client it
/// cannot replay everything to (a `Gap` from a `Broadcast`, a `SubscribeError::Gap` from a
/// shared one) before what it serves instead, so the client knows it missed something.
///
/// # Example
/// ```
/// let frame = ssekit_http::server::gap_event(None, Some("41"));
/// assert_eq!(frame, "event: gap\ndata: {\"missed\":null,\"last_event_id\":\"41\"}\n\n");
/// ```
pub fn gap_event(missed: Option<u64>, delivered: Option<&str>) -> Bytes {
    // Written by hand so that the field order is the documented one whatever serde_json's
    // features; the id is a JSON string (escaped) or null.
    let id = serde_json::to_string(&delivered).unwrap_or_else(|_| "null".to_owned());
    let missed = missed.map_or_else(|| "null".to_owned(), |n| n.to_string());
    let data = format!("{{\"missed\":{missed},\"last_event_id\":{id}}}");
    let event = Event::builder().event(GAP_EVENT);
    // The type is a constant without line breaks and the data one JSON line: neither can
    // fail to encode; an empty frame (no event) is what a failure would leave.
    let Ok(event) = event else {
        return Bytes::new();
    };
    let event = event.data(data).build();
    let encoder = Encoder::new();
    let mut out = BytesMut::with_capacity(encoder.encoded_len(&event));
    match encoder.encode(&event, &mut out) {
        Ok(_) => out.freeze(),
        Err(_) => Bytes::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use futures_lite::StreamExt;

    fn wire(n: u32) -> (Option<Arc<str>>, Bytes) {
        (
            Some(Arc::from(n.to_string())),
            Bytes::from(format!("id: {n}\ndata: {n}\n\n")),
        )
    }

    #[test]
    fn a_full_queue_drops_its_oldest_and_the_reader_is_told_from_where_to_resume() {
        let queue = GapQueue::new(2, None);
        let mut stream = queue.stream();
        let (id, bytes) = wire(1);
        assert!(queue.push(id, bytes));
        let first = futures_lite::future::block_on(stream.next());
        assert_eq!(first.as_deref(), Some(&b"id: 1\ndata: 1\n\n"[..]));
        for n in 2..=6 {
            let (id, bytes) = wire(n);
            assert!(queue.push(id, bytes));
        }
        queue.close();
        let rest: Vec<Bytes> = futures_lite::future::block_on(stream.collect());
        let text: Vec<&str> = rest
            .iter()
            .map(|b| std::str::from_utf8(b).unwrap())
            .collect();
        // 2, 3 and 4 were dropped for 5 and 6; the client resumes after 1, which it read.
        assert_eq!(
            text,
            [
                "event: gap\ndata: {\"missed\":3,\"last_event_id\":\"1\"}\n\n",
                "id: 5\ndata: 5\n\n",
                "id: 6\ndata: 6\n\n"
            ]
        );
    }

    #[test]
    fn memory_stays_bounded_and_a_gone_reader_lets_the_publisher_forget_it() {
        let queue = GapQueue::new(3, None);
        let stream = queue.stream();
        for n in 0..10_000 {
            let (id, bytes) = wire(n);
            assert!(queue.push(id, bytes));
            assert!(queue.lock().queue.len() <= 3);
        }
        drop(stream);
        assert!(queue.is_gone());
        let (id, bytes) = wire(1);
        assert!(!queue.push(id, bytes));
        assert!(queue.lock().queue.is_empty());
    }
}
