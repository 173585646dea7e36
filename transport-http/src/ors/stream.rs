//! The server's `/call` stream: outcome ─▶ [`call_frames`] (Chunker: `chunk`* + `end` |
//! `error`) ─▶ [`complete`] (TaskRegistry push + finish) ─▶ wake followers; each connection
//! is a [`Follow`]: `task_id`, then the task's output from its start, until it finishes.
//! The tool runs under [`run_tool`] (a panic becomes an error) and its task is finished by a
//! [`Completion`] (a task dropped unfinished still ends in `error`).

use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::task::Poll;

use bytes::{Bytes, BytesMut};
use ssekit::chunk::{ChunkError, Chunker};
use ssekit::profile::ors::ToolResult;
use ssekit::server::{Cursor, TaskError, TaskRegistry, TaskState};
use ssekit::{Encoder, Event, Instant, Utf8Bytes};

/// Encodes an event built with a valid name (as every event here is); an event that could
/// not be encoded would be an empty frame, which is harmless.
///
/// # Example
/// ```
/// let wire = ssekit_http::ors::encode(&ssekit_http::ors::named("end", "{}"));
/// assert_eq!(wire, "event: end\ndata: {}\n\n");
/// ```
pub fn encode(event: &Event) -> Bytes {
    let encoder = Encoder::new();
    let mut out = BytesMut::with_capacity(encoder.encoded_len(event));
    let _ = encoder.encode(event, &mut out);
    out.freeze()
}

/// An event named `name` (a fixed, valid ORS event name) with `data`.
///
/// # Example
/// ```
/// let ev = ssekit_http::ors::named("error", "the tool failed");
/// assert_eq!((ev.event_type(), ev.data()), ("error", "the tool failed"));
/// ```
pub fn named(name: &'static str, data: impl Into<Utf8Bytes>) -> Event {
    match Event::builder().event(name) {
        Ok(b) => b.data(data).build(),
        Err(_) => Event::message(data),
    }
}

/// The frames of a finished call: the result as `chunk`* + `end` (pieces of at most the
/// chunker's size, on UTF-8 boundaries), or one `error` event with the tool's message (or an
/// internal error when the result cannot be sent intact).
///
/// A result whose strings hold a whitespace run longer than a chunk (which a strip-safe
/// chunker cannot cut: every piece would start or end in whitespace a client strips) is sent
/// with that whitespace written as JSON escapes (`\u0020`): the same JSON value, which the
/// client parses back to the same result.
///
/// # Example
/// ```
/// use ssekit::chunk::Chunker;
/// use ssekit::profile::ors::{ToolOutput, ToolResult};
/// let ok = ToolResult::success(ToolOutput::text("4"));
/// let frames = ssekit_http::ors::call_frames(Ok(ok), &Chunker::new());
/// assert!(frames.last().is_some_and(|f| f.starts_with(b"event: end\n")));
/// let failed = ssekit_http::ors::call_frames(Err("no such file".into()), &Chunker::new());
/// assert_eq!(failed, ["event: error\ndata: no such file\n\n"]);
/// ```
pub fn call_frames(outcome: Result<ToolResult, String>, chunker: &Chunker) -> Vec<Bytes> {
    let result = match outcome {
        Ok(result) => result,
        Err(message) => return vec![encode(&named("error", message))],
    };
    let chunks = serde_json::to_string(&result)
        .map_err(|e| e.to_string())
        .and_then(|json| {
            let json = Utf8Bytes::from(json);
            match chunker.chunk(json.clone()) {
                Err(ChunkError::NoBoundary { .. }) => {
                    chunker.chunk(escape_whitespace_in_strings(&json))
                }
                chunks => chunks,
            }
            .map_err(|e| e.to_string())
        });
    match chunks {
        Ok(pieces) => pieces.map(|p| encode(&p.into_event())).collect(),
        Err(e) => vec![encode(&named("error", format!("internal error: {e}")))],
    }
}

/// Compact JSON with every whitespace character inside its strings written as a `\uXXXX`
/// escape (compact JSON has none outside them): the same value, without a run of whitespace
/// a strip-safe chunker could not cut.
fn escape_whitespace_in_strings(json: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(json.len() + json.len() / 8);
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            } else if c.is_whitespace() {
                // Whitespace is in the Basic Multilingual Plane: one escape each.
                let _ = write!(out, "\\u{:04x}", u32::from(c));
                continue;
            }
        } else if c == '"' {
            in_string = true;
        }
        out.push(c);
    }
    out
}

/// Records a task's output and marks it finished at `now`: [`try_complete`], for callers
/// that do not need to know whether the result was kept.
///
/// # Example
/// ```
/// use ssekit::server::{TaskConfig, TaskRegistry};
/// use ssekit::Instant;
/// let mut tasks = TaskRegistry::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
/// let cursor = tasks.start(Instant::ZERO).unwrap();
/// ssekit_http::ors::complete(&mut tasks, cursor.task_id(), Vec::new(), Instant::ZERO);
/// assert!(tasks.state(cursor.task_id()).is_some());
/// ```
pub fn complete(tasks: &mut TaskRegistry<Bytes>, task_id: &str, frames: Vec<Bytes>, now: Instant) {
    let _ = try_complete(tasks, task_id, frames, now);
}

/// Records a task's output and marks it finished at `now`. `Err` when the result was not
/// kept for resumption (the registry would have had to evict another owner's result, see
/// its "Fair caching"): [`TaskError::OverBudget`] or [`TaskError::OwnerOverBudget`] (the
/// task's output is then the one `error` event [`NOT_KEPT`], if even that fits), or
/// [`TaskError::TooManyResults`] (the task is forgotten: a resume gets `unknown task_id`).
/// The connections following the call when it finished must then get `frames` by other
/// means, as `Calls` does ([`Follow::deliver`], with [`NOT_RESUMABLE`] first).
///
/// # Example
/// ```
/// use ssekit::server::{TaskConfig, TaskRegistry};
/// use ssekit::Instant;
/// let mut tasks = TaskRegistry::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
/// let cursor = tasks.start(Instant::ZERO).unwrap();
/// let kept = ssekit_http::ors::try_complete(&mut tasks, cursor.task_id(), ssekit_http::ors::call_frames(Err("x".into()), &Default::default()), Instant::ZERO);
/// assert_eq!(kept, Ok(()));
/// let mut follow = ssekit_http::ors::Follow::new(cursor);
/// follow.read(&tasks);
/// assert_eq!(follow.next_frame().map(|f| f.starts_with(b"event: task_id")), Some(true));
/// assert_eq!(follow.next_frame().map(|f| f.starts_with(b"event: error")), Some(true));
/// assert!(follow.next_frame().is_none() && follow.is_done());
/// ```
pub fn try_complete(
    tasks: &mut TaskRegistry<Bytes>,
    task_id: &str,
    frames: Vec<Bytes>,
    now: Instant,
) -> Result<(), TaskError> {
    let total = frames.iter().map(Bytes::len).sum();
    // Checked whole first: a result that will not fit evicts nothing on its way.
    let mut refused = tasks.fits(task_id, total).err();
    let frames = if refused.is_some() {
        Vec::new()
    } else {
        frames
    };
    if matches!(
        refused,
        Some(TaskError::OverBudget | TaskError::OwnerOverBudget)
    ) {
        let _ = tasks.push(task_id, encode(&named("error", NOT_KEPT)));
    }
    for frame in frames {
        match tasks.push(task_id, frame) {
            Ok(()) => {}
            Err(e @ (TaskError::OverBudget | TaskError::OwnerOverBudget)) => {
                // What fitted goes too: a resume gets the short error, not half a result.
                let _ = tasks.discard(task_id);
                let _ = tasks.push(task_id, encode(&named("error", NOT_KEPT)));
                refused = Some(e);
                break;
            }
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let finished = tasks.finish(task_id, now);
    match (refused, finished) {
        (Some(e), _) | (None, Err(e)) => Err(e),
        (None, Ok(())) => Ok(()),
    }
}

/// The `error` event a resume of a call gets when its result was not kept (the server's
/// result cache had no room for it without evicting another session's results): the call
/// cannot be resumed, though its own stream got the result.
///
/// # Example
/// ```
/// assert!(ssekit_http::ors::NOT_KEPT.starts_with("result not kept"));
/// ```
pub const NOT_KEPT: &str =
    "result not kept: the server's result cache was full when the call finished; call again";

/// The comment a call's stream carries before its result when that result was not kept
/// ([`NOT_KEPT`]): the stream still ends with the whole result, but a resume with its
/// `task_id` will not get it. Clients ignore comments; a client that cares looks for it.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::ors::NOT_RESUMABLE, ": not resumable: result not kept\n\n");
/// ```
pub const NOT_RESUMABLE: &str = ": not resumable: result not kept\n\n";

/// The `error` message of a call whose tool panicked (while its future was built or polled).
///
/// # Example
/// ```
/// assert!(ssekit_http::ors::TOOL_PANICKED.starts_with("internal error"));
/// ```
pub const TOOL_PANICKED: &str = "internal error: the tool panicked";

/// The `error` message of a call refused because too many tools are running (the task
/// registry's `max_running`), where no HTTP status can say so.
///
/// # Example
/// ```
/// assert_eq!(ssekit_http::ors::BUSY, "server busy: too many running tool calls");
/// ```
pub const BUSY: &str = "server busy: too many running tool calls";

/// The `error` message of a call refused because the server is shutting down
/// (`Calls::drain`, feature `ors-server`), where no HTTP status can say so.
///
/// # Example
/// ```
/// assert!(ssekit_http::ors::SHUTTING_DOWN.starts_with("server shutting down"));
/// ```
pub const SHUTTING_DOWN: &str = "server shutting down: call again";

/// The `error` message a client following a task held by another instance gets when that
/// instance stopped (its lease in the shared store lapsed) before the task finished: the
/// result is lost, and the tool is not run a second time.
///
/// # Example
/// ```
/// assert!(ssekit_http::ors::TASK_LOST.starts_with("task lost"));
/// ```
pub const TASK_LOST: &str = "task lost: the server instance running it stopped before it finished";

/// The `error` message of a call whose task was dropped before it finished: cancelled, or
/// its runtime shut down.
///
/// # Example
/// ```
/// assert!(ssekit_http::ors::CALL_ABANDONED.starts_with("internal error"));
/// ```
pub const CALL_ABANDONED: &str = "internal error: the tool call ended without a result";

/// Runs a tool: builds its future with `build`, then polls it to the end. A panic in either
/// (a tool's synchronous part runs in `build`) is `Err(`[`TOOL_PANICKED`]`)`, so the call
/// still ends in an `error` event instead of leaving its clients waiting, kept alive by
/// pings, for ever.
///
/// # Example
/// ```
/// use ssekit::profile::ors::ToolResult;
/// use ssekit_http::ors::{run_tool, TOOL_PANICKED};
/// let build = || -> std::future::Ready<Result<ToolResult, String>> { panic!("a tool bug") };
/// let outcome = futures_lite::future::block_on(run_tool(build));
/// assert_eq!(outcome.unwrap_err(), TOOL_PANICKED);
/// ```
pub async fn run_tool<B, F>(build: B) -> Result<ToolResult, String>
where
    B: FnOnce() -> F,
    F: Future<Output = Result<ToolResult, String>>,
{
    let Ok(future) = catch_unwind(AssertUnwindSafe(build)) else {
        return Err(TOOL_PANICKED.to_owned());
    };
    let mut future = std::pin::pin!(future);
    std::future::poll_fn(
        |cx| match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(outcome)) => Poll::Ready(outcome),
            Err(_) => Poll::Ready(Err(TOOL_PANICKED.to_owned())),
        },
    )
    .await
}

/// Finishes a running task exactly once: [`finish`](Self::finish) hands `record` the
/// call's frames; dropped unfinished (the task that held it panicked, was cancelled, or its
/// runtime shut down), it hands `record` one `error` event ([`CALL_ABANDONED`]). Every exit
/// of the task that runs a tool so ends the call in `end` or `error`. `record` is where the
/// transport calls [`complete`] under its lock and wakes the task's followers.
///
/// # Example
/// ```
/// use std::sync::{Arc, Mutex};
/// use ssekit_http::ors::Completion;
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let record = { let seen = Arc::clone(&seen); move |frames| *seen.lock().unwrap() = frames };
/// drop(Completion::new(record)); // e.g. the runtime dropped the tool's task
/// assert_eq!(seen.lock().unwrap()[0], "event: error\ndata: internal error: the tool call ended without a result\n\n");
/// ```
#[must_use = "dropping a Completion finishes its task with an error"]
pub struct Completion<R: FnOnce(Vec<Bytes>)> {
    record: Option<R>,
}

impl<R: FnOnce(Vec<Bytes>)> std::fmt::Debug for Completion<R> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completion")
            .field("finished", &self.record.is_none())
            .finish()
    }
}

impl<R: FnOnce(Vec<Bytes>)> Completion<R> {
    /// A completion that will hand its frames to `record`.
    ///
    /// # Example
    /// See [`Completion`].
    pub fn new(record: R) -> Self {
        Completion {
            record: Some(record),
        }
    }

    /// Records the call's frames (from [`call_frames`]).
    ///
    /// # Example
    /// ```
    /// use ssekit_http::ors::{call_frames, Completion};
    /// let mut seen = Vec::new();
    /// Completion::new(|frames| seen = frames).finish(call_frames(Err("x".into()), &Default::default()));
    /// assert_eq!(seen, ["event: error\ndata: x\n\n"]);
    /// ```
    pub fn finish(mut self, frames: Vec<Bytes>) {
        if let Some(record) = self.record.take() {
            record(frames);
        }
    }
}

impl<R: FnOnce(Vec<Bytes>)> Drop for Completion<R> {
    fn drop(&mut self) {
        if let Some(record) = self.record.take() {
            record(vec![encode(&named("error", CALL_ABANDONED))]);
        }
    }
}

/// The stream of a call refused before it ran (no session, unknown tool, too many running
/// calls): `task_id` with a fresh id that is never stored, then `error` with `message`. It
/// takes no place in the registry, so refusals cannot evict other clients' cached results;
/// a resume with that id gets `unknown task_id`.
///
/// # Example
/// ```
/// use ssekit::server::{TaskConfig, TaskRegistry};
/// let mut tasks = TaskRegistry::<bytes::Bytes>::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
/// let frames = ssekit_http::ors::refused(&mut tasks, "Session not found");
/// assert!(frames[0].starts_with(b"event: task_id\ndata: "));
/// assert_eq!(frames[1], "event: error\ndata: Session not found\n\n");
/// assert!(tasks.is_empty());
/// ```
pub fn refused(tasks: &mut TaskRegistry<Bytes>, message: &str) -> Vec<Bytes> {
    vec![
        encode(&named("task_id", tasks.unstored_id())),
        encode(&named("error", message.to_owned())),
    ]
}

/// One connection following a task: its `task_id` event, then its output from the start,
/// as the task produces it, until it finishes (or is forgotten: then an `error` event).
/// The transport drains [`next_frame`](Self::next_frame), calls [`read`](Self::read) under
/// the registry's lock, and waits for the task's signal ([`TaskSignals`](super::TaskSignals))
/// when [`is_waiting`](Self::is_waiting).
///
/// # Example
/// ```
/// use ssekit::server::{TaskConfig, TaskRegistry};
/// use ssekit::Instant;
/// use ssekit_http::ors::Follow;
/// let mut tasks = TaskRegistry::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
/// let mut follow = Follow::new(tasks.start(Instant::ZERO).unwrap());
/// assert!(follow.next_frame().is_some()); // task_id
/// follow.read(&tasks);
/// assert!(follow.is_waiting()); // running, nothing new: wait for a change
/// ```
#[derive(Debug)]
pub struct Follow {
    cursor: Cursor,
    pending: VecDeque<Bytes>,
    done: bool,
}

impl Follow {
    /// Follows the task of `cursor` from its start.
    ///
    /// # Example
    /// See [`Follow`].
    pub fn new(cursor: Cursor) -> Self {
        let first = TaskRegistry::<Bytes>::task_id_event(&cursor).map(|e| encode(&e));
        Follow {
            cursor,
            pending: first.into_iter().collect(),
            done: false,
        }
    }

    /// The next frame to send, if one is ready.
    ///
    /// # Example
    /// See [`Follow`].
    pub fn next_frame(&mut self) -> Option<Bytes> {
        self.pending.pop_front()
    }

    /// Takes what the task produced since the last read.
    ///
    /// # Example
    /// See [`Follow`].
    pub fn read(&mut self, tasks: &TaskRegistry<Bytes>) {
        if self.done {
            return;
        }
        match tasks.read(&mut self.cursor) {
            Ok(progress) => {
                self.pending.extend(progress.items.iter().cloned());
                self.done = progress.state == TaskState::Finished;
            }
            Err(_) => {
                self.pending
                    .push_back(encode(&TaskRegistry::<Bytes>::unknown_task_event()));
                self.done = true;
            }
        }
    }

    /// Ends the stream with `frames`: the task's result handed over directly, when the
    /// registry did not keep it ([`try_complete`] said so) and this connection was following
    /// the call as it finished.
    ///
    /// # Example
    /// ```
    /// use ssekit::server::{TaskConfig, TaskRegistry};
    /// use ssekit::Instant;
    /// use ssekit_http::ors::Follow;
    /// let mut tasks = TaskRegistry::<bytes::Bytes>::new(TaskConfig::new(ssekit_http::entropy::os_seed()));
    /// let mut follow = Follow::new(tasks.start(Instant::ZERO).unwrap());
    /// let _task_id = follow.next_frame();
    /// follow.deliver(vec![bytes::Bytes::from_static(b"event: end\ndata: {}\n\n")]);
    /// assert!(follow.next_frame().is_some());
    /// assert!(follow.is_done());
    /// ```
    pub fn deliver(&mut self, frames: impl IntoIterator<Item = Bytes>) {
        if self.done {
            return;
        }
        self.pending.extend(frames);
        self.done = true;
    }

    /// Nothing to send and the task still runs: wait for the task's signal, then
    /// [`read`](Self::read) again.
    ///
    /// # Example
    /// See [`Follow`].
    pub fn is_waiting(&self) -> bool {
        self.pending.is_empty() && !self.done
    }

    /// Everything was sent and the task is over: the stream ends.
    ///
    /// # Example
    /// See [`complete`].
    pub fn is_done(&self) -> bool {
        self.pending.is_empty() && self.done
    }
}
