//! [`Store`]: what must outlive one server process, so that several instances behind a load
//! balancer serve one API. A reconnect, by ORS `task_id` or by `Last-Event-ID`, lands on
//! whichever instance the balancer picks; with a shared store that instance finds:
//! - the **sessions** (`X-Session-ID`: environment, task, setup outcome), expiring after
//!   the session timeout without use;
//! - the **task logs** of ORS calls: who may resume them (session and tool), the frames of
//!   the result, the terminal `end`/`error`, kept for the result TTL, and a **lease** the
//!   producing instance renews while the tool runs, so that a resuming instance tells a
//!   running task from one whose instance died;
//! - the **event logs** of broadcast streams, by id, for `Last-Event-ID`.
//!
//! Without a store (the default) each server keeps all of this in its own memory, as it
//! always did, at no cost per event. `ssekit-redis` implements the trait on Redis;
//! [`MemoryStore`] implements it in one process (tests, and a [`SharedBroadcast`] without
//! Redis). The ORS [`Server`](crate::ors::Server) takes one with
//! [`ServerConfig::store`](crate::ors::ServerConfig::store), and [`SharedBroadcast`] is a
//! broadcast stream on one.
//!
//! Every method returns within a bounded time (an implementation times its requests out),
//! so an outage of the store is a [`StoreError`] for the request that needed it (a `503`,
//! or an ORS `error` event), never a hung request.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

mod broadcast;
mod memory;
mod waiters;

pub use broadcast::{PublishError, SharedBroadcast, SubscribeError};
pub use memory::MemoryStore;
pub use waiters::Waiters;

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A store request in flight.
pub type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// A waiter for a change of a task log or event log ([`Store::changed`]).
pub type Changed = Pin<Box<dyn Future<Output = ()> + Send>>;

/// The store could not answer: unreachable, timed out, or it answered something this
/// server did not write. The message never holds a credential (an implementation strips
/// the password of its URL).
///
/// # Example
/// ```
/// let e = ssekit_http::store::StoreError::new("connection refused");
/// assert_eq!(e.to_string(), "the shared store is unavailable: connection refused");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoreError {
    message: String,
}

impl StoreError {
    /// A store error saying `message`.
    ///
    /// # Example
    /// See [`StoreError`].
    pub fn new(message: impl Into<String>) -> Self {
        StoreError {
            message: message.into(),
        }
    }

    /// What went wrong, without the "unavailable" prefix.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_http::store::StoreError::new("timed out").message(), "timed out");
    /// ```
    pub fn message(&self) -> &str {
        &self.message
    }
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the shared store is unavailable: {}", self.message)
    }
}

impl std::error::Error for StoreError {}

/// A session as the store keeps it.
///
/// # Example
/// ```
/// use ssekit_http::store::SessionRecord;
/// let record = SessionRecord { env: "gsm8k".into(), task: serde_json::json!({"q": 1}), setup: None };
/// let json = serde_json::to_string(&record).unwrap();
/// assert_eq!(serde_json::from_str::<SessionRecord>(&json).unwrap(), record);
/// ```
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// The environment's name.
    pub env: String,
    /// The task the session was created with.
    pub task: Value,
    /// The setup's outcome: `None` while it runs (on the instance that created the
    /// session), `Some(Err(message))` when it failed.
    pub setup: Option<Result<(), String>>,
}

/// Who may resume a task: the session that started the call, for the same tool. A
/// `task_id` presented from another session (or for another tool) is unknown there, as a
/// `Last-Event-ID` of another stream is.
///
/// # Example
/// ```
/// use ssekit_http::store::TaskScope;
/// let scope = TaskScope::new("sid-a", "submit");
/// assert!(scope.admits("sid-a", "submit"));
/// assert!(!scope.admits("sid-b", "submit") && !scope.admits("sid-a", "other"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TaskScope {
    /// The session id.
    pub session: String,
    /// The tool's name.
    pub tool: String,
}

impl TaskScope {
    /// The scope of a call by session `session` to tool `tool`.
    ///
    /// # Example
    /// See [`TaskScope`].
    pub fn new(session: impl Into<String>, tool: impl Into<String>) -> Self {
        TaskScope {
            session: session.into(),
            tool: tool.into(),
        }
    }

    /// Whether a resume by session `session` for tool `tool` may read the task.
    ///
    /// # Example
    /// See [`TaskScope`].
    pub fn admits(&self, session: &str, tool: &str) -> bool {
        self.session == session && self.tool == tool
    }
}

/// What a read of a task log found past a position.
///
/// # Example
/// ```
/// use ssekit_http::store::TaskLog;
/// let log = TaskLog { frames: vec![], next: "0".into(), finished: false, producer_alive: true };
/// assert!(log.is_running());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TaskLog {
    /// The frames past the position, in order (each a whole SSE block).
    pub frames: Vec<Bytes>,
    /// The position to read from next (opaque to the caller).
    pub next: String,
    /// The terminal frame (`end` or `error`) is among what was read so far.
    pub finished: bool,
    /// The producing instance renewed its lease in time.
    pub producer_alive: bool,
}

impl TaskLog {
    /// Unfinished and its producer alive: wait for [`Store::changed`] and read again.
    ///
    /// # Example
    /// See [`TaskLog`].
    pub fn is_running(&self) -> bool {
        !self.finished && self.producer_alive
    }
}

/// One event of a broadcast's log: its id in the store, and the encoded event without an
/// `id:` line (the reader writes it, from `id`).
///
/// # Example
/// ```
/// let e = ssekit_http::store::LoggedEvent { id: "1-0".into(), frame: "data: x\n\n".into() };
/// assert_eq!(e.with_id(), "id: 1-0\ndata: x\n\n");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedEvent {
    /// The id the store gave the event, increasing in the log.
    pub id: String,
    /// The encoded event, without an `id:` field.
    pub frame: Bytes,
}

impl LoggedEvent {
    /// The event as sent: `id: {id}` then the frame.
    ///
    /// # Example
    /// See [`LoggedEvent`].
    pub fn with_id(&self) -> Bytes {
        let mut out = Vec::with_capacity(self.id.len() + 5 + self.frame.len());
        out.extend_from_slice(b"id: ");
        out.extend_from_slice(self.id.as_bytes());
        out.push(b'\n');
        out.extend_from_slice(&self.frame);
        Bytes::from(out)
    }
}

/// The shared state of several server instances (see the [module docs](self)). Methods take
/// the time-to-live to give what they write, so the store's memory stays bounded: every
/// key an implementation writes expires.
///
/// # Example
/// Implemented by `ssekit_redis::RedisStore`; a server takes it as `Arc<dyn Store>`:
/// ```
/// fn shared(store: std::sync::Arc<dyn ssekit_http::store::Store>) -> usize {
///     std::sync::Arc::strong_count(&store)
/// }
/// ```
pub trait Store: Send + Sync + 'static {
    /// Stores a new session for `ttl`; `false` when `sid` exists already.
    fn create_session<'a>(
        &'a self,
        sid: &'a str,
        record: &'a SessionRecord,
        ttl: Duration,
    ) -> StoreFuture<'a, bool>;

    /// Replaces a live session's record (its setup finished), keeping its expiry.
    fn update_session<'a>(&'a self, sid: &'a str, record: &'a SessionRecord)
        -> StoreFuture<'a, ()>;

    /// A live session, its expiry pushed `ttl` into the future (a use keeps it alive).
    fn session<'a>(&'a self, sid: &'a str, ttl: Duration)
        -> StoreFuture<'a, Option<SessionRecord>>;

    /// Removes a session; the record it had, if it was live.
    fn delete_session<'a>(&'a self, sid: &'a str) -> StoreFuture<'a, Option<SessionRecord>>;

    /// Records a task that starts on this instance, for `scope`, with a producer lease of
    /// `lease`.
    fn start_task<'a>(
        &'a self,
        task_id: &'a str,
        scope: &'a TaskScope,
        lease: Duration,
    ) -> StoreFuture<'a, ()>;

    /// [`session`](Self::session) and [`start_task`](Self::start_task) in one: when the
    /// session of `scope` ([`TaskScope::session`]) is live, pushes its expiry `session_ttl`
    /// into the future, records the task as `start_task` does and returns the session's
    /// record; when it is not, records nothing and returns `None`. The ORS server starts a
    /// new call with it, and checks the call against the record after (a call the record
    /// refuses never runs, and its task id never reaches a client).
    ///
    /// The default does the two requests in turn; a store that can do both in one request
    /// overrides it (`ssekit_redis::RedisStore`: one script), saving each call a round trip.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use ssekit_http::store::{MemoryStore, SessionRecord, Store, TaskScope};
    /// # futures_lite::future::block_on(async {
    /// let store = MemoryStore::default();
    /// let (ttl, lease) = (Duration::from_secs(60), Duration::from_secs(3));
    /// let scope = TaskScope::new("sid", "submit");
    /// assert_eq!(store.start_task_in_session("t1", &scope, lease, ttl).await?, None);
    /// assert_eq!(store.task_scope("t1").await?, None);
    /// let record = SessionRecord { env: "gsm8k".into(), task: serde_json::json!({}), setup: None };
    /// store.create_session("sid", &record, ttl).await?;
    /// assert_eq!(store.start_task_in_session("t2", &scope, lease, ttl).await?, Some(record));
    /// assert_eq!(store.task_scope("t2").await?, Some(scope));
    /// # Ok::<(), ssekit_http::store::StoreError>(())
    /// # }).unwrap();
    /// ```
    fn start_task_in_session<'a>(
        &'a self,
        task_id: &'a str,
        scope: &'a TaskScope,
        lease: Duration,
        session_ttl: Duration,
    ) -> StoreFuture<'a, Option<SessionRecord>> {
        Box::pin(async move {
            let Some(record) = self.session(&scope.session, session_ttl).await? else {
                return Ok(None);
            };
            self.start_task(task_id, scope, lease).await?;
            Ok(Some(record))
        })
    }

    /// Renews a running task's lease for `lease` (the producer is alive).
    fn renew_task<'a>(&'a self, task_id: &'a str, lease: Duration) -> StoreFuture<'a, ()>;

    /// Appends a task's output frames; with `finished`, the last one is its terminal
    /// event, and the log is then kept for `result_ttl` (the lease may be released or left
    /// to lapse: a finished log ends the task whatever its lease says). Wakes
    /// the task's [`changed`](Self::changed) waiters on every instance.
    fn append_task<'a>(
        &'a self,
        task_id: &'a str,
        frames: &'a [Bytes],
        finished: bool,
        result_ttl: Duration,
    ) -> StoreFuture<'a, ()>;

    /// A task's scope, if the store knows the task.
    fn task_scope<'a>(&'a self, task_id: &'a str) -> StoreFuture<'a, Option<TaskScope>>;

    /// A task's frames past position `after` (`"0"`: from its start).
    fn read_task<'a>(&'a self, task_id: &'a str, after: &'a str) -> StoreFuture<'a, TaskLog>;

    /// Appends an event (encoded without `id:`) to broadcast `stream`'s log, which keeps
    /// the latest `max_events` for `ttl`; the id the store gave it. Wakes the stream's
    /// waiters on every instance.
    fn publish<'a>(
        &'a self,
        stream: &'a str,
        frame: Bytes,
        max_events: usize,
        ttl: Duration,
    ) -> StoreFuture<'a, String>;

    /// Broadcast `stream`'s events after id `after`, at most `limit`, oldest first; with
    /// `after: None`, none, and the id of the latest event to read after next time (a new
    /// subscriber gets what is published from now on). When the log no longer holds the
    /// event `after` names but holds later ones (it was trimmed past it: the reader fell
    /// more than the log's length behind, or the id was never given), the read says so
    /// ([`EventsRead::gap`]) and returns the events it holds. `after: Some("0-0")` reads from
    /// the oldest event held, with no gap.
    fn read_events<'a>(
        &'a self,
        stream: &'a str,
        after: Option<&'a str>,
        limit: usize,
    ) -> StoreFuture<'a, EventsRead>;

    /// A future that completes at the next change of `log` on any instance (or
    /// spuriously, e.g. when the store reconnects). Made before a read that finds nothing
    /// new, it is not missed by a change in between.
    fn changed(&self, log: Log<'_>) -> Changed;
}

/// Waits for `changed`, or `recheck` at most: a change notice lost (the store restarting)
/// delays a follower by that much, never stalls it.
pub(crate) async fn changed_or_after<R: crate::runtime::Runtime>(
    runtime: &R,
    changed: Changed,
    recheck: Duration,
) {
    let timer = runtime.sleep(recheck);
    futures_lite::future::or(changed, async move {
        timer.await;
    })
    .await;
}

/// A log whose changes [`Store::changed`] waits for.
///
/// # Example
/// ```
/// use ssekit_http::store::Log;
/// assert_ne!(Log::Task("a"), Log::Events("a"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Log<'a> {
    /// An ORS task's output, by task id.
    Task(&'a str),
    /// A broadcast stream's events, by stream name.
    Events(&'a str),
}

impl Log<'_> {
    /// The log's name among all logs: `task:{id}` or `events:{name}` (what a store
    /// announces a change of, and what [`Waiters`] are keyed by).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit_http::store::Log::Events("news").name(), "events:news");
    /// ```
    pub fn name(&self) -> String {
        match self {
            Log::Task(id) => format!("task:{id}"),
            Log::Events(name) => format!("events:{name}"),
        }
    }
}

/// What [`Store::read_events`] found.
///
/// # Example
/// ```
/// let read = ssekit_http::store::EventsRead { events: vec![], last: "0-0".into(), gap: false };
/// assert!(read.events.is_empty());
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EventsRead {
    /// The events, oldest first.
    pub events: Vec<LoggedEvent>,
    /// The id to read after next time.
    pub last: String,
    /// Events between `after` and the first of [`events`](Self::events) are no longer in
    /// the log: the reader missed them.
    pub gap: bool,
}
