//! [`Calls`]: the `POST /{env}/call` half of an ORS server, written once over a
//! [`Runtime`]: a tool call runs as a task of the core [`TaskRegistry`], and every connection
//! follows it from its first frame, so a client that lost its connection resumes by task id.
//!
//! ```text
//!  {name, input, task_id?} ─▶ TaskRegistry::open
//!     Started ─▶ Runtime::spawn(tool) ─▶ Chunker ─▶ TaskRegistry::push ─┐
//!     Resumed ─────────────────────────────────────────────────────────┼─▶ task_id, chunk*, end|error ─▶ Runtime::sse_body (+ pings)
//!     Unknown ─▶ error "unknown task_id"                                ┘
//! ```

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use futures_lite::stream;
use ssekit::chunk::Chunker;
use ssekit::profile::ors::ToolResult;
use ssekit::server::{Cursor, KeepAlive, Open, TaskConfig, TaskError, TaskRegistry, TaskState};
use ssekit::Utf8Bytes;
use tokio::sync::{watch, Notify};

use super::observed::{refusal, store_call, CallSpan};
use super::TOOL_PANICKED;
use super::{call_frames, encode, named, refused, run_tool, try_complete, Completion, Follow};
use super::{TaskSignals, BUSY, CALL_ABANDONED, NOT_RESUMABLE, SHUTTING_DOWN, TASK_LOST};
use crate::observe::{self, log};
use crate::runtime::{Frames, Runtime};
use crate::server::SseBody;
use crate::store::{changed_or_after, Log, SessionRecord, Store, StoreError, TaskScope};
use crate::sync::lock;

/// [`Calls::try_call`] refused a call: [`TaskConfig::max_running`] tools are running.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::ors::Busy.to_string(), ssekit_http::ors::BUSY);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Busy;

impl std::fmt::Display for Busy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(BUSY)
    }
}

impl std::error::Error for Busy {}

/// Where a running task's result goes when the registry does not keep it: to the
/// connections following the task as it finishes, which hold the slot.
type Slot = Arc<OnceLock<Vec<Bytes>>>;

/// The tasks of this instance: the registry, and who may resume each task.
struct Tasks {
    registry: TaskRegistry<Bytes>,
    /// The scope of each task started with one ([`Calls::try_call_in`]); pruned of tasks
    /// the registry forgot.
    scopes: HashMap<String, TaskScope>,
    /// The slot of each running task someone follows; pruned of dead slots.
    live: HashMap<String, Weak<OnceLock<Vec<Bytes>>>>,
    /// The registry's task count and bytes when last [`settle`](Self::settle)d: what the
    /// result-cache metrics were last moved to.
    held: usize,
    result_bytes: usize,
}

impl Tasks {
    /// A registry of `config`, with no task.
    fn new(config: TaskConfig) -> Self {
        Tasks {
            registry: TaskRegistry::new(config),
            scopes: HashMap::new(),
            live: HashMap::new(),
            held: 0,
            result_bytes: 0,
        }
    }

    /// Drops the results whose TTL ran out at `now` (they expired: no eviction).
    fn expire(&mut self, now: ssekit::Instant) {
        self.registry.handle_timeout(now);
        self.held = self.registry.len();
        self.settle_bytes();
    }

    /// After a change of the registry that `started` tasks (expired ones were dropped
    /// before, by [`expire`](Self::expire)): the tasks missing were finished results
    /// evicted for room, before their TTL. Moves the result-cache metrics.
    fn settle(&mut self, started: usize) {
        let len = self.registry.len();
        let evicted = (self.held + started).saturating_sub(len);
        if evicted > 0 {
            observe::count(
                observe::ORS_RESULT_EVICTIONS_TOTAL,
                u64::try_from(evicted).unwrap_or(u64::MAX),
            );
            log!(
                debug,
                evicted,
                "finished ORS results evicted for room before their TTL"
            );
        }
        self.held = len;
        self.settle_bytes();
    }

    /// Moves the result-bytes gauge to the registry's bytes. A tool's output is pushed
    /// only when it finishes ([`try_complete`]), so outside the lock every byte held is a
    /// finished result's.
    fn settle_bytes(&mut self) {
        let bytes = self.registry.retained_bytes();
        if bytes != self.result_bytes {
            observe::gauge_add(
                observe::ORS_RESULT_BYTES,
                gauge_delta(self.result_bytes, bytes),
            );
            self.result_bytes = bytes;
        }
    }

    /// Whether a resume of `task_id` in `scope` may read this instance's task (a task
    /// started without a scope admits every resume, as before scopes existed).
    fn admits(&self, task_id: &str, scope: Option<&TaskScope>) -> bool {
        match (self.scopes.get(task_id), scope) {
            (Some(owner), Some(asked)) => owner == asked,
            (Some(_), None) => false,
            (None, _) => true,
        }
    }

    /// The slot of a running task, shared by everyone following it (`None` once it has
    /// finished: its result is then in the registry, or was never kept).
    fn slot(&mut self, task_id: &str) -> Option<Slot> {
        if self.registry.state(task_id) != Some(TaskState::Running) {
            return None;
        }
        if let Some(slot) = self.live.get(task_id).and_then(Weak::upgrade) {
            return Some(slot);
        }
        if self.live.len() > 2 * self.registry.len() + 64 {
            let registry = &self.registry;
            self.live.retain(|id, slot| {
                slot.strong_count() > 0 && registry.state(id) == Some(TaskState::Running)
            });
        }
        let slot = Slot::default();
        self.live.insert(task_id.to_owned(), Arc::downgrade(&slot));
        Some(slot)
    }

    /// Records a finished call's `frames` at `now`; when the registry did not keep them,
    /// hands them to the connections following the call (after [`NOT_RESUMABLE`]), and
    /// counts why.
    fn complete(&mut self, task_id: &str, frames: Vec<Bytes>, now: ssekit::Instant) {
        let slot = self.live.remove(task_id).and_then(|slot| slot.upgrade());
        let live = slot.is_some().then(|| frames.clone());
        let Err(e) = try_complete(&mut self.registry, task_id, frames, now) else {
            self.settle(0);
            return;
        };
        if self.registry.state(task_id).is_none() {
            // Forgotten, not evicted: not an eviction for `settle`.
            self.held = self.held.saturating_sub(1);
        }
        self.settle(0);
        let reason = match e {
            TaskError::OwnerOverBudget => "session_bytes",
            TaskError::OverBudget => "bytes",
            TaskError::TooManyResults => "results",
            _ => "other",
        };
        observe::count_by(observe::ORS_RESULTS_NOT_KEPT_TOTAL, "reason", reason, 1);
        log!(
            info,
            task_id,
            reason,
            "ORS result not kept for resumption: no room without evicting other sessions' \
             results; the call's own stream gets it"
        );
        if let (Some(slot), Some(mut frames)) = (slot, live) {
            frames.insert(0, Bytes::from_static(NOT_RESUMABLE.as_bytes()));
            let _ = slot.set(frames);
        }
    }

    /// Forgets a task that never ran (see [`TaskRegistry::forget`]): it takes no place
    /// among the tasks.
    fn forget(&mut self, task_id: &str) {
        if self.registry.forget(task_id).is_ok() {
            self.held = self.held.saturating_sub(1);
        }
        self.scopes.remove(task_id);
        self.live.remove(task_id);
        self.settle_bytes();
    }

    /// Drops the scopes of forgotten tasks once they outnumber the live ones (amortized).
    fn prune_scopes(&mut self) {
        if self.scopes.len() > 2 * self.registry.len() + 64 {
            let registry = &self.registry;
            self.scopes.retain(|id, _| registry.state(id).is_some());
        }
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        // The results go with the registry.
        observe::gauge_add(observe::ORS_RESULT_BYTES, gauge_delta(self.result_bytes, 0));
    }
}

/// How much a gauge moves from `from` to `to` (bytes, exact below 2^53).
#[allow(clippy::cast_precision_loss)]
fn gauge_delta(from: usize, to: usize) -> f64 {
    to as f64 - from as f64
}

/// A shared store ([`Calls::with_store`]): every task's log is written there too, so that
/// another instance resumes it.
struct Shared {
    store: Arc<dyn Store>,
    /// The producer's lease on a running task; renewed every third of it.
    lease: Duration,
    result_ttl: Duration,
}

/// The instance's life: work in flight, and the shutdown of its streams.
struct Lifecycle {
    /// Tools running plus store writes pending.
    in_flight: AtomicUsize,
    /// Wakes [`Calls::drain`] when `in_flight` reaches zero.
    idle: Notify,
    /// New calls are refused ([`Calls::drain`] began).
    draining: AtomicBool,
    /// Set when open streams must end (with a `retry:` first).
    closing: watch::Sender<bool>,
}

impl Lifecycle {
    /// Counts one unit of work from now until the guard is dropped: take it before
    /// spawning the work, so that a drain starting in between waits for it.
    fn enter(self: &Arc<Self>) -> InFlight {
        self.in_flight.fetch_add(1, Ordering::SeqCst);
        InFlight(Arc::clone(self))
    }
}

/// One unit of work in flight, counted until dropped.
struct InFlight(Arc<Lifecycle>);

impl Drop for InFlight {
    fn drop(&mut self) {
        if self.0.in_flight.fetch_sub(1, Ordering::SeqCst) == 1 {
            self.0.idle.notify_waiters();
        }
    }
}

struct Inner<R> {
    tasks: Mutex<Tasks>,
    /// Wakes the connections that follow a task when it finishes.
    signals: Arc<TaskSignals<Notify>>,
    runtime: R,
    keep_alive: Duration,
    chunker: Chunker,
    shared: OnceLock<Shared>,
    life: Arc<Lifecycle>,
}

/// The `/call` half of an ORS server: starts a tool call as a task whose output (a
/// `task_id` event, then the result as `chunk`* + `end`, or an `error`) is kept by the core
/// [`TaskRegistry`], and streams it from any point, so a client that lost its connection
/// resumes by sending the same call with `task_id`. The tool runs on the runtime `R` and
/// keeps running when the client goes away. The ORS [`Server`](super::Server) answers its
/// `/call`s with one; use it alone when the other routes are your application's.
/// `ssekit_hyper::ors::Calls` and `ssekit_smol::ors::Calls` name it on their runtime.
///
/// A task id started by [`try_call`](Calls::try_call) is the capability to read its result;
/// one started by [`try_call_in`](Calls::try_call_in) (as the ORS server does) resumes only
/// in its session and for its tool. Either way the ids are unguessable: they are keyed
/// by the [`TaskConfig`]'s 32-byte key: [`Calls::default`] takes one from the OS RNG; give
/// [`Calls::new`] one from [`os_seed`](crate::entropy::os_seed) too, never a constant
/// (every process would hand out the same ids, and a client resuming its task after a
/// restart would read another client's result).
///
/// # Example
/// ```
/// use ssekit::profile::ors::{ToolOutput, ToolResult};
/// use ssekit_http::{ors::Calls, runtime::Runtime};
/// // In a handler for POST /{env}/call, after parsing {name, input, task_id}:
/// fn answer<R: Runtime>(calls: &Calls<R>) -> http::Response<ssekit_http::server::SseBody<R>> {
///     let body = calls.call(None, async { Ok(ToolResult::success(ToolOutput::text("4"))) });
///     ssekit_http::server::response(body)
/// }
/// ```
pub struct Calls<R> {
    inner: Arc<Inner<R>>,
}

impl<R> Clone for Calls<R> {
    fn clone(&self) -> Self {
        Calls {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<R> std::fmt::Debug for Calls<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Calls").finish_non_exhaustive()
    }
}

impl<R: Runtime + Default> Default for Calls<R> {
    /// Task ids keyed from the OS RNG ([`os_seed`](crate::entropy::os_seed)), the other
    /// [`TaskConfig`] defaults (results kept 60 s, 1024 tasks, 64 MiB, 1024 running tasks),
    /// pings after 10 s of silence, chunks of at most 4096 bytes.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::Calls, runtime::Runtime};
    /// fn calls<R: Runtime + Default>() -> Calls<R> {
    ///     Calls::default()
    /// }
    /// ```
    fn default() -> Self {
        Calls::new(TaskConfig::new(crate::entropy::os_seed()))
    }
}

impl<R: Runtime + Default> Calls<R> {
    /// Tasks kept per `config` (id key, result TTL, bounds, id format); pings after 10 s of
    /// silence ([`KeepAlive::ORS`]); chunks of at most 4096 bytes. The config's key must be
    /// secret and random: take it from [`os_seed`](crate::entropy::os_seed).
    ///
    /// # Example
    /// ```
    /// use ssekit::server::TaskConfig;
    /// use ssekit_http::{ors::Calls, runtime::Runtime};
    /// use std::time::Duration;
    /// fn calls<R: Runtime + Default>() -> Calls<R> {
    ///     let config = TaskConfig::new(ssekit_http::entropy::os_seed()).result_ttl(Duration::from_secs(120));
    ///     Calls::new(config)
    /// }
    /// ```
    pub fn new(config: TaskConfig) -> Self {
        Calls::with_options(config, KeepAlive::ORS, ssekit::chunk::DEFAULT_MAX_CHUNK)
    }

    /// Tasks kept per `config`, pings after `keep_alive` of silence, chunks of at most
    /// `max_chunk` bytes.
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use ssekit_http::{ors::Calls, runtime::Runtime};
    /// fn calls<R: Runtime + Default>() -> Calls<R> {
    ///     let config = ssekit::server::TaskConfig::new(ssekit_http::entropy::os_seed());
    ///     Calls::with_options(config, Duration::from_secs(5), 1024)
    /// }
    /// ```
    pub fn with_options(config: TaskConfig, keep_alive: Duration, max_chunk: usize) -> Self {
        Calls::with_runtime(config, keep_alive, max_chunk, R::default())
    }
}

impl<R: Runtime> Calls<R> {
    /// As [`with_options`](Self::with_options), on this runtime value (its clock times the
    /// results' TTL; its tasks run the tools).
    ///
    /// # Example
    /// ```
    /// use std::time::Duration;
    /// use ssekit_http::{ors::Calls, runtime::Runtime};
    /// fn calls<R: Runtime>(runtime: R) -> Calls<R> {
    ///     let config = ssekit::server::TaskConfig::new(ssekit_http::entropy::os_seed());
    ///     Calls::with_runtime(config, Duration::from_secs(5), 4096, runtime)
    /// }
    /// ```
    pub fn with_runtime(
        config: TaskConfig,
        keep_alive: Duration,
        max_chunk: usize,
        runtime: R,
    ) -> Self {
        Calls {
            inner: Arc::new(Inner {
                tasks: Mutex::new(Tasks::new(config)),
                signals: Arc::default(),
                runtime,
                keep_alive,
                chunker: Chunker::new().max_chunk(max_chunk),
                shared: OnceLock::new(),
                life: Arc::new(Lifecycle {
                    in_flight: AtomicUsize::new(0),
                    idle: Notify::new(),
                    draining: AtomicBool::new(false),
                    closing: watch::channel(false).0,
                }),
            }),
        }
    }

    /// Writes every task's log to `store` too, so that a client resumes its call on any
    /// instance sharing the store: a finished task's result is read from there, and a
    /// running one is followed live while the instance running it renews its `lease`
    /// (every third of it). A task whose lease lapses unfinished (its instance died) ends,
    /// for the clients following it elsewhere, in an `error` event
    /// ([`TASK_LOST`](super::TASK_LOST)) within `lease` and a second. Results are kept in
    /// the store for the [`TaskConfig`]'s result TTL. Give the store before the first
    /// call, once: a second store is ignored.
    ///
    /// # Example
    /// ```
    /// use std::sync::Arc;
    /// use ssekit_http::{ors::Calls, runtime::Runtime, store::Store};
    /// fn calls<R: Runtime + Default>(store: Arc<dyn Store>) -> Calls<R> {
    ///     Calls::default().with_store(store, std::time::Duration::from_secs(3))
    /// }
    /// ```
    #[must_use]
    pub fn with_store(self, store: Arc<dyn Store>, lease: Duration) -> Self {
        let result_ttl = lock(&self.inner.tasks).registry.result_ttl();
        let _ = self.inner.shared.set(Shared {
            store,
            lease: lease.max(Duration::from_millis(300)),
            result_ttl,
        });
        self
    }

    /// The response body for one `/call`; the core [`TaskRegistry::open`] decides. With
    /// `task_id: None`, `run` is spawned as a new task. With `Some(id)`, a known task's output
    /// is streamed again from its start (`run` is dropped unpolled); an unknown or expired id
    /// gets an `error` event, unless the [`TaskConfig`] lets clients choose ids, in which case
    /// `run` starts under that id. `run`'s `Err(message)` becomes an `error` event; its
    /// [`ToolResult`] is chunked into `chunk`* + `end`. A `run` that panics ends the call in
    /// `error` ([`TOOL_PANICKED`](super::TOOL_PANICKED)), as does a task dropped before it
    /// finished (the runtime went away).
    ///
    /// When [`TaskConfig::max_running`] tools are running, a call that would start one is
    /// refused: `task_id` (an id never stored) then `error` [`BUSY`] (`run` is dropped
    /// unpolled). A body alone cannot carry an HTTP status; to answer such calls with a 503,
    /// which the official client retries with backoff, use [`try_call`](Self::try_call).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::Calls, runtime::Runtime};
    /// fn resume<R: Runtime>(calls: &Calls<R>) -> ssekit_http::server::SseBody<R> {
    ///     calls.call(Some("no-such-task"), async { Err("unused".to_owned()) })
    /// }
    /// ```
    pub fn call<F>(&self, task_id: Option<&str>, run: F) -> SseBody<R>
    where
        F: Future<Output = Result<ToolResult, String>> + Send + 'static,
    {
        self.try_call(task_id, run)
            .unwrap_or_else(|Busy| self.refuse(BUSY))
    }

    /// As [`call`](Self::call), but a call refused because [`TaskConfig::max_running`]
    /// tools are running is `Err(`[`Busy`]`)` (`run` is dropped unpolled), for the
    /// application to answer `503 Service Unavailable`: the official ORS client retries
    /// 5xx answers with backoff, and the call never ran, so retrying it is safe.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit::server::TaskConfig;
    /// use ssekit_http::{ors::{Busy, Calls}, runtime::Runtime};
    /// fn one_at_a_time<R: Runtime + Default>() {
    ///     let calls = Calls::<R>::new(TaskConfig::new(ssekit_http::entropy::os_seed()).max_running(1));
    ///     let _running = calls.try_call(None, std::future::pending());
    ///     assert_eq!(calls.try_call(None, async { Err("x".to_owned()) }).err(), Some(Busy));
    /// }
    /// ```
    pub fn try_call<F>(&self, task_id: Option<&str>, run: F) -> Result<SseBody<R>, Busy>
    where
        F: Future<Output = Result<ToolResult, String>> + Send + 'static,
    {
        let span = CallSpan::new("", "", task_id);
        let now = self.inner.runtime.now();
        let mut tasks = lock(&self.inner.tasks);
        tasks.expire(now);
        if task_id.is_some_and(|id| !tasks.admits(id, None)) {
            drop(tasks);
            return Ok(self.unknown(&span));
        }
        let cursor = match tasks.registry.open(task_id, now) {
            Open::Started(cursor) => {
                tasks.settle(1);
                drop(tasks);
                span.record_task_id(cursor.task_id());
                // Followed before the tool runs, so that a result not kept reaches it.
                let frames = self.follow(cursor.clone());
                // Unscoped: no other instance may resume it, so the store is not told.
                self.spawn_tool(cursor.task_id(), false, run, &span, "");
                return Ok(span.in_scope(|| self.body(frames)));
            }
            Open::Resumed(cursor) => {
                let state = tasks.registry.state(cursor.task_id());
                drop(tasks);
                resumed(&span, cursor.task_id(), state_name(state));
                cursor
            }
            Open::Busy => {
                drop(tasks);
                span.in_scope(|| refusal("busy", 503));
                return Err(Busy);
            }
            _ => {
                drop(tasks);
                return Ok(self.unknown(&span));
            }
        };
        Ok(span.in_scope(|| self.body(self.follow(cursor))))
    }

    /// A call in `scope` (the session that makes it, and the tool): as
    /// [`try_call`](Self::try_call), but a `task_id` resumes only a task started in the same
    /// scope (from another session, or for another tool, it is `unknown task_id`, as a
    /// `Last-Event-ID` of another stream is), and, with a [store](Self::with_store), a task
    /// this instance does not hold is read from the store: replayed if finished, followed
    /// live while its instance renews its lease, ended in an `error` event
    /// ([`TASK_LOST`](super::TASK_LOST)) if that instance died. A new call is recorded in
    /// the store before its stream starts, so a client cut after the `task_id` event
    /// resumes anywhere.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{ors::Calls, runtime::Runtime, store::TaskScope};
    /// async fn in_session<R: Runtime + Default>() {
    ///     let calls = Calls::<R>::default();
    ///     let body = calls.try_call_in(TaskScope::new("sid", "echo"), None, async { Err("x".to_owned()) }).await;
    ///     assert!(body.is_ok());
    /// }
    /// ```
    pub async fn try_call_in<F>(
        &self,
        scope: TaskScope,
        task_id: Option<&str>,
        run: F,
    ) -> Result<SseBody<R>, NotStarted>
    where
        F: Future<Output = Result<ToolResult, String>> + Send + 'static,
    {
        let span = CallSpan::new(&scope.session, &scope.tool, task_id);
        self.try_call_in_span(scope, task_id, run, &span).await
    }

    /// [`try_call_in`](Self::try_call_in) inside the call's `span` (made by the server
    /// before it knew whether the call would run, so that its refusals are in it too).
    pub(crate) async fn try_call_in_span<F>(
        &self,
        scope: TaskScope,
        task_id: Option<&str>,
        run: F,
        span: &CallSpan,
    ) -> Result<SseBody<R>, NotStarted>
    where
        F: Future<Output = Result<ToolResult, String>> + Send + 'static,
    {
        let now = self.inner.runtime.now();
        let cursor = match self.open_in(&scope, task_id, now, span) {
            Opened::Started(cursor) => cursor,
            Opened::Body(frames) => return Ok(span.in_scope(|| self.body(frames))),
            Opened::Unknown => return Ok(self.unknown(span)),
            Opened::Refused(refused) => return Err(refused),
        };
        span.record_task_id(cursor.task_id());
        // Followed before the tool runs, so that a result not kept reaches it.
        let frames = self.follow(cursor.clone());
        if let Some(shared) = self.inner.shared.get() {
            let _work = self.inner.life.enter();
            let id = cursor.task_id();
            let started = shared.store.start_task(id, &scope, shared.lease);
            let started = span.instrument(store_call(&self.inner.runtime, "start_task", started));
            if let Err(e) = started.await {
                // Never ran: forget it here, and let the client try again (503).
                let frames = vec![encode(&named("error", e.to_string()))];
                lock(&self.inner.tasks).complete(id, frames, now);
                return Err(NotStarted::Store(e));
            }
        }
        self.spawn_tool(cursor.task_id(), true, run, span, &scope.tool);
        Ok(span.in_scope(|| self.body(frames)))
    }

    /// A new call (no task id) with a [store](Self::with_store), started in the store with
    /// a read of its session in one request ([`Store::start_task_in_session`]) where the
    /// server would read the session first and then start the task: `run` makes the tool's
    /// run from the session's record, or refuses the call (`None`, e.g. a session of
    /// another environment). `Ok(None)`: the session is not live, or `run` refused it; the
    /// task never ran and is forgotten here, taking no place among the tasks, and its id
    /// never reached a client (in the store nothing was written, or, when `run` refused,
    /// a lease and a scope that nobody reads, which expire as any task's do). `Err` as
    /// [`try_call_in`](Self::try_call_in); `Busy` and `Draining` are decided before the
    /// session is read.
    pub(crate) async fn try_start_in_session<F, M>(
        &self,
        scope: TaskScope,
        session_ttl: Duration,
        run: M,
        span: &CallSpan,
    ) -> Result<Option<SseBody<R>>, NotStarted>
    where
        F: Future<Output = Result<ToolResult, String>> + Send + 'static,
        M: FnOnce(SessionRecord) -> Option<F>,
    {
        let Some(shared) = self.inner.shared.get() else {
            return Err(NotStarted::Store(StoreError::new("no shared store")));
        };
        let now = self.inner.runtime.now();
        let cursor = match self.open_in(&scope, None, now, span) {
            Opened::Started(cursor) => cursor,
            Opened::Body(frames) => return Ok(Some(span.in_scope(|| self.body(frames)))),
            Opened::Unknown => return Ok(Some(self.unknown(span))),
            Opened::Refused(refused) => return Err(refused),
        };
        let id = cursor.task_id().to_owned();
        let record = {
            let _work = self.inner.life.enter();
            let started =
                shared
                    .store
                    .start_task_in_session(&id, &scope, shared.lease, session_ttl);
            let started = store_call(&self.inner.runtime, "start_task_in_session", started);
            match span.instrument(started).await {
                Ok(record) => record,
                Err(e) => {
                    // Never ran: forget it here, and let the client try again (503).
                    let frames = vec![encode(&named("error", e.to_string()))];
                    lock(&self.inner.tasks).complete(&id, frames, now);
                    return Err(NotStarted::Store(e));
                }
            }
        };
        let Some(run) = record.and_then(run) else {
            lock(&self.inner.tasks).forget(&id);
            return Ok(None);
        };
        span.record_task_id(&id);
        // Followed before the tool runs, so that a result not kept reaches it.
        let frames = self.follow(cursor);
        self.spawn_tool(&id, true, run, span, &scope.tool);
        Ok(Some(span.in_scope(|| self.body(frames))))
    }

    /// The synchronous part of [`try_call_in`](Self::try_call_in), under the tasks' lock.
    fn open_in(
        &self,
        scope: &TaskScope,
        task_id: Option<&str>,
        now: ssekit::Instant,
        span: &CallSpan,
    ) -> Opened {
        let mut tasks = lock(&self.inner.tasks);
        tasks.expire(now);
        if let Some(id) = task_id {
            let known_here = tasks.registry.state(id).is_some();
            if known_here && !tasks.admits(id, Some(scope)) {
                return Opened::Unknown;
            }
            // No id this server hands out is that long: not worth a store request.
            if id.len() > MAX_TASK_ID && !known_here {
                return Opened::Unknown;
            }
            if let (false, Some(shared)) = (known_here, self.inner.shared.get()) {
                let span = span.clone();
                return Opened::Body(self.follow_shared(
                    shared,
                    id.to_owned(),
                    scope.clone(),
                    span,
                ));
            }
        } else if self.inner.life.draining.load(Ordering::SeqCst) {
            return Opened::Refused(NotStarted::Draining);
        }
        match tasks.registry.open_owned(task_id, &scope.session, now) {
            Open::Started(cursor) => {
                tasks.settle(1);
                tasks
                    .scopes
                    .insert(cursor.task_id().to_owned(), scope.clone());
                tasks.prune_scopes();
                Opened::Started(cursor)
            }
            Open::Resumed(cursor) => {
                let state = tasks.registry.state(cursor.task_id());
                drop(tasks);
                resumed(span, cursor.task_id(), state_name(state));
                Opened::Body(self.follow(cursor))
            }
            Open::Busy => Opened::Refused(NotStarted::Busy),
            _ => Opened::Unknown,
        }
    }

    /// Runs a started task's tool on the runtime: its frames are recorded here (and, when
    /// `stored`, in the store) when it ends, however it ends; a stored task's lease is
    /// renewed meanwhile.
    fn spawn_tool<F>(&self, task_id: &str, stored: bool, run: F, span: &CallSpan, tool: &str)
    where
        F: Future<Output = Result<ToolResult, String>> + Send + 'static,
    {
        let stored = stored && self.inner.shared.get().is_some();
        let id = task_id.to_owned();
        let inner = Arc::clone(&self.inner);
        let running = Arc::new(AtomicBool::new(true));
        let ended = Arc::clone(&running);
        span.in_scope(|| log!(debug, "ORS call started"));
        // Counted running from now until the call's frames are recorded.
        let running_call = observe::Open::new(observe::ORS_CALLS_RUNNING);
        let started = self.inner.runtime.now();
        let (call_span, tool) = (span.clone(), tool.to_owned());
        // Every exit of the task (its end, a panic, the runtime dropping it) finishes the
        // call: its clients, kept alive by pings, never wait for ever.
        let completion = Completion::new(move |frames: Vec<Bytes>| {
            let _running = running_call;
            ended.store(false, Ordering::SeqCst);
            let now = inner.runtime.now();
            call_ended(&call_span, &id, &tool, &frames, now - started);
            let stored = stored.then(|| frames.clone());
            lock(&inner.tasks).complete(&id, frames, now);
            inner.signals.signal(&id, Notify::notify_waiters);
            if let Some(frames) = stored {
                let writer = Arc::clone(&inner);
                let work = inner.life.enter();
                inner.runtime.spawn(call_span.instrument(async move {
                    let _work = work;
                    if let Some(shared) = writer.shared.get() {
                        let ttl = shared.result_ttl;
                        // On failure the lease lapses and resumers elsewhere get TASK_LOST.
                        let appended = shared.store.append_task(&id, &frames, true, ttl);
                        if store_call(&writer.runtime, "append_task", appended)
                            .await
                            .is_err()
                        {
                            log!(
                                warn,
                                "the call's result is not in the shared store: clients \
                                 resuming it at other instances will find it lost"
                            );
                        }
                    }
                }));
            }
        });
        if let Some(shared) = self.inner.shared.get().filter(|_| stored) {
            let (store, lease, id) = (Arc::clone(&shared.store), shared.lease, task_id.to_owned());
            let runtime = self.inner.runtime.clone();
            let running = Arc::clone(&running);
            self.inner.runtime.spawn(span.instrument(async move {
                let mut renewed = runtime.now();
                let mut lost = false;
                loop {
                    runtime.sleep(lease / 3).await;
                    if !running.load(Ordering::SeqCst) {
                        break;
                    }
                    let renewal = store_call(&runtime, "renew_task", store.renew_task(&id, lease));
                    if renewal.await.is_ok() {
                        renewed = runtime.now();
                    } else if !lost && runtime.now() - renewed >= lease {
                        // Once lapsed, a renewal does not bring the lease back.
                        lost = true;
                        log!(
                            warn,
                            lease_ms = u64::try_from(lease.as_millis()).unwrap_or(u64::MAX),
                            "ORS task lease lost: clients following the call from other \
                             instances see it lost"
                        );
                    }
                }
            }));
        }
        let chunker = self.inner.chunker;
        let work = self.inner.life.enter();
        self.inner.runtime.spawn(span.instrument(async move {
            let _work = work;
            let outcome = run_tool(|| run).await;
            completion.finish(call_frames(outcome, &chunker));
        }));
    }

    /// The stream of an unknown (or expired, or not admitted) task id.
    fn unknown(&self, span: &CallSpan) -> SseBody<R> {
        span.in_scope(|| {
            refusal("unknown_task", 200);
            self.body(unknown_frames())
        })
    }

    /// Stops taking new calls ([`try_call_in`](Self::try_call_in) answers
    /// [`NotStarted::Draining`]), waits until the running tools have finished and their
    /// logs are in the store, for at most `deadline`, then ends every open stream of these
    /// calls with `retry: 250` (so that clients come back soon, to another instance) and
    /// returns how many tools were still running. Resumes are served until the end.
    ///
    /// # Example
    /// ```no_run
    /// use ssekit_http::{ors::Calls, runtime::Runtime};
    /// async fn idle<R: Runtime + Default>() {
    ///     let calls = Calls::<R>::default();
    ///     assert_eq!(calls.drain(std::time::Duration::from_secs(5)).await, 0);
    /// }
    /// ```
    pub async fn drain(&self, deadline: Duration) -> usize {
        let life = &self.inner.life;
        life.draining.store(true, Ordering::SeqCst);
        log!(
            info,
            in_flight = life.in_flight.load(Ordering::SeqCst),
            deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
            "ORS drain: new calls refused, waiting for running tools and store writes"
        );
        let until = self.inner.runtime.now().saturating_add(deadline);
        loop {
            let idle = life.idle.notified();
            if life.in_flight.load(Ordering::SeqCst) == 0 || self.inner.runtime.now() >= until {
                break;
            }
            let timer = self.inner.runtime.sleep_until(until);
            futures_lite::future::or(idle, async move {
                timer.await;
            })
            .await;
        }
        life.closing.send_replace(true);
        let left = life.in_flight.load(Ordering::SeqCst);
        #[cfg(feature = "tracing")]
        if left == 0 {
            tracing::info!("ORS drain: done; ending open streams with retry");
        } else {
            tracing::warn!(
                left,
                "ORS drain: deadline passed with tools running; ending open streams with retry"
            );
        }
        left
    }

    /// `frames` until [`drain`](Self::drain) ends the streams: then `retry: 250` and the end.
    /// The ORS server passes its other streams through here too.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::Calls, runtime::{Frames, Runtime}};
    /// fn news<R: Runtime>(calls: &Calls<R>) -> Frames {
    ///     calls.until_drained(Box::pin(futures_lite::stream::iter([bytes::Bytes::from_static(b"data: x\n\n")])))
    /// }
    /// ```
    pub fn until_drained(&self, frames: Frames) -> Frames {
        let closing = self.inner.life.closing.subscribe();
        Box::pin(stream::unfold(
            Some((frames, closing)),
            |state| async move {
                let (mut frames, mut closing) = state?;
                let closed = async {
                    let _ = closing.wait_for(|closed| *closed).await;
                    None
                };
                let next = async { Some(futures_lite::StreamExt::next(&mut frames).await) };
                match futures_lite::future::or(next, closed).await {
                    Some(Some(frame)) => Some((frame, Some((frames, closing)))),
                    Some(None) => None,
                    None => Some((Bytes::from_static(DRAINED_RETRY), None)),
                }
            },
        ))
    }

    /// A task this instance does not hold, read from the store: scope checked, `task_id`,
    /// the stored frames, then live progress until the terminal event; `error`
    /// ([`TASK_LOST`](super::TASK_LOST)) if the producer's lease lapses first.
    fn follow_shared(
        &self,
        shared: &Shared,
        task_id: String,
        scope: TaskScope,
        span: CallSpan,
    ) -> Frames {
        let state = SharedFollow {
            span,
            store: Arc::clone(&shared.store),
            runtime: self.inner.runtime.clone(),
            recheck: (shared.lease / 3).max(Duration::from_millis(100)),
            task_id,
            scope,
            pending: std::collections::VecDeque::new(),
            next: None,
            done: false,
        };
        Box::pin(stream::unfold(state, |mut state| async move {
            let frame = state.next_frame().await?;
            Some((frame, state))
        }))
    }
    /// The tasks this instance keeps (running, and finished within their TTL) and the bytes
    /// of their results: what `ssekit_ors_result_bytes` reports, bounded by
    /// [`TaskConfig::max_bytes`].
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::Calls, runtime::Runtime};
    /// fn empty<R: Runtime>(calls: &Calls<R>) -> bool {
    ///     calls.kept() == (0, 0)
    /// }
    /// ```
    pub fn kept(&self) -> (usize, usize) {
        let tasks = lock(&self.inner.tasks);
        (tasks.registry.len(), tasks.registry.retained_bytes())
    }

    /// The stream of a call refused before it ran (no session, unknown tool): `task_id`
    /// with an id never stored, then `error` with `message`. It takes no place among the
    /// tasks, so refusals cannot evict other clients' cached results.
    ///
    /// # Example
    /// ```
    /// use ssekit_http::{ors::Calls, runtime::Runtime};
    /// fn no_session<R: Runtime>(calls: &Calls<R>) -> ssekit_http::server::SseBody<R> {
    ///     calls.refuse("Session not found")
    /// }
    /// ```
    pub fn refuse(&self, message: &str) -> SseBody<R> {
        let frames = refused(&mut lock(&self.inner.tasks).registry, message);
        self.body(Box::pin(stream::iter(frames)))
    }

    /// An event stream of `frames` with this server's keep-alive, ended by
    /// [`drain`](Self::drain).
    pub(crate) fn body(&self, frames: Frames) -> SseBody<R> {
        let frames = self.until_drained(frames);
        SseBody::from_bytes_on(self.inner.runtime.clone(), frames).keep_alive(self.inner.keep_alive)
    }

    /// `task_id`, then the task's output as it is produced, until it finishes (or, if the
    /// registry does not keep its result, the result handed over as it finishes).
    fn follow(&self, cursor: Cursor) -> Frames {
        let slot = lock(&self.inner.tasks).slot(cursor.task_id());
        let state = (
            Arc::clone(&self.inner),
            self.inner.signals.follow(cursor.task_id()),
            Follow::new(cursor),
            slot,
        );
        Box::pin(stream::unfold(
            state,
            |(inner, following, mut follow, slot)| async move {
                loop {
                    if let Some(frame) = follow.next_frame() {
                        return Some((frame, (inner, following, follow, slot)));
                    }
                    if follow.is_done() {
                        return None;
                    }
                    // Made before reading, so a finish in between wakes it (`notify_waiters`
                    // reaches every `Notified` made before it, polled or not).
                    let finished = following.notified();
                    {
                        // The slot is filled under this lock, before the task is finished.
                        let tasks = lock(&inner.tasks);
                        match slot.as_ref().and_then(|slot| slot.get()) {
                            Some(frames) => follow.deliver(frames.iter().cloned()),
                            None => follow.read(&tasks.registry),
                        }
                    }
                    if follow.is_waiting() {
                        finished.await;
                    }
                }
            },
        ))
    }
}

/// The longest task id looked up in the store (the ids handed out are 32 or 36 characters).
const MAX_TASK_ID: usize = 128;

/// What [`drain`](Calls::drain) sends before it ends a stream: come back in a quarter second.
const DRAINED_RETRY: &[u8] = b"retry: 250\n\n";

/// Why [`Calls::try_call_in`] did not start a call (answer `503 Service Unavailable`: the
/// tool did not run, so the client's retry is safe).
///
/// # Example
/// ```
/// use ssekit_http::ors::NotStarted;
/// assert_eq!(NotStarted::Busy.to_string(), ssekit_http::ors::BUSY);
/// assert_eq!(NotStarted::Draining.to_string(), ssekit_http::ors::SHUTTING_DOWN);
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NotStarted {
    /// [`TaskConfig::max_running`] tools are running.
    Busy,
    /// The instance is shutting down ([`Calls::drain`]).
    Draining,
    /// The store could not record the call.
    Store(StoreError),
}

impl std::fmt::Display for NotStarted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NotStarted::Busy => f.write_str(BUSY),
            NotStarted::Draining => f.write_str(SHUTTING_DOWN),
            NotStarted::Store(e) => e.fmt(f),
        }
    }
}

impl std::error::Error for NotStarted {}

/// One connection following a task held by another instance, through the store.
struct SharedFollow<R> {
    span: CallSpan,
    store: Arc<dyn Store>,
    runtime: R,
    /// How often the producer's lease is checked while nothing changes.
    recheck: Duration,
    task_id: String,
    scope: TaskScope,
    pending: std::collections::VecDeque<Bytes>,
    /// Where to read the log next; `None` until the scope is checked.
    next: Option<String>,
    done: bool,
}

impl<R: Runtime> SharedFollow<R> {
    async fn next_frame(&mut self) -> Option<Bytes> {
        loop {
            if let Some(frame) = self.pending.pop_front() {
                return Some(frame);
            }
            if self.done {
                return None;
            }
            let Some(after) = self.next.clone() else {
                self.check_scope().await;
                continue;
            };
            let changed = self.store.changed(Log::Task(&self.task_id));
            let read = self.store.read_task(&self.task_id, &after);
            let read = self
                .span
                .instrument(store_call(&self.runtime, "read_task", read));
            match read.await {
                Ok(log) => {
                    let running = log.is_running();
                    self.pending.extend(log.frames);
                    self.next = Some(log.next);
                    if log.finished {
                        self.done = true;
                    } else if !log.producer_alive {
                        observe::count_by(observe::ORS_CALLS_TOTAL, "outcome", "lost", 1);
                        self.span.in_scope(|| {
                            log!(
                                warn,
                                outcome = "lost",
                                "ORS call lost: the instance running it stopped renewing its \
                                 lease before it finished"
                            );
                        });
                        self.pending.push_back(encode(&named("error", TASK_LOST)));
                        self.done = true;
                    } else if running && self.pending.is_empty() {
                        changed_or_after(&self.runtime, changed, self.recheck).await;
                    }
                }
                Err(e) => self.fail(&e),
            }
        }
    }

    async fn check_scope(&mut self) {
        let scope = self.store.task_scope(&self.task_id);
        let scope = self
            .span
            .instrument(store_call(&self.runtime, "task_scope", scope));
        match scope.await {
            Ok(Some(owner)) if owner == self.scope => {
                resumed(&self.span, &self.task_id, "stored");
                let id = Utf8Bytes::from(self.task_id.clone());
                self.pending.push_back(encode(&named("task_id", id)));
                self.next = Some("0".to_owned());
            }
            Ok(_) => {
                self.span.in_scope(|| refusal("unknown_task", 200));
                let unknown = TaskRegistry::<Bytes>::unknown_task_event();
                self.pending.push_back(encode(&unknown));
                self.done = true;
            }
            Err(e) => self.fail(&e),
        }
    }

    fn fail(&mut self, e: &StoreError) {
        self.pending
            .push_back(encode(&named("error", e.to_string())));
        self.done = true;
    }
}

/// What [`Calls::open_in`] decided.
enum Opened {
    /// A new task: run its tool and follow it.
    Started(Cursor),
    /// A stream to send as it is (a resume).
    Body(Frames),
    /// An unknown (or expired, or not admitted) task id.
    Unknown,
    /// No stream: answer 503.
    Refused(NotStarted),
}

/// Counts a resumed call and says so, with the task's `state` (`running`, `finished`, or
/// `stored`: held by another instance, read from the store). A resume replays the task
/// from its first chunk.
fn resumed(span: &CallSpan, task_id: &str, state: &'static str) {
    observe::count(observe::ORS_RESUMES_TOTAL, 1);
    span.in_scope(|| log!(info, task_id, state, from_chunk = 0, "ORS call resumed"));
    #[cfg(not(feature = "tracing"))]
    let _ = (task_id, state);
}

/// A task's state as a log field.
fn state_name(state: Option<TaskState>) -> &'static str {
    match state {
        Some(TaskState::Finished) => "finished",
        _ => "running",
    }
}

/// Counts a call that ended with `frames` after `took`, by outcome (`finished`: an `end`;
/// `lost`: its task was dropped before it finished; `error`), and logs its end at `info`
/// (target `ssekit::access`, beside the streams' lines), with a `warn` first when the tool
/// panicked or its task was dropped.
fn call_ended(span: &CallSpan, task_id: &str, tool: &str, frames: &[Bytes], took: Duration) {
    let last = frames.last().map_or(&b""[..], |f| &f[..]);
    let outcome = if last.starts_with(b"event: end\n") {
        "finished"
    } else if frames.len() == 1 && last == encode(&named("error", CALL_ABANDONED)) {
        "lost"
    } else {
        "error"
    };
    observe::count_by(observe::ORS_CALLS_TOTAL, "outcome", outcome, 1);
    #[cfg(feature = "tracing")]
    span.in_scope(|| {
        if outcome == "lost" {
            tracing::warn!(
                "ORS call lost: its task was dropped before it finished (cancelled, or the \
                 runtime shut down)"
            );
        } else if frames.len() == 1 && last == encode(&named("error", TOOL_PANICKED)) {
            tracing::warn!("ORS tool panicked");
        }
        let bytes: usize = frames.iter().map(Bytes::len).sum();
        tracing::info!(
            target: "ssekit::access",
            task_id,
            tool,
            outcome,
            duration_ms = u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            bytes,
            chunks = frames.len(),
            "ORS call ended"
        );
    });
    #[cfg(not(feature = "tracing"))]
    let _ = (span, task_id, tool, took, TOOL_PANICKED);
}

/// The stream of an unknown (or expired, or not admitted) task id.
fn unknown_frames() -> Frames {
    let frame = encode(&TaskRegistry::<Bytes>::unknown_task_event());
    Box::pin(stream::iter([frame]))
}
