//! A2A (Agent2Agent protocol) task streams (feature `json`): the answers to `message/stream`
//! and `tasks/resubscribe`, each event's data a JSON-RPC 2.0 response.
//!
//! Every event's data is `{"jsonrpc":"2.0","id":<request id>,"result":{…}}` or, for an
//! error, `{"jsonrpc":"2.0","id":…,"error":{"code":-32001,"message":"Task not found"}}`. A
//! `result` is named by its `kind`: a `task` (`id`, `contextId`, `status`, `artifacts?`,
//! `history?`), a `message` (`messageId`, `role`, `parts`), a `status-update` (`taskId`,
//! `contextId`, `status`, `final`) or an `artifact-update` (`taskId`, `contextId`,
//! `artifact {artifactId, parts}`, `append?`, `lastChunk?`). A `status` is
//! `{state, message?, timestamp?}`. The `event:` field is not read.
//!
//! | rule | what it asks |
//! |---|---|
//! | [`JSON`] | the data is a JSON object |
//! | [`ENVELOPE`] | the data is a JSON-RPC 2.0 response: `jsonrpc` is `"2.0"`, an `id` (string, number or `null`), exactly one of `result` (an object) and `error` (an object with an integer `code` and a string `message`) |
//! | [`SAME_ID`] | every event carries the first event's `id` |
//! | [`KIND`] | the result's `kind` is `task`, `message`, `status-update` or `artifact-update` |
//! | [`FIELDS`] | the result carries the fields of its kind, of their JSON types: a task a string `id` and `contextId`, a `status` object and, when sent, `artifacts` objects with a string `artifactId`; a message a string `messageId`, a `parts` array, and when sent a `role` of `agent` or `user` (the specification's own direct reply, §9.2, has none) and string `taskId` and `contextId`; a status update a string `taskId` and `contextId`, a `status` object and a boolean `final` (absent reads as `false`); an artifact update a string `taskId` and `contextId`, an `artifact` object with a string `artifactId` and a `parts` array, and boolean `append` and `lastChunk` when sent. A `status` has a string `state`. No other field, and no field of other kinds, is read |
//! | [`STATE`] | a `status.state` is one of the nine task states (`submitted`, `working`, `input-required`, `completed`, `canceled`, `failed`, `rejected`, `auth-required`, `unknown`) |
//! | [`SAME_TASK`] | every task, update and message that names a task names the same task id (`id` of a task, `taskId` of the others) and the same `contextId` as the first that named one |
//! | [`TERMINAL_STATE`] | a status update in a terminal state (`completed`, `failed`, `canceled`, `rejected`) is `final: true` |
//! | [`APPEND`] | an artifact update with `append: true` names an artifact already seen in the stream (in an earlier artifact update, or in a task's `artifacts`) |
//! | [`AFTER_TERMINAL`] | nothing follows a JSON-RPC `error`, a `message`, a `final: true` status update or a task in a terminal state |
//! | [`SNAPSHOT_FIRST`] | ([`Stream::resubscribe`] only) the first event is a `task` (or an `error`) |
//! | [`TOO_LARGE`] | the artifact ids kept stay under the caps ([`Stream::max_artifacts`], [`Stream::max_kept`]) |
//!
//! The wire is the JSON-RPC binding of A2A 0.3 (<https://a2a-protocol.org/v0.3.0/specification/>,
//! §3.3.1 "JSON-RPC 2.0 Streaming", §7.2 `message/stream`, §7.9 `tasks/resubscribe`, §9.3
//! "Streaming Task Execution"): "each SSE `data` field contains a complete JSON-RPC 2.0
//! Response object", whose `result` is a `Message`, `Task`, `TaskStatusUpdateEvent` or
//! `TaskArtifactUpdateEvent`, told apart by `kind`. A2A 1.0 renamed the methods
//! (`SendStreamingMessage`, `SubscribeToTask`) and the wire (a `StreamResponse` with one of
//! `task`, `message`, `statusUpdate`, `artifactUpdate`, no `kind`, no `final`,
//! `TASK_STATE_*` states); such a result has no `kind` and breaks [`KIND`].
//!
//! How a stream ends:
//! - A JSON-RPC `error` (as the first event, when the request failed, or later) ends it:
//!   validly, but not successfully; [`Profile::failure`] reports it as
//!   `Failure { event: "error", code: Some(code), message }`.
//! - A `message` result ends it: the agent answered directly ("if the response is a message,
//!   the stream should contain one, and only one, message and then close", A2A 1.0 §3.2.3).
//! - A status update with `final: true` ends it, in any state: `input-required` and
//!   `auth-required` end the interaction too (the spec's example: "Server closes the SSE
//!   connection after the `final:true` event").
//! - A task in a terminal state (`completed`, `failed`, `canceled`, `rejected`) ends it. A
//!   task in an interrupted state (`input-required`, `auth-required`) may end it (the
//!   official Python SDK closes the stream there), and may be followed by more events.
//!
//! A final status update or task whose state is `failed` or `rejected` reports
//! [`Profile::failure`] too: `Failure { event: "status-update" or "task", code:
//! Some("failed" or "rejected"), message }`, the message being the text parts of the status
//! `message` (joined by line breaks), or `task failed` / `task rejected` without one. A
//! `canceled` task is the client's doing and reports none.
//!
//! Resubscribe: A2A 0.3 leaves what `tasks/resubscribe` sends first to the server ("whether
//! it attempts to backfill some missed events or only sends new ones … is
//! implementation-dependent"); A2A 1.0 asks that `SubscribeToTask` "MUST return a `Task`
//! object as the first event in the stream, representing the current state of the task at
//! the time of subscription". [`Stream::resubscribe`] holds a stream to that
//! ([`SNAPSHOT_FIRST`]); [`Stream::new`] asks nothing of the first event, since 0.3 servers
//! may open `message/stream` with a status update. The snapshot's `artifacts` count as
//! seen for [`APPEND`], so a resubscription may resume in the middle of an artifact; a 0.3
//! server that sends no snapshot and resumes mid-artifact breaks [`APPEND`] under either
//! constructor, since the profile cannot tell the artifact was begun.
//!
//! Keep-alive comments are allowed anywhere.
//!
//! ```
//! use ssekit::profile::a2a::{Stream, TaskState};
//! use ssekit::sequence::Validator;
//! use ssekit::Event;
//!
//! let mut v = Validator::new(Stream::new());
//! for data in [
//!     r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"task","id":"t1","contextId":"c1","status":{"state":"submitted"}}}"#,
//!     r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"artifact-update","taskId":"t1","contextId":"c1","artifact":{"artifactId":"a1","parts":[{"kind":"text","text":"Hi"}]}}}"#,
//!     r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t1","contextId":"c1","status":{"state":"completed"},"final":true}}"#,
//! ] {
//!     v.event(&Event::message(data))?;
//! }
//! v.finish()?;
//! assert_eq!(v.profile().task_id(), Some("t1"));
//! assert_eq!(v.profile().state(), Some(TaskState::Completed));
//! # Ok::<(), ssekit::sequence::SequenceError>(())
//! ```

use alloc::borrow::Cow;
use alloc::collections::BTreeSet;
use alloc::string::{String, ToString};
use alloc::vec::Vec;
use core::fmt;
use core::marker::PhantomData;

use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

use super::json::{self, Text};
use crate::event::Event;
use crate::frame_ref::EventRef;
use crate::sequence::{Failure, Profile, Rule};
use crate::text::Utf8Bytes;

/// The data is a JSON object.
///
/// A string the profile reads with an escape that stands for no character (`"\ud800"`)
/// breaks [`FIELDS`] instead.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::JSON.id(), "a2a.json");
/// ```
pub const JSON: Rule = Rule::new("a2a.json", "the data is a JSON object");

/// The data is a JSON-RPC 2.0 response.
///
/// `jsonrpc` is `"2.0"`; `id` is there (a string, a number, or `null`: JSON-RPC's answer
/// to a request whose id could not be read); exactly one of `result` and `error` is there,
/// a `result` an object, an `error` an object with an integer `code` and a string
/// `message`. A `result` or `error` of `null` counts as absent, as some JSON-RPC libraries
/// send the other member as `null`. A member given twice breaks the rule.
///
/// # Example
/// ```
/// use ssekit::profile::a2a::{Stream, ENVELOPE};
/// use ssekit::sequence::Profile;
/// let mut p = Stream::new();
/// let no_id = r#"{"jsonrpc":"2.0","result":{"kind":"message","messageId":"m","role":"agent","parts":[]}}"#;
/// assert_eq!(p.event(&ssekit::Event::message(no_id)), Err(ENVELOPE));
/// ```
pub const ENVELOPE: Rule = Rule::new(
    "a2a.envelope",
    "the data is a JSON-RPC 2.0 response: `jsonrpc` \"2.0\", an `id`, exactly one of `result` and `error` (with an integer `code` and a string `message`)",
);

/// Every event carries the first event's `id`: they all answer the same request.
///
/// Ids compare as JSON values: `1` and `"1"` differ.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::SAME_ID.id(), "a2a.same-id");
/// ```
pub const SAME_ID: Rule = Rule::new("a2a.same-id", "every event carries the same JSON-RPC `id`");

/// The result's `kind` is `task`, `message`, `status-update` or `artifact-update`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::KIND.id(), "a2a.kind");
/// ```
pub const KIND: Rule = Rule::new(
    "a2a.kind",
    "the result's `kind` is `task`, `message`, `status-update` or `artifact-update`",
);

/// The result carries the fields of its kind, of their JSON types (see the
/// [module docs](self) for the list). Fields of other kinds are not read: a status update
/// with an `artifact` of `5` keeps it.
///
/// # Example
/// ```
/// use ssekit::profile::a2a::{Stream, FIELDS};
/// use ssekit::sequence::Profile;
/// let mut p = Stream::new();
/// let update = r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":"no"}}"#;
/// assert_eq!(p.event(&ssekit::Event::message(update)), Err(FIELDS));
/// ```
pub const FIELDS: Rule = Rule::new(
    "a2a.fields",
    "the result carries the fields of its kind: a task `id`, `contextId`, `status`; a message `messageId` and `parts`; an update `taskId`, `contextId` and `status` (with `final`) or `artifact` (with `artifactId` and `parts`)",
);

/// A `status.state` is one of the nine task states of the specification.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::STATE.id(), "a2a.state");
/// ```
pub const STATE: Rule = Rule::new(
    "a2a.state",
    "`status.state` is submitted, working, input-required, completed, canceled, failed, rejected, auth-required or unknown",
);

/// Every event that names a task names the same one, in the same context.
///
/// The first task (`id`), update (`taskId`) or message (`taskId`, when sent) fixes the
/// task id, and the first `contextId` the context; every later one repeats them.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::SAME_TASK.id(), "a2a.same-task");
/// ```
pub const SAME_TASK: Rule = Rule::new(
    "a2a.same-task",
    "every event names the same task id and context id",
);

/// A status update in a terminal state (`completed`, `failed`, `canceled`, `rejected`) is
/// `final: true`: nothing follows a terminal state.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::TERMINAL_STATE.id(), "a2a.terminal-state");
/// ```
pub const TERMINAL_STATE: Rule = Rule::new(
    "a2a.terminal-state",
    "a status update in a terminal state is `final: true`",
);

/// An artifact update with `append: true` names an artifact already seen in the stream.
///
/// Seen: in an earlier artifact update, or in the `artifacts` of a task. The profile keeps
/// the ids ([`TOO_LARGE`] caps them); `lastChunk` is not checked against later appends.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::APPEND.id(), "a2a.append");
/// ```
pub const APPEND: Rule = Rule::new(
    "a2a.append",
    "`append: true` names an artifact already seen in the stream",
);

/// Nothing follows a JSON-RPC `error`, a `message`, a `final: true` status update, or a task
/// in a terminal state.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::AFTER_TERMINAL.id(), "a2a.after-terminal");
/// ```
pub const AFTER_TERMINAL: Rule = Rule::new(
    "a2a.after-terminal",
    "nothing follows an error, a message, a final status update or a task in a terminal state",
);

/// With [`Stream::resubscribe`], the first event is a `task`: the snapshot of the task as it
/// stands (A2A 1.0's `SubscribeToTask` requires it), or a JSON-RPC `error` (the task is
/// unknown, or already in a terminal state).
///
/// # Example
/// ```
/// use ssekit::profile::a2a::{Stream, SNAPSHOT_FIRST};
/// use ssekit::sequence::Profile;
/// let mut p = Stream::resubscribe();
/// let update = r#"{"jsonrpc":"2.0","id":2,"result":{"kind":"status-update","taskId":"t","contextId":"c","status":{"state":"working"},"final":false}}"#;
/// assert_eq!(p.event(&ssekit::Event::message(update)), Err(SNAPSHOT_FIRST));
/// ```
pub const SNAPSHOT_FIRST: Rule = Rule::new(
    "a2a.snapshot-first",
    "a resubscription's first event is the task's snapshot (a `task`), or an error",
);

/// The artifact ids the profile keeps ([`APPEND`]) stay under the caps: at most
/// [`Stream::max_artifacts`] ids, of at most [`Stream::max_kept`] bytes in all.
///
/// # Example
/// ```
/// use ssekit::profile::a2a::{Stream, TOO_LARGE};
/// use ssekit::sequence::Profile;
/// let mut p = Stream::new().max_artifacts(1);
/// let update = |id: &str| ssekit::Event::message(format!(
///     r#"{{"jsonrpc":"2.0","id":1,"result":{{"kind":"artifact-update","taskId":"t","contextId":"c","artifact":{{"artifactId":"{id}","parts":[]}}}}}}"#
/// ));
/// p.event(&update("a1"))?;
/// assert_eq!(p.event(&update("a2")), Err(TOO_LARGE));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const TOO_LARGE: Rule = Rule::new(
    "a2a.too-large",
    "the artifact ids kept stay under `max_artifacts` ids and `max_kept` bytes",
);

/// The default cap on the artifact ids kept: 4096.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::DEFAULT_MAX_ARTIFACTS, 4096);
/// ```
pub const DEFAULT_MAX_ARTIFACTS: usize = 4096;

/// The default cap on the bytes of the artifact ids kept: 1 MiB.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::a2a::DEFAULT_MAX_KEPT, 1 << 20);
/// ```
pub const DEFAULT_MAX_KEPT: usize = 1 << 20;

/// The state of an A2A task (`TaskState` in the specification).
///
/// # Example
/// ```
/// use ssekit::profile::a2a::TaskState;
/// assert_eq!(TaskState::of("input-required"), Some(TaskState::InputRequired));
/// assert_eq!(TaskState::Failed.as_str(), "failed");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskState {
    /// `submitted`: received, not yet worked on.
    Submitted,
    /// `working`: in progress.
    Working,
    /// `input-required`: paused, waiting for the client's input.
    InputRequired,
    /// `completed`: done (terminal).
    Completed,
    /// `canceled`: canceled by the client (terminal).
    Canceled,
    /// `failed`: failed (terminal).
    Failed,
    /// `rejected`: the agent declined it (terminal).
    Rejected,
    /// `auth-required`: paused, waiting for authentication.
    AuthRequired,
    /// `unknown`: the agent cannot tell.
    Unknown,
}

impl TaskState {
    /// The state named `name` on the wire, if it is one.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::a2a::TaskState;
    /// assert_eq!(TaskState::of("completed"), Some(TaskState::Completed));
    /// assert_eq!(TaskState::of("TASK_STATE_COMPLETED"), None);
    /// ```
    pub fn of(name: &str) -> Option<TaskState> {
        Some(match name {
            "submitted" => TaskState::Submitted,
            "working" => TaskState::Working,
            "input-required" => TaskState::InputRequired,
            "completed" => TaskState::Completed,
            "canceled" => TaskState::Canceled,
            "failed" => TaskState::Failed,
            "rejected" => TaskState::Rejected,
            "auth-required" => TaskState::AuthRequired,
            "unknown" => TaskState::Unknown,
            _ => return None,
        })
    }

    /// The state's name on the wire.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::a2a::TaskState::AuthRequired.as_str(), "auth-required");
    /// ```
    pub const fn as_str(self) -> &'static str {
        match self {
            TaskState::Submitted => "submitted",
            TaskState::Working => "working",
            TaskState::InputRequired => "input-required",
            TaskState::Completed => "completed",
            TaskState::Canceled => "canceled",
            TaskState::Failed => "failed",
            TaskState::Rejected => "rejected",
            TaskState::AuthRequired => "auth-required",
            TaskState::Unknown => "unknown",
        }
    }

    /// Whether the task is over: `completed`, `canceled`, `failed` or `rejected`.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::a2a::TaskState;
    /// assert!(TaskState::Rejected.is_terminal());
    /// assert!(!TaskState::InputRequired.is_terminal());
    /// ```
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskState::Completed | TaskState::Canceled | TaskState::Failed | TaskState::Rejected
        )
    }

    /// Whether the task waits for the client: `input-required` or `auth-required`.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::a2a::TaskState;
    /// assert!(TaskState::AuthRequired.is_interrupted());
    /// assert!(!TaskState::Working.is_interrupted());
    /// ```
    pub const fn is_interrupted(self) -> bool {
        matches!(self, TaskState::InputRequired | TaskState::AuthRequired)
    }

    /// Whether a task ending in this state reports a [`Failure`]: `failed` and `rejected`.
    const fn is_failure(self) -> bool {
        matches!(self, TaskState::Failed | TaskState::Rejected)
    }
}

impl fmt::Display for TaskState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

// ---------------------------------------------------------------------------------------
// Reading: one serde pass over the data that never fails on a field's JSON type, only on
// JSON syntax; each field the profile reads comes back absent, of its type, or wrong, and
// the rules decide which fields matter for the event's kind.

/// A field as read: absent (or `null`, where that reads as absent), of the JSON type the
/// profile reads it as, or of another type (or given twice).
#[derive(Default)]
enum Lax<T> {
    #[default]
    Absent,
    Ok(T),
    Wrong,
}

/// How a value the profile reads is made from each JSON type; every type but the ones a
/// reader takes is [`Lax::Wrong`], and `null` is absent unless the reader takes it.
trait Read<'de>: Sized {
    fn null() -> Lax<Self> {
        Lax::Absent
    }
    fn boolean(_: bool) -> Lax<Self> {
        Lax::Wrong
    }
    fn integer(_: i128) -> Lax<Self> {
        Lax::Wrong
    }
    fn float(_: f64) -> Lax<Self> {
        Lax::Wrong
    }
    fn string(_: Cow<'de, str>) -> Lax<Self> {
        Lax::Wrong
    }
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Lax<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Lax::Wrong)
    }
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Lax<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Lax::Wrong)
    }
}

impl<'de, T: Read<'de>> Deserialize<'de> for Lax<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct LaxVisitor<T>(PhantomData<T>);
        impl<'de, T: Read<'de>> Visitor<'de> for LaxVisitor<T> {
            type Value = Lax<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a JSON value")
            }
            fn visit_unit<E: de::Error>(self) -> Result<Lax<T>, E> {
                Ok(T::null())
            }
            fn visit_none<E: de::Error>(self) -> Result<Lax<T>, E> {
                Ok(T::null())
            }
            fn visit_bool<E: de::Error>(self, v: bool) -> Result<Lax<T>, E> {
                Ok(T::boolean(v))
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Lax<T>, E> {
                Ok(T::integer(i128::from(v)))
            }
            fn visit_i64<E: de::Error>(self, v: i64) -> Result<Lax<T>, E> {
                Ok(T::integer(i128::from(v)))
            }
            fn visit_f64<E: de::Error>(self, v: f64) -> Result<Lax<T>, E> {
                Ok(T::float(v))
            }
            fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Lax<T>, E> {
                Ok(T::string(Cow::Borrowed(v)))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Lax<T>, E> {
                Ok(T::string(Cow::Owned(v.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Lax<T>, A::Error> {
                T::map(map)
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Lax<T>, A::Error> {
                T::seq(seq)
            }
        }
        d.deserialize_any(LaxVisitor(PhantomData))
    }
}

/// Reads the value of the current map entry into `slot`; a key given twice makes the slot
/// [`Lax::Wrong`] (serde's derived structs refuse it too). `seen` has one bit per slot.
fn put<'de, T: Read<'de>, A: MapAccess<'de>>(
    map: &mut A,
    slot: &mut Lax<T>,
    seen: &mut u32,
    bit: u32,
) -> Result<(), A::Error> {
    let value = map.next_value::<Lax<T>>()?;
    *slot = if *seen & bit != 0 { Lax::Wrong } else { value };
    *seen |= bit;
    Ok(())
}

impl<'de> Read<'de> for Text<'de> {
    fn string(s: Cow<'de, str>) -> Lax<Self> {
        Lax::Ok(Text(s))
    }
}

impl Read<'_> for bool {
    fn boolean(b: bool) -> Lax<Self> {
        Lax::Ok(b)
    }
}

/// A JSON-RPC error `code`: an integer (the failure reads it again, as text).
struct Code;

impl Read<'_> for Code {
    fn integer(_: i128) -> Lax<Self> {
        Lax::Ok(Code)
    }
}

/// A JSON-RPC `id`: a string, a number or `null`, compared as JSON values.
#[derive(Clone, Debug, PartialEq)]
enum Id {
    Null,
    Text(String),
    Integer(i128),
    /// The bits of a number with a fraction or an exponent.
    Float(u64),
}

impl<'de> Read<'de> for Id {
    fn null() -> Lax<Self> {
        Lax::Ok(Id::Null)
    }
    fn integer(n: i128) -> Lax<Self> {
        Lax::Ok(Id::Integer(n))
    }
    fn float(n: f64) -> Lax<Self> {
        Lax::Ok(Id::Float(n.to_bits()))
    }
    fn string(s: Cow<'de, str>) -> Lax<Self> {
        Lax::Ok(Id::Text(s.into_owned()))
    }
}

/// A JSON array, its elements skipped.
struct Array;

impl<'de> Read<'de> for Array {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Lax<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Lax::Ok(Array))
    }
}

/// A `status`: its `state` alone is read.
struct Status<'a> {
    state: Lax<Text<'a>>,
}

impl<'de> Read<'de> for Status<'de> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Lax<Self>, A::Error> {
        let mut status = Status { state: Lax::Absent };
        let mut seen = 0;
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match &*key {
                "state" => put(&mut map, &mut status.state, &mut seen, 1)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Lax::Ok(status))
    }
}

/// An `artifact`: its `artifactId` and whether its `parts` is an array.
struct Artifact<'a> {
    artifact_id: Lax<Text<'a>>,
    parts: Lax<Array>,
}

impl<'de> Read<'de> for Artifact<'de> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Lax<Self>, A::Error> {
        let mut artifact = Artifact {
            artifact_id: Lax::Absent,
            parts: Lax::Absent,
        };
        let mut seen = 0;
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match &*key {
                "artifactId" => put(&mut map, &mut artifact.artifact_id, &mut seen, 1)?,
                "parts" => put(&mut map, &mut artifact.parts, &mut seen, 2)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Lax::Ok(artifact))
    }
}

/// A task's `artifacts`: each read as an [`Artifact`].
struct Artifacts<'a>(Vec<Lax<Artifact<'a>>>);

impl<'de> Read<'de> for Artifacts<'de> {
    fn seq<A: SeqAccess<'de>>(mut seq: A) -> Result<Lax<Self>, A::Error> {
        let mut artifacts = Vec::new();
        while let Some(artifact) = seq.next_element::<Lax<Artifact<'de>>>()? {
            artifacts.push(artifact);
        }
        Ok(Lax::Ok(Artifacts(artifacts)))
    }
}

/// A `result`: every field any kind reads (each kind looks at its own).
#[derive(Default)]
struct Body<'a> {
    kind: Lax<Text<'a>>,
    id: Lax<Text<'a>>,
    context_id: Lax<Text<'a>>,
    task_id: Lax<Text<'a>>,
    message_id: Lax<Text<'a>>,
    role: Lax<Text<'a>>,
    parts: Lax<Array>,
    status: Lax<Status<'a>>,
    is_final: Lax<bool>,
    artifact: Lax<Artifact<'a>>,
    append: Lax<bool>,
    last_chunk: Lax<bool>,
    artifacts: Lax<Artifacts<'a>>,
}

impl<'de> Read<'de> for Body<'de> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Lax<Self>, A::Error> {
        let mut b = Body::default();
        let mut seen = 0;
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            let m = &mut map;
            let s = &mut seen;
            match &*key {
                "kind" => put(m, &mut b.kind, s, 1)?,
                "id" => put(m, &mut b.id, s, 1 << 1)?,
                "contextId" => put(m, &mut b.context_id, s, 1 << 2)?,
                "taskId" => put(m, &mut b.task_id, s, 1 << 3)?,
                "messageId" => put(m, &mut b.message_id, s, 1 << 4)?,
                "role" => put(m, &mut b.role, s, 1 << 5)?,
                "parts" => put(m, &mut b.parts, s, 1 << 6)?,
                "status" => put(m, &mut b.status, s, 1 << 7)?,
                "final" => put(m, &mut b.is_final, s, 1 << 8)?,
                "artifact" => put(m, &mut b.artifact, s, 1 << 9)?,
                "append" => put(m, &mut b.append, s, 1 << 10)?,
                "lastChunk" => put(m, &mut b.last_chunk, s, 1 << 11)?,
                "artifacts" => put(m, &mut b.artifacts, s, 1 << 12)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Lax::Ok(b))
    }
}

/// A JSON-RPC `error`: its `code` and `message`.
struct ErrorBody<'a> {
    code: Lax<Code>,
    message: Lax<Text<'a>>,
}

impl<'de> Read<'de> for ErrorBody<'de> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Lax<Self>, A::Error> {
        let mut error = ErrorBody {
            code: Lax::Absent,
            message: Lax::Absent,
        };
        let mut seen = 0;
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match &*key {
                "code" => put(&mut map, &mut error.code, &mut seen, 1)?,
                "message" => put(&mut map, &mut error.message, &mut seen, 2)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Lax::Ok(error))
    }
}

/// The JSON-RPC response.
struct Envelope<'a> {
    jsonrpc: Lax<Text<'a>>,
    id: Lax<Id>,
    result: Lax<Body<'a>>,
    error: Lax<ErrorBody<'a>>,
}

impl<'de> Read<'de> for Envelope<'de> {
    fn map<A: MapAccess<'de>>(mut map: A) -> Result<Lax<Self>, A::Error> {
        let mut envelope = Envelope {
            jsonrpc: Lax::Absent,
            id: Lax::Absent,
            result: Lax::Absent,
            error: Lax::Absent,
        };
        let mut seen = 0;
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            match &*key {
                "jsonrpc" => put(&mut map, &mut envelope.jsonrpc, &mut seen, 1)?,
                "id" => put(&mut map, &mut envelope.id, &mut seen, 2)?,
                "result" => put(&mut map, &mut envelope.result, &mut seen, 4)?,
                "error" => put(&mut map, &mut envelope.error, &mut seen, 8)?,
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(Lax::Ok(envelope))
    }
}

/// The event's JSON-RPC response: [`JSON`] when the data is not a JSON object; [`FIELDS`]
/// when it is one but a string the profile reads (or a key) holds an escape that stands for
/// no character, which serde refuses to decode.
fn envelope(event: EventRef<'_>) -> Result<Envelope<'_>, Rule> {
    match serde_json::from_str::<Lax<Envelope<'_>>>(event.data()) {
        Ok(Lax::Ok(envelope)) => Ok(envelope),
        Ok(_) => Err(JSON),
        Err(_) => Err(not_read(event)),
    }
}

#[cold]
fn not_read(event: EventRef<'_>) -> Rule {
    json::shape_rule(event, JSON, FIELDS)
}

/// A string field the kind needs.
fn required<'a>(field: &'a Lax<Text<'_>>) -> Result<&'a str, Rule> {
    match field {
        Lax::Ok(Text(text)) => Ok(text),
        _ => Err(FIELDS),
    }
}

/// A string field the kind may send.
fn optional<'a>(field: &'a Lax<Text<'_>>) -> Result<Option<&'a str>, Rule> {
    match field {
        Lax::Ok(Text(text)) => Ok(Some(text)),
        Lax::Absent => Ok(None),
        Lax::Wrong => Err(FIELDS),
    }
}

/// A boolean field the kind may send (absent: `false`).
fn flag(field: &Lax<bool>) -> Result<bool, Rule> {
    match field {
        Lax::Ok(b) => Ok(*b),
        Lax::Absent => Ok(false),
        Lax::Wrong => Err(FIELDS),
    }
}

/// The state of a `status` the kind needs ([`FIELDS`], then [`STATE`]).
fn state(status: &Lax<Status<'_>>) -> Result<TaskState, Rule> {
    let Lax::Ok(status) = status else {
        return Err(FIELDS);
    };
    TaskState::of(required(&status.state)?).ok_or(STATE)
}

/// The id of an artifact whose `parts` must be an array when `parts` is set.
fn artifact_id<'a>(artifact: &'a Lax<Artifact<'_>>, parts: bool) -> Result<&'a str, Rule> {
    let Lax::Ok(artifact) = artifact else {
        return Err(FIELDS);
    };
    if parts && !matches!(artifact.parts, Lax::Ok(Array)) {
        return Err(FIELDS);
    }
    required(&artifact.artifact_id)
}

/// The kinds of result.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Task,
    Message,
    StatusUpdate,
    ArtifactUpdate,
}

impl Kind {
    fn of(name: &str) -> Option<Kind> {
        Some(match name {
            "task" => Kind::Task,
            "message" => Kind::Message,
            "status-update" => Kind::StatusUpdate,
            "artifact-update" => Kind::ArtifactUpdate,
            _ => return None,
        })
    }

    fn as_str(self) -> &'static str {
        match self {
            Kind::Task => "task",
            Kind::Message => "message",
            Kind::StatusUpdate => "status-update",
            Kind::ArtifactUpdate => "artifact-update",
        }
    }
}

/// The failure a JSON-RPC `error` reports: its code and message. Reporting only.
#[cold]
fn error_failure(event: EventRef<'_>) -> Failure {
    json::failure(event, "error", &["error"], &["code"])
}

/// The failure a final `failed` or `rejected` state reports: the text parts of the status
/// message, joined by line breaks, or `task <state>` without any. Reporting only.
#[cold]
fn state_failure(event: EventRef<'_>, kind: Kind, state: TaskState) -> Failure {
    use serde_json::Value;
    let parsed: Option<Value> = serde_json::from_str(event.data()).ok();
    let parts = parsed
        .as_ref()
        .and_then(|v| v.get("result")?.get("status")?.get("message")?.get("parts"))
        .and_then(Value::as_array);
    let texts: Vec<&str> = parts
        .into_iter()
        .flatten()
        .filter(|part| part.get("kind").and_then(Value::as_str) == Some("text"))
        .filter_map(|part| part.get("text").and_then(Value::as_str))
        .collect();
    let message = if texts.is_empty() {
        alloc::format!("task {state}")
    } else {
        texts.join("\n")
    };
    Failure::new(kind.as_str(), Some(state.as_str().to_string()), message)
}

/// The A2A streaming profile; see the [module docs](self) for its rules.
///
/// # Example
/// ```
/// use ssekit::profile::a2a::{Stream, AFTER_TERMINAL};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Stream::new();
/// let reply = r#"{"jsonrpc":"2.0","id":1,"result":{"kind":"message","messageId":"m1","role":"agent","parts":[{"kind":"text","text":"Hi"}]}}"#;
/// p.event(&Event::message(reply))?;
/// assert!(p.is_terminated());
/// assert_eq!(p.event(&Event::message(reply)), Err(AFTER_TERMINAL));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
#[derive(Clone, Debug)]
pub struct Stream {
    resubscribe: bool,
    started: bool,
    /// Nothing may follow.
    terminal: bool,
    /// The last event left the task in an interrupted state: the stream may end here.
    paused: bool,
    request_id: Option<Id>,
    task_id: Option<String>,
    context_id: Option<String>,
    state: Option<TaskState>,
    /// The artifact ids seen, for [`APPEND`].
    artifacts: BTreeSet<String>,
    /// Their bytes.
    artifact_bytes: usize,
    failure: Option<Failure>,
    max_artifacts: usize,
    max_kept: usize,
}

impl Default for Stream {
    /// [`Stream::new`].
    fn default() -> Self {
        Stream::new()
    }
}

impl Stream {
    /// A profile for a `message/stream` answer, with the default caps.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::a2a::Stream::new().task_id(), None);
    /// ```
    pub const fn new() -> Self {
        Stream {
            resubscribe: false,
            started: false,
            terminal: false,
            paused: false,
            request_id: None,
            task_id: None,
            context_id: None,
            state: None,
            artifacts: BTreeSet::new(),
            artifact_bytes: 0,
            failure: None,
            max_artifacts: DEFAULT_MAX_ARTIFACTS,
            max_kept: DEFAULT_MAX_KEPT,
        }
    }

    /// A profile for a `tasks/resubscribe` answer: as [`new`](Self::new), and the first event
    /// is the task's snapshot ([`SNAPSHOT_FIRST`]).
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// let mut p = ssekit::profile::a2a::Stream::resubscribe();
    /// let snapshot = r#"{"jsonrpc":"2.0","id":"r","result":{"kind":"task","id":"t","contextId":"c","status":{"state":"working"}}}"#;
    /// p.event(&ssekit::Event::message(snapshot))?;
    /// assert_eq!(p.context_id(), Some("c"));
    /// # Ok::<(), ssekit::sequence::Rule>(())
    /// ```
    pub const fn resubscribe() -> Self {
        let mut stream = Stream::new();
        stream.resubscribe = true;
        stream
    }

    /// Sets the cap on the artifact ids kept ([`TOO_LARGE`] past it).
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::a2a::Stream::new().max_artifacts(16);
    /// assert_eq!(p.state(), None);
    /// ```
    pub const fn max_artifacts(mut self, ids: usize) -> Self {
        self.max_artifacts = ids;
        self
    }

    /// Sets the cap on the bytes of the artifact ids kept ([`TOO_LARGE`] past it).
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::a2a::Stream::new().max_kept(4096);
    /// assert_eq!(p.state(), None);
    /// ```
    pub const fn max_kept(mut self, bytes: usize) -> Self {
        self.max_kept = bytes;
        self
    }

    /// The task's id, once an event named it.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::a2a::Stream::new().task_id(), None);
    /// ```
    pub fn task_id(&self) -> Option<&str> {
        self.task_id.as_deref()
    }

    /// The task's `contextId`, once an event named it.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::a2a::Stream::new().context_id(), None);
    /// ```
    pub fn context_id(&self) -> Option<&str> {
        self.context_id.as_deref()
    }

    /// The task's state as the last task or status update gave it: at the end of the stream,
    /// its final state.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::a2a::Stream::new().state(), None);
    /// ```
    pub fn state(&self) -> Option<TaskState> {
        self.state
    }

    /// Checks that `task` and `context` (when named) are the stream's, and keeps them.
    fn same_task(&mut self, task: Option<&str>, context: Option<&str>) -> Result<(), Rule> {
        let differs = |kept: &Option<String>, new: Option<&str>| match (kept, new) {
            (Some(kept), Some(new)) => kept != new,
            _ => false,
        };
        if differs(&self.task_id, task) || differs(&self.context_id, context) {
            return Err(SAME_TASK);
        }
        if let (None, Some(task)) = (&self.task_id, task) {
            self.task_id = Some(task.to_string());
        }
        if let (None, Some(context)) = (&self.context_id, context) {
            self.context_id = Some(context.to_string());
        }
        Ok(())
    }

    /// Keeps artifact `id` as seen ([`TOO_LARGE`] past the caps).
    fn see_artifact(&mut self, id: &str) -> Result<(), Rule> {
        if self.artifacts.contains(id) {
            return Ok(());
        }
        if self.artifacts.len() >= self.max_artifacts
            || self.artifact_bytes.saturating_add(id.len()) > self.max_kept
        {
            return Err(TOO_LARGE);
        }
        self.artifacts.insert(id.to_string());
        self.artifact_bytes += id.len();
        Ok(())
    }

    /// The task's state is now `state`, told by a result of `kind` that ends the stream
    /// when `ends`.
    fn settle(&mut self, event: EventRef<'_>, kind: Kind, state: TaskState, ends: bool) {
        self.state = Some(state);
        if ends {
            self.terminal = true;
            if state.is_failure() {
                self.failure = Some(state_failure(event, kind, state));
            }
        }
    }

    /// Checks a result of `kind`.
    fn result(&mut self, event: EventRef<'_>, kind: Kind, body: &Body<'_>) -> Result<(), Rule> {
        match kind {
            Kind::Task => {
                let id = required(&body.id)?;
                let context = required(&body.context_id)?;
                let ids: Vec<&str> = match &body.artifacts {
                    Lax::Absent => Vec::new(),
                    Lax::Ok(Artifacts(artifacts)) => artifacts
                        .iter()
                        .map(|artifact| artifact_id(artifact, false))
                        .collect::<Result<_, _>>()?,
                    Lax::Wrong => return Err(FIELDS),
                };
                let state = state(&body.status)?;
                self.same_task(Some(id), Some(context))?;
                for id in ids {
                    self.see_artifact(id)?;
                }
                self.settle(event, kind, state, state.is_terminal());
                self.paused = state.is_interrupted();
            }
            Kind::Message => {
                required(&body.message_id)?;
                // The type asks for a `role`; the specification's own direct reply (§9.2)
                // has none, so only its value is checked.
                if !matches!(optional(&body.role)?, None | Some("agent" | "user")) {
                    return Err(FIELDS);
                }
                if !matches!(body.parts, Lax::Ok(Array)) {
                    return Err(FIELDS);
                }
                let task = optional(&body.task_id)?;
                let context = optional(&body.context_id)?;
                self.same_task(task, context)?;
                self.terminal = true;
            }
            Kind::StatusUpdate => {
                let task = required(&body.task_id)?;
                let context = required(&body.context_id)?;
                let is_final = flag(&body.is_final)?;
                let state = state(&body.status)?;
                self.same_task(Some(task), Some(context))?;
                if state.is_terminal() && !is_final {
                    return Err(TERMINAL_STATE);
                }
                self.settle(event, kind, state, is_final);
            }
            Kind::ArtifactUpdate => {
                let task = required(&body.task_id)?;
                let context = required(&body.context_id)?;
                let id = artifact_id(&body.artifact, true)?;
                let append = flag(&body.append)?;
                flag(&body.last_chunk)?;
                self.same_task(Some(task), Some(context))?;
                if append && !self.artifacts.contains(id) {
                    return Err(APPEND);
                }
                self.see_artifact(id)?;
            }
        }
        Ok(())
    }
}

impl Profile for Stream {
    fn event(&mut self, event: &Event) -> Result<(), Rule> {
        self.event_ref(event.as_event_ref())
    }

    fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), Rule> {
        if self.terminal {
            return Err(AFTER_TERMINAL);
        }
        let Envelope {
            jsonrpc,
            id,
            result,
            error,
        } = envelope(event)?;
        if !matches!(&jsonrpc, Lax::Ok(Text(version)) if version == "2.0") {
            return Err(ENVELOPE);
        }
        let Lax::Ok(id) = id else {
            return Err(ENVELOPE);
        };
        let body = match (result, error) {
            (Lax::Ok(body), Lax::Absent) => Ok(body),
            (
                Lax::Absent,
                Lax::Ok(ErrorBody {
                    code: Lax::Ok(_),
                    message: Lax::Ok(_),
                }),
            ) => Err(()),
            _ => return Err(ENVELOPE),
        };
        match &self.request_id {
            Some(known) if *known != id => return Err(SAME_ID),
            Some(_) => {}
            None => self.request_id = Some(id),
        }
        let first = !self.started;
        self.started = true;
        self.paused = false;
        let Ok(body) = body else {
            self.terminal = true;
            self.failure = Some(error_failure(event));
            return Ok(());
        };
        let kind = match &body.kind {
            Lax::Ok(Text(kind)) => Kind::of(kind).ok_or(KIND)?,
            _ => return Err(KIND),
        };
        if first && self.resubscribe && kind != Kind::Task {
            return Err(SNAPSHOT_FIRST);
        }
        self.result(event, kind, &body)
    }

    fn is_terminated(&self) -> bool {
        self.terminal || self.paused
    }

    fn failure(&self) -> Option<Failure> {
        self.failure.clone()
    }

    /// `error` for a JSON-RPC error, the result's `kind` otherwise, else the event type.
    fn event_name(&self, event: EventRef<'_>) -> Utf8Bytes {
        use serde_json::Value;
        let parsed: Option<Value> = serde_json::from_str(event.data()).ok();
        let name = parsed.as_ref().and_then(|v| {
            if v.get("error").is_some_and(|e| !e.is_null()) {
                return Some("error");
            }
            v.get("result")?.get("kind")?.as_str()
        });
        match name {
            Some(name) => Utf8Bytes::copy_from_str(name),
            None => event
                .event_field()
                .map_or(Utf8Bytes::from_static("message"), Utf8Bytes::copy_from_str),
        }
    }
}
