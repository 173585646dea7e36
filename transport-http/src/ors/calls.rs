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

use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use futures_lite::stream;
use ssekit::chunk::Chunker;
use ssekit::profile::ors::ToolResult;
use ssekit::server::{Cursor, KeepAlive, Open, TaskConfig, TaskRegistry};
use tokio::sync::Notify;

use super::BUSY;
use super::{call_frames, complete, encode, refused, run_tool, Completion, Follow, TaskSignals};
use crate::runtime::{Frames, Runtime};

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

struct Inner<R> {
    tasks: Mutex<TaskRegistry<Bytes>>,
    /// Wakes the connections that follow a task when it finishes.
    signals: Arc<TaskSignals<Notify>>,
    runtime: R,
    keep_alive: Duration,
    chunker: Chunker,
}

/// The `/call` half of an ORS server: starts a tool call as a task whose output (a
/// `task_id` event, then the result as `chunk`* + `end`, or an `error`) is kept by the core
/// [`TaskRegistry`], and streams it from any point, so a client that lost its connection
/// resumes by sending the same call with `task_id`. The tool runs on the runtime `R` and
/// keeps running when the client goes away. The ORS [`Server`](super::Server) answers its
/// `/call`s with one; use it alone when the other routes are your application's.
/// `ssekit_hyper::ors::Calls` and `ssekit_smol::ors::Calls` name it on their runtime.
///
/// A task id is the capability to read its result (from any session), so the ids are keyed
/// by the [`TaskConfig`]'s 32-byte key: [`Calls::default`] takes one from the OS RNG; give
/// [`Calls::new`] one from [`os_seed`](crate::entropy::os_seed) too, never a constant
/// (every process would hand out the same ids, and a client resuming its task after a
/// restart would read another client's result).
///
/// # Example
/// ```
/// use ssekit::profile::ors::{ToolOutput, ToolResult};
/// use ssekit_smol::ors::Calls;
/// let calls = Calls::default();
/// // In a handler for POST /{env}/call, after parsing {name, input, task_id}:
/// let body = calls.call(None, async { Ok(ToolResult::success(ToolOutput::text("4"))) });
/// let resp = ssekit_smol::server::response(body);
/// # let _ = resp;
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

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl<R: Runtime + Default> Default for Calls<R> {
    /// Task ids keyed from the OS RNG ([`os_seed`](crate::entropy::os_seed)), the other
    /// [`TaskConfig`] defaults (results kept 60 s, 1024 tasks, 64 MiB, 1024 running tasks),
    /// pings after 10 s of silence, chunks of at most 4096 bytes.
    ///
    /// # Example
    /// ```
    /// let calls = ssekit_smol::ors::Calls::default();
    /// # let _ = calls;
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
    /// use std::time::Duration;
    /// let config = TaskConfig::new(ssekit_http::entropy::os_seed()).result_ttl(Duration::from_secs(120));
    /// let calls = ssekit_smol::ors::Calls::new(config);
    /// # let _ = calls;
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
    /// let config = ssekit::server::TaskConfig::new(ssekit_http::entropy::os_seed());
    /// let calls = ssekit_smol::ors::Calls::with_options(config, Duration::from_secs(5), 1024);
    /// # let _ = calls;
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
    /// use ssekit_http::ors::Calls;
    /// let config = ssekit::server::TaskConfig::new(ssekit_http::entropy::os_seed());
    /// let calls = Calls::with_runtime(config, Duration::from_secs(5), 4096, ssekit_smol::runtime::Smol::default());
    /// # let _ = calls;
    /// ```
    pub fn with_runtime(
        config: TaskConfig,
        keep_alive: Duration,
        max_chunk: usize,
        runtime: R,
    ) -> Self {
        Calls {
            inner: Arc::new(Inner {
                tasks: Mutex::new(TaskRegistry::new(config)),
                signals: Arc::default(),
                runtime,
                keep_alive,
                chunker: Chunker::new().max_chunk(max_chunk),
            }),
        }
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
    /// let calls = ssekit_smol::ors::Calls::default();
    /// let body = calls.call(Some("no-such-task"), async { Err("unused".to_owned()) });
    /// # let _ = body;
    /// ```
    pub fn call<F>(&self, task_id: Option<&str>, run: F) -> R::Body
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
    /// ```
    /// use ssekit::server::TaskConfig;
    /// use ssekit_smol::ors::{Busy, Calls};
    /// let calls = Calls::new(TaskConfig::new(ssekit_http::entropy::os_seed()).max_running(1));
    /// let _running = calls.try_call(None, std::future::pending());
    /// assert_eq!(calls.try_call(None, async { Err("x".to_owned()) }).err(), Some(Busy));
    /// ```
    pub fn try_call<F>(&self, task_id: Option<&str>, run: F) -> Result<R::Body, Busy>
    where
        F: Future<Output = Result<ToolResult, String>> + Send + 'static,
    {
        let now = self.inner.runtime.now();
        let mut tasks = lock(&self.inner.tasks);
        tasks.handle_timeout(now);
        let cursor = match tasks.open(task_id, now) {
            Open::Started(cursor) => {
                let id = cursor.task_id().to_owned();
                let inner = Arc::clone(&self.inner);
                // Every exit of the task (its end, a panic, the runtime dropping it)
                // finishes the call: its clients, kept alive by pings, never wait for ever.
                let completion = Completion::new(move |frames| {
                    let now = inner.runtime.now();
                    complete(&mut lock(&inner.tasks), &id, frames, now);
                    inner.signals.signal(&id, Notify::notify_waiters);
                });
                let chunker = self.inner.chunker;
                self.inner.runtime.spawn(async move {
                    let outcome = run_tool(|| run).await;
                    completion.finish(call_frames(outcome, &chunker));
                });
                cursor
            }
            Open::Resumed(cursor) => cursor,
            Open::Busy => return Err(Busy),
            _ => {
                let frame = encode(&TaskRegistry::<Bytes>::unknown_task_event());
                drop(tasks);
                return Ok(self.body(Box::pin(stream::iter([frame]))));
            }
        };
        drop(tasks);
        Ok(self.body(self.follow(cursor)))
    }

    /// The stream of a call refused before it ran (no session, unknown tool): `task_id`
    /// with an id never stored, then `error` with `message`. It takes no place among the
    /// tasks, so refusals cannot evict other clients' cached results.
    ///
    /// # Example
    /// ```
    /// let calls = ssekit_smol::ors::Calls::default();
    /// let body = calls.refuse("Session not found");
    /// # let _ = body;
    /// ```
    pub fn refuse(&self, message: &str) -> R::Body {
        let frames = refused(&mut lock(&self.inner.tasks), message);
        self.body(Box::pin(stream::iter(frames)))
    }

    /// An event stream of `frames` with this server's keep-alive.
    pub(crate) fn body(&self, frames: Frames) -> R::Body {
        self.inner.runtime.sse_body(frames, self.inner.keep_alive)
    }

    /// `task_id`, then the task's output as it is produced, until it finishes.
    fn follow(&self, cursor: Cursor) -> Frames {
        let state = (
            Arc::clone(&self.inner),
            self.inner.signals.follow(cursor.task_id()),
            Follow::new(cursor),
        );
        Box::pin(stream::unfold(
            state,
            |(inner, following, mut follow)| async move {
                loop {
                    if let Some(frame) = follow.next_frame() {
                        return Some((frame, (inner, following, follow)));
                    }
                    if follow.is_done() {
                        return None;
                    }
                    // Made before reading, so a finish in between wakes it (`notify_waiters`
                    // reaches every `Notified` made before it, polled or not).
                    let finished = following.notified();
                    follow.read(&lock(&inner.tasks));
                    if follow.is_waiting() {
                        finished.await;
                    }
                }
            },
        ))
    }
}
