//! [`TaskRegistry`]: ORS tool calls that outlive their connection.

use alloc::collections::BTreeMap;
use alloc::vec::Vec;
use core::fmt;
use core::time::Duration;

use bytes::Bytes;
use chacha20::rand_core::{Rng, SeedableRng};
use chacha20::ChaCha20Rng;

use crate::encode::{EncodeError, Encoder};
use crate::event::Event;
use crate::text::Utf8Bytes;
use crate::time::Instant;

/// How many bytes a task output item holds, for the registry's byte bound.
///
/// # Example
/// ```
/// use ssekit::server::ByteSize;
/// assert_eq!(bytes::Bytes::from_static(b"abc").byte_size(), 3);
/// assert_eq!(ssekit::Event::message("x").byte_size(), b"data: x\n\n".len());
/// ```
pub trait ByteSize {
    /// The size in bytes.
    ///
    /// # Example
    /// ```
    /// use ssekit::server::ByteSize;
    /// assert_eq!(ssekit::Utf8Bytes::from_static("ab").byte_size(), 2);
    /// ```
    fn byte_size(&self) -> usize;
}

impl ByteSize for Bytes {
    fn byte_size(&self) -> usize {
        self.len()
    }
}

impl ByteSize for Utf8Bytes {
    fn byte_size(&self) -> usize {
        self.len()
    }
}

impl ByteSize for Vec<u8> {
    fn byte_size(&self) -> usize {
        self.len()
    }
}

impl ByteSize for Event {
    /// The encoded size.
    fn byte_size(&self) -> usize {
        Encoder::new().encoded_len(self)
    }
}

/// What [`TaskRegistry::open`] does with a `task_id` it does not know. See the
/// [`TaskRegistry`] docs for why [`Refuse`](ClientIds::Refuse) is the default.
///
/// # Example
/// ```
/// use ssekit::server::{ClientIds, TaskConfig};
/// # let key = [7u8; 32];
/// let _ = TaskConfig::new(key).client_ids(ClientIds::Adopt);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ClientIds {
    /// Answer [`Open::Unknown`] (send `unknown task_id`), as the ORS SDK server does.
    #[default]
    Refuse,
    /// Start a new task under the client's id.
    Adopt,
}

/// How generated task ids are written.
///
/// # Example
/// ```
/// use ssekit::server::{IdFormat, TaskConfig};
/// # let key = [7u8; 32];
/// let _ = TaskConfig::new(key).id_format(IdFormat::Simple); // like Python's uuid4().hex
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum IdFormat {
    /// `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx` (36 characters, lowercase).
    #[default]
    Hyphenated,
    /// 32 lowercase hex digits, no hyphens (what the ORS SDK server sends).
    Simple,
}

/// Registry policy: the key of the task ids, result TTL, bounds, client ids and id format.
///
/// Made by [`TaskConfig::new`] from the key, the one setting without a default. The others:
/// finished results kept 60 s; at most 1024 tasks and 64 MiB of output; for each owner
/// (see [`TaskRegistry`]'s "Fair caching"), at most 256 finished results and 16 MiB; at most
/// 1024 running tasks; unknown client ids refused; hyphenated UUIDs. Its `Debug` output
/// leaves the key out.
///
/// # Example
/// ```
/// use core::time::Duration;
/// use ssekit::server::TaskConfig;
/// # let key = [7u8; 32];
/// // `key`: 32 secret random bytes, e.g. ssekit_http::entropy::os_seed()
/// let config = TaskConfig::new(key)
///     .result_ttl(Duration::from_secs(120))
///     .max_tasks(64)
///     .max_bytes(16 << 20);
/// # let _ = config;
/// ```
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
#[must_use]
pub struct TaskConfig {
    result_ttl: Duration,
    max_tasks: usize,
    max_bytes: usize,
    max_owner_tasks: usize,
    max_owner_bytes: usize,
    max_running: usize,
    client_ids: ClientIds,
    id_format: IdFormat,
    key: [u8; 32],
}

impl fmt::Debug for TaskConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The key is a secret: whoever has it computes every task id.
        f.debug_struct("TaskConfig")
            .field("result_ttl", &self.result_ttl)
            .field("max_tasks", &self.max_tasks)
            .field("max_bytes", &self.max_bytes)
            .field("max_owner_tasks", &self.max_owner_tasks)
            .field("max_owner_bytes", &self.max_owner_bytes)
            .field("max_running", &self.max_running)
            .field("client_ids", &self.client_ids)
            .field("id_format", &self.id_format)
            .finish_non_exhaustive()
    }
}

impl TaskConfig {
    /// A policy whose task ids come from ChaCha20 keyed by `key`, with the defaults for the
    /// rest.
    ///
    /// A task id is a bearer capability: a `/call` with it, from any session, streams that
    /// task's result. The ids are unguessable if the key is secret and random: ChaCha20 is
    /// a cryptographically secure generator, so seeing any number of ids (a client sees its
    /// own) reveals nothing about the key or the other ids. Take the key from the OS RNG
    /// (`ssekit_http::entropy::os_seed()`, the `getrandom` crate) once per process. A
    /// constant key makes every process hand out the same ids, so a client resuming an id
    /// from before a restart would read another client's result; equal keys give equal ids,
    /// which is what tests want and servers must avoid.
    ///
    /// The key is an argument, and `TaskConfig` has no `Default`, because the core has no
    /// entropy of its own (it is `no_std` and deterministic): any default key would be the
    /// constant one, and an optional setter is one a server can forget.
    ///
    /// # Example
    /// ```
    /// use ssekit::server::{TaskConfig, TaskRegistry};
    /// use ssekit::time::Instant;
    /// # let key = [7u8; 32];
    /// // `key`: 32 secret random bytes, e.g. ssekit_http::entropy::os_seed()
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let mut again: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// // The same key, the same ids: never share a key between servers.
    /// assert_eq!(tasks.start(Instant::ZERO), again.start(Instant::ZERO));
    /// # Ok::<(), ssekit::server::StartError>(())
    /// ```
    pub fn new(key: [u8; 32]) -> Self {
        TaskConfig {
            result_ttl: Duration::from_secs(60),
            max_tasks: 1024,
            max_bytes: 64 << 20,
            max_owner_tasks: 256,
            max_owner_bytes: 16 << 20,
            max_running: 1024,
            client_ids: ClientIds::Refuse,
            id_format: IdFormat::Hyphenated,
            key,
        }
    }

    /// How long a finished task's output stays available (default 60 s, the ORS value). A
    /// task finished at `t` is gone at exactly `t + ttl`.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// let _ = ssekit::server::TaskConfig::new(key).result_ttl(core::time::Duration::from_secs(60));
    /// ```
    pub fn result_ttl(mut self, ttl: Duration) -> Self {
        self.result_ttl = ttl;
        self
    }

    /// The most tasks kept (at least 1): starting one more evicts the task that finished
    /// longest ago. A running task is never evicted (its stream would end in
    /// `unknown task_id` while its tool still runs): with this many calls in flight, new ones
    /// are still admitted, up to [`max_running`](Self::max_running).
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// let _ = ssekit::server::TaskConfig::new(key).max_tasks(100);
    /// ```
    pub fn max_tasks(mut self, tasks: usize) -> Self {
        self.max_tasks = tasks.max(1);
        self
    }

    /// The most output bytes kept over all tasks (by [`ByteSize`]). Output that would go over
    /// evicts finished tasks of the same owner, oldest first; if that is not enough, the
    /// output is refused ([`TaskError::OverBudget`]) and its task keeps what it had. Running
    /// tasks, and other owners' results, are never evicted.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// let _ = ssekit::server::TaskConfig::new(key).max_bytes(1 << 20);
    /// ```
    pub fn max_bytes(mut self, bytes: usize) -> Self {
        self.max_bytes = bytes;
        self
    }

    /// The most finished results one owner keeps (default 256, at least 1): a task of an
    /// owner holding that many finishes by evicting the owner's oldest. Tasks started
    /// without an owner have no such bound (they share [`max_tasks`](Self::max_tasks)).
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// let _ = ssekit::server::TaskConfig::new(key).max_owner_tasks(16);
    /// ```
    pub fn max_owner_tasks(mut self, tasks: usize) -> Self {
        self.max_owner_tasks = tasks.max(1);
        self
    }

    /// The most output bytes one owner keeps over its tasks (default 16 MiB, a quarter of
    /// [`max_bytes`](Self::max_bytes)'s default, so that at least four owners hold results
    /// of that size at once). Output past it evicts the owner's own finished results,
    /// oldest first; if that is not enough, it is refused ([`TaskError::OwnerOverBudget`]).
    /// Tasks started without an owner have no such bound.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// let _ = ssekit::server::TaskConfig::new(key).max_owner_bytes(4 << 20);
    /// ```
    pub fn max_owner_bytes(mut self, bytes: usize) -> Self {
        self.max_owner_bytes = bytes;
        self
    }

    /// The most running tasks (default 1024, at least 1): starting one more fails
    /// ([`StartError::Busy`], [`Open::Busy`]) until one finishes. Running tasks are never
    /// evicted and, in ORS, a tool keeps running after its client hangs up, so without this
    /// bound clients that post calls and leave grow the registry (and the tools) without
    /// limit.
    ///
    /// # Example
    /// ```
    /// use ssekit::server::{Open, StartError, TaskConfig, TaskRegistry};
    /// use ssekit::time::Instant;
    /// # let key = [7u8; 32];
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key).max_running(1));
    /// let running = tasks.start(Instant::ZERO)?;
    /// assert_eq!(tasks.start(Instant::ZERO), Err(StartError::Busy));
    /// assert_eq!(tasks.open(None, Instant::ZERO), Open::Busy);
    /// tasks.finish(running.task_id(), Instant::ZERO).unwrap();
    /// assert!(tasks.start(Instant::ZERO).is_ok());
    /// # Ok::<(), StartError>(())
    /// ```
    pub fn max_running(mut self, tasks: usize) -> Self {
        self.max_running = tasks.max(1);
        self
    }

    /// What to do with an unknown client-given id.
    ///
    /// # Example
    /// ```
    /// use ssekit::server::{ClientIds, TaskConfig};
    /// # let key = [7u8; 32];
    /// let _ = TaskConfig::new(key).client_ids(ClientIds::Refuse);
    /// ```
    pub fn client_ids(mut self, policy: ClientIds) -> Self {
        self.client_ids = policy;
        self
    }

    /// How generated ids are written.
    ///
    /// # Example
    /// ```
    /// use ssekit::server::{IdFormat, TaskConfig};
    /// # let key = [7u8; 32];
    /// let _ = TaskConfig::new(key).id_format(IdFormat::Hyphenated);
    /// ```
    pub fn id_format(mut self, format: IdFormat) -> Self {
        self.id_format = format;
        self
    }
}

/// Whether a task is still producing.
///
/// # Example
/// ```
/// # let key = [7u8; 32];
/// use ssekit::server::{TaskConfig, TaskRegistry, TaskState};
/// use ssekit::time::Instant;
/// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
/// let mut cursor = tasks.start(Instant::ZERO).unwrap();
/// assert_eq!(tasks.read(&mut cursor).unwrap().state, TaskState::Running);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskState {
    /// More output may follow.
    Running,
    /// The output is complete.
    Finished,
}

/// A subscriber's position in one task's output.
///
/// # Example
/// ```
/// # let key = [7u8; 32];
/// use ssekit::server::{TaskConfig, TaskRegistry};
/// use ssekit::time::Instant;
/// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
/// let cursor = tasks.start(Instant::ZERO).unwrap();
/// assert_eq!(cursor.task_id().len(), 36);
/// assert_eq!(cursor.position(), 0);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cursor {
    id: Utf8Bytes,
    next: usize,
}

impl Cursor {
    /// The task's id (the data of the `task_id` event).
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::server::{ClientIds, Open, TaskConfig, TaskRegistry};
    /// use ssekit::time::Instant;
    /// let mut tasks: TaskRegistry<bytes::Bytes> =
    ///     TaskRegistry::new(TaskConfig::new(key).client_ids(ClientIds::Adopt));
    /// let Open::Started(cursor) = tasks.open(Some("trace-1"), Instant::ZERO) else { unreachable!() };
    /// assert_eq!(cursor.task_id(), "trace-1");
    /// ```
    pub fn task_id(&self) -> &str {
        self.id.as_str()
    }

    /// The task's id as shared bytes.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// assert!(!tasks.start(Instant::ZERO).unwrap().task_id_bytes().is_empty());
    /// ```
    pub fn task_id_bytes(&self) -> &Utf8Bytes {
        &self.id
    }

    /// How many items this cursor has read.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// assert_eq!(tasks.start(Instant::ZERO).unwrap().position(), 0);
    /// ```
    pub fn position(&self) -> usize {
        self.next
    }
}

/// What [`TaskRegistry::open`] decided for a call.
///
/// # Example
/// ```
/// # let key = [7u8; 32];
/// use ssekit::server::{Open, TaskConfig, TaskRegistry};
/// use ssekit::time::Instant;
/// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
/// assert!(matches!(tasks.open(None, Instant::ZERO), Open::Started(_)));
/// assert_eq!(tasks.open(Some("nope"), Instant::ZERO), Open::Unknown);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Open {
    /// A new task: run the tool, send `task_id`, then stream its output.
    Started(Cursor),
    /// A known task: send `task_id`, then its output from the start (running or finished).
    Resumed(Cursor),
    /// Send [`TaskRegistry::unknown_task_event`] and end the stream.
    Unknown,
    /// A new task was needed but [`TaskConfig::max_running`] tasks are running: refuse the
    /// call (it did not run; the client may retry later).
    Busy,
}

/// Why a task could not be started under a given id.
///
/// # Example
/// ```
/// # let key = [7u8; 32];
/// use ssekit::server::{StartError, TaskConfig, TaskRegistry};
/// use ssekit::time::Instant;
/// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
/// tasks.start_with_id("a", Instant::ZERO)?;
/// assert_eq!(tasks.start_with_id("a", Instant::ZERO).unwrap_err(), StartError::Exists);
/// # Ok::<(), StartError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StartError {
    /// A task with this id is known.
    Exists,
    /// The id is empty, longer than 256 bytes, or holds a control character.
    InvalidId,
    /// [`TaskConfig::max_running`] tasks are running.
    Busy,
}

impl fmt::Display for StartError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            StartError::Exists => "a task with this id exists",
            StartError::InvalidId => "task ids are 1 to 256 bytes without control characters",
            StartError::Busy => "too many running tasks",
        })
    }
}

impl core::error::Error for StartError {}

/// Why a task operation failed.
///
/// # Example
/// ```
/// # let key = [7u8; 32];
/// use ssekit::server::{TaskConfig, TaskError, TaskRegistry};
/// use ssekit::time::Instant;
/// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
/// assert_eq!(tasks.finish("nope", Instant::ZERO), Err(TaskError::Unknown));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskError {
    /// No such task: never started, expired or evicted.
    Unknown,
    /// The task has finished; it takes no more output.
    Finished,
    /// The output would take the registry past its byte bound ([`TaskConfig::max_bytes`])
    /// even with every finished result of the task's owner evicted (other owners' results
    /// and running tasks' output are never evicted): it was not kept, and the task keeps
    /// what it had (drop it with [`TaskRegistry::discard`], send a short error and finish).
    OverBudget,
    /// The output would take the task's owner past [`TaskConfig::max_owner_bytes`] even
    /// with every finished result of that owner evicted: it was not kept, as with
    /// [`OverBudget`](Self::OverBudget).
    OwnerOverBudget,
    /// [`TaskRegistry::finish`]: [`TaskConfig::max_tasks`] finished results of other owners
    /// are held, and keeping this one would evict one of them: the task was dropped, its
    /// output with it (its id is now unknown).
    TooManyResults,
}

impl fmt::Display for TaskError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TaskError::Unknown => "unknown task_id",
            TaskError::Finished => "the task has finished",
            TaskError::OverBudget => "the output does not fit the registry's byte bound",
            TaskError::OwnerOverBudget => "the output does not fit its owner's byte bound",
            TaskError::TooManyResults => "the registry holds as many results as it may",
        })
    }
}

impl core::error::Error for TaskError {}

/// New output of a task, from [`TaskRegistry::read`].
///
/// # Example
/// ```
/// # let key = [7u8; 32];
/// use bytes::Bytes;
/// use ssekit::server::{TaskConfig, TaskRegistry, TaskState};
/// use ssekit::time::Instant;
/// let mut tasks = TaskRegistry::new(TaskConfig::new(key));
/// let mut cursor = tasks.start(Instant::ZERO).unwrap();
/// tasks.push(cursor.task_id(), Bytes::from_static(b"event: end\ndata: {}\n\n"))?;
/// tasks.finish(cursor.task_id(), Instant::ZERO)?;
/// let progress = tasks.read(&mut cursor)?;
/// assert_eq!((progress.items.len(), progress.state), (1, TaskState::Finished));
/// # Ok::<(), ssekit::server::TaskError>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Progress<'a, T> {
    /// Items produced since the cursor's last read, oldest first.
    pub items: &'a [T],
    /// Whether more may follow.
    pub state: TaskState,
}

#[derive(Clone, Debug)]
struct Task<T> {
    items: Vec<T>,
    bytes: usize,
    seq: u64,
    finished: Option<Instant>,
    owner: Option<Bytes>,
}

/// What one owner (or, under `None`, the tasks without one) holds.
#[derive(Clone, Debug, Default)]
struct Owner {
    /// Tasks, running and finished.
    tasks: usize,
    /// Output bytes over its tasks, and over its finished ones.
    bytes: usize,
    finished_bytes: usize,
    /// Its finished tasks, oldest first (the keys of the registry's `finished` index).
    finished: BTreeMap<(Instant, u64), Bytes>,
}

/// ORS tasks and their output, bounded in tasks and bytes, with a TTL on finished results.
///
/// An ORS `POST /{env}/call` starts a tool as a task; the stream's first event names it
/// (`event: task_id`). If the connection drops, the client posts the same call again with
/// that `task_id`, and the server streams the task from its current state: everything it
/// produced so far, then the rest. A finished task's output is kept for a while (60 s in
/// ORS) and sent at once; an unknown id gets `event: error` / `data: unknown task_id`.
///
/// The registry holds what each task produced (any `T`: encoded [`Bytes`], [`Event`]s, …)
/// and lets any number of connections follow a task with a [`Cursor`]. It runs nothing:
/// the caller executes the tool and reports its output with [`TaskRegistry::push`] and
/// [`TaskRegistry::finish`], and wakes its subscribers by whatever means its runtime has.
///
/// # Client-chosen ids
/// The ORS documentation calls the request's `task_id` an "optional ID for
/// reconnection/tracing", yet says an unknown id yields `unknown task_id`, and the official
/// SDK server never starts a new task under a client's id. One request cannot be both: a
/// `task_id` the server does not know is either a fresh trace id or the id of a task whose
/// result expired. The default, [`ClientIds::Refuse`], follows the SDK server and the
/// reconnection text, because adopting the id would silently *re-run* a tool whose result
/// merely expired (a second `submit`, a second bash command), and a client retrying after
/// the cache expired must learn that its result is gone. [`ClientIds::Adopt`]
/// is there for servers that want client-chosen ids and know their tools are idempotent.
///
/// # Generated ids
/// A task id is all a client needs to read the task's output, from any session, so the ids
/// the registry makes are random UUIDs (v4) from ChaCha20 keyed by the
/// [`TaskConfig::new`] key: unguessable if that key is secret and random, and no id tells
/// anything about the others. The registry is not `Clone`: a copy would hand out the
/// original's next ids again.
///
/// # Fair caching
/// A task may have an owner ([`start_owned`](Self::start_owned),
/// [`open_owned`](Self::open_owned); the ORS server makes the session its owner). Room for
/// a task's output or result is only ever made by evicting results of the same owner
/// (tasks without an owner form one group of their own): no owner can evict another's
/// result before its TTL, however many results it makes. Each owner keeps at most
/// [`TaskConfig::max_owner_bytes`] and [`TaskConfig::max_owner_tasks`] results; the
/// registry as a whole at most [`TaskConfig::max_bytes`] and [`TaskConfig::max_tasks`].
/// When a result cannot be kept without evicting another owner's, it is refused
/// ([`TaskError::OverBudget`], [`TaskError::OwnerOverBudget`] from [`push`](Self::push),
/// [`TaskError::TooManyResults`] from [`finish`](Self::finish)): the caller tells its
/// client that this result cannot be resumed, and every other result stays.
///
/// Timers: [`poll_timeout`](Self::poll_timeout) is the next result expiry;
/// [`handle_timeout`](Self::handle_timeout) drops what expired. [`open`](Self::open) also
/// checks expiry itself, so a result is never served after its TTL even if the timer is late.
///
/// # Example
/// ```
/// use bytes::Bytes;
/// use ssekit::server::{Open, TaskConfig, TaskRegistry, TaskState};
/// use ssekit::time::Instant;
///
/// # let key = [7u8; 32];
/// // `key`: 32 secret random bytes, e.g. ssekit_http::entropy::os_seed()
/// let mut tasks: TaskRegistry<Bytes> = TaskRegistry::new(TaskConfig::new(key));
/// // POST /gsm8k/call without task_id
/// let Open::Started(first) = tasks.open(None, Instant::ZERO) else { unreachable!() };
/// let id = first.task_id_bytes().clone();
/// tasks.push(&id, Bytes::from_static(b"event: chunk\ndata: {\"ok\":\n\n"))?;
/// // ... the connection drops; the client posts again with task_id = id
/// let Open::Resumed(mut again) = tasks.open(Some(&id), Instant::from_secs(1)) else { unreachable!() };
/// tasks.push(&id, Bytes::from_static(b"event: end\ndata: true}\n\n"))?;
/// tasks.finish(&id, Instant::from_secs(2))?;
/// let progress = tasks.read(&mut again)?;
/// assert_eq!(progress.items.len(), 2);           // what was produced before, then the rest
/// assert_eq!(progress.state, TaskState::Finished);
/// assert_eq!(tasks.poll_timeout(), Some(Instant::from_secs(62)));
/// # Ok::<(), ssekit::server::TaskError>(())
/// ```
#[derive(Debug)]
pub struct TaskRegistry<T> {
    config: TaskConfig,
    /// Keyed by the id's bytes (`Bytes` borrows as `[u8]`, so `&str` ids look up directly).
    tasks: BTreeMap<Bytes, Task<T>>,
    /// The finished tasks, oldest first (by finish time, then start order): expiry and
    /// eviction take from the front without scanning the running tasks.
    finished: BTreeMap<(Instant, u64), Bytes>,
    /// Output bytes over all tasks, and over the finished ones.
    bytes: usize,
    finished_bytes: usize,
    /// What each owner holds; an owner holding no task has no entry.
    owners: BTreeMap<Option<Bytes>, Owner>,
    /// The id generator (its `Debug` shows no state).
    ids: ChaCha20Rng,
    next_seq: u64,
}

impl<T> TaskRegistry<T> {
    /// An empty registry, its ids from ChaCha20 keyed by the config's key.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// let tasks: ssekit::server::TaskRegistry<ssekit::Event> =
    ///     ssekit::server::TaskRegistry::new(ssekit::server::TaskConfig::new(key));
    /// assert!(tasks.is_empty());
    /// ```
    pub fn new(config: TaskConfig) -> Self {
        TaskRegistry {
            config,
            tasks: BTreeMap::new(),
            finished: BTreeMap::new(),
            bytes: 0,
            finished_bytes: 0,
            owners: BTreeMap::new(),
            ids: ChaCha20Rng::from_seed(config.key),
            next_seq: 0,
        }
    }

    /// The ORS answer to an unknown id: `event: error` / `data: unknown task_id`.
    ///
    /// # Example
    /// ```
    /// use ssekit::{server::TaskRegistry, Encoder};
    /// let ev = TaskRegistry::<bytes::Bytes>::unknown_task_event();
    /// let mut out = Vec::new();
    /// Encoder::new().encode(&ev, &mut out)?;
    /// assert_eq!(out, b"event: error\ndata: unknown task_id\n\n");
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn unknown_task_event() -> Event {
        Event::builder()
            .event("error")
            .map(|b| b.data("unknown task_id").build())
            .unwrap_or_default()
    }

    /// The first event of an ORS call stream: `event: task_id` / `data: <id>`.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let cursor = tasks.start(Instant::ZERO).unwrap();
    /// let ev = TaskRegistry::<bytes::Bytes>::task_id_event(&cursor)?;
    /// assert_eq!((ev.event_type(), ev.data()), ("task_id", cursor.task_id()));
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn task_id_event(cursor: &Cursor) -> Result<Event, EncodeError> {
        Ok(Event::builder()
            .event("task_id")?
            .data(cursor.id.clone())
            .build())
    }

    /// Decides what a call does: no `task_id` starts a task under a generated id; a known
    /// id (running, or finished within the TTL) resumes it from the start; an unknown one is
    /// [`Open::Unknown`], or a new task under it with [`ClientIds::Adopt`].
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::server::{Open, TaskConfig, TaskRegistry};
    /// use ssekit::time::Instant;
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let Open::Started(c) = tasks.open(None, Instant::ZERO) else { unreachable!() };
    /// assert!(matches!(tasks.open(Some(c.task_id()), Instant::ZERO), Open::Resumed(_)));
    /// ```
    pub fn open(&mut self, task_id: Option<&str>, now: Instant) -> Open
    where
        T: ByteSize,
    {
        self.open_in(task_id, None, now)
    }

    /// As [`open`](Self::open), but a task it starts belongs to `owner` (see "Fair caching"
    /// in the [`TaskRegistry`] docs). A resume finds the task whoever owns it: checking who
    /// may resume is the caller's business.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::server::{Open, TaskConfig, TaskRegistry};
    /// use ssekit::time::Instant;
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let Open::Started(c) = tasks.open_owned(None, "session-1", Instant::ZERO) else { unreachable!() };
    /// assert!(matches!(tasks.open_owned(Some(c.task_id()), "session-2", Instant::ZERO), Open::Resumed(_)));
    /// ```
    pub fn open_owned(&mut self, task_id: Option<&str>, owner: &str, now: Instant) -> Open
    where
        T: ByteSize,
    {
        self.open_in(task_id, Some(owner), now)
    }

    fn open_in(&mut self, task_id: Option<&str>, owner: Option<&str>, now: Instant) -> Open
    where
        T: ByteSize,
    {
        let Some(id) = task_id else {
            return self.start_in(owner, now).map_or(Open::Busy, Open::Started);
        };
        self.expire(now);
        if self.tasks.contains_key(id.as_bytes()) {
            return Open::Resumed(Cursor {
                id: Utf8Bytes::copy_from_str(id),
                next: 0,
            });
        }
        match self.config.client_ids {
            ClientIds::Adopt => match self.start_with_id_in(id, owner, now) {
                Ok(cursor) => Open::Started(cursor),
                Err(StartError::Busy) => Open::Busy,
                Err(_) => Open::Unknown,
            },
            ClientIds::Refuse => Open::Unknown,
        }
    }

    /// Starts a task under a new id: a random UUID (v4) from the keyed ChaCha20 generator.
    /// [`StartError::Busy`] when [`TaskConfig::max_running`] tasks are running.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let id = tasks.start(Instant::ZERO)?.task_id().to_owned();
    /// assert_eq!(id.as_bytes()[14], b'4'); // version 4
    /// # Ok::<(), ssekit::server::StartError>(())
    /// ```
    pub fn start(&mut self, now: Instant) -> Result<Cursor, StartError>
    where
        T: ByteSize,
    {
        self.start_in(None, now)
    }

    /// As [`start`](Self::start), for a task that belongs to `owner` (see "Fair caching" in
    /// the [`TaskRegistry`] docs).
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start_owned("session-1", Instant::ZERO)?;
    /// assert_eq!(tasks.owner(c.task_id()), Some(Some("session-1")));
    /// # Ok::<(), ssekit::server::StartError>(())
    /// ```
    pub fn start_owned(&mut self, owner: &str, now: Instant) -> Result<Cursor, StartError>
    where
        T: ByteSize,
    {
        self.start_in(Some(owner), now)
    }

    fn start_in(&mut self, owner: Option<&str>, now: Instant) -> Result<Cursor, StartError>
    where
        T: ByteSize,
    {
        self.expire(now);
        if self.running() >= self.config.max_running {
            return Err(StartError::Busy);
        }
        loop {
            let id = self.unstored_id();
            if !self.tasks.contains_key(id.as_bytes().as_ref()) {
                self.insert(id.clone(), owner);
                return Ok(Cursor { id, next: 0 });
            }
        }
    }

    /// A fresh id, made as [`start`](Self::start) makes them (122 random bits, so no
    /// other task's but by a chance that is not checked): for a call refused before it ran,
    /// whose stream still begins with `task_id`. Nothing is stored, so such calls take no
    /// place from other tasks; a resume with the id is unknown.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{Open, TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let id = tasks.unstored_id();
    /// assert_eq!(id.len(), 36);
    /// assert!(tasks.is_empty());
    /// assert_eq!(tasks.open(Some(&id), Instant::ZERO), Open::Unknown);
    /// ```
    pub fn unstored_id(&mut self) -> Utf8Bytes {
        let mut random = [0u8; 16];
        self.ids.fill_bytes(&mut random);
        uuid_text(uuid_v4(u128::from_be_bytes(random)), self.config.id_format)
    }

    /// Starts a task under an id the caller chose.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{StartError, TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// assert_eq!(tasks.start_with_id("a\nb", Instant::ZERO).unwrap_err(), StartError::InvalidId);
    /// ```
    pub fn start_with_id(&mut self, id: &str, now: Instant) -> Result<Cursor, StartError>
    where
        T: ByteSize,
    {
        self.start_with_id_in(id, None, now)
    }

    fn start_with_id_in(
        &mut self,
        id: &str,
        owner: Option<&str>,
        now: Instant,
    ) -> Result<Cursor, StartError>
    where
        T: ByteSize,
    {
        if id.is_empty() || id.len() > 256 || id.chars().any(char::is_control) {
            return Err(StartError::InvalidId);
        }
        self.expire(now);
        if self.tasks.contains_key(id.as_bytes()) {
            return Err(StartError::Exists);
        }
        if self.running() >= self.config.max_running {
            return Err(StartError::Busy);
        }
        let id = Utf8Bytes::copy_from_str(id);
        self.insert(id.clone(), owner);
        Ok(Cursor { id, next: 0 })
    }

    /// Appends output to a running task. Past the byte bound, or its owner's, finished
    /// results of the same owner are evicted, oldest first; if the output does not fit even
    /// so, it is refused ([`TaskError::OverBudget`], [`TaskError::OwnerOverBudget`]) and
    /// nothing is evicted. No running task, and no other owner's result, is ever evicted.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start(Instant::ZERO).unwrap();
    /// tasks.push(c.task_id(), ssekit::Event::message("x"))?;
    /// assert_eq!(tasks.retained_bytes(), b"data: x\n\n".len());
    /// # Ok::<(), ssekit::server::TaskError>(())
    /// ```
    pub fn push(&mut self, task_id: &str, item: T) -> Result<(), TaskError>
    where
        T: ByteSize,
    {
        let size = item.byte_size();
        let (owner, owner_max) = self.room(task_id, size)?;
        let max = self.config.max_bytes;
        while self.bytes.saturating_add(size) > max
            || self.owner_bytes(&owner).saturating_add(size) > owner_max
        {
            if !self.evict_oldest_of(&owner) {
                break;
            }
        }
        if let Some(o) = self.owners.get_mut(&owner) {
            o.bytes += size;
        }
        let task = self
            .tasks
            .get_mut(task_id.as_bytes())
            .ok_or(TaskError::Unknown)?;
        task.bytes += size;
        task.items.push(item);
        self.bytes += size;
        Ok(())
    }

    /// Whether `size` more bytes of output would fit a running task, evicting only results
    /// of its owner: what [`push`](Self::push) answers, without pushing or evicting
    /// anything. Check a whole result before pushing it piece by piece, so that a result
    /// that will not fit does not evict the owner's older results on its way.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskError, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key).max_owner_bytes(10));
    /// let c = tasks.start_owned("s1", Instant::ZERO)?;
    /// assert_eq!(tasks.fits(c.task_id(), 10), Ok(()));
    /// assert_eq!(tasks.fits(c.task_id(), 11), Err(TaskError::OwnerOverBudget));
    /// # Ok::<(), ssekit::server::StartError>(())
    /// ```
    pub fn fits(&self, task_id: &str, size: usize) -> Result<(), TaskError> {
        self.room(task_id, size).map(|_| ())
    }

    /// The owner of a running task and its byte bound, if `size` more bytes fit it.
    fn room(&self, task_id: &str, size: usize) -> Result<(Option<Bytes>, usize), TaskError> {
        let owner = match self.tasks.get(task_id.as_bytes()) {
            None => return Err(TaskError::Unknown),
            Some(task) if task.finished.is_some() => return Err(TaskError::Finished),
            Some(task) => task.owner.clone(),
        };
        let (own_bytes, own_finished) = self
            .owners
            .get(&owner)
            .map_or((0, 0), |o| (o.bytes, o.finished_bytes));
        // Evict only if that makes it fit: running tasks keep their output, other owners
        // their results.
        let max = self.config.max_bytes;
        if self.bytes.saturating_sub(own_finished).saturating_add(size) > max {
            return Err(TaskError::OverBudget);
        }
        let owner_max = match owner {
            Some(_) => self.config.max_owner_bytes,
            None => usize::MAX,
        };
        if own_bytes.saturating_sub(own_finished).saturating_add(size) > owner_max {
            return Err(TaskError::OwnerOverBudget);
        }
        Ok((owner, owner_max))
    }

    /// Marks a task finished at `now`: its output stays readable until `now + ttl`. With
    /// [`TaskConfig::max_tasks`] results held (or, for an owned task,
    /// [`TaskConfig::max_owner_tasks`] of its owner's), the owner's oldest result is evicted
    /// for room; if the owner has none and other owners hold `max_tasks` results, this
    /// task is dropped with its output ([`TaskError::TooManyResults`]) rather than evict one
    /// of theirs.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskError, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start(Instant::ZERO).unwrap();
    /// tasks.finish(c.task_id(), Instant::ZERO)?;
    /// assert_eq!(tasks.finish(c.task_id(), Instant::ZERO), Err(TaskError::Finished));
    /// # Ok::<(), TaskError>(())
    /// ```
    pub fn finish(&mut self, task_id: &str, now: Instant) -> Result<(), TaskError> {
        let (key, task) = self
            .tasks
            .get_key_value(task_id.as_bytes())
            .ok_or(TaskError::Unknown)?;
        if task.finished.is_some() {
            return Err(TaskError::Finished);
        }
        let (key, seq, bytes, owner) = (key.clone(), task.seq, task.bytes, task.owner.clone());
        let owner_max = match owner {
            Some(_) => self.config.max_owner_tasks,
            None => usize::MAX,
        };
        let own_results = |r: &Self| r.owners.get(&owner).map_or(0, |o| o.finished.len());
        while self.finished.len() >= self.config.max_tasks || own_results(self) >= owner_max {
            if !self.evict_oldest_of(&owner) {
                break;
            }
        }
        if self.finished.len() >= self.config.max_tasks {
            self.remove_task(&key);
            return Err(TaskError::TooManyResults);
        }
        if let Some(task) = self.tasks.get_mut(task_id.as_bytes()) {
            task.finished = Some(now);
        }
        self.finished_bytes += bytes;
        self.finished.insert((now, seq), key.clone());
        if let Some(o) = self.owners.get_mut(&owner) {
            o.finished_bytes += bytes;
            o.finished.insert((now, seq), key);
        }
        Ok(())
    }

    /// Drops the output a running task holds so far (to replace a result that was not
    /// kept by a short error); the task keeps running.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start(Instant::ZERO).unwrap();
    /// tasks.push(c.task_id(), bytes::Bytes::from_static(b"data: x\n\n"))?;
    /// tasks.discard(c.task_id())?;
    /// assert_eq!(tasks.retained_bytes(), 0);
    /// # Ok::<(), ssekit::server::TaskError>(())
    /// ```
    pub fn discard(&mut self, task_id: &str) -> Result<(), TaskError> {
        let task = self
            .tasks
            .get_mut(task_id.as_bytes())
            .ok_or(TaskError::Unknown)?;
        if task.finished.is_some() {
            return Err(TaskError::Finished);
        }
        let bytes = core::mem::take(&mut task.bytes);
        task.items.clear();
        self.bytes = self.bytes.saturating_sub(bytes);
        if let Some(o) = self.owners.get_mut(&task.owner) {
            o.bytes = o.bytes.saturating_sub(bytes);
        }
        Ok(())
    }

    /// Forgets a running task as if it had never started (a call refused after its id was
    /// drawn, before it ran): its place and any output it holds are freed, and a resume
    /// with its id is unknown. [`TaskError::Finished`] for a finished task (a result is
    /// evicted or expires, it is not forgotten), [`TaskError::Unknown`] for an unknown id.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{Open, TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start_owned("session-1", Instant::ZERO).unwrap();
    /// tasks.forget(c.task_id())?;
    /// assert!(tasks.is_empty());
    /// assert_eq!(tasks.open(Some(c.task_id()), Instant::ZERO), Open::Unknown);
    /// # Ok::<(), ssekit::server::TaskError>(())
    /// ```
    pub fn forget(&mut self, task_id: &str) -> Result<(), TaskError> {
        let task = self
            .tasks
            .get(task_id.as_bytes())
            .ok_or(TaskError::Unknown)?;
        if task.finished.is_some() {
            return Err(TaskError::Finished);
        }
        self.remove_task(task_id.as_bytes());
        Ok(())
    }

    /// The owner of a task: `None` when the task is unknown, `Some(None)` when it has no
    /// owner.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start(Instant::ZERO)?;
    /// assert_eq!(tasks.owner(c.task_id()), Some(None));
    /// assert_eq!(tasks.owner("other"), None);
    /// # Ok::<(), ssekit::server::StartError>(())
    /// ```
    pub fn owner(&self, task_id: &str) -> Option<Option<&str>> {
        let task = self.tasks.get(task_id.as_bytes())?;
        Some(
            task.owner
                .as_ref()
                .map(|o| core::str::from_utf8(o).unwrap_or_default()),
        )
    }

    /// Output bytes held by `owner`'s tasks (`None`: the tasks without an owner).
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start_owned("s1", Instant::ZERO).unwrap();
    /// tasks.push(c.task_id(), bytes::Bytes::from_static(b"abc"))?;
    /// assert_eq!(tasks.retained_bytes_of(Some("s1")), 3);
    /// assert_eq!(tasks.retained_bytes_of(None), 0);
    /// # Ok::<(), ssekit::server::TaskError>(())
    /// ```
    pub fn retained_bytes_of(&self, owner: Option<&str>) -> usize {
        let key = owner.map(|o| Bytes::copy_from_slice(o.as_bytes()));
        self.owner_bytes(&key)
    }

    /// The output produced since the cursor last read, and whether the task has finished.
    /// Advances the cursor. `Err(Unknown)` once the task expired or was evicted.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks = TaskRegistry::new(TaskConfig::new(key));
    /// let mut c = tasks.start(Instant::ZERO).unwrap();
    /// tasks.push(c.task_id(), bytes::Bytes::from_static(b": one\n\n"))?;
    /// assert_eq!(tasks.read(&mut c)?.items.len(), 1);
    /// assert_eq!(tasks.read(&mut c)?.items.len(), 0); // nothing new
    /// # Ok::<(), ssekit::server::TaskError>(())
    /// ```
    pub fn read<'a>(&'a self, cursor: &mut Cursor) -> Result<Progress<'a, T>, TaskError> {
        let task = self
            .tasks
            .get(cursor.id.as_bytes().as_ref())
            .ok_or(TaskError::Unknown)?;
        let items = task.items.get(cursor.next..).unwrap_or_default();
        cursor.next = task.items.len();
        Ok(Progress {
            items,
            state: if task.finished.is_some() {
                TaskState::Finished
            } else {
                TaskState::Running
            },
        })
    }

    /// The next result expiry, if any task has finished.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start(Instant::ZERO).unwrap();
    /// assert_eq!(tasks.poll_timeout(), None);
    /// tasks.finish(c.task_id(), Instant::from_secs(5))?;
    /// assert_eq!(tasks.poll_timeout(), Some(Instant::from_secs(65)));
    /// # Ok::<(), ssekit::server::TaskError>(())
    /// ```
    #[must_use]
    pub fn poll_timeout(&self) -> Option<Instant> {
        // The oldest finished task expires first (an expiry past the end of time never comes,
        // nor does any after it).
        let (&(finished, _), _) = self.finished.first_key_value()?;
        finished.checked_add(self.config.result_ttl)
    }

    /// Drops every finished task whose TTL has run out at `now` (exactly at `finish + ttl`).
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start(Instant::ZERO).unwrap();
    /// tasks.finish(c.task_id(), Instant::ZERO)?;
    /// tasks.handle_timeout(Instant::from_secs(60));
    /// assert!(tasks.is_empty());
    /// # Ok::<(), ssekit::server::TaskError>(())
    /// ```
    pub fn handle_timeout(&mut self, now: Instant) {
        self.expire(now);
    }

    /// Tasks held (running and finished).
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// assert_eq!(ssekit::server::TaskRegistry::<bytes::Bytes>::new(ssekit::server::TaskConfig::new(key)).len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.tasks.len()
    }

    /// Whether no task is held.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// assert!(ssekit::server::TaskRegistry::<bytes::Bytes>::new(ssekit::server::TaskConfig::new(key)).is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty()
    }

    /// Output bytes held over all tasks.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// assert_eq!(ssekit::server::TaskRegistry::<bytes::Bytes>::new(ssekit::server::TaskConfig::new(key)).retained_bytes(), 0);
    /// ```
    pub fn retained_bytes(&self) -> usize {
        self.bytes
    }

    /// How long a finished task's output stays available (its config's
    /// [`TaskConfig::result_ttl`]).
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use core::time::Duration;
    /// use ssekit::server::{TaskConfig, TaskRegistry};
    /// let tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key).result_ttl(Duration::from_secs(5)));
    /// assert_eq!(tasks.result_ttl(), Duration::from_secs(5));
    /// ```
    pub fn result_ttl(&self) -> Duration {
        self.config.result_ttl
    }

    /// The state of a task, `None` when unknown.
    ///
    /// # Example
    /// ```
    /// # let key = [7u8; 32];
    /// use ssekit::{server::{TaskConfig, TaskRegistry, TaskState}, time::Instant};
    /// let mut tasks: TaskRegistry<bytes::Bytes> = TaskRegistry::new(TaskConfig::new(key));
    /// let c = tasks.start(Instant::ZERO).unwrap();
    /// assert_eq!(tasks.state(c.task_id()), Some(TaskState::Running));
    /// assert_eq!(tasks.state("other"), None);
    /// ```
    pub fn state(&self, task_id: &str) -> Option<TaskState> {
        self.tasks.get(task_id.as_bytes()).map(|t| {
            if t.finished.is_some() {
                TaskState::Finished
            } else {
                TaskState::Running
            }
        })
    }

    /// Running tasks: those not in the finished index.
    fn running(&self) -> usize {
        self.tasks.len().saturating_sub(self.finished.len())
    }

    /// Drops the finished tasks whose TTL has run out, oldest first: O(expired · log n).
    fn expire(&mut self, now: Instant) {
        let ttl = self.config.result_ttl;
        while let Some((&(finished, _), _)) = self.finished.first_key_value() {
            // An expiry past the end of time never comes, nor does any after it.
            match finished.checked_add(ttl) {
                Some(expiry) if now >= expiry => self.evict_oldest_finished(),
                _ => break,
            };
        }
    }

    fn owner_bytes(&self, owner: &Option<Bytes>) -> usize {
        self.owners.get(owner).map_or(0, |o| o.bytes)
    }

    /// Stores a new task of `owner`; the callers expired what was due at `now` first.
    fn insert(&mut self, id: Utf8Bytes, owner: Option<&str>) {
        let owner = owner.map(|o| Bytes::copy_from_slice(o.as_bytes()));
        // Only the owner's finished tasks make room; running ones stay (up to
        // `max_running`), and so do other owners' results.
        while self.tasks.len() >= self.config.max_tasks {
            if !self.evict_oldest_of(&owner) {
                break;
            }
        }
        self.owners.entry(owner.clone()).or_default().tasks += 1;
        self.tasks.insert(
            id.into_bytes(),
            Task {
                items: Vec::new(),
                bytes: 0,
                seq: self.next_seq,
                finished: None,
                owner,
            },
        );
        self.next_seq += 1;
    }

    /// Evicts the task that finished longest ago (O(log n)); `false` when no task has
    /// finished.
    fn evict_oldest_finished(&mut self) -> bool {
        let Some((_, id)) = self.finished.first_key_value() else {
            return false;
        };
        let id = id.clone();
        self.remove_task(&id)
    }

    /// Evicts `owner`'s task that finished longest ago (O(log n)); `false` when it has no
    /// finished task.
    fn evict_oldest_of(&mut self, owner: &Option<Bytes>) -> bool {
        let Some(id) = self
            .owners
            .get(owner)
            .and_then(|o| o.finished.first_key_value())
            .map(|(_, id)| id.clone())
        else {
            return false;
        };
        self.remove_task(&id)
    }

    /// Forgets a task, running or finished, with its output and its place in the indexes.
    fn remove_task(&mut self, id: &[u8]) -> bool {
        let Some(task) = self.tasks.remove(id) else {
            return false;
        };
        self.bytes = self.bytes.saturating_sub(task.bytes);
        let key = task.finished.map(|f| (f, task.seq));
        if let Some(key) = key {
            self.finished.remove(&key);
            self.finished_bytes = self.finished_bytes.saturating_sub(task.bytes);
        }
        if let Some(o) = self.owners.get_mut(&task.owner) {
            o.bytes = o.bytes.saturating_sub(task.bytes);
            o.tasks = o.tasks.saturating_sub(1);
            if let Some(key) = key {
                o.finished.remove(&key);
                o.finished_bytes = o.finished_bytes.saturating_sub(task.bytes);
            }
            if o.tasks == 0 {
                self.owners.remove(&task.owner);
            }
        }
        true
    }
}

/// 128 random bits as a UUID v4: the version and variant bits set (122 stay random).
fn uuid_v4(v: u128) -> u128 {
    let v = (v & !(0xF << 76)) | (0x4 << 76); // version 4
    (v & !(0x3 << 62)) | (0x2 << 62) // RFC 4122 variant
}

fn uuid_text(v: u128, format: IdFormat) -> Utf8Bytes {
    Utf8Bytes::from(match format {
        IdFormat::Simple => alloc::format!("{v:032x}"),
        IdFormat::Hyphenated => alloc::format!(
            "{:08x}-{:04x}-{:04x}-{:04x}-{:012x}",
            v >> 96,
            (v >> 80) & 0xFFFF,
            (v >> 64) & 0xFFFF,
            (v >> 48) & 0xFFFF,
            v & 0xFFFF_FFFF_FFFF
        ),
    })
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use alloc::borrow::ToOwned;

    use crate::rng::SplitMix64;

    const KEY: [u8; 32] = [7; 32];

    fn config() -> TaskConfig {
        TaskConfig::new(KEY)
    }

    fn b(s: &'static str) -> Bytes {
        Bytes::from_static(s.as_bytes())
    }

    #[test]
    fn generated_ids_are_uuid_v4_text_and_deterministic_per_seed() {
        let mut a: TaskRegistry<Bytes> = TaskRegistry::new(config());
        let mut b2: TaskRegistry<Bytes> = TaskRegistry::new(config());
        let id = a.start(Instant::ZERO).unwrap().task_id().to_owned();
        assert_eq!(id, b2.start(Instant::ZERO).unwrap().task_id());
        let mut other: TaskRegistry<Bytes> = TaskRegistry::new(TaskConfig::new([8; 32]));
        assert_ne!(
            id,
            other.start(Instant::ZERO).unwrap().task_id(),
            "another key, other ids"
        );
        assert_eq!(id.len(), 36);
        let bytes = id.as_bytes();
        for dash in [8, 13, 18, 23] {
            assert_eq!(bytes[dash], b'-');
        }
        assert_eq!(bytes[14], b'4');
        assert!(matches!(bytes[19], b'8' | b'9' | b'a' | b'b'));
        assert!(id
            .bytes()
            .all(|c| c == b'-' || c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        let mut simple: TaskRegistry<Bytes> =
            TaskRegistry::new(config().id_format(IdFormat::Simple));
        let id = simple.start(Instant::ZERO).unwrap().task_id().to_owned();
        assert_eq!(id.len(), 32);
        assert_eq!(id.as_bytes()[12], b'4');
        assert!(matches!(id.as_bytes()[16], b'8' | b'9' | b'a' | b'b'));
    }

    /// What an attacker computes from one id made of two SplitMix64 outputs (the high half,
    /// then the low half, with the version and variant bits overwritten): the id that
    /// follows it. SplitMix64's output function is a bijection: undo it on the low half (for
    /// each value of the 2 lost variant bits) and the generator's state is known; the high
    /// half confirms it.
    fn splitmix_prediction(seen: &str) -> Option<Utf8Bytes> {
        const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
        const M1: u64 = 0xBF58_476D_1CE4_E5B9;
        const M2: u64 = 0x94D0_49BB_1331_11EB;
        // SplitMix64's output function, of its state.
        let mix = |mut z: u64| {
            z = (z ^ (z >> 30)).wrapping_mul(M1);
            z = (z ^ (z >> 27)).wrapping_mul(M2);
            z ^ (z >> 31)
        };
        let unshift = |y: u64, k: u32| (0..64 / k).fold(y, |x, _| y ^ (x >> k));
        // The inverse of an odd number modulo 2^64, by Newton's iteration.
        let inverse = |c: u64| {
            (0..5).fold(c, |x: u64, _| {
                x.wrapping_mul(2u64.wrapping_sub(c.wrapping_mul(x)))
            })
        };
        let unmix = |z: u64| {
            let z = unshift(z, 31).wrapping_mul(inverse(M2));
            unshift(unshift(z, 27).wrapping_mul(inverse(M1)), 30)
        };
        let seen = u128::from_str_radix(&seen.replace('-', ""), 16).ok()?;
        let (high, low) = ((seen >> 64) as u64, seen as u64);
        let version = 0xF << 12;
        (0..4u64).find_map(|variant| {
            let state = unmix(low & !(3 << 62) | variant << 62);
            (mix(state.wrapping_sub(GAMMA)) & !version == high & !version).then(|| {
                let next = |k: u64| u128::from(mix(state.wrapping_add(GAMMA.wrapping_mul(k))));
                uuid_text(uuid_v4(next(1) << 64 | next(2)), IdFormat::Hyphenated)
            })
        })
    }

    #[test]
    fn an_id_seen_does_not_predict_the_next_one() {
        // Against ids from SplitMix64, as the registry made them before, one id gives away
        // the next, whatever the seed.
        let mut splitmix = SplitMix64::new(0x7A5C_1D00_2026_0001);
        let mut splitmix_id = || {
            let high = u128::from(splitmix.next_u64());
            uuid_text(
                uuid_v4(high << 64 | u128::from(splitmix.next_u64())),
                IdFormat::Hyphenated,
            )
        };
        let seen = splitmix_id();
        assert_eq!(splitmix_prediction(&seen), Some(splitmix_id()));
        // Against ChaCha20's: no state to recover.
        let mut tasks: TaskRegistry<Bytes> = TaskRegistry::new(config());
        let seen = tasks.start(Instant::ZERO).unwrap();
        let next = tasks.start(Instant::ZERO).unwrap();
        let prediction = splitmix_prediction(seen.task_id());
        assert_ne!(prediction.as_deref(), Some(next.task_id()));
    }

    #[test]
    fn the_key_is_not_in_the_debug_output() {
        let text = alloc::format!("{:?}", TaskConfig::new([0xAB; 32]));
        assert!(text.starts_with("TaskConfig"), "{text}");
        assert!(!text.contains("171"), "{text}");
    }

    #[test]
    fn bounded_in_tasks_by_evicting_finished_ones_never_running_ones() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(config().max_tasks(2));
        let old_running = t.start(Instant::ZERO).unwrap();
        let finished = t.start(Instant::ZERO).unwrap();
        t.finish(finished.task_id(), Instant::ZERO).unwrap();
        let new = t.start(Instant::ZERO).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t.state(finished.task_id()), None);
        assert_eq!(t.state(old_running.task_id()), Some(TaskState::Running));
        // Both running: a third call is admitted and neither is evicted (each would end in
        // `unknown task_id` while its tool runs).
        let newer = t.start(Instant::ZERO).unwrap();
        assert_eq!(t.len(), 3);
        for c in [&old_running, &new, &newer] {
            assert_eq!(t.state(c.task_id()), Some(TaskState::Running));
        }
        // Once one finishes, the next start makes room by evicting it.
        t.finish(new.task_id(), Instant::from_secs(1)).unwrap();
        let _last = t.start(Instant::from_secs(1)).unwrap();
        assert_eq!(t.state(new.task_id()), None);
        assert_eq!(t.state(old_running.task_id()), Some(TaskState::Running));
    }

    #[test]
    fn bounded_in_bytes_by_evicting_finished_tasks_then_refusing_the_output() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(config().max_bytes(10));
        let a = t.start(Instant::ZERO).unwrap();
        t.push(a.task_id(), b("123456")).unwrap();
        t.finish(a.task_id(), Instant::ZERO).unwrap();
        let c = t.start(Instant::ZERO).unwrap();
        t.push(c.task_id(), b("123456")).unwrap();
        assert_eq!(t.state(a.task_id()), None, "the finished task made room");
        assert_eq!(t.retained_bytes(), 6);
        // Only running tasks left: the output that does not fit is refused, and `c` keeps
        // what it had; so is another running task's.
        let d = t.start(Instant::ZERO).unwrap();
        assert_eq!(t.push(c.task_id(), b("123456")), Err(TaskError::OverBudget));
        assert_eq!(t.push(d.task_id(), b("12345")), Err(TaskError::OverBudget));
        assert_eq!(t.state(c.task_id()), Some(TaskState::Running));
        assert_eq!(t.retained_bytes(), 6);
        t.push(d.task_id(), b("1234")).unwrap();
        assert_eq!(t.retained_bytes(), 10);
        let mut cursor = c.clone();
        assert_eq!(t.read(&mut cursor).unwrap().items, [b("123456")]);
        // Output larger than the whole bound is refused without evicting anything.
        t.finish(d.task_id(), Instant::ZERO).unwrap();
        assert_eq!(
            t.push(c.task_id(), b("12345678901")),
            Err(TaskError::OverBudget)
        );
        assert_eq!(t.state(d.task_id()), Some(TaskState::Finished));
    }

    #[test]
    fn an_owner_evicts_only_its_own_results() {
        let mut t: TaskRegistry<Bytes> =
            TaskRegistry::new(config().max_bytes(20).max_owner_bytes(20));
        let keep = t.start_owned("b", Instant::ZERO).unwrap();
        t.push(keep.task_id(), b("bbbbbb")).unwrap();
        t.finish(keep.task_id(), Instant::ZERO).unwrap();
        // A floods: each new result evicts A's older one, never B's.
        let mut last = None;
        for i in 0..10u64 {
            let now = Instant::from_millis(i);
            let c = t.start_owned("a", now).unwrap();
            t.push(c.task_id(), b("aaaaaaaaaa")).unwrap();
            t.finish(c.task_id(), now).unwrap();
            if let Some(prev) = last.replace(c) {
                assert_eq!(
                    t.state(prev.task_id()),
                    None,
                    "A's own older result made room"
                );
            }
        }
        assert_eq!(t.state(keep.task_id()), Some(TaskState::Finished));
        assert_eq!(t.retained_bytes_of(Some("b")), 6);
        assert_eq!(t.retained_bytes_of(Some("a")), 10);
        // A result A cannot keep without evicting B's is refused, and nothing is evicted.
        let big = t.start_owned("a", Instant::ZERO).unwrap();
        assert_eq!(
            t.push(big.task_id(), b("aaaaaaaaaaaaaaa")),
            Err(TaskError::OverBudget)
        );
        assert_eq!(t.state(keep.task_id()), Some(TaskState::Finished));
        assert!(last.is_some_and(|c| t.state(c.task_id()).is_some()));
        // Unowned tasks are a group of their own: they do not evict owned results either.
        let anon = t.start(Instant::ZERO).unwrap();
        assert_eq!(
            t.push(anon.task_id(), b("xxxxx")),
            Err(TaskError::OverBudget)
        );
        t.push(anon.task_id(), b("xxxx")).unwrap();
    }

    #[test]
    fn an_owner_is_bounded_in_bytes_and_results() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(
            config()
                .max_bytes(100)
                .max_owner_bytes(10)
                .max_owner_tasks(2),
        );
        let a = t.start_owned("a", Instant::ZERO).unwrap();
        assert_eq!(
            t.push(a.task_id(), b("12345678901")),
            Err(TaskError::OwnerOverBudget)
        );
        t.push(a.task_id(), b("1234567890")).unwrap();
        t.finish(a.task_id(), Instant::ZERO).unwrap();
        let c = t.start_owned("a", Instant::ZERO).unwrap();
        t.push(c.task_id(), b("12345")).unwrap();
        assert_eq!(
            t.state(a.task_id()),
            None,
            "over the owner's bytes: its own went"
        );
        t.finish(c.task_id(), Instant::ZERO).unwrap();
        let d = t.start_owned("a", Instant::ZERO).unwrap();
        t.finish(d.task_id(), Instant::ZERO).unwrap();
        let e = t.start_owned("a", Instant::ZERO).unwrap();
        t.finish(e.task_id(), Instant::ZERO).unwrap();
        assert_eq!(
            t.state(c.task_id()),
            None,
            "over the owner's results: its oldest went"
        );
        assert_eq!(t.len(), 2);
        // The owner's bound is its own: another owner has the whole of its own.
        let o = t.start_owned("o", Instant::ZERO).unwrap();
        t.push(o.task_id(), b("1234567890")).unwrap();
    }

    #[test]
    fn a_result_past_max_tasks_of_others_is_dropped_not_theirs() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(config().max_tasks(2));
        let mut held = Vec::new();
        for owner in ["a", "b"] {
            let c = t.start_owned(owner, Instant::ZERO).unwrap();
            t.finish(c.task_id(), Instant::ZERO).unwrap();
            held.push(c);
        }
        let c = t.start_owned("c", Instant::ZERO).unwrap();
        t.push(c.task_id(), b("x")).unwrap();
        assert_eq!(
            t.finish(c.task_id(), Instant::ZERO),
            Err(TaskError::TooManyResults)
        );
        assert_eq!(t.state(c.task_id()), None);
        assert_eq!(t.retained_bytes(), 0);
        for c in &held {
            assert_eq!(t.state(c.task_id()), Some(TaskState::Finished));
        }
        // Once those expire, C's results are kept again.
        let later = Instant::from_secs(60);
        let c = t.start_owned("c", later).unwrap();
        assert_eq!(t.finish(c.task_id(), later), Ok(()));
    }

    /// Random operations of three owners under small bounds: no operation of one owner ever
    /// removes another owner's result before its TTL, and the bounds hold.
    #[test]
    fn no_owner_removes_another_owners_result() {
        let mut rng = SplitMix64::new(0xFA1E);
        let ttl = Duration::from_secs(5);
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(
            config()
                .max_tasks(6)
                .max_bytes(40)
                .max_owner_bytes(25)
                .max_owner_tasks(3)
                .max_running(6)
                .result_ttl(ttl),
        );
        let owners = ["a", "b", "c"];
        let mut live: Vec<(Cursor, &str)> = Vec::new();
        let mut now = Instant::ZERO;
        for _ in 0..5_000 {
            now += Duration::from_millis(rng.next_u64() % 300);
            t.handle_timeout(now);
            live.retain(|(c, _)| t.state(c.task_id()).is_some());
            let owner = owners[(rng.next_u64() % 3) as usize];
            let before: Vec<_> = live
                .iter()
                .filter(|(c, o)| *o != owner && t.state(c.task_id()).is_some())
                .map(|(c, _)| c.task_id().to_owned())
                .collect();
            let mine: Vec<_> = live.iter().filter(|(_, o)| *o == owner).cloned().collect();
            match rng.next_u64() % 3 {
                0 => {
                    if let Ok(c) = t.start_owned(owner, now) {
                        live.push((c, owner));
                    }
                }
                1 => {
                    if let Some((c, _)) = mine.get(rng.next_u64() as usize % mine.len().max(1)) {
                        let size = (rng.next_u64() % 15) as usize;
                        let _ = t.push(c.task_id(), Bytes::from(alloc::vec![b'x'; size]));
                    }
                }
                _ => {
                    if let Some((c, _)) = mine.get(rng.next_u64() as usize % mine.len().max(1)) {
                        let _ = t.finish(c.task_id(), now);
                    }
                }
            }
            for id in &before {
                assert!(
                    t.state(id).is_some(),
                    "{owner} removed another owner's task"
                );
            }
            assert!(t.retained_bytes() <= 40);
            for o in owners {
                assert!(t.retained_bytes_of(Some(o)) <= 25);
            }
            assert_eq!(
                t.retained_bytes(),
                owners
                    .iter()
                    .map(|o| t.retained_bytes_of(Some(o)))
                    .sum::<usize>()
            );
        }
    }

    #[test]
    fn running_tasks_are_bounded_and_a_finished_one_makes_room() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(config().max_running(2));
        let a = t.start(Instant::ZERO).unwrap();
        let _b = t.start(Instant::ZERO).unwrap();
        assert_eq!(t.start(Instant::ZERO), Err(StartError::Busy));
        assert_eq!(t.open(None, Instant::ZERO), Open::Busy);
        assert_eq!(t.start_with_id("x", Instant::ZERO), Err(StartError::Busy));
        assert_eq!(t.len(), 2, "a refused start stores nothing");
        // Resuming a running task is not a start.
        assert!(matches!(
            t.open(Some(a.task_id()), Instant::ZERO),
            Open::Resumed(_)
        ));
        t.finish(a.task_id(), Instant::ZERO).unwrap();
        assert!(t.start(Instant::ZERO).is_ok());
        let mut adopt: TaskRegistry<Bytes> =
            TaskRegistry::new(config().max_running(1).client_ids(ClientIds::Adopt));
        let _ = adopt.start(Instant::ZERO).unwrap();
        assert_eq!(adopt.open(Some("trace"), Instant::ZERO), Open::Busy);
    }

    #[test]
    fn a_forgotten_task_frees_its_place_and_a_result_is_not_forgotten() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(config().max_running(1));
        let a = t.start_owned("s", Instant::ZERO).unwrap();
        t.push(a.task_id(), b("xyz")).unwrap();
        assert_eq!(t.start(Instant::ZERO), Err(StartError::Busy));
        t.forget(a.task_id()).unwrap();
        assert_eq!((t.len(), t.retained_bytes()), (0, 0));
        assert_eq!(t.retained_bytes_of(Some("s")), 0);
        assert_eq!(t.open(Some(a.task_id()), Instant::ZERO), Open::Unknown);
        assert_eq!(t.forget(a.task_id()), Err(TaskError::Unknown));
        let c = t.start(Instant::ZERO).unwrap();
        t.finish(c.task_id(), Instant::ZERO).unwrap();
        assert_eq!(t.forget(c.task_id()), Err(TaskError::Finished));
        assert_eq!(t.state(c.task_id()), Some(TaskState::Finished));
    }

    #[test]
    fn unstored_ids_take_no_place() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(config().max_tasks(1));
        let a = t.start(Instant::ZERO).unwrap();
        t.finish(a.task_id(), Instant::ZERO).unwrap();
        for _ in 0..10 {
            let id = t.unstored_id();
            assert_ne!(id.as_str(), a.task_id());
        }
        assert_eq!(t.state(a.task_id()), Some(TaskState::Finished));
        assert_eq!(t.len(), 1);
    }

    /// The registry against a naive model (every task scanned, as before the finished
    /// index): the same tasks, states, bytes and next expiry after every step.
    #[test]
    fn the_finished_index_keeps_the_scanning_semantics() {
        let mut rng = SplitMix64::new(0x5EED);
        let ttl = Duration::from_secs(5);
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(
            config()
                .max_tasks(8)
                .max_bytes(40)
                .max_running(6)
                .result_ttl(ttl),
        );
        // id -> (seq, finished, bytes)
        let mut model: BTreeMap<alloc::string::String, (u64, Option<Instant>, usize)> =
            BTreeMap::new();
        let mut seq = 0u64;
        let mut now = Instant::ZERO;
        let model_expire = |m: &mut BTreeMap<_, (u64, Option<Instant>, usize)>, now: Instant| {
            m.retain(|_, (_, f, _)| f.is_none_or(|f: Instant| now < f + ttl));
        };
        let model_evict =
            |m: &mut BTreeMap<alloc::string::String, (u64, Option<Instant>, usize)>| {
                let victim = m
                    .iter()
                    .filter_map(|(id, (s, f, _))| Some(((f.as_ref().copied()?, *s), id.clone())))
                    .min();
                victim.is_some_and(|(_, id)| m.remove(&id).is_some())
            };
        for _ in 0..5_000 {
            now += Duration::from_millis(rng.next_u64() % 700);
            let ids: Vec<_> = model.keys().cloned().collect();
            let pick = |r: u64| ids.get(r as usize % ids.len().max(1)).cloned();
            match rng.next_u64() % 4 {
                0 => {
                    model_expire(&mut model, now);
                    let running = model.values().filter(|v| v.1.is_none()).count();
                    let got = t.start(now);
                    if running >= 6 {
                        assert_eq!(got, Err(StartError::Busy));
                    } else {
                        while model.len() >= 8 && model_evict(&mut model) {}
                        model.insert(got.unwrap().task_id().to_owned(), (seq, None, 0));
                        seq += 1;
                    }
                }
                1 => {
                    if let Some(id) = pick(rng.next_u64()) {
                        let size = (rng.next_u64() % 12) as usize;
                        let item = Bytes::from(alloc::vec![b'x'; size]);
                        let expected = match model.get(&id) {
                            Some((_, Some(_), _)) => Err(TaskError::Finished),
                            _ => {
                                let total: usize = model.values().map(|v| v.2).sum();
                                let running: usize =
                                    model.values().filter(|v| v.1.is_none()).map(|v| v.2).sum();
                                if total + size > 40 && running + size > 40 {
                                    Err(TaskError::OverBudget)
                                } else {
                                    let mut total = total;
                                    while total + size > 40 && model_evict(&mut model) {
                                        total = model.values().map(|v| v.2).sum();
                                    }
                                    if let Some(v) = model.get_mut(&id) {
                                        v.2 += size;
                                    }
                                    Ok(())
                                }
                            }
                        };
                        assert_eq!(t.push(&id, item), expected);
                    }
                }
                2 => {
                    if let Some(id) = pick(rng.next_u64()) {
                        let v = model.get_mut(&id).unwrap();
                        let expected = if v.1.is_some() {
                            Err(TaskError::Finished)
                        } else {
                            v.1 = Some(now);
                            Ok(())
                        };
                        assert_eq!(t.finish(&id, now), expected);
                    }
                }
                _ => {
                    t.handle_timeout(now);
                    model_expire(&mut model, now);
                }
            }
            assert_eq!(t.len(), model.len());
            assert_eq!(
                t.retained_bytes(),
                model.values().map(|v| v.2).sum::<usize>()
            );
            for (id, (_, f, _)) in &model {
                let state = if f.is_some() {
                    TaskState::Finished
                } else {
                    TaskState::Running
                };
                assert_eq!(t.state(id), Some(state));
            }
            let expiry = model.values().filter_map(|v| Some(v.1? + ttl)).min();
            assert_eq!(t.poll_timeout(), expiry);
        }
    }

    /// With many running tasks, each start no longer scans them all (a full scan per start
    /// made 40 000 starts take tens of seconds in a debug build).
    #[test]
    /// 40 000 starts among up to 20 000 running tasks (each start scanned them all before
    /// the finished index; it is not timed here: expiry and eviction now only visit the
    /// finished index's first entries).
    fn starts_among_many_running_tasks_expire_only_finished_ones() {
        let mut t: TaskRegistry<Bytes> =
            TaskRegistry::new(config().max_running(usize::MAX).max_tasks(1 << 20));
        for i in 0..40_000u64 {
            let now = Instant::from_millis(3 * i);
            let c = t.start(now).unwrap();
            if i % 2 == 0 {
                t.finish(c.task_id(), now).unwrap();
            }
        }
        // The 10 000 results finished before 59.997 s expired by 119.997 s.
        assert_eq!(t.len(), 30_000);
    }

    #[test]
    fn expiry_frees_bytes() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(config());
        let a = t.start(Instant::ZERO).unwrap();
        t.push(a.task_id(), b("xyz")).unwrap();
        t.finish(a.task_id(), Instant::ZERO).unwrap();
        t.handle_timeout(Instant::from_secs(60));
        assert_eq!(t.retained_bytes(), 0);
    }

    #[test]
    fn adopt_policy_starts_unknown_ids_but_refuses_invalid_ones() {
        let mut t: TaskRegistry<Bytes> = TaskRegistry::new(config().client_ids(ClientIds::Adopt));
        assert!(matches!(
            t.open(Some("trace"), Instant::ZERO),
            Open::Started(_)
        ));
        assert!(matches!(
            t.open(Some("trace"), Instant::ZERO),
            Open::Resumed(_)
        ));
        assert_eq!(t.open(Some("bad\nid"), Instant::ZERO), Open::Unknown);
    }
}
