//! [`Background`]: a Responses stream kept in a store as it is made, and served again from
//! any sequence number by any instance sharing the store.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_lite::StreamExt;
use ssekit::{Decoder, Encoder, Event, Frame};

use crate::runtime::{Frames, Runtime};
use crate::store::{changed_or_after, Log, Store, StoreError, TaskScope};

/// The message of the `error` event a follower gets when the instance making the response
/// stopped (its lease ran out) before the response's terminal event.
///
/// # Example
/// ```
/// assert!(ssekit_http::responses::RESPONSE_LOST.contains("stopped"));
/// ```
pub const RESPONSE_LOST: &str =
    "the instance producing this response stopped before it finished; create it again";

/// The terminal events of a Responses stream: after one, the response is finished.
const TERMINAL: [&str; 4] = [
    "response.completed",
    "response.failed",
    "response.incomplete",
    "error",
];

/// The scope every background response is kept under (a resume is authorized by the
/// server's own API key check, not by a session).
const SCOPE: (&str, &str) = ("", "responses");

/// No response has this id (never made, expired, or in another store).
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::responses::Unknown.to_string(), "no such response");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Unknown;

impl std::fmt::Display for Unknown {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("no such response")
    }
}

impl std::error::Error for Unknown {}

/// Responses kept in a store while they are made: [`start`](Self::start) runs a response's
/// event stream to its end on the runtime, appending each event (one SSE block, its
/// `sequence_number` in its data, in order from 0) to the store, whether or not anyone reads
/// it; [`follow`](Self::follow) serves it from any sequence number, then live. The producer
/// holds a lease it renews every third of [`lease`](Self::lease): if its instance dies, a
/// follower gets an `error` event ([`RESPONSE_LOST`]) instead of waiting for ever.
///
/// # Example
/// ```
/// use std::sync::Arc;
/// use futures_lite::StreamExt;
/// use ssekit_http::responses::Background;
/// use ssekit_http::store::MemoryStore;
///
/// async fn demo<R: ssekit_http::runtime::Runtime + Default>() -> Result<(), Box<dyn std::error::Error>> {
///     let kept = Background::new(Arc::new(MemoryStore::default()), R::default());
///     let events = ["response.created", "response.completed"].into_iter().enumerate().map(|(n, t)| {
///         bytes::Bytes::from(format!("event: {t}\ndata: {{\"type\":\"{t}\",\"sequence_number\":{n}}}\n\n"))
///     });
///     kept.start("resp_1", Box::pin(futures_lite::stream::iter(events))).await?;
///     let rest: Vec<_> = kept.follow("resp_1", Some(0)).await??.collect().await;
///     assert_eq!(rest.len(), 1); // response.completed, sequence number 1
///     Ok(())
/// }
/// ```
#[derive(Clone)]
pub struct Background<R> {
    store: Arc<dyn Store>,
    runtime: R,
    lease: Duration,
    ttl: Duration,
}

impl<R: Runtime> Background<R> {
    /// Responses kept in `store`, made and followed on `runtime`; a 10 s lease, kept an hour
    /// after they finish.
    ///
    /// # Example
    /// See [`Background`].
    pub fn new(store: Arc<dyn Store>, runtime: R) -> Self {
        Background {
            store,
            runtime,
            lease: Duration::from_secs(10),
            ttl: Duration::from_secs(3600),
        }
    }

    /// The producer's lease: a follower learns the response is lost within about this long
    /// (and a third more) of its producer's death.
    ///
    /// # Example
    /// ```
    /// # fn f<R: ssekit_http::runtime::Runtime>(kept: ssekit_http::responses::Background<R>) {
    /// let kept = kept.lease(std::time::Duration::from_secs(2));
    /// # }
    /// ```
    pub fn lease(mut self, lease: Duration) -> Self {
        self.lease = lease.max(Duration::from_millis(300));
        self
    }

    /// How long a finished response stays to be read again.
    ///
    /// # Example
    /// ```
    /// # fn f<R: ssekit_http::runtime::Runtime>(kept: ssekit_http::responses::Background<R>) {
    /// let kept = kept.keep_for(std::time::Duration::from_secs(600));
    /// # }
    /// ```
    pub fn keep_for(mut self, ttl: Duration) -> Self {
        self.ttl = ttl;
        self
    }

    /// Records response `id` and spawns the task that appends each of `events` to the store
    /// as it is made, renewing the lease while it waits. Returns once the response is
    /// recorded, so that a [`follow`](Self::follow) made next finds it.
    ///
    /// # Errors
    /// The store's, when it cannot record the response (nothing was spawned).
    pub async fn start(&self, id: &str, events: Frames) -> Result<(), StoreError> {
        let scope = TaskScope::new(SCOPE.0, SCOPE.1);
        self.store.start_task(id, &scope, self.lease).await?;
        let kept = self.clone();
        let id = id.to_owned();
        self.runtime
            .spawn(async move { kept.produce(&id, events).await });
        Ok(())
    }

    async fn produce(&self, id: &str, mut events: Frames) {
        let renew_every = self.lease / 3;
        loop {
            let renew = self.runtime.sleep(renew_every);
            let next = futures_lite::future::or(async { Some(events.next().await) }, async {
                renew.await;
                None
            });
            match next.await {
                // The lease, renewed while the next event takes its time.
                None => {
                    if self.store.renew_task(id, self.lease).await.is_err() {
                        // The store is away: the next append, or the lease, says so.
                        continue;
                    }
                }
                Some(Some(frame)) => {
                    let finished = is_terminal(&frame);
                    let frames = [frame];
                    let kept = self.store.append_task(id, &frames, finished, self.ttl);
                    if kept.await.is_err() || finished {
                        // A lost event would be a hole in the log: stop here, and the lease
                        // tells the followers.
                        return;
                    }
                }
                // Ended without a terminal event: close the log with an error a follower
                // can act on.
                Some(None) => {
                    let error = error_frame("the response ended before its terminal event");
                    let _ = self.store.append_task(id, &[error], true, self.ttl).await;
                    return;
                }
            }
        }
    }

    /// The events of response `id` whose sequence number is above `starting_after` (all of
    /// them when `None`), then the rest as they are made, until its terminal event; an
    /// `error` event ([`RESPONSE_LOST`]) if its producer dies first, or (with the store's
    /// message) if the store fails while following.
    ///
    /// # Errors
    /// `Ok(Err(Unknown))` for an id the store does not hold; `Err` for the store's failure.
    pub async fn follow(
        &self,
        id: &str,
        starting_after: Option<u64>,
    ) -> Result<Result<Frames, Unknown>, StoreError> {
        let scope = TaskScope::new(SCOPE.0, SCOPE.1);
        match self.store.task_scope(id).await? {
            Some(found) if found == scope => {}
            _ => return Ok(Err(Unknown)),
        }
        let follower = Follower {
            store: Arc::clone(&self.store),
            runtime: self.runtime.clone(),
            recheck: (self.lease / 3).max(Duration::from_millis(100)),
            id: id.to_owned(),
            skip: starting_after.map_or(0, |n| n.saturating_add(1)),
            pending: VecDeque::new(),
            next: "0".to_owned(),
            done: false,
        };
        Ok(Ok(Box::pin(futures_lite::stream::unfold(
            follower,
            |mut follower| async move {
                let frame = follower.next_frame().await?;
                Some((frame, follower))
            },
        ))))
    }
}

/// One connection reading a kept response.
struct Follower<R> {
    store: Arc<dyn Store>,
    runtime: R,
    recheck: Duration,
    id: String,
    /// Events still to skip: those at or below `starting_after` (the log holds one event a
    /// frame, sequence number 0 first).
    skip: u64,
    pending: VecDeque<Bytes>,
    next: String,
    done: bool,
}

impl<R: Runtime> Follower<R> {
    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            if self.done {
                return None;
            }
            let changed = self.store.changed(Log::Task(&self.id));
            match self.store.read_task(&self.id, &self.next).await {
                Ok(log) => {
                    let running = log.is_running();
                    for frame in log.frames {
                        if self.skip > 0 {
                            self.skip -= 1;
                        } else {
                            self.pending.push_back(frame);
                        }
                    }
                    self.next = log.next;
                    if log.finished {
                        self.done = true;
                    } else if !log.producer_alive {
                        self.pending.push_back(error_frame(RESPONSE_LOST));
                        self.done = true;
                    } else if running && self.pending.is_empty() {
                        changed_or_after(&self.runtime, changed, self.recheck).await;
                    }
                }
                Err(e) => {
                    self.pending.push_back(error_frame(&e.to_string()));
                    self.done = true;
                }
            }
        }
    }
}

/// Whether `frame` (one SSE block) is a terminal event of a Responses stream, by its
/// `event:` name or its data's `type`.
fn is_terminal(frame: &Bytes) -> bool {
    let mut decoder = Decoder::new();
    if decoder.feed(frame.clone()).is_err() {
        return false;
    }
    while let Ok(Some(frame)) = decoder.next_frame() {
        if let Frame::Event(event) = frame {
            let kind = match event.event_field() {
                Some(name) => name.as_str().to_owned(),
                None => serde_json::from_str::<serde_json::Value>(event.data())
                    .ok()
                    .and_then(|v| v.get("type")?.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            };
            return TERMINAL.contains(&kind.as_str());
        }
    }
    false
}

/// OpenAI's `error` event with `message`: a typed end a client's profile reports.
fn error_frame(message: &str) -> Bytes {
    let data = serde_json::json!({"type": "error", "code": "response_lost", "message": message});
    let event = Event::builder()
        .event("error")
        .map(|b| b.data(data.to_string()).build());
    let mut out = BytesMut::new();
    if let Ok(event) = event {
        // JSON from serde_json has no raw line breaks: nothing to refuse.
        let _ = Encoder::new().encode(&event, &mut out);
    }
    out.freeze()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::manual::Manual;
    use crate::store::MemoryStore;

    fn event(n: u64, kind: &str) -> Bytes {
        Bytes::from(format!(
            "event: {kind}\ndata: {{\"type\":\"{kind}\",\"sequence_number\":{n}}}\n\n"
        ))
    }

    #[test]
    fn terminal_events_are_known_by_name_or_type() {
        assert!(is_terminal(&event(3, "response.completed")));
        assert!(is_terminal(&Bytes::from_static(
            b"data: {\"type\":\"response.failed\"}\n\n"
        )));
        assert!(!is_terminal(&event(1, "response.output_text.delta")));
        assert!(!is_terminal(&Bytes::from_static(b": ping\n\n")));
    }

    #[test]
    fn the_error_frame_is_a_responses_error_event() {
        let frame = error_frame("gone");
        assert!(is_terminal(&frame));
        assert!(frame.starts_with(b"event: error\ndata: {"));
    }

    /// All the frames of `id` after `after`, as text.
    fn followed(kept: &Background<Manual>, id: &str, after: Option<u64>) -> Vec<String> {
        futures_lite::future::block_on(async {
            let frames = kept.follow(id, after).await.unwrap().unwrap();
            let frames: Vec<Bytes> = frames.collect().await;
            frames
                .iter()
                .map(|f| String::from_utf8_lossy(f).into_owned())
                .collect()
        })
    }

    #[test]
    fn a_kept_response_is_served_from_any_sequence_number() {
        let runtime = Manual::default();
        let kept = Background::new(Arc::new(MemoryStore::on(runtime.clone())), runtime);
        let kinds = [
            "response.created",
            "response.output_text.delta",
            "response.output_text.delta",
            "response.completed",
        ];
        let events: Vec<Bytes> = (0..).zip(kinds).map(|(n, k)| event(n, k)).collect();
        let all: Vec<String> = events
            .iter()
            .map(|f| String::from_utf8_lossy(f).into_owned())
            .collect();
        // The test runtime runs the producer to its end at once.
        futures_lite::future::block_on(
            kept.start("r", Box::pin(futures_lite::stream::iter(events))),
        )
        .unwrap();
        assert_eq!(followed(&kept, "r", None), all);
        assert_eq!(followed(&kept, "r", Some(1)), all[2..]);
        assert_eq!(followed(&kept, "r", Some(3)), Vec::<String>::new());
        assert_eq!(followed(&kept, "r", Some(u64::MAX)), Vec::<String>::new());
    }

    #[test]
    fn a_response_that_stops_before_its_terminal_event_ends_in_an_error() {
        let runtime = Manual::default();
        let kept = Background::new(Arc::new(MemoryStore::on(runtime.clone())), runtime);
        let events = vec![event(0, "response.created")];
        futures_lite::future::block_on(
            kept.start("r", Box::pin(futures_lite::stream::iter(events))),
        )
        .unwrap();
        let got = followed(&kept, "r", Some(0));
        assert_eq!(got.len(), 1);
        assert!(got[0].contains("before its terminal event"), "{got:?}");
    }

    #[test]
    fn a_follower_learns_when_the_producer_died() {
        let runtime = Manual::default();
        let store = Arc::new(MemoryStore::on(runtime.clone()));
        let kept = Background::new(store.clone(), runtime.clone()).lease(Duration::from_secs(2));
        let scope = TaskScope::new(SCOPE.0, SCOPE.1);
        futures_lite::future::block_on(async {
            // A producer that recorded one event, then was killed: no renewal, no end.
            store
                .start_task("r", &scope, Duration::from_secs(2))
                .await
                .unwrap();
            let first = [event(0, "response.created")];
            store
                .append_task("r", &first, false, Duration::from_secs(60))
                .await
                .unwrap();
        });
        runtime.set(2_001);
        let got = followed(&kept, "r", None);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[1].starts_with("event: error\n") && got[1].contains(RESPONSE_LOST));
    }

    #[test]
    fn an_unknown_response_is_unknown() {
        let kept = Background::new(Arc::new(MemoryStore::default()), Manual::default());
        let found = futures_lite::future::block_on(kept.follow("nope", None));
        assert!(matches!(found, Ok(Err(Unknown))));
    }
}
