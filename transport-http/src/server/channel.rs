//! [`channel`]: a bounded per-stream queue, the [`Sender`] half for the application, the
//! [`SseBody`] half for the response.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::task::Poll;

use bytes::{Bytes, BytesMut};
use ssekit::{Encoder, Event};
use tokio::sync::mpsc;

use super::overflow::{retry_frame, GapQueue};
use super::{queue_capacity, Overflow, SseBody, TrySendError};
use crate::observe::{self, log};
use crate::runtime::Runtime;

/// A bounded per-stream queue: the [`Sender`] half for the application, the [`SseBody`]
/// half for the response. `capacity` events at most wait in the queue (at least 1, at most
/// [`MAX_QUEUED`](super::MAX_QUEUED)); its memory grows with the events in it, not with
/// `capacity`. The queue is tokio's `mpsc` (its `sync` module needs no tokio runtime), on
/// every runtime.
///
/// # Example
/// ```
/// # async fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit_http::server::TrySendError> {
/// use ssekit::Event;
/// let (tx, body) = ssekit_http::server::channel::<R>(16);
/// tx.send(&Event::message("first")).await?;
/// let resp = ssekit_http::server::response(body); // return this from the handler
/// # let _ = resp; Ok(()) }
/// ```
pub fn channel<R: Runtime + Default>(capacity: usize) -> (Sender, SseBody<R>) {
    let (tx, mut rx) = mpsc::channel::<Bytes>(queue_capacity(capacity));
    let queued = futures_lite::stream::poll_fn(move |cx| rx.poll_recv(cx));
    let sender = Sender {
        lane: Lane::Queue { tx, cut: None },
        encoder: Encoder::new(),
    };
    (sender, SseBody::from_bytes(queued))
}

/// [`channel`], with what [`Sender::try_send`] does when the queue is full chosen by
/// `overflow` instead of left to the caller:
/// - [`Overflow::Disconnect`]: the stream ends at once (what is queued is dropped) with the
///   `retry:` hint, the client reconnects with its `Last-Event-ID`; `try_send` answers
///   [`TrySendError::Full`] that once, then [`TrySendError::Closed`] when the body is gone.
///   [`Sender::send`] still waits for room (backpressure).
/// - [`Overflow::Gap`]: the oldest queued events are dropped to make room and the client
///   reads a [`GAP_EVENT`](super::GAP_EVENT) before the next one; neither `send` nor
///   `try_send` ever waits or reports `Full`.
///
/// # Example
/// ```
/// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
/// use ssekit_http::server::{channel_with, Overflow};
/// let (tx, body) = channel_with::<R>(1, Overflow::Gap);
/// for n in 0..100 {
///     assert!(tx.try_send(&ssekit::Event::message(n.to_string())).is_ok()); // never full
/// }
/// # let _ = body; }
/// ```
pub fn channel_with<R: Runtime + Default>(
    capacity: usize,
    overflow: Overflow,
) -> (Sender, SseBody<R>) {
    let capacity = queue_capacity(capacity);
    let encoder = Encoder::new();
    match overflow {
        Overflow::Disconnect { retry } => {
            let (tx, mut rx) = mpsc::channel::<Bytes>(capacity);
            let cut = Arc::new(AtomicBool::new(false));
            let flag = Arc::clone(&cut);
            let mut ended = false;
            let queued = futures_lite::stream::poll_fn(move |cx| {
                if ended {
                    return Poll::Ready(None);
                }
                if flag.load(Ordering::Acquire) {
                    // Cut: end now with the hint; dropping the stream frees the queue.
                    ended = true;
                    rx.close();
                    return Poll::Ready(Some(retry_frame(retry)));
                }
                rx.poll_recv(cx)
            });
            let sender = Sender {
                lane: Lane::Queue { tx, cut: Some(cut) },
                encoder,
            };
            (sender, SseBody::from_bytes(queued))
        }
        Overflow::Gap => {
            let queue = GapQueue::new(capacity, None);
            let stream = queue.stream();
            let sender = Sender {
                lane: Lane::Gap(Arc::new(Producers(queue))),
                encoder,
            };
            (sender, SseBody::from_bytes(stream))
        }
    }
}

/// The application's half of [`channel`]. Cloning it gives another producer on the same
/// stream; the stream ends when every clone is dropped.
///
/// # Example
/// ```
/// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
/// use ssekit_http::server::{channel, TrySendError};
/// let (tx, body) = channel::<R>(1);
/// assert!(tx.try_send(&ssekit::Event::message("a")).is_ok());
/// assert!(matches!(tx.try_send(&ssekit::Event::message("b")), Err(TrySendError::Full)));
/// drop(body); // the client went away
/// assert!(matches!(tx.try_send(&ssekit::Event::message("c")), Err(TrySendError::Closed)));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Sender {
    lane: Lane,
    encoder: Encoder,
}

/// Where a [`Sender`] puts events.
#[derive(Clone, Debug)]
enum Lane {
    /// tokio's bounded queue; `cut` is set when [`Overflow::Disconnect`] cuts the stream.
    Queue {
        tx: mpsc::Sender<Bytes>,
        cut: Option<Arc<AtomicBool>>,
    },
    /// [`Overflow::Gap`]'s queue, closed when the last producer is dropped.
    Gap(Arc<Producers>),
}

/// The producers' hold on a [`GapQueue`]: the stream ends after what is queued when the last
/// [`Sender`] clone lets go.
#[derive(Debug)]
struct Producers(Arc<GapQueue>);

impl Drop for Producers {
    fn drop(&mut self) {
        self.0.close();
    }
}

impl Sender {
    fn encode(&self, event: &Event) -> Result<Bytes, TrySendError> {
        let mut out = BytesMut::with_capacity(self.encoder.encoded_len(event));
        self.encoder
            .encode(event, &mut out)
            .map_err(TrySendError::Encode)?;
        Ok(out.freeze())
    }

    /// Queues `event`, waiting while the queue is full (backpressure; under
    /// [`Overflow::Gap`] it never waits). `Err(Closed)` when the client went away.
    ///
    /// # Example
    /// See [`channel`].
    pub async fn send(&self, event: &Event) -> Result<(), TrySendError> {
        let bytes = self.encode(event)?;
        self.push(event.id(), bytes).await
    }

    /// Queues already encoded SSE bytes (whole blocks), waiting while the queue is full.
    ///
    /// # Example
    /// ```
    /// # async fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit_http::server::TrySendError> {
    /// let (tx, _body) = ssekit_http::server::channel::<R>(4);
    /// tx.send_bytes(bytes::Bytes::from_static(b"data: pre-encoded\n\n")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn send_bytes(&self, bytes: Bytes) -> Result<(), TrySendError> {
        self.push(None, bytes).await
    }

    async fn push(&self, id: Option<&str>, bytes: Bytes) -> Result<(), TrySendError> {
        match &self.lane {
            Lane::Queue { tx, .. } => tx.send(bytes).await.map_err(|_| TrySendError::Closed),
            Lane::Gap(queue) => gap_push(queue, id, bytes),
        }
    }

    /// Queues `event` if there is room now: `Err(Full)` when the client is not keeping up
    /// (under [`channel_with`]'s policies, see there), `Err(Closed)` when it went away.
    ///
    /// # Example
    /// See [`Sender`].
    pub fn try_send(&self, event: &Event) -> Result<(), TrySendError> {
        let bytes = self.encode(event)?;
        self.try_push(event.id(), bytes)
    }

    /// [`try_send`](Self::try_send) for already encoded SSE bytes (whole blocks).
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let (tx, _body) = ssekit_http::server::channel::<R>(4);
    /// assert!(tx.try_send_bytes(bytes::Bytes::from_static(b"data: x\n\n")).is_ok());
    /// # }
    /// ```
    pub fn try_send_bytes(&self, bytes: Bytes) -> Result<(), TrySendError> {
        self.try_push(None, bytes)
    }

    fn try_push(&self, id: Option<&str>, bytes: Bytes) -> Result<(), TrySendError> {
        match &self.lane {
            Lane::Queue { tx, cut } => tx.try_send(bytes).map_err(|e| match e {
                mpsc::error::TrySendError::Full(_) => {
                    match cut {
                        Some(cut) if !cut.swap(true, Ordering::AcqRel) => {
                            observe::count_by(observe::SLOW_CONSUMERS_TOTAL, "action", "cut", 1);
                            log!(warn, target: "ssekit::channel", "a slow client's stream is cut: its queue was full");
                        }
                        Some(_) => {}
                        None => {
                            observe::count_by(observe::SLOW_CONSUMERS_TOTAL, "action", "full", 1)
                        }
                    }
                    TrySendError::Full
                }
                mpsc::error::TrySendError::Closed(_) => TrySendError::Closed,
            }),
            Lane::Gap(queue) => gap_push(queue, id, bytes),
        }
    }

    /// Completes when the client has gone (its body was dropped): stop producing.
    ///
    /// # Example
    /// ```
    /// # async fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let (tx, body) = ssekit_http::server::channel::<R>(4);
    /// drop(body);
    /// tx.closed().await;
    /// # }
    /// ```
    pub async fn closed(&self) {
        match &self.lane {
            Lane::Queue { tx, .. } => tx.closed().await,
            Lane::Gap(queue) => queue.0.gone().await,
        }
    }

    /// Whether the client has gone.
    ///
    /// # Example
    /// See [`closed`](Self::closed).
    pub fn is_closed(&self) -> bool {
        match &self.lane {
            Lane::Queue { tx, .. } => tx.is_closed(),
            Lane::Gap(queue) => queue.0.is_gone(),
        }
    }
}

/// Queues `bytes` on a gap queue: `Err(Closed)` when the client has gone.
fn gap_push(queue: &Producers, id: Option<&str>, bytes: Bytes) -> Result<(), TrySendError> {
    if queue.0.push(id.map(Arc::from), bytes) {
        Ok(())
    } else {
        Err(TrySendError::Closed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::manual::Manual;

    #[test]
    fn the_queue_holds_capacity_events_then_refuses_and_closes_with_its_body() {
        let (tx, body) = channel::<Manual>(2);
        let event = Event::message("x");
        assert!(tx.try_send(&event).is_ok());
        assert!(tx.try_send(&event).is_ok());
        assert!(matches!(tx.try_send(&event), Err(TrySendError::Full)));
        assert!(!tx.is_closed());
        drop(body);
        assert!(tx.is_closed());
        assert!(matches!(tx.try_send(&event), Err(TrySendError::Closed)));
        futures_lite::future::block_on(tx.closed());
    }
}

#[cfg(test)]
mod policy_tests {
    use std::time::Duration;

    use super::*;
    use crate::runtime::manual::Manual;
    use crate::server::body::ready;

    fn event(id: u32) -> Event {
        Event::builder()
            .id(id.to_string())
            .unwrap()
            .data("x")
            .build()
    }

    #[test]
    fn disconnect_ends_the_stream_with_a_retry_hint_and_frees_its_queue() {
        let retry = Duration::from_millis(700);
        let (tx, mut body) = channel_with::<Manual>(2, Overflow::Disconnect { retry });
        assert!(tx.try_send(&event(1)).is_ok());
        assert!(tx.try_send(&event(2)).is_ok());
        assert!(matches!(tx.try_send(&event(3)), Err(TrySendError::Full)));
        // What was queued is dropped: the client comes back with its Last-Event-ID.
        assert_eq!(ready(&mut body), ("retry: 700\n\n".into(), true));
        drop(body);
        assert!(matches!(tx.try_send(&event(4)), Err(TrySendError::Closed)));
    }

    #[test]
    fn gap_never_refuses_and_the_stream_ends_when_the_producers_go() {
        let (tx, mut body) = channel_with::<Manual>(1, Overflow::Gap);
        let other = tx.clone();
        assert!(tx.try_send(&event(1)).is_ok());
        assert_eq!(ready(&mut body).0, "id: 1\ndata: x\n\n");
        for id in 2..=5 {
            assert!(other.try_send(&event(id)).is_ok());
        }
        assert_eq!(
            ready(&mut body),
            (
                "event: gap\ndata: {\"missed\":3,\"last_event_id\":\"1\"}\n\nid: 5\ndata: x\n\n"
                    .into(),
                false
            )
        );
        drop((tx, other));
        assert_eq!(ready(&mut body), (String::new(), true));
    }

    #[test]
    fn a_gap_sender_learns_when_its_client_leaves() {
        let (tx, body) = channel_with::<Manual>(4, Overflow::Gap);
        assert!(!tx.is_closed());
        drop(body);
        assert!(tx.is_closed());
        futures_lite::future::block_on(tx.closed());
        assert!(matches!(tx.try_send(&event(1)), Err(TrySendError::Closed)));
    }
}
