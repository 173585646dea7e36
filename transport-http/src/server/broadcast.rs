//! [`Broadcast`]: one live stream to many clients, with `Last-Event-ID` resumption from the
//! core's [`ReplayBuffer`] and a bounded queue per client. The state is a [`Hub`]; this
//! file adds the lock, the queues and the bodies.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use futures_lite::StreamExt;
use ssekit::server::{Gap, ReplayBuffer};
use ssekit::{EncodeError, Event};
use tokio::sync::mpsc;

use super::overflow::{retry_frame, GapQueue};
use super::{queue_capacity, Hub, Overflow, SseBody};
use crate::observe::{self, log, Open};
use crate::runtime::Runtime;

/// The hub, the id of the last event published with one (where a new subscriber's replay
/// ends), and where recent ids stand in the sequence of events.
#[derive(Debug)]
struct State {
    hub: Hub<Client>,
    last_id: Option<Arc<str>>,
    seqs: Seqs,
}

/// Where the ids of recent events stood in the sequence of everything published, so that a
/// client resuming after an id the replay buffer no longer holds is told how many events it
/// missed ([`Broadcast::resume`]). A table of [`SEQ_SLOTS`] slots by the id's hash: a slot
/// keeps the latest id that hashed to it, so an id long gone may have lost its slot (then
/// the count is unknown).
#[derive(Debug, Default)]
struct Seqs {
    /// Events published (and kept for replay, or refused as too large for it) so far.
    published: u64,
    /// `(hash of the id, its place in the sequence)`, empty until an event has an id.
    slots: Vec<(u64, u64)>,
}

/// The ids [`Seqs`] remembers at most: 64 KiB a broadcast.
const SEQ_SLOTS: usize = 4096;

impl Seqs {
    fn hash(id: &str) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        id.hash(&mut hasher);
        hasher.finish()
    }

    /// Counts one published event, with its id.
    fn published(&mut self, id: Option<&str>) {
        if let Some(id) = id {
            if self.slots.is_empty() {
                self.slots = vec![(0, u64::MAX); SEQ_SLOTS];
            }
            let hash = Self::hash(id);
            self.slots[hash as usize % SEQ_SLOTS] = (hash, self.published);
        }
        self.published += 1;
    }

    /// How many events came after `id` that `replay` no longer holds, when `id` is known.
    fn missed(&self, id: &str, replay: &ReplayBuffer) -> Option<u64> {
        let hash = Self::hash(id);
        let &(slot, seq) = self.slots.get(hash as usize % SEQ_SLOTS)?;
        if slot != hash || seq == u64::MAX {
            return None;
        }
        // The oldest event the buffer holds is number `published - len`.
        let first_kept = self.published.saturating_sub(replay.len() as u64);
        Some(first_kept.saturating_sub(seq + 1))
    }
}

/// One client's queue, as its [`Overflow`] policy wants it.
#[derive(Debug)]
enum Client {
    /// A bounded queue; `cut` is set when the policy cuts the client, so that its stream
    /// ends with the `retry:` hint.
    Queue {
        tx: mpsc::Sender<Bytes>,
        cut: Arc<AtomicBool>,
    },
    /// A queue that drops its oldest events and reports the gap.
    Gap(Arc<GapQueue>),
}

impl Client {
    fn is_gone(&self) -> bool {
        match self {
            Client::Queue { tx, .. } => tx.is_closed(),
            Client::Gap(queue) => queue.is_gone(),
        }
    }

    /// Cut by `publish_wait` for a queue that stayed full.
    fn is_cut(&self) -> bool {
        matches!(self, Client::Queue { cut, .. } if cut.load(Ordering::Acquire))
    }
}

impl Drop for Client {
    fn drop(&mut self) {
        // A forgotten client's stream ends after what it has queued (a queue's sender does
        // so by being dropped).
        if let Client::Gap(queue) = self {
            queue.close();
        }
    }
}

/// A live event stream shared by every connected client, whose bodies run on `R`. Each
/// [`publish`](Self::publish)ed event is encoded once, kept in a [`ReplayBuffer`], and queued
/// to every subscriber; a client that reconnects with `Last-Event-ID` gets what it missed
/// from the buffer, then the live events, with nothing lost or doubled in between. One that
/// comes back after more than the buffer holds is never started afresh in silence:
/// [`resume`](Self::resume) sends it a [`GAP_EVENT`](super::GAP_EVENT) saying how many events
/// it missed, then what the buffer holds; [`subscribe`](Self::subscribe) hands the [`Gap`]
/// to the server to choose.
///
/// **Slow clients.** Each subscriber's queue holds `per_client` events; what happens when it
/// is full is the broadcast's [`Overflow`] policy ([`overflow`](Self::overflow)):
/// - [`Overflow::Disconnect`] (the default): the subscriber is dropped; its stream ends after
///   what is already queued and a `retry:` hint, the client reconnects with its last id and
///   is served from the replay buffer (or learns of the [`Gap`] if it fell too far behind);
/// - [`Overflow::Gap`]: its oldest queued events are dropped, and it reads a
///   [`GAP_EVENT`](super::GAP_EVENT) saying how many and after which id before the next;
/// - backpressure: [`publish_wait`](Self::publish_wait) waits for room in every queue
///   instead, for [`wait_at_most`](Self::wait_at_most) (10 s unless set), then cuts the
///   clients still full as `Disconnect` does (use it or [`publish`](Self::publish), not
///   both, on one broadcast).
///
/// Memory is bounded by the replay buffer's bounds plus `per_client` events per client; under
/// the first two policies one slow client never slows the others.
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
    overflow: Overflow,
    /// Held across [`publish_wait`](Self::publish_wait)'s sends, so that two of them cannot
    /// queue their events in different orders for different clients.
    sending: Arc<tokio::sync::Mutex<()>>,
    /// How long `publish_wait` waits for room before it cuts a client.
    wait_at_most: Duration,
    runtime: R,
}

impl<R: Clone> Clone for Broadcast<R> {
    fn clone(&self) -> Self {
        Broadcast {
            state: Arc::clone(&self.state),
            per_client: self.per_client,
            overflow: self.overflow,
            sending: Arc::clone(&self.sending),
            wait_at_most: self.wait_at_most,
            runtime: self.runtime.clone(),
        }
    }
}

impl<R> std::fmt::Debug for Broadcast<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Broadcast")
            .field(
                "subscribers",
                &crate::sync::lock(&self.state).hub.subscribers(),
            )
            .field("per_client", &self.per_client)
            .field("overflow", &self.overflow)
            .field("wait_at_most", &self.wait_at_most)
            .finish_non_exhaustive()
    }
}

/// How long [`Broadcast::publish_wait`] waits for room in a client's queue unless told
/// otherwise ([`Broadcast::wait_at_most`]).
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::server::WAIT_AT_MOST, std::time::Duration::from_secs(10));
/// ```
pub const WAIT_AT_MOST: Duration = Duration::from_secs(10);

impl<R: Runtime + Default> Broadcast<R> {
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
            state: Arc::new(Mutex::new(State {
                hub: Hub::new(replay),
                last_id: None,
                seqs: Seqs::default(),
            })),
            per_client: queue_capacity(per_client),
            overflow: Overflow::default(),
            sending: Arc::new(tokio::sync::Mutex::new(())),
            wait_at_most: WAIT_AT_MOST,
            runtime: R::default(),
        }
    }

    /// How long [`publish_wait`](Self::publish_wait) waits for room in the queues of
    /// clients that do not read (default [`WAIT_AT_MOST`]): past it, the clients whose
    /// queue is still full are cut as under [`Overflow::Disconnect`] (their stream ends after
    /// what they queued, with `retry:`; they resume with `Last-Event-ID`) and counted in
    /// `slow_consumers_total{action="cut"}`. One client that stopped reading with its
    /// connection open so holds the publisher, and every other client, this long at most.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// use std::time::Duration;
    /// let hub = ssekit_http::server::Broadcast::<R>::new(ssekit::server::ReplayBuffer::default(), 64)
    ///     .wait_at_most(Duration::from_secs(2));
    /// # let _ = hub; }
    /// ```
    #[must_use]
    pub fn wait_at_most(mut self, bound: Duration) -> Self {
        self.wait_at_most = bound;
        self
    }

    /// The runtime whose clock bounds [`publish_wait`](Self::publish_wait)'s waits and whose
    /// timers the clients' bodies use (default: `R::default()`).
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>(runtime: R) {
    /// let hub = ssekit_http::server::Broadcast::new(ssekit::server::ReplayBuffer::default(), 64)
    ///     .runtime(runtime);
    /// # let _ = hub; }
    /// ```
    #[must_use]
    pub fn runtime(mut self, runtime: R) -> Self {
        self.runtime = runtime;
        self
    }

    /// What [`publish`](Self::publish) does with a client whose queue is full, for the
    /// clients that subscribe from now on (see [`Overflow`]).
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() {
    /// use ssekit_http::server::{Broadcast, Overflow};
    /// let ticker = Broadcast::<R>::new(ssekit::server::ReplayBuffer::default(), 64).overflow(Overflow::Gap);
    /// # let _ = ticker; }
    /// ```
    #[must_use]
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        crate::sync::lock(&self.state)
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
        let id: Option<Arc<str>> = event.id().map(Arc::from);
        let mut state = self.lock();
        let sent = state.hub.publish(event, |client, wire| match client {
            Client::Queue { tx, cut: flag } => match tx.try_send(wire) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(_)) => {
                    flag.store(true, Ordering::Release);
                    cut += 1;
                    false
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            },
            Client::Gap(queue) => queue.push(id.clone(), wire),
        });
        if sent.is_ok() {
            state.seqs.published(id.as_deref());
            if id.is_some() {
                state.last_id = id;
            }
        }
        drop(state);
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
        self.lock().hub.disconnect_all();
    }

    /// Sends `event` to every subscriber as [`publish`](Self::publish) does, but waits for
    /// room in a full queue instead of applying the [`Overflow`] policy: backpressure, for a
    /// stream where no client may miss an event and the publisher can slow down (one slow
    /// client slows every other). The wait is bounded: clients still full
    /// [`wait_at_most`](Self::wait_at_most) after the call began are cut (their stream ends
    /// with `retry:`, they resume with `Last-Event-ID`). Returns how many subscribers it was
    /// queued for. Clients under [`Overflow::Gap`] never make it wait. Calls are queued in
    /// order, one at a time.
    ///
    /// # Example
    /// ```
    /// # async fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit::EncodeError> {
    /// let hub = ssekit_http::server::Broadcast::<R>::new(ssekit::server::ReplayBuffer::default(), 8);
    /// let _body = hub.subscribe(None);
    /// assert_eq!(hub.publish_wait(&ssekit::Event::message("every client gets it")).await?, 1);
    /// # Ok(()) }
    /// ```
    pub async fn publish_wait(&self, event: &Event) -> Result<usize, EncodeError> {
        let _one_at_a_time = self.sending.lock().await;
        let deadline = self.runtime.now().saturating_add(self.wait_at_most);
        let id: Option<Arc<str>> = event.id().map(Arc::from);
        let mut waiting = Vec::new();
        {
            let mut state = self.lock();
            state.hub.publish(event, |client, wire| match client {
                Client::Queue { tx, cut } => {
                    waiting.push((tx.clone(), Arc::clone(cut), wire));
                    !tx.is_closed()
                }
                Client::Gap(queue) => queue.push(id.clone(), wire),
            })?;
            state.seqs.published(id.as_deref());
            if id.is_some() {
                state.last_id = id;
            }
        }
        let mut sent = 0;
        let mut cut = 0u64;
        for (tx, flag, wire) in waiting {
            // Awaited only when full: tokio counts each awaited send against the task's
            // budget, and a publisher to thousands would yield every 128 clients.
            let queued = match tx.try_send(wire) {
                Ok(()) => true,
                Err(mpsc::error::TrySendError::Full(wire)) => {
                    let room = async { Some(tx.send(wire).await.is_ok()) };
                    let timer = self.runtime.sleep_until(deadline);
                    let out_of_time = async {
                        timer.await;
                        None
                    };
                    match futures_lite::future::or(room, out_of_time).await {
                        Some(queued) => queued,
                        None => {
                            flag.store(true, Ordering::Release);
                            cut += 1;
                            false
                        }
                    }
                }
                Err(mpsc::error::TrySendError::Closed(_)) => false,
            };
            sent += usize::from(queued);
        }
        if cut > 0 {
            // Letting go of their senders ends their streams after what they queued.
            self.lock().hub.sweep(Client::is_cut);
            observe::count_by(observe::SLOW_CONSUMERS_TOTAL, "action", "cut", cut);
            log!(
                warn,
                target: "ssekit::broadcast",
                cut,
                wait_ms = u64::try_from(self.wait_at_most.as_millis()).unwrap_or(u64::MAX),
                "slow subscribers cut off: their queue stayed full while publish_wait waited"
            );
        }
        Ok(sent)
    }

    /// Clients currently subscribed (including ones that left since the last publish).
    ///
    /// # Example
    /// See [`disconnect_all`](Self::disconnect_all).
    pub fn subscribers(&self) -> usize {
        self.lock().hub.subscribers()
    }
}

impl<R: Runtime + Default> Broadcast<R> {
    /// A response body for a new client: the events after `last_event_id` from the replay
    /// buffer (none when `None`), then every event published from now on. A client without an
    /// id is first sent `id: <the last id published>` (no event: it sets the client's last
    /// event id), so that one cut before its first event resumes where it started instead of
    /// silently from the later "now". `Err(Gap)` when the
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
        self.join(last_event_id, false)
    }

    /// A response body for a new client that can never be a silent fresh start: as
    /// [`subscribe`](Self::subscribe), but when the events after `last_event_id` can no
    /// longer all be replayed, the client first reads a [`GAP_EVENT`](super::GAP_EVENT)
    /// whose `missed` says how many events it missed (`null` when that is unknown: an id
    /// this broadcast never published, after a restart say, or one so old that it is
    /// forgotten), then every event the buffer still holds, then the live ones. Counted in
    /// `ssekit_replay_gaps_total`.
    ///
    /// # Example
    /// ```
    /// # fn doc<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), ssekit::EncodeError> {
    /// use ssekit::{server::ReplayBuffer, Event};
    /// let hub = ssekit_http::server::Broadcast::<R>::new(ReplayBuffer::new(2, 1 << 20), 8);
    /// for id in ["1", "2", "3", "4"] {
    ///     hub.publish(&Event::builder().id(id)?.data(id).build())?;
    /// }
    /// // A client that saw "1" comes back: `gap` {"missed":1,…}, then "3", "4", then live.
    /// let body = hub.resume(Some("1"));
    /// # let _ = body; Ok(()) }
    /// ```
    pub fn resume(&self, last_event_id: Option<&str>) -> SseBody<R> {
        match self.join(last_event_id, true) {
            Ok(body) => body,
            // `join` with `after_gap` answers every gap with a body.
            Err(_) => SseBody::from_bytes_on(self.runtime.clone(), futures_lite::stream::empty()),
        }
    }

    /// Registers a client; on a gap, `Err` unless `after_gap`, else the gap event and all
    /// the buffer holds.
    fn join(&self, last_event_id: Option<&str>, after_gap: bool) -> Result<SseBody<R>, Gap> {
        let mut state = self.lock();
        // Where the client stands once its replay is read: after the last event published.
        let resumes_after = state.last_id.clone();
        let (client, live) = self.queue(resumes_after.clone());
        let frames = match state.hub.subscribe(last_event_id, client, Client::is_gone) {
            // A client without an id first learns the last one, so that one cut before its
            // first event resumes where it started instead of silently from a later "now".
            Ok(missed) => match (last_event_id, &resumes_after) {
                (None, Some(id)) => vec![Bytes::from(format!("id: {id}\n\n"))],
                _ => missed,
            },
            Err(gap) => {
                observe::count(observe::REPLAY_GAPS_TOTAL, 1);
                log!(debug, target: "ssekit::broadcast", last_event_id, "Last-Event-ID older than the replay buffer");
                if !after_gap {
                    return Err(gap);
                }
                // The gap, then all the buffer holds, read under the lock the new queue is
                // registered under: nothing falls between.
                let id = last_event_id.unwrap_or_default();
                let count = state.seqs.missed(id, &state.hub.replay);
                let mut frames = vec![super::gap_event(count, Some(id))];
                frames.extend(state.hub.replay.all());
                let (client, live) = self.queue(resumes_after);
                let _ = state.hub.subscribe(None, client, Client::is_gone);
                drop(state);
                return Ok(self.body(frames, live));
            }
        };
        drop(state);
        log!(debug, target: "ssekit::broadcast", last_event_id, replayed = frames.len(), "subscribed");
        Ok(self.body(frames, live))
    }

    /// A client's queue under the broadcast's [`Overflow`] policy, and its live frames.
    fn queue(&self, resumes_after: Option<Arc<str>>) -> (Client, crate::runtime::Frames) {
        match self.overflow {
            Overflow::Disconnect { retry } => {
                let (tx, mut rx) = mpsc::channel(self.per_client);
                let cut = Arc::new(AtomicBool::new(false));
                let flag = Arc::clone(&cut);
                let live = futures_lite::stream::poll_fn(move |cx| rx.poll_recv(cx));
                // A client cut for a full queue is told when to come back.
                let hint = futures_lite::stream::iter([()])
                    .filter_map(move |()| flag.load(Ordering::Acquire).then(|| retry_frame(retry)));
                (Client::Queue { tx, cut }, Box::pin(live.chain(hint)))
            }
            Overflow::Gap => {
                let queue = GapQueue::new(self.per_client, resumes_after);
                let live = queue.stream();
                (Client::Gap(queue), Box::pin(live))
            }
        }
    }

    /// The body of `first`, then `live`, counted in the subscribers' gauge while it lives.
    fn body(&self, first: Vec<Bytes>, mut live: crate::runtime::Frames) -> SseBody<R> {
        let open = Open::new(observe::BROADCAST_SUBSCRIBERS);
        let live = futures_lite::stream::poll_fn(move |cx| {
            let _ = &open;
            live.as_mut().poll_next(cx)
        });
        SseBody::from_bytes_on(
            self.runtime.clone(),
            futures_lite::stream::iter(first).chain(live),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::future::Future;

    use super::*;
    use crate::runtime::manual::Manual;
    use crate::server::body::ready;

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

    fn event(id: u32) -> Event {
        Event::builder()
            .id(id.to_string())
            .unwrap()
            .data(id.to_string())
            .build()
    }

    #[test]
    fn a_client_resuming_past_the_buffer_is_told_how_many_it_missed_then_served() {
        let hub = Broadcast::<Manual>::new(ReplayBuffer::new(3, 1 << 20), 8);
        for id in 1..=10 {
            hub.publish(&event(id)).unwrap();
        }
        // The buffer holds 8, 9, 10: a client that saw 2 missed 3..=7.
        let mut back = hub.resume(Some("2"));
        let (text, ended) = ready(&mut back);
        assert!(!ended);
        assert_eq!(
            text,
            "event: gap\ndata: {\"missed\":5,\"last_event_id\":\"2\"}\n\n\
             id: 8\ndata: 8\n\nid: 9\ndata: 9\n\nid: 10\ndata: 10\n\n"
        );
        // Then the live events.
        hub.publish(&event(11)).unwrap();
        assert_eq!(ready(&mut back).0, "id: 11\ndata: 11\n\n");
        // An id this broadcast never published: the count is unknown, and said so.
        let mut stranger = hub.resume(Some("from-before-a-restart"));
        let text = ready(&mut stranger).0;
        assert!(
            text.starts_with(
                "event: gap\ndata: {\"missed\":null,\"last_event_id\":\"from-before-a-restart\"}\n\n\
                 id: 9\n"
            ),
            "{text}"
        );
        // Within the buffer, `resume` is `subscribe`: no gap.
        let mut near = hub.resume(Some("10"));
        assert_eq!(ready(&mut near).0, "id: 11\ndata: 11\n\n");
        assert!(hub.subscribe(Some("2")).is_err());
    }

    #[test]
    fn the_missed_count_follows_every_publish_and_forgets_only_overwritten_ids() {
        let hub = Broadcast::<Manual>::new(ReplayBuffer::new(1, 1 << 20), 8);
        let total = 3 * SEQ_SLOTS as u32;
        for id in 0..total {
            hub.publish(&event(id)).unwrap();
            // Events without an id count too.
            hub.publish(&Event::message("no id")).unwrap();
        }
        let state = hub.lock();
        let replay = &state.hub.replay;
        // The last id: 1 event after it (the one without an id), which the buffer holds.
        assert_eq!(state.seqs.missed(&(total - 1).to_string(), replay), Some(0));
        let mut known = 0;
        for id in (total - SEQ_SLOTS as u32)..total {
            if let Some(missed) = state.seqs.missed(&id.to_string(), replay) {
                // After id N: the event without an id, then 2 a step up to the last, less
                // the one the buffer holds.
                assert_eq!(missed, u64::from(2 * (total - 1 - id)));
                known += 1;
            }
        }
        // A slot keeps the latest id that hashed to it: most recent ids are known.
        assert!(known > SEQ_SLOTS / 2, "{known} of {SEQ_SLOTS}");
    }

    #[test]
    fn a_cut_subscriber_reads_what_it_had_queued_then_a_retry_hint() {
        let hub =
            Broadcast::<Manual>::new(ReplayBuffer::default(), 1).overflow(Overflow::Disconnect {
                retry: std::time::Duration::from_millis(2_500),
            });
        let mut slow = hub.subscribe(None).unwrap();
        assert_eq!(hub.publish(&event(1)).unwrap(), 1);
        assert_eq!(hub.publish(&event(2)).unwrap(), 0); // full: cut
        assert_eq!(
            ready(&mut slow),
            ("id: 1\ndata: 1\n\nretry: 2500\n\n".into(), true)
        );
        // It comes back with its last id and is replayed what it missed.
        let mut back = hub.subscribe(Some("1")).unwrap();
        assert_eq!(ready(&mut back).0, "id: 2\ndata: 2\n\n");
    }

    /// Found by the simulation on `SharedBroadcast` (broadcast seed 486), and true here too:
    /// a client that subscribed without an id and was cut before its first event came back
    /// without one, "from now", and silently missed what was published in between.
    #[test]
    fn a_subscriber_without_an_id_learns_where_it_starts() {
        let hub = Broadcast::<Manual>::new(ReplayBuffer::default(), 8);
        let mut empty = hub.subscribe(None).unwrap();
        assert_eq!(ready(&mut empty), (String::new(), false), "no position yet");
        hub.publish(&event(1)).unwrap();
        let mut cut = hub.subscribe(None).unwrap();
        assert_eq!(ready(&mut cut).0, "id: 1\n\n");
        drop(cut);
        hub.publish(&event(2)).unwrap();
        // Its client's last event id is "1": the reconnect is replayed event 2.
        let mut back = hub.subscribe(Some("1")).unwrap();
        assert_eq!(ready(&mut back).0, "id: 2\ndata: 2\n\n");
        // A client that sends an id is not told one.
        hub.publish(&event(3)).unwrap();
        let mut resumed = hub.subscribe(Some("3")).unwrap();
        assert_eq!(ready(&mut resumed), (String::new(), false));
    }

    #[test]
    fn under_gap_a_slow_subscriber_skips_the_oldest_and_learns_where_to_resume() {
        let hub = Broadcast::<Manual>::new(ReplayBuffer::default(), 2).overflow(Overflow::Gap);
        hub.publish(&event(0)).unwrap();
        let mut slow = hub.subscribe(None).unwrap();
        let mut fast = hub.subscribe(None).unwrap();
        let mut fast_read = String::new();
        for id in 1..=6 {
            assert_eq!(hub.publish(&event(id)).unwrap(), 2, "no one is dropped");
            fast_read.push_str(&ready(&mut fast).0);
        }
        // Each was told where it starts, then sent every event.
        let all: String = (1..=6).map(|n| format!("id: {n}\ndata: {n}\n\n")).collect();
        assert_eq!(fast_read, format!("id: 0\n\n{all}"));
        // The slow one kept the last two; the gap names the last event it had before.
        assert_eq!(
            ready(&mut slow).0,
            "id: 0\n\nevent: gap\ndata: {\"missed\":4,\"last_event_id\":\"0\"}\n\n\
             id: 5\ndata: 5\n\nid: 6\ndata: 6\n\n"
        );
        // Resuming from there replays exactly what it missed (and what followed).
        let mut again = hub.subscribe(Some("0")).unwrap();
        assert!(ready(&mut again)
            .0
            .starts_with("id: 1\ndata: 1\n\nid: 2\ndata: 2\n\n"));
        // A forgotten gap subscriber's stream ends after what it has.
        hub.disconnect_all();
        assert_eq!(ready(&mut slow), (String::new(), true));
    }

    #[test]
    fn publish_wait_waits_for_room_instead_of_cutting() {
        let hub = Broadcast::<Manual>::new(ReplayBuffer::default(), 1);
        let mut slow = hub.subscribe(None).unwrap();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let (one, two) = (event(1), event(2));
        let first = hub.publish_wait(&one);
        assert_eq!(
            std::pin::pin!(first).poll(&mut cx),
            std::task::Poll::Ready(Ok(1))
        );
        let second = hub.publish_wait(&two);
        let mut second = std::pin::pin!(second);
        assert!(
            second.as_mut().poll(&mut cx).is_pending(),
            "the queue is full: it waits"
        );
        assert_eq!(ready(&mut slow).0, "id: 1\ndata: 1\n\n");
        assert_eq!(second.as_mut().poll(&mut cx), std::task::Poll::Ready(Ok(1)));
        assert_eq!(ready(&mut slow).0, "id: 2\ndata: 2\n\n");
        assert_eq!(hub.subscribers(), 1, "nobody was cut");
    }

    #[test]
    fn publish_wait_cuts_a_client_whose_queue_stays_full_past_its_bound() {
        use std::task::Poll::Ready;

        use crate::observe::{testing::Meters, SLOW_CONSUMERS_TOTAL};
        let recorder = metrics_util::debugging::DebuggingRecorder::new();
        let mut meters = Meters::new(&recorder);
        metrics::with_local_recorder(&recorder, || {
            let clock = Manual::default();
            let hub = Broadcast::<Manual>::new(ReplayBuffer::default(), 1)
                .wait_at_most(Duration::from_secs(10))
                .runtime(clock.clone());
            let mut stuck = hub.subscribe(None).unwrap();
            let mut reader = hub.subscribe(None).unwrap();
            let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
            let (one, two, three) = (event(1), event(2), event(3));
            let first = hub.publish_wait(&one);
            assert_eq!(std::pin::pin!(first).poll(&mut cx), Ready(Ok(2)));
            assert_eq!(ready(&mut reader).0, "id: 1\ndata: 1\n\n");
            // The stuck client never reads: the publisher waits for it, then cuts it.
            let second = hub.publish_wait(&two);
            let mut second = std::pin::pin!(second);
            assert!(second.as_mut().poll(&mut cx).is_pending());
            clock.set(9_999);
            assert!(
                second.as_mut().poll(&mut cx).is_pending(),
                "within its bound"
            );
            assert_eq!(meters.value(SLOW_CONSUMERS_TOTAL), 0.0);
            clock.set(10_000);
            assert_eq!(second.as_mut().poll(&mut cx), Ready(Ok(1)));
            assert_eq!(hub.subscribers(), 1);
            assert_eq!(meters.value(SLOW_CONSUMERS_TOTAL), 1.0);
            // What it had queued, when to come back, and the end of its stream.
            assert_eq!(
                ready(&mut stuck),
                ("id: 1\ndata: 1\n\nretry: 1000\n\n".to_owned(), true)
            );
            assert_eq!(ready(&mut reader), ("id: 2\ndata: 2\n\n".to_owned(), false));
            // The next event goes out at once: nobody is left to wait for.
            let third = hub.publish_wait(&three);
            assert_eq!(std::pin::pin!(third).poll(&mut cx), Ready(Ok(1)));
        });
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
