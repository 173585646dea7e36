//! [`Broadcast`]: one live stream to many clients, with `Last-Event-ID` resumption from the
//! core's [`ReplayBuffer`] and a bounded queue per client. The state is a [`Hub`]; this
//! file adds the lock, the queues and the bodies.

use std::marker::PhantomData;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use futures_lite::StreamExt;
use ssekit::server::{Gap, ReplayBuffer};
use ssekit::{EncodeError, Event};
use tokio::sync::mpsc;

use super::{queue_capacity, Hub, SseBody};
use crate::observe::{self, log, Open};
use crate::runtime::Runtime;

type State = Hub<mpsc::Sender<Bytes>>;

/// A live event stream shared by every connected client, whose bodies run on `R`. Each
/// [`publish`](Self::publish)ed event is encoded once, kept in a [`ReplayBuffer`], and queued
/// to every subscriber; a client that reconnects with `Last-Event-ID` gets what it missed
/// from the buffer, then the live events, with nothing lost or doubled in between.
///
/// **Slow clients.** Each subscriber's queue holds `per_client` events. A subscriber whose
/// queue is full when an event is published is dropped: its stream ends after what is already
/// queued, the client reconnects with its last id, and is served from the replay buffer (or
/// learns of the [`Gap`] if it fell too far behind). Memory is bounded by the replay buffer's
/// bounds plus `per_client` events per client; one slow client never slows the others.
///
/// # Example
/// ```
/// # fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), Box<dyn std::error::Error>> {
/// use ssekit::{server::ReplayBuffer, Event};
/// use ssekit_http::server::{response, Broadcast};
///
/// let hub = Broadcast::<R>::new(ReplayBuffer::new(1024, 4 << 20), 64);
/// hub.publish(&Event::builder().id("1")?.data("first").build())?;
/// // In a handler: resume after the client's Last-Event-ID, if any.
/// let body = hub.subscribe(Some("1"))?;
/// let resp = response(body);
/// hub.publish(&Event::builder().id("2")?.data("second").build())?; // reaches `resp`
/// # let _ = resp; Ok(()) }
/// ```
pub struct Broadcast<R> {
    state: Arc<Mutex<State>>,
    per_client: usize,
    runtime: PhantomData<fn() -> R>,
}

impl<R> Clone for Broadcast<R> {
    fn clone(&self) -> Self {
        Broadcast {
            state: Arc::clone(&self.state),
            per_client: self.per_client,
            runtime: PhantomData,
        }
    }
}

impl<R> std::fmt::Debug for Broadcast<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broadcast")
            .field("subscribers", &self.lock().subscribers())
            .field("per_client", &self.per_client)
            .finish_non_exhaustive()
    }
}

impl<R> Broadcast<R> {
    /// A hub that keeps recent events in `replay` and queues at most `per_client` events
    /// (at least 1, at most [`MAX_QUEUED`](super::MAX_QUEUED)) for each client. A queue's
    /// memory grows with the events in it: an idle client costs the same whatever
    /// `per_client` is.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let hub = ssekit_http::server::Broadcast::<R>::new(ssekit::server::ReplayBuffer::default(), 32);
    /// assert_eq!(hub.subscribers(), 0);
    /// # }
    /// ```
    pub fn new(replay: ReplayBuffer, per_client: usize) -> Self {
        Broadcast {
            state: Arc::new(Mutex::new(Hub::new(replay))),
            per_client: queue_capacity(per_client),
            runtime: PhantomData,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Sends `event` to every subscriber (give it an id, or clients cannot resume after it).
    /// Returns how many subscribers it was queued for; subscribers that are gone or full are
    /// dropped.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit::EncodeError> {
    /// let hub = ssekit_http::server::Broadcast::<R>::new(ssekit::server::ReplayBuffer::default(), 8);
    /// assert_eq!(hub.publish(&ssekit::Event::message("nobody listens"))?, 0);
    /// # Ok(()) }
    /// ```
    pub fn publish(&self, event: &Event) -> Result<usize, EncodeError> {
        let mut cut = 0u64;
        let sent = self
            .lock()
            .publish(event, |tx, wire| match tx.try_send(wire) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    cut += 1;
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            });
        if cut > 0 {
            observe::count_by(observe::SLOW_CONSUMERS_TOTAL, "action", "cut", cut);
            log!(
                warn,
                target: "ssekit::broadcast",
                cut,
                per_client = self.per_client,
                "slow subscribers cut off: their queue was full (they resume with Last-Event-ID)"
            );
        }
        sent
    }

    /// Ends every current client's stream (after what is queued); they reconnect and resume.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// let hub = ssekit_http::server::Broadcast::<R>::new(ssekit::server::ReplayBuffer::default(), 8);
    /// let _body = hub.subscribe(None);
    /// hub.disconnect_all();
    /// assert_eq!(hub.subscribers(), 0);
    /// # }
    /// ```
    pub fn disconnect_all(&self) {
        self.lock().disconnect_all();
    }

    /// Clients currently subscribed (including ones that left since the last publish).
    ///
    /// # Example
    /// See [`disconnect_all`](Self::disconnect_all).
    pub fn subscribers(&self) -> usize {
        self.lock().subscribers()
    }
}

impl<R: Runtime + Default> Broadcast<R> {
    /// A response body for a new client: the events after `last_event_id` from the replay
    /// buffer (none when `None`), then every event published from now on. `Err(Gap)` when the
    /// events after that id can no longer all be replayed: send the client a fresh state
    /// instead, or [`subscribe`](Self::subscribe) it with `None`.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// use ssekit::server::{Gap, ReplayBuffer};
    /// let hub = ssekit_http::server::Broadcast::<R>::new(ReplayBuffer::default(), 8);
    /// assert!(matches!(hub.subscribe(Some("never-sent")), Err(Gap::Unknown)));
    /// assert!(hub.subscribe(None).is_ok());
    /// # }
    /// ```
    pub fn subscribe(&self, last_event_id: Option<&str>) -> Result<SseBody<R>, Gap> {
        let (tx, mut rx) = mpsc::channel(self.per_client);
        let missed = self
            .lock()
            .subscribe(last_event_id, tx, mpsc::Sender::is_closed)
            .inspect_err(|_gap| {
                observe::count(observe::REPLAY_GAPS_TOTAL, 1);
                log!(debug, target: "ssekit::broadcast", last_event_id, "Last-Event-ID older than the replay buffer");
            })?;
        log!(debug, target: "ssekit::broadcast", last_event_id, replayed = missed.len(), "subscribed");
        // One in the subscribers' gauge for as long as the body holds the queue.
        let open = Open::new(observe::BROADCAST_SUBSCRIBERS);
        let live = futures_lite::stream::poll_fn(move |cx| {
            let _ = &open;
            rx.poll_recv(cx)
        });
        Ok(SseBody::from_bytes(
            futures_lite::stream::iter(missed).chain(live),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::manual::Manual;

    #[test]
    fn subscribers_whose_queue_is_full_are_dropped() {
        let hub = Broadcast::<Manual>::new(ReplayBuffer::default(), 1);
        let (_slow, _fast) = (hub.subscribe(None), hub.subscribe(None));
        let first = Event::builder().id("1").unwrap().data("a").build();
        assert_eq!(hub.publish(&first).unwrap(), 2);
        // Neither body was read: each queue of one is full, so both are dropped.
        let second = Event::builder().id("2").unwrap().data("b").build();
        assert_eq!(hub.publish(&second).unwrap(), 0);
        assert_eq!(hub.subscribers(), 0);
    }

    #[test]
    fn cut_subscribers_are_counted_and_the_gauge_follows_the_bodies() {
        use crate::observe::{testing::Meters, BROADCAST_SUBSCRIBERS, SLOW_CONSUMERS_TOTAL};
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let mut meters = Meters::new(&recorder);
        metrics::with_local_recorder(&recorder, || {
            let hub = Broadcast::<Manual>::new(ReplayBuffer::default(), 1);
            let bodies = (hub.subscribe(None), hub.subscribe(None));
            assert_eq!(meters.value(BROADCAST_SUBSCRIBERS), 2.0);
            for id in ["1", "2"] {
                let event = Event::builder().id(id).unwrap().data("x").build();
                hub.publish(&event).unwrap();
            }
            assert_eq!(meters.value(SLOW_CONSUMERS_TOTAL), 2.0);
            drop(bodies);
            assert_eq!(meters.value(BROADCAST_SUBSCRIBERS), 0.0);
        });
    }
}
