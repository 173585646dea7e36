//! [`SharedBroadcast`]: one event stream for many subscribers on every instance sharing a
//! [`Store`].

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_lite::stream;
use ssekit::{EncodeError, Encoder, Event};

use super::{changed_or_after, Changed, EventsRead, Log, LoggedEvent, Store, StoreError};
use crate::observe::{self, log};
use crate::runtime::{Frames, Runtime};

/// A failed store call of a shared broadcast, `op`: counted and logged at `warn` (the ORS
/// server's own store calls are counted where it makes them; these it never sees).
fn failed(stream: &str, op: &'static str, e: &StoreError) {
    observe::count_by(observe::STORE_ERRORS_TOTAL, "op", op, 1);
    log!(warn, stream, op, error = %e, "shared broadcast: store call failed");
    #[cfg(not(feature = "tracing"))]
    let _ = (stream, e);
}

/// A broadcast stream whose events live in a [`Store`]: an event published on any instance
/// reaches the subscribers of every instance, and a subscriber that reconnects, to any
/// instance, with `Last-Event-ID` gets what it missed (of the latest
/// [`max_events`](Self::max_events)). The store gives the ids (increasing, the same on
/// every instance), so an event's own id is not sent.
///
/// # Example
/// ```no_run
/// use std::sync::Arc;
/// use futures_lite::StreamExt;
/// use ssekit_http::{runtime::Runtime, store::{MemoryStore, SharedBroadcast}};
/// async fn replay<R: Runtime>(runtime: R) -> Result<(), Box<dyn std::error::Error>> {
///     let news = SharedBroadcast::new(Arc::new(MemoryStore::default()), "news");
///     let id = news.publish(&ssekit::Event::message("first")).await?;
///     news.publish(&ssekit::Event::message("second")).await?;
///     let mut missed = news.subscribe(Some(&id), runtime).await?;
///     assert_eq!(missed.next().await.unwrap(), "id: 2-0\ndata: second\n\n");
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct SharedBroadcast {
    store: Arc<dyn Store>,
    name: String,
    max_events: usize,
    ttl: Duration,
}

impl std::fmt::Debug for SharedBroadcast {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SharedBroadcast")
            .field("name", &self.name)
            .field("max_events", &self.max_events)
            .field("ttl", &self.ttl)
            .finish_non_exhaustive()
    }
}

/// Why [`SharedBroadcast::publish`] failed.
///
/// # Example
/// ```
/// use ssekit_http::store::{PublishError, StoreError};
/// let e = PublishError::Store(StoreError::new("timed out"));
/// assert_eq!(e.to_string(), "the shared store is unavailable: timed out");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PublishError {
    /// The event cannot be encoded.
    Encode(EncodeError),
    /// The store did not take it.
    Store(StoreError),
}

impl std::fmt::Display for PublishError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PublishError::Encode(e) => e.fmt(f),
            PublishError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for PublishError {}

/// How often a subscriber reads the log while no change is announced (a lost
/// announcement delays it by this much at most).
const RECHECK: Duration = Duration::from_secs(1);

/// The events read from the log at a time.
const READ_BATCH: usize = 256;

impl SharedBroadcast {
    /// The broadcast `name` in `store`, keeping the latest 1024 events, for an hour after
    /// the last publication.
    ///
    /// # Example
    /// See [`SharedBroadcast`].
    pub fn new(store: Arc<dyn Store>, name: impl Into<String>) -> Self {
        SharedBroadcast {
            store,
            name: name.into(),
            max_events: 1024,
            ttl: Duration::from_secs(3600),
        }
    }

    /// Keeps the latest `events` for replay (at least 1).
    ///
    /// # Example
    /// ```
    /// # fn doc(b: ssekit_http::store::SharedBroadcast) {
    /// let _ = b.max_events(10_000);
    /// # }
    /// ```
    #[must_use]
    pub fn max_events(mut self, events: usize) -> Self {
        self.max_events = events.max(1);
        self
    }

    /// Keeps the log `ttl` after the last publication.
    ///
    /// # Example
    /// ```
    /// # fn doc(b: ssekit_http::store::SharedBroadcast) {
    /// let _ = b.ttl(std::time::Duration::from_secs(600));
    /// # }
    /// ```
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Publishes `event` (its id, if any, replaced by the store's) to every subscriber on
    /// every instance; the id it got.
    ///
    /// # Example
    /// See [`SharedBroadcast`].
    pub async fn publish(&self, event: &Event) -> Result<String, PublishError> {
        let mut without_id = Event::builder();
        if let Some(name) = event.event_field() {
            without_id = without_id
                .event(name.clone())
                .map_err(PublishError::Encode)?;
        }
        let without_id = without_id.data(event.data_bytes().clone()).build();
        let encoder = Encoder::new();
        let mut frame = BytesMut::with_capacity(encoder.encoded_len(&without_id));
        encoder
            .encode(&without_id, &mut frame)
            .map_err(PublishError::Encode)?;
        self.store
            .publish(&self.name, frame.freeze(), self.max_events, self.ttl)
            .await
            .map_err(|e| {
                failed(&self.name, "publish", &e);
                PublishError::Store(e)
            })
    }

    /// The events for one subscriber: after `last_event_id` (what it missed, then live),
    /// or from now on without one (or with an id that is not a store id, `N-N`);
    /// `Some("0-0")` replays everything the log holds. When the log no longer holds what the
    /// subscriber missed (it was more than [`max_events`](Self::max_events) behind), this is
    /// [`SubscribeError::Gap`]: the application chooses, say, `subscribe(Some("0-0"))` (what
    /// is left) or `subscribe(None)` (from now), as with an in-memory `Broadcast`'s `Gap`. A
    /// subscriber that falls that far behind later has its stream ended (its client
    /// reconnects with its last id and meets the gap here), never silently skipped ahead.
    /// The stream also ends when the store fails.
    ///
    /// # Example
    /// See [`SharedBroadcast`].
    pub async fn subscribe<R: Runtime>(
        &self,
        last_event_id: Option<&str>,
        runtime: R,
    ) -> Result<Frames, SubscribeError> {
        // A store id is `MILLIS-SEQ`, two u64s: anything else (a browser's id of another
        // stream, a number too large) would make the store refuse every read.
        let valid = |id: &&str| {
            id.split_once('-').is_some_and(|(a, b)| {
                let digits = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_digit());
                digits(a) && digits(b) && a.parse::<u64>().is_ok() && b.parse::<u64>().is_ok()
            })
        };
        let after = last_event_id.filter(valid);
        let first = self
            .store
            .read_events(&self.name, after, READ_BATCH)
            .await
            .map_err(|e| {
                failed(&self.name, "read_events", &e);
                SubscribeError::Store(e)
            })?;
        if first.gap {
            observe::count(observe::REPLAY_GAPS_TOTAL, 1);
            log!(
                debug,
                stream = %self.name,
                last_event_id = after,
                "shared broadcast: the events after the subscriber's id are no longer kept"
            );
            return Err(SubscribeError::Gap);
        }
        log!(debug, stream = %self.name, last_event_id = after, "shared broadcast: subscribed");
        let mut state = Subscriber {
            _open: observe::Open::new(observe::BROADCAST_SUBSCRIBERS),
            store: Arc::clone(&self.store),
            name: self.name.clone(),
            runtime,
            after: first.last.clone(),
            pending: VecDeque::new(),
            waiting: None,
            done: false,
        };
        state.take(first);
        if after.is_none() && state.pending.is_empty() {
            // Where a subscriber without an id starts, as its Last-Event-ID: an `id:` alone
            // sets it and dispatches nothing, so a reconnect before the first event resumes
            // from here, not from a later "now" (the events between were owed).
            state
                .pending
                .push_back(Bytes::from(format!("id: {}\n\n", state.after)));
        }
        Ok(Box::pin(stream::unfold(state, |mut state| async move {
            let frame = state.next_frame().await?;
            Some((frame, state))
        })))
    }
}

/// Why [`SharedBroadcast::subscribe`] gave no stream.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::store::SubscribeError::Gap.to_string(), "the events after that id are no longer kept");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SubscribeError {
    /// The log no longer holds the events after the subscriber's last id.
    Gap,
    /// The store could not be read.
    Store(StoreError),
}

impl std::fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubscribeError::Gap => f.write_str("the events after that id are no longer kept"),
            SubscribeError::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for SubscribeError {}

struct Subscriber<R> {
    /// Counts the subscriber in [`BROADCAST_SUBSCRIBERS`](observe::BROADCAST_SUBSCRIBERS)
    /// while its stream lives.
    _open: observe::Open,
    store: Arc<dyn Store>,
    name: String,
    runtime: R,
    /// The id to read after.
    after: String,
    pending: VecDeque<Bytes>,
    /// The change notice taken before the last read, when it was not a full batch: a
    /// change since that read completes it.
    waiting: Option<Changed>,
    done: bool,
}

impl<R: Runtime> Subscriber<R> {
    /// Queues what a read found; a gap ends the stream after what came before it.
    fn take(&mut self, read: EventsRead) {
        if read.gap {
            observe::count_by(observe::SLOW_CONSUMERS_TOTAL, "action", "cut", 1);
            log!(
                debug,
                stream = %self.name,
                "shared broadcast: a subscriber fell behind the log; its stream ends"
            );
            self.done = true;
            return;
        }
        self.pending
            .extend(read.events.iter().map(LoggedEvent::with_id));
        self.after = read.last;
    }

    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            if self.done {
                return None;
            }
            if let Some(changed) = self.waiting.take() {
                changed_or_after(&self.runtime, changed, RECHECK).await;
            }
            let changed = self.store.changed(Log::Events(&self.name));
            match self
                .store
                .read_events(&self.name, Some(&self.after), READ_BATCH)
                .await
            {
                Ok(read) => {
                    // A full batch: read on at once; otherwise wait for the next change
                    // (one read per change, not one more to find nothing).
                    if read.events.len() < READ_BATCH {
                        self.waiting = Some(changed);
                    }
                    self.take(read);
                }
                Err(e) => {
                    failed(&self.name, "read_events", &e);
                    self.done = true;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MemoryStore;
    use futures_lite::StreamExt;

    /// A runtime whose timers never fire: subscribers wake on change notices alone.
    #[derive(Clone, Default)]
    pub(super) struct Stopped;

    impl Runtime for Stopped {
        type Sleep = std::future::Pending<()>;
        fn now(&self) -> ssekit::Instant {
            ssekit::Instant::ZERO
        }
        fn sleep_until(&self, _at: ssekit::Instant) -> Self::Sleep {
            std::future::pending()
        }
        fn spawn<F: std::future::Future<Output = ()> + Send + 'static>(&self, _future: F) {}
    }

    #[test]
    fn ids_that_are_not_store_ids_read_from_now_on() {
        futures_lite::future::block_on(async {
            let news = SharedBroadcast::new(Arc::new(MemoryStore::default()), "news");
            news.publish(&Event::message("old")).await.unwrap();
            for id in [
                "41",
                "x-1",
                "-1",
                "1-",
                "99999999999999999999999-0",
                "1-0\n",
            ] {
                let mut sub = news.subscribe(Some(id), Stopped).await.unwrap();
                // From now on: first where that is, as an id alone.
                let start = sub.next().await.unwrap();
                assert!(
                    start.starts_with(b"id: ") && !start.windows(5).any(|w| w == b"data:"),
                    "{id}: {start:?}"
                );
                let next = sub.next();
                let publish = async {
                    news.publish(&Event::message("new")).await.unwrap();
                    std::future::pending::<()>().await;
                };
                let got = futures_lite::future::or(next, async {
                    publish.await;
                    None
                })
                .await;
                let got = got.unwrap();
                assert!(got.ends_with(b"data: new\n\n"), "{id}: {got:?}");
            }
        });
    }
}

#[cfg(test)]
mod start_tests {
    use super::tests::Stopped;
    use super::*;
    use crate::store::MemoryStore;
    use futures_lite::StreamExt;

    /// Found by the simulation (ssekit-sim, broadcast seed 486): a subscriber without an id,
    /// cut before its first event, reconnected "from now" and silently lost what was
    /// published meanwhile. It now learns where it starts before anything else.
    #[test]
    fn a_subscriber_without_an_id_is_told_where_it_starts_and_resumes_from_there() {
        futures_lite::future::block_on(async {
            let news = SharedBroadcast::new(Arc::new(MemoryStore::default()), "news");
            news.publish(&Event::message("before")).await.unwrap();
            let mut sub = news.subscribe(None, Stopped).await.unwrap();
            assert_eq!(sub.next().await.unwrap(), "id: 1-0\n\n");
            drop(sub); // cut before any event
            news.publish(&Event::message("meanwhile")).await.unwrap();
            let mut again = news.subscribe(Some("1-0"), Stopped).await.unwrap();
            assert_eq!(again.next().await.unwrap(), "id: 2-0\ndata: meanwhile\n\n");
            // An empty log starts before its first event.
            let empty = SharedBroadcast::new(Arc::new(MemoryStore::default()), "empty");
            let mut sub = empty.subscribe(None, Stopped).await.unwrap();
            assert_eq!(sub.next().await.unwrap(), "id: 0-0\n\n");
        });
    }
}

#[cfg(test)]
mod gap_tests {
    use super::tests::Stopped as Now;
    use super::*;
    use crate::store::MemoryStore;
    use futures_lite::StreamExt;

    /// A subscriber more than the log's length behind is told so, never skipped ahead.
    #[test]
    fn a_subscriber_that_fell_behind_the_log_meets_a_gap_not_a_skip() {
        futures_lite::future::block_on(async {
            let news = SharedBroadcast::new(Arc::new(MemoryStore::default()), "news").max_events(4);
            let first = news.publish(&Event::message("0")).await.unwrap();
            let mut live = news.subscribe(Some(&first), Now).await.unwrap();
            for n in 1..=10 {
                news.publish(&Event::message(n.to_string())).await.unwrap();
            }
            // It read nothing before 2-0 was trimmed: its stream ends instead of jumping to 7.
            assert_eq!(live.next().await, None);
            assert_eq!(
                news.subscribe(Some(&first), Now).await.err(),
                Some(SubscribeError::Gap)
            );
            // What is left, then.
            let mut rest = news.subscribe(Some("0-0"), Now).await.unwrap();
            assert_eq!(rest.next().await.unwrap(), "id: 8-0\ndata: 7\n\n");
        });
    }
}
