//! OpenAI Responses API streams, as Open Responses Server emits them (feature `json`).
//!
//! Each event's data is a JSON object; its type is the JSON `type` field (the server sends
//! only `data:` lines) or the `event:` field, and when both are present they agree.
//!
//! | rule | what it asks |
//! |---|---|
//! | [`JSON`] | the data is a JSON object |
//! | [`TYPE`] | the event has a type (a JSON `type` string, given once, or `event:`) |
//! | [`TYPE_MISMATCH`] | `event:` and JSON `type` agree when both are sent |
//! | [`CREATED_FIRST`] | the first event is `response.created`, except a terminal error (a failure before anything was sent) |
//! | [`CREATED_ONCE`] | `response.created` is sent once |
//! | [`STATUS`] | the `response` snapshot's `status` is `in_progress` in `response.created` (or OpenAI's `queued`) and in `response.in_progress`, `completed` in `response.completed`, and in OpenAI's terminal events `failed` in `response.failed` and `incomplete` in `response.incomplete` |
//! | [`CREATED_EMPTY`] | `response.created`'s snapshot has an empty `output` |
//! | [`RESPONSE_ID`] | every `response` snapshot has the `id` of the first |
//! | [`IN_PROGRESS_BEFORE_OUTPUT`] | text deltas, argument deltas and `.done`, and `response.tool_calls.created` come after a `response.in_progress` |
//! | [`FIELDS`] | text and argument deltas carry `item_id`, `output_index` and a string `delta`; `.done` carries `id` (OpenAI's: `item_id`), `output_index` and a string `arguments`; `response.tool_calls.created` carries `item_id`, `output_index` and a `tool_call` object; the `response` snapshot the three rules above read is an object with a string `id` and `status` and an array `output`. No other field, and no field of other event types, is read |
//! | [`TOOL_CALL_ANNOUNCED`] | a tool call's argument events follow its announcement: a `response.in_progress` after the first, or a `response.tool_calls.created` for its `output_index` (sent once) |
//! | [`ITEM_ID`] | the events of one tool call (one `output_index`) carry one item id, and one item id names one tool call |
//! | [`ARGUMENTS_MATCH`] | `response.function_call_arguments.done` carries the concatenation of that item's deltas |
//! | [`ARGUMENTS_JSON`] | those arguments are valid JSON, or empty: a call without arguments (no deltas, `""`) |
//! | [`DONE_ONCE`] | one `.done` per item, and no argument delta after it |
//! | [`AFTER_TERMINAL`] | nothing follows the terminal event (so there is exactly one), except one `response.failed` after OpenAI's `error` |
//! | [`TOO_LARGE`] | what the profile keeps (text, arguments, the response and tool-call ids) stays under the cap ([`Stream::max_accumulated`]) |
//! | [`TOO_MANY_ITEMS`] | at most [`Stream::max_items`] distinct `output_index` values (1024 by default) |
//! | [`SEQUENCE`] | an event's `sequence_number`, when it has one, is one more than the last event's that had one: none lost, none repeated (a stream resumed `starting_after=N` goes on at `N + 1`) |
//!
//! The terminal event is `response.completed` (carrying a non-null `response.error` when the
//! server failed, as Open Responses Server reports errors), or one of those OpenAI's API ends
//! a stream with: `response.failed` and `error` (errors), `response.incomplete` (stopped
//! early, e.g. at `max_output_tokens`). OpenAI's `error` is an event of the stream, not of
//! the response's lifecycle: a stream may end with it, or go on to the response's
//! `response.failed`, which the profile then takes as well (and nothing after it). Other event types (the full OpenAI API has more, such
//! as `response.output_item.added`) are allowed before it, so the profile also reads OpenAI's
//! own streams: of those only the type is read, not their fields, whatever their shape.
//! Text and arguments are accumulated per `output_index`.
//!
//! A tool call is the function-call item at one `output_index`: its argument deltas and its
//! `.done`, and in the legacy path the `response.tool_calls.created` that opens it. The spec
//! announces each new tool call before its arguments: "response.in_progress (first delta
//! with function name; output now contains the tool call)" on the modern path, or
//! `response.tool_calls.created` on the legacy one. The profile counts the `in_progress`
//! events after the first and lets each count open one tool call, in order; OpenAI's
//! `response.output_item.added` counts as well, so OpenAI's streams still read. Text deltas
//! must carry an `item_id` but are not tied to the tool calls: Open Responses Server sends an
//! MCP tool's result as a text delta at `output_index` 0 under the call's id.
//!
//! ```
//! use ssekit::profile::responses::Stream;
//! use ssekit::sequence::Validator;
//! use ssekit::Event;
//!
//! let mut v = Validator::new(Stream::new());
//! for data in [
//!     r#"{"type":"response.created","response":{"id":"r1","status":"in_progress","output":[]}}"#,
//!     r#"{"type":"response.in_progress","response":{"id":"r1","status":"in_progress"}}"#,
//!     r#"{"type":"response.output_text.delta","item_id":"m1","output_index":0,"delta":"Hel"}"#,
//!     r#"{"type":"response.output_text.delta","item_id":"m1","output_index":0,"delta":"lo"}"#,
//!     r#"{"type":"response.completed","response":{"id":"r1","status":"completed","error":null}}"#,
//! ] {
//!     v.event(&Event::message(data))?;
//! }
//! v.finish()?;
//! assert_eq!(v.profile().text(0), Some("Hello"));
//! assert!(!v.profile().is_error());
//! # Ok::<(), ssekit::sequence::SequenceError>(())
//! ```

use alloc::collections::btree_map::{BTreeMap, Entry};
use alloc::string::String;

use serde::de::IgnoredAny;

use super::json::Text;
use super::scan::{self, Kind, ScanError};

use crate::event::Event;
use crate::frame_ref::EventRef;
use crate::sequence::{Profile, Rule};
use crate::text::Utf8Bytes;

/// The data is a JSON object.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::JSON.id(), "responses.json");
/// ```
pub const JSON: Rule = Rule::new("responses.json", "the data is a JSON object");

/// The event has a type: a JSON `type` string, or an `event:` field.
///
/// A JSON `type` that is not a string (a number, an object, a string with an escape that
/// stands for no character) or that is given twice names no type: it breaks this rule
/// whatever the event, since the profile cannot tell which fields to read.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, TYPE};
/// use ssekit::sequence::Profile;
/// let mut p = Stream::new();
/// assert_eq!(p.event(&ssekit::Event::message(r#"{"type":5}"#)), Err(TYPE));
/// ```
pub const TYPE: Rule = Rule::new(
    "responses.type",
    "the event has a type (a JSON `type` string or `event:`)",
);

/// `event:` and JSON `type` agree.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::TYPE_MISMATCH.id(), "responses.type-mismatch");
/// ```
pub const TYPE_MISMATCH: Rule = Rule::new(
    "responses.type-mismatch",
    "the `event:` field and the JSON `type` agree",
);

/// The first event is `response.created`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::CREATED_FIRST.id(), "responses.created-first");
/// ```
pub const CREATED_FIRST: Rule = Rule::new(
    "responses.created-first",
    "the first event is `response.created` (or a terminal error)",
);

/// `response.created` is sent once.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::CREATED_ONCE.id(), "responses.created-once");
/// ```
pub const CREATED_ONCE: Rule =
    Rule::new("responses.created-once", "`response.created` is sent once");

/// The `response` snapshot's `status` matches the event.
///
/// The spec gives `response.created` a "Full ResponseModel (empty output,
/// status=in_progress)" and `response.completed` a "Full ResponseModel with
/// status=completed" (errors too: Open Responses Server reports them in `response.error`
/// of a completed response). OpenAI's `created` of a background response says `queued`,
/// which is accepted as well.
///
/// `response.in_progress` must say `in_progress`. The spec names no status for it, but it
/// gives it a "Full ResponseModel snapshot", and its ResponseModel has a `status` (Open
/// Responses Server's model defaults it to `in_progress` and always sends it; the server
/// sets `completed` only as it sends `response.completed`); OpenAI's API reference shows
/// `in_progress` there too, and `queued` comes only before it. The spec does not cover
/// OpenAI's terminal events; OpenAI's API reference gives `response.failed` the status
/// `failed` and `response.incomplete` the status `incomplete`, and so does the profile.
///
/// A missing `response` or `status` breaks the rule in all of these events: each carries a
/// whole response (the spec's ResponseModel, OpenAI's Response object), whose status is
/// always sent, so neither the spec nor OpenAI's reference leaves it out. OpenAI's `error`
/// event carries no snapshot and has no status to check.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, STATUS};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Stream::new();
/// let created = r#"{"type":"response.created","response":{"id":"r","status":"completed","output":[]}}"#;
/// assert_eq!(p.event(&Event::message(created)), Err(STATUS));
///
/// let mut p = Stream::new();
/// p.event(&Event::message(r#"{"type":"response.created","response":{"status":"in_progress","output":[]}}"#))?;
/// assert_eq!(p.event(&Event::message(r#"{"type":"response.in_progress"}"#)), Err(STATUS));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const STATUS: Rule = Rule::new(
    "responses.status",
    "the `response` snapshot's `status` is `in_progress` in `response.created` (or `queued`) and `response.in_progress`, `completed` in `response.completed`, `failed` in `response.failed` and `incomplete` in `response.incomplete`",
);

/// `response.created` carries a snapshot with an empty `output`.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, CREATED_EMPTY};
/// use ssekit::sequence::Profile;
/// let mut p = Stream::new();
/// let created = r#"{"type":"response.created","response":{"id":"r","status":"in_progress","output":[{}]}}"#;
/// assert_eq!(p.event(&ssekit::Event::message(created)), Err(CREATED_EMPTY));
/// ```
pub const CREATED_EMPTY: Rule = Rule::new(
    "responses.created-empty",
    "`response.created` carries a snapshot with an empty `output`",
);

/// Every `response` snapshot (of `response.created`, `response.in_progress`, the terminal
/// events) has the `id` of the first one that has an `id`: they are snapshots of the one
/// response the stream is about, the id its conversation history is saved under.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, RESPONSE_ID};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Stream::new();
/// let created = r#"{"type":"response.created","response":{"id":"r1","status":"in_progress","output":[]}}"#;
/// p.event(&Event::message(created))?;
/// let other = r#"{"type":"response.in_progress","response":{"id":"r2","status":"in_progress"}}"#;
/// assert_eq!(p.event(&Event::message(other)), Err(RESPONSE_ID));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const RESPONSE_ID: Rule = Rule::new(
    "responses.response-id",
    "every `response` snapshot has the `id` of the first",
);

/// Output events come after a `response.in_progress`.
///
/// # Example
/// ```
/// let id = ssekit::profile::responses::IN_PROGRESS_BEFORE_OUTPUT.id();
/// assert_eq!(id, "responses.in-progress-before-output");
/// ```
pub const IN_PROGRESS_BEFORE_OUTPUT: Rule = Rule::new(
    "responses.in-progress-before-output",
    "output events come after a `response.in_progress`",
);

/// Deltas, `.done` and `response.tool_calls.created` carry the fields the spec gives them:
/// `item_id`, `output_index`, `delta` (a string) in text and argument deltas; `id`,
/// `output_index`, `arguments` (a string) in `.done`, where OpenAI's API sends `item_id`
/// for `id` (either is accepted); `item_id`, `output_index` and a `tool_call` object in
/// `response.tool_calls.created`. One of those fields missing (`null` counts as missing),
/// given twice or of another JSON type breaks the rule.
///
/// The events [`STATUS`], [`CREATED_EMPTY`] and [`RESPONSE_ID`] read a `response` snapshot
/// from (`response.created`, `response.in_progress` and the terminal events) break it with a
/// snapshot that is not an object (or `null`), whose `id` or `status` is not a string, whose
/// `output` is not an array, or which gives a field the profile reads (`id`, `status`,
/// `output`, `error`) twice: a `status` of `1` is a field of the wrong type rather than the
/// wrong status, and an array is no snapshot (serde would read it by position).
///
/// No other field is read: not the other fields of those events (a text delta's `id`), and
/// not the fields of the event types the profile lets through, which OpenAI's streams carry
/// in shapes of their own (OpenAI's API reference typed the `delta` of
/// `response.mcp_call.arguments_delta` as an object).
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, FIELDS};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
///
/// let mut p = Stream::new();
/// p.event(&Event::message(r#"{"type":"response.created","response":{"status":"in_progress","output":[]}}"#))?;
/// p.event(&Event::message(r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#))?;
/// // Not a type the profile checks: its fields are not read.
/// p.event(&Event::message(r#"{"type":"response.mcp_call.arguments_delta","item_id":"mcp_1","output_index":0,"delta":{}}"#))?;
/// let text = r#"{"type":"response.output_text.delta","item_id":"msg_1","output_index":"0","delta":"Hi"}"#;
/// assert_eq!(p.event(&Event::message(text)), Err(FIELDS));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const FIELDS: Rule = Rule::new(
    "responses.fields",
    "deltas carry `item_id`, `output_index` and `delta`; `.done` carries `id`, `output_index` and `arguments`; `tool_calls.created` carries `item_id`, `output_index` and `tool_call`; a `response` snapshot is an object with a string `id` and `status` and an array `output`",
);

/// Each tool call is announced once, before its argument events.
///
/// The first argument event (delta or `.done`) of a new tool call needs an announcement
/// not yet used: each `response.in_progress` after the first announces one tool call (the
/// spec's modern path), as does OpenAI's `response.output_item.added`; a
/// `response.tool_calls.created` (the legacy path) announces the one at its `output_index`,
/// and names a new one there.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, TOOL_CALL_ANNOUNCED};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
///
/// let mut p = Stream::new();
/// p.event(&Event::message(r#"{"type":"response.created","response":{"status":"in_progress","output":[]}}"#))?;
/// p.event(&Event::message(r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#))?;
/// let delta = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}"#;
/// assert_eq!(p.event(&Event::message(delta)), Err(TOOL_CALL_ANNOUNCED));
///
/// let mut p = Stream::new();
/// p.event(&Event::message(r#"{"type":"response.created","response":{"status":"in_progress","output":[]}}"#))?;
/// p.event(&Event::message(r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#))?;
/// p.event(&Event::message(r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#))?; // the tool call
/// p.event(&Event::message(delta))?;
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const TOOL_CALL_ANNOUNCED: Rule = Rule::new(
    "responses.tool-call-announced",
    "each tool call is announced once (`response.in_progress` or `response.tool_calls.created`), before its argument events",
);

/// The events of one tool call carry one item id: the `item_id` of its
/// `response.tool_calls.created` and argument deltas and the `id` of its `.done` are the
/// first one seen at that `output_index`; and one item id names one tool call, not calls
/// at two `output_index` values.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, ITEM_ID};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
///
/// let mut p = Stream::new();
/// p.event(&Event::message(r#"{"type":"response.created","response":{"status":"in_progress","output":[]}}"#))?;
/// p.event(&Event::message(r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#))?;
/// p.event(&Event::message(r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#))?;
/// let delta = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{}"}"#;
/// p.event(&Event::message(delta))?;
/// let done = r#"{"type":"response.function_call_arguments.done","id":"fc_2","output_index":0,"arguments":"{}"}"#;
/// assert_eq!(p.event(&Event::message(done)), Err(ITEM_ID));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const ITEM_ID: Rule = Rule::new(
    "responses.item-id",
    "the events of one tool call (one `output_index`) carry one item id (`item_id`; `id` in `.done`), and one item id names one tool call",
);

/// `.done` arguments equal the concatenated deltas.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::ARGUMENTS_MATCH.id(), "responses.arguments-match");
/// ```
pub const ARGUMENTS_MATCH: Rule = Rule::new(
    "responses.arguments-match",
    "`function_call_arguments.done` carries the concatenation of the item's deltas",
);

/// `.done` arguments are valid JSON, or empty.
///
/// Empty arguments are a call without arguments: Open Responses Server sends a `.done` with
/// the concatenation of the call's deltas, which for a function called without arguments is
/// `""` (no deltas, or empty ones). [`ARGUMENTS_MATCH`] still holds them to the deltas, so
/// `""` passes only where the deltas made nothing; anything else that is not JSON (`" "`,
/// arguments cut short) breaks this rule.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, ARGUMENTS_JSON};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
///
/// let start = [
///     r#"{"type":"response.created","response":{"status":"in_progress","output":[]}}"#,
///     r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#,
///     r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#, // the call
/// ];
/// let done = |arguments: &str| format!(
///     r#"{{"type":"response.function_call_arguments.done","id":"fc_1","output_index":0,"arguments":{arguments}}}"#
/// );
/// let mut p = Stream::new();
/// for data in start {
///     p.event(&Event::message(data))?;
/// }
/// p.event(&Event::message(done(r#""""#)))?; // no arguments
///
/// let mut p = Stream::new();
/// for data in start {
///     p.event(&Event::message(data))?;
/// }
/// let delta = r#"{"type":"response.function_call_arguments.delta","item_id":"fc_1","output_index":0,"delta":"{"}"#;
/// p.event(&Event::message(delta))?;
/// assert_eq!(p.event(&Event::message(done(r#""{""#))), Err(ARGUMENTS_JSON));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const ARGUMENTS_JSON: Rule = Rule::new(
    "responses.arguments-json",
    "`function_call_arguments.done` arguments are valid JSON, or empty (a call without arguments)",
);

/// One `.done` per item and no delta after it.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::DONE_ONCE.id(), "responses.done-once");
/// ```
pub const DONE_ONCE: Rule = Rule::new(
    "responses.done-once",
    "one `function_call_arguments.done` per item, and no delta after it",
);

/// Nothing follows the terminal event (`response.completed`, `response.failed`,
/// `response.incomplete` or `error`), except that `error` may be followed by one
/// `response.failed`: OpenAI reports a failure with an `error` event, and the response it
/// belonged to then ends in `response.failed` (gateways that speak the API do the same,
/// e.g. CLIProxyAPI's pull request 4683), so a stream may end either way.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::AFTER_TERMINAL.id(), "responses.after-terminal");
/// ```
pub const AFTER_TERMINAL: Rule = Rule::new(
    "responses.after-terminal",
    "nothing follows the terminal event",
);

/// What the profile keeps stays under the cap: accumulated text and arguments, and the
/// response and tool-call ids it compares later events with.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::TOO_LARGE.id(), "responses.too-large");
/// ```
pub const TOO_LARGE: Rule = Rule::new(
    "responses.too-large",
    "accumulated text and arguments, and the ids kept to compare, stay under the cap",
);

/// At most [`Stream::max_items`] output items.
///
/// The profile keeps a record per `output_index` (its text, its arguments); the event
/// that names one more index than the cap allows breaks this rule, so no stream can make
/// the profile keep an unbounded number of records, not even with empty deltas.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, TOO_MANY_ITEMS};
/// use ssekit::sequence::Validator;
/// use ssekit::Event;
///
/// let mut v = Validator::new(Stream::new().max_items(1));
/// v.event(&Event::message(r#"{"type":"response.created","response":{"status":"in_progress","output":[]}}"#))?;
/// v.event(&Event::message(r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#))?;
/// let delta = |index: u8| format!(r#"{{"type":"response.output_text.delta","item_id":"m","output_index":{index},"delta":""}}"#);
/// v.event(&Event::message(delta(0)))?;
/// v.event(&Event::message(delta(0)))?;
/// assert_eq!(v.event(&Event::message(delta(1))).unwrap_err().rule(), TOO_MANY_ITEMS);
/// # Ok::<(), ssekit::sequence::SequenceError>(())
/// ```
pub const TOO_MANY_ITEMS: Rule = Rule::new(
    "responses.too-many-items",
    "the stream names at most `max_items` output items",
);

/// An event's `sequence_number`, when it has one, is one more than that of the last event
/// that had one: none was lost or repeated, across a resume by `starting_after` too.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, SEQUENCE};
/// use ssekit::sequence::Validator;
/// use ssekit::Event;
///
/// let mut v = Validator::new(Stream::new());
/// v.event(&Event::message(r#"{"type":"response.created","sequence_number":0,"response":{"status":"in_progress","output":[]}}"#))?;
/// let again = r#"{"type":"response.in_progress","sequence_number":0,"response":{"status":"in_progress"}}"#;
/// assert_eq!(v.event(&Event::message(again)).unwrap_err().rule(), SEQUENCE);
/// # Ok::<(), ssekit::sequence::SequenceError>(())
/// ```
pub const SEQUENCE: Rule = Rule::new(
    "responses.sequence",
    "each `sequence_number` is one more than the last: no event lost or repeated",
);

/// An event's type and the fields the profile reads for that type (its [`FIELDS`]); every
/// other field is skipped without being read or stored.
struct Wire<'a> {
    kind: EventKind,
    output_index: Option<u64>,
    delta: Option<Text<'a>>,
    arguments: Option<Text<'a>>,
    response: Option<Snapshot<'a>>,
    item_id: Option<Text<'a>>,
    id: Option<Text<'a>>,
    tool_call: Option<IsObject>,
    /// Read for every type.
    sequence: Option<u64>,
}

impl Wire<'_> {
    /// An event of `kind` with none of the fields.
    fn of(kind: EventKind) -> Self {
        Wire {
            kind,
            output_index: None,
            delta: None,
            arguments: None,
            response: None,
            item_id: None,
            id: None,
            tool_call: None,
            sequence: None,
        }
    }
}

/// The serde path, first: the JSON `type` alone (any other field is skipped unread).
#[derive(serde::Deserialize)]
struct TypeField<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
}

/// The serde path, then: the fields of a text or argument delta.
#[derive(serde::Deserialize)]
struct DeltaFields<'a> {
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow, default)]
    item_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    delta: Option<Text<'a>>,
}

/// The fields of `response.function_call_arguments.done`.
#[derive(serde::Deserialize)]
struct DoneFields<'a> {
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    item_id: Option<Text<'a>>,
    #[serde(borrow, default)]
    arguments: Option<Text<'a>>,
}

/// The fields of `response.tool_calls.created`.
#[derive(serde::Deserialize)]
struct ToolCallsFields<'a> {
    #[serde(default)]
    output_index: Option<u64>,
    #[serde(borrow, default)]
    item_id: Option<Text<'a>>,
    #[serde(default)]
    tool_call: Option<IsObject>,
}

/// The serde path, for every type: the sequence number.
#[derive(serde::Deserialize)]
struct SequenceField {
    #[serde(default)]
    sequence_number: Option<u64>,
}

/// The field of the events that carry a `response` snapshot.
#[derive(serde::Deserialize)]
struct SnapshotField<'a> {
    #[serde(borrow, default, deserialize_with = "object_or_null")]
    response: Option<Snapshot<'a>>,
}

/// `T` read from a JSON object, or `None` from `null`. serde's derived structs read a JSON
/// array too, by position, which would take `[null, "resp_1", "in_progress", []]` for a
/// snapshot; a `response` that is not an object (or null) breaks [`FIELDS`] instead.
fn object_or_null<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: serde::Deserialize<'de>,
{
    struct ObjectVisitor<T>(core::marker::PhantomData<T>);
    impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for ObjectVisitor<T> {
        type Value = Option<T>;
        fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
            f.write_str("an object or null")
        }
        fn visit_unit<E: serde::de::Error>(self) -> Result<Option<T>, E> {
            Ok(None)
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Option<T>, A::Error> {
            T::deserialize(serde::de::value::MapAccessDeserializer::new(map)).map(Some)
        }
    }
    d.deserialize_any(ObjectVisitor(core::marker::PhantomData))
}

/// Any JSON value, of which only whether it is an object is kept.
struct IsObject(bool);

impl<'de> serde::Deserialize<'de> for IsObject {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct ShapeVisitor;
        impl<'de> serde::de::Visitor<'de> for ShapeVisitor {
            type Value = IsObject;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("any JSON value")
            }
            fn visit_bool<E: serde::de::Error>(self, _: bool) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_i64<E: serde::de::Error>(self, _: i64) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_u64<E: serde::de::Error>(self, _: u64) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_f64<E: serde::de::Error>(self, _: f64) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_unit<E: serde::de::Error>(self) -> Result<IsObject, E> {
                Ok(IsObject(false))
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<IsObject, A::Error> {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(IsObject(false))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<IsObject, A::Error> {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(IsObject(true))
            }
        }
        d.deserialize_any(ShapeVisitor)
    }
}

/// The fields read from the `response` snapshot.
#[derive(serde::Deserialize)]
struct Snapshot<'a> {
    #[serde(default)]
    error: Option<IgnoredAny>,
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
    #[serde(borrow, default)]
    status: Option<Text<'a>>,
    #[serde(default)]
    output: Option<Output>,
}

/// A JSON array, of which only whether it is empty is kept.
struct Output {
    empty: bool,
}

impl<'de> serde::Deserialize<'de> for Output {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct OutputVisitor;
        impl<'de> serde::de::Visitor<'de> for OutputVisitor {
            type Value = Output;
            fn expecting(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
                f.write_str("an array")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<Output, A::Error> {
                let empty = seq.next_element::<IgnoredAny>()?.is_none();
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                Ok(Output { empty })
            }
        }
        d.deserialize_seq(OutputVisitor)
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventKind {
    Created,
    InProgress,
    TextDelta,
    ArgumentsDelta,
    ArgumentsDone,
    ToolCallsCreated,
    /// OpenAI's `response.output_item.added`.
    OutputItemAdded,
    Completed,
    /// OpenAI's `response.failed`.
    Failed,
    /// OpenAI's `response.incomplete`.
    Incomplete,
    /// OpenAI's `error`.
    Error,
    Other,
}

impl EventKind {
    fn of(name: &str) -> EventKind {
        match name {
            "response.created" => EventKind::Created,
            "response.in_progress" => EventKind::InProgress,
            "response.output_text.delta" => EventKind::TextDelta,
            "response.function_call_arguments.delta" => EventKind::ArgumentsDelta,
            "response.function_call_arguments.done" => EventKind::ArgumentsDone,
            "response.tool_calls.created" => EventKind::ToolCallsCreated,
            "response.output_item.added" => EventKind::OutputItemAdded,
            "response.completed" => EventKind::Completed,
            "response.failed" => EventKind::Failed,
            "response.incomplete" => EventKind::Incomplete,
            "error" => EventKind::Error,
            _ => EventKind::Other,
        }
    }

    /// The type of `event`: its JSON `type` (`json`, read as a string) or its `event:`
    /// field; [`TYPE_MISMATCH`] when both are given and differ, [`TYPE`] when neither is.
    #[inline(always)]
    fn read(json: Option<Text<'_>>, event: EventRef<'_>) -> Result<EventKind, Rule> {
        match (json, event.event_field()) {
            (Some(Text(json)), Some(sse)) if json.as_ref() != sse => Err(TYPE_MISMATCH),
            (Some(Text(json)), _) => Ok(EventKind::of(&json)),
            (None, Some(sse)) => Ok(EventKind::of(sse)),
            (None, None) => Err(TYPE),
        }
    }

    /// Whether the profile reads the event's `response` snapshot ([`STATUS`],
    /// [`CREATED_EMPTY`], [`RESPONSE_ID`]): `response.created`, `response.in_progress` and
    /// the terminal events.
    fn has_snapshot(self) -> bool {
        matches!(
            self,
            EventKind::Created
                | EventKind::InProgress
                | EventKind::Completed
                | EventKind::Failed
                | EventKind::Incomplete
                | EventKind::Error
        )
    }
}

/// What one output item accumulated.
#[derive(Clone, Debug, Default)]
struct Item {
    text: String,
    arguments: String,
    arguments_done: bool,
    /// The item id of the tool call at this index, once a function-call event named it.
    tool_call: Option<String>,
}

/// The default cap on what the profile keeps (text, arguments, ids): 16 MiB.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::DEFAULT_MAX_ACCUMULATED, 16 << 20);
/// ```
pub const DEFAULT_MAX_ACCUMULATED: usize = 16 << 20;

/// The default cap on the number of output items (distinct `output_index` values): 1024.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::responses::DEFAULT_MAX_ITEMS, 1024);
/// ```
pub const DEFAULT_MAX_ITEMS: usize = 1024;

/// The Responses API stream profile; see the [module docs](self) for its rules.
///
/// # Example
/// ```
/// use ssekit::profile::responses::{Stream, CREATED_FIRST};
/// use ssekit::sequence::Profile;
/// let mut p = Stream::new();
/// let delta = r#"{"type":"response.output_text.delta","output_index":0,"delta":"x"}"#;
/// assert_eq!(p.event(&ssekit::Event::message(delta)), Err(CREATED_FIRST));
/// ```
#[derive(Clone, Debug)]
pub struct Stream {
    created: bool,
    in_progress: bool,
    completed: bool,
    /// The terminal event so far is `error`, which one `response.failed` may still follow.
    failed_may_follow: bool,
    error: bool,
    /// What the first failing terminal event reported.
    failure: Option<crate::sequence::Failure>,
    /// The last `sequence_number` seen.
    sequence: Option<u64>,
    incomplete: bool,
    /// The `id` of the first `response` snapshot that had one.
    response_id: Option<String>,
    /// Tool-call announcements: `response.in_progress` after the first, OpenAI's
    /// `response.output_item.added`.
    announced: u64,
    /// Tool calls opened by an argument event, each on one announcement.
    calls: u64,
    items: BTreeMap<u64, Item>,
    accumulated: usize,
    max_accumulated: usize,
    max_items: usize,
}

impl Default for Stream {
    /// A 16 MiB accumulation cap.
    fn default() -> Self {
        Stream::new()
    }
}

impl Stream {
    /// A fresh profile with a 16 MiB accumulation cap.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::profile::responses::Stream::new().text(0).is_none());
    /// ```
    pub const fn new() -> Self {
        Stream {
            created: false,
            in_progress: false,
            completed: false,
            failed_may_follow: false,
            error: false,
            failure: None,
            sequence: None,
            incomplete: false,
            response_id: None,
            announced: 0,
            calls: 0,
            items: BTreeMap::new(),
            accumulated: 0,
            max_accumulated: DEFAULT_MAX_ACCUMULATED,
            max_items: DEFAULT_MAX_ITEMS,
        }
    }

    /// Sets the cap on what the profile keeps, in bytes ([`TOO_LARGE`] past it): the
    /// accumulated text and arguments plus the response and tool-call ids kept to compare.
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::responses::Stream::new().max_accumulated(1 << 20);
    /// assert!(p.text(0).is_none());
    /// ```
    pub const fn max_accumulated(mut self, bytes: usize) -> Self {
        self.max_accumulated = bytes;
        self
    }

    /// Sets the cap on the number of output items (distinct `output_index` values) the
    /// profile keeps a record of ([`TOO_MANY_ITEMS`] past it).
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::responses::Stream::new().max_items(16);
    /// assert!(p.text(0).is_none());
    /// ```
    pub const fn max_items(mut self, items: usize) -> Self {
        self.max_items = items;
        self
    }

    /// The text accumulated for output item `output_index`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::responses::Stream::new().text(0), None);
    /// ```
    pub fn text(&self, output_index: u64) -> Option<&str> {
        self.items
            .get(&output_index)
            .map(|item| item.text.as_str())
            .filter(|text| !text.is_empty())
    }

    /// The function-call arguments accumulated for output item `output_index`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::responses::Stream::new().arguments(1), None);
    /// ```
    pub fn arguments(&self, output_index: u64) -> Option<&str> {
        self.items
            .get(&output_index)
            .map(|item| item.arguments.as_str())
            .filter(|args| !args.is_empty())
    }

    /// Whether the stream ended in an error: `response.completed` with a non-null
    /// `response.error`, `response.failed` or `error`.
    ///
    /// # Example
    /// ```
    /// use ssekit::{profile::responses::Stream, sequence::Validator, Event};
    /// let mut v = Validator::new(Stream::new());
    /// v.event(&Event::message(r#"{"type":"error","code":"server_error","message":"x"}"#))?;
    /// v.finish()?;
    /// assert!(v.profile().is_error());
    /// # Ok::<(), ssekit::sequence::SequenceError>(())
    /// ```
    pub fn is_error(&self) -> bool {
        self.error
    }

    /// Whether the stream ended in `response.incomplete` (stopped early, e.g. at
    /// `max_output_tokens`): a terminal event, but not the whole answer.
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::profile::responses::Stream::new().is_incomplete());
    /// ```
    pub fn is_incomplete(&self) -> bool {
        self.incomplete
    }

    fn grow(&mut self, by: usize) -> Result<(), Rule> {
        self.accumulated = self.accumulated.saturating_add(by);
        if self.accumulated > self.max_accumulated {
            return Err(TOO_LARGE);
        }
        Ok(())
    }

    /// The record of output item `index`, made if new ([`TOO_MANY_ITEMS`] past the cap).
    fn item(&mut self, index: u64) -> Result<&mut Item, Rule> {
        let count = self.items.len();
        match self.items.entry(index) {
            Entry::Occupied(item) => Ok(item.into_mut()),
            Entry::Vacant(_) if count >= self.max_items => Err(TOO_MANY_ITEMS),
            Entry::Vacant(slot) => Ok(slot.insert(Item::default())),
        }
    }

    /// The record of the tool call at `index` that a function-call event names `id`:
    /// [`TOOL_CALL_ANNOUNCED`] for a new one without an announcement left (or, when
    /// `announcement` — the event is `response.tool_calls.created` — for one that is not
    /// new), [`ITEM_ID`] for another id than the call's, or for a new call with the id of a
    /// call at another index.
    fn tool_call(&mut self, index: u64, id: &str, announcement: bool) -> Result<&mut Item, Rule> {
        let present = self.items.get(&index);
        if present.is_none() && self.items.len() >= self.max_items {
            return Err(TOO_MANY_ITEMS);
        }
        let new = match present.and_then(|item| item.tool_call.as_deref()) {
            Some(_) if announcement => return Err(TOOL_CALL_ANNOUNCED),
            Some(known) if known != id => return Err(ITEM_ID),
            Some(_) => false,
            None => true,
        };
        if new {
            // One item, one output_index: its id cannot open a second tool call.
            if self
                .items
                .values()
                .any(|item| item.tool_call.as_deref() == Some(id))
            {
                return Err(ITEM_ID);
            }
            if !announcement {
                if self.calls >= self.announced {
                    return Err(TOOL_CALL_ANNOUNCED);
                }
                self.calls += 1;
            }
            self.grow(id.len())?;
        }
        let item = self.items.entry(index).or_default();
        if new {
            item.tool_call = Some(String::from(id));
        }
        Ok(item)
    }

    fn output(&mut self, kind: EventKind, wire: &Wire<'_>) -> Result<(), Rule> {
        if !self.in_progress {
            return Err(IN_PROGRESS_BEFORE_OUTPUT);
        }
        match kind {
            EventKind::TextDelta => {
                let (Some(index), Some(_), Some(Text(delta))) =
                    (wire.output_index, &wire.item_id, &wire.delta)
                else {
                    return Err(FIELDS);
                };
                self.grow(delta.len())?;
                self.item(index)?.text.push_str(delta);
            }
            EventKind::ArgumentsDelta => {
                let (Some(index), Some(Text(id)), Some(Text(delta))) =
                    (wire.output_index, &wire.item_id, &wire.delta)
                else {
                    return Err(FIELDS);
                };
                self.grow(delta.len())?;
                let item = self.tool_call(index, id, false)?;
                if item.arguments_done {
                    return Err(DONE_ONCE);
                }
                item.arguments.push_str(delta);
            }
            EventKind::ArgumentsDone => {
                let (Some(index), Some(Text(arguments))) = (wire.output_index, &wire.arguments)
                else {
                    return Err(FIELDS);
                };
                // The spec's `id`; OpenAI's API names it `item_id`. Both, they agree.
                let id = match (&wire.id, &wire.item_id) {
                    (Some(Text(id)), Some(Text(item_id))) if id != item_id => return Err(ITEM_ID),
                    (Some(Text(id)), _) | (None, Some(Text(id))) => id,
                    (None, None) => return Err(FIELDS),
                };
                let item = self.tool_call(index, id, false)?;
                if item.arguments_done {
                    return Err(DONE_ONCE);
                }
                item.arguments_done = true;
                if item.arguments != arguments.as_ref() {
                    return Err(ARGUMENTS_MATCH);
                }
                // `""`: no arguments (and no deltas, or only empty ones: ARGUMENTS_MATCH).
                let valid = arguments.is_empty()
                    || match scan::validate(arguments) {
                        Ok(()) => true,
                        Err(ScanError::Invalid) => false,
                        Err(ScanError::TooDeep) => {
                            serde_json::from_str::<IgnoredAny>(arguments).is_ok()
                        }
                    };
                if !valid {
                    return Err(ARGUMENTS_JSON);
                }
            }
            EventKind::ToolCallsCreated => {
                let (Some(index), Some(Text(id)), Some(IsObject(true))) =
                    (wire.output_index, &wire.item_id, &wire.tool_call)
                else {
                    return Err(FIELDS);
                };
                self.tool_call(index, id, true)?;
            }
            _ => {}
        }
        Ok(())
    }
}

impl Stream {
    /// Reads the event's type, then the fields the profile reads for that type, with the
    /// allocation-free scanner; serde only for what the scanner leaves to it (escaped keys,
    /// a known key given twice, a `response` array, nesting past its depth).
    fn wire<'a>(&self, event: EventRef<'a>) -> Result<Wire<'a>, Rule> {
        let slot_of = |key: &str| match key {
            "type" => Some(0),
            "output_index" => Some(1),
            "delta" => Some(2),
            "arguments" => Some(3),
            "response" => Some(4),
            "item_id" => Some(5),
            "id" => Some(6),
            "tool_call" => Some(7),
            "sequence_number" => Some(8),
            _ => None,
        };
        let fields = match scan::object_with::<9>(event.data(), slot_of) {
            Ok(Some(fields)) if !fields.escaped_key && !fields.duplicate => fields,
            // Valid JSON that is not an object, or not JSON: serde's `is_object` says no.
            Ok(None) | Err(ScanError::Invalid) => return Err(JSON),
            // Whether an escaped key is one the event's type reads, or a key given twice
            // one it reads (serde's derived structs refuse that), serde tells.
            Ok(Some(_)) | Err(ScanError::TooDeep) => return slow_wire(event),
        };
        let [kind, output_index, delta, arguments, response, item_id, id, tool_call, sequence] =
            fields.values;
        let mut wire = Wire::of(EventKind::read(text(kind).map_err(|_| TYPE)?, event)?);
        wire.sequence = index(sequence)?;
        match wire.kind {
            EventKind::TextDelta | EventKind::ArgumentsDelta => {
                wire.output_index = index(output_index)?;
                wire.item_id = text(item_id)?;
                wire.delta = text(delta)?;
            }
            EventKind::ArgumentsDone => {
                wire.output_index = index(output_index)?;
                wire.id = text(id)?;
                wire.item_id = text(item_id)?;
                wire.arguments = text(arguments)?;
            }
            EventKind::ToolCallsCreated => {
                wire.output_index = index(output_index)?;
                wire.item_id = text(item_id)?;
                wire.tool_call = match tool_call {
                    None => None,
                    Some(v) if v.kind == Kind::Null => None,
                    Some(v) if v.kind == Kind::Object => Some(IsObject(true)),
                    // What serde makes of another value (a lone surrogate in a string, a
                    // number out of range) is left to it; ORS always sends an object.
                    Some(_) => return slow_wire(event),
                };
            }
            kind if kind.has_snapshot() => {
                wire.response = match response {
                    None => None,
                    Some(v) if v.kind == Kind::Null => None,
                    Some(v) if v.kind == Kind::Object => {
                        let snapshot_slot = |key: &str| match key {
                            "error" => Some(0),
                            "id" => Some(1),
                            "status" => Some(2),
                            "output" => Some(3),
                            _ => None,
                        };
                        let snapshot = match scan::object_with::<4>(v.raw, snapshot_slot) {
                            Ok(Some(f)) if !f.escaped_key && !f.duplicate => f,
                            Ok(Some(f)) if f.duplicate => return Err(FIELDS),
                            _ => return slow_wire(event),
                        };
                        let [error, id, status, output] = snapshot.values;
                        Some(Snapshot {
                            error: error.filter(|e| e.kind != Kind::Null).map(|_| IgnoredAny),
                            id: text(id)?,
                            status: text(status)?,
                            output: match output {
                                None => None,
                                Some(v) if v.kind == Kind::Null => None,
                                Some(v) if v.kind == Kind::Array => Some(Output {
                                    empty: is_empty_array(v.raw),
                                }),
                                Some(_) => return Err(FIELDS),
                            },
                        })
                    }
                    // Not an object: an array is no snapshot read by position
                    // (`object_or_null`).
                    Some(_) => return Err(FIELDS),
                };
            }
            // Other types: nothing more is read.
            _ => {}
        }
        Ok(wire)
    }
}

impl Stream {
    /// [`STATUS`], [`CREATED_EMPTY`] and [`RESPONSE_ID`] on the `response` snapshot of a
    /// `created`, `in_progress` or terminal event.
    fn snapshot(&mut self, kind: EventKind, response: Option<&Snapshot<'_>>) -> Result<(), Rule> {
        let status = response
            .and_then(|r| r.status.as_ref())
            .map(|Text(s)| s.as_ref());
        let statuses: &[&str] = match kind {
            EventKind::Created => &["in_progress", "queued"],
            EventKind::InProgress => &["in_progress"],
            EventKind::Completed => &["completed"],
            EventKind::Failed => &["failed"],
            EventKind::Incomplete => &["incomplete"],
            // OpenAI's `error` carries no snapshot.
            _ => &[],
        };
        if !statuses.is_empty() && !status.is_some_and(|status| statuses.contains(&status)) {
            return Err(STATUS);
        }
        if kind == EventKind::Created
            && !response
                .and_then(|r| r.output.as_ref())
                .is_some_and(|output| output.empty)
        {
            return Err(CREATED_EMPTY);
        }
        if let Some(Text(id)) = response.and_then(|r| r.id.as_ref()) {
            match &self.response_id {
                Some(first) if first != id => return Err(RESPONSE_ID),
                Some(_) => {}
                None => {
                    self.grow(id.len())?;
                    self.response_id = Some(String::from(id.as_ref()));
                }
            }
        }
        Ok(())
    }

    /// The rules, on the fields read from one event.
    fn apply(&mut self, wire: &Wire<'_>) -> Result<(), Rule> {
        let kind = wire.kind;
        let failed = match kind {
            EventKind::Completed => wire
                .response
                .as_ref()
                .is_some_and(|snapshot| snapshot.error.is_some()),
            EventKind::Failed | EventKind::Error => true,
            _ => false,
        };
        if !self.created && kind != EventKind::Created && !failed {
            return Err(CREATED_FIRST);
        }
        match kind {
            EventKind::Created if self.created => Err(CREATED_ONCE),
            EventKind::Created => {
                self.snapshot(kind, wire.response.as_ref())?;
                self.created = true;
                Ok(())
            }
            EventKind::InProgress => {
                self.snapshot(kind, wire.response.as_ref())?;
                if self.in_progress {
                    self.announced = self.announced.saturating_add(1);
                }
                self.in_progress = true;
                Ok(())
            }
            EventKind::OutputItemAdded => {
                self.announced = self.announced.saturating_add(1);
                Ok(())
            }
            EventKind::Completed | EventKind::Failed | EventKind::Incomplete | EventKind::Error => {
                self.snapshot(kind, wire.response.as_ref())?;
                self.completed = true;
                self.failed_may_follow = kind == EventKind::Error;
                self.error = failed;
                self.incomplete = kind == EventKind::Incomplete;
                Ok(())
            }
            EventKind::Other => Ok(()),
            _ => self.output(kind, wire),
        }
    }
}

/// A string field as serde reads it into [`Text`]: absent or `null` is `None`, another type
/// or an escape that stands for no character is [`FIELDS`].
#[inline(always)]
fn text(value: Option<scan::Value<'_>>) -> Result<Option<Text<'_>>, Rule> {
    super::json::text(value).map_err(|()| FIELDS)
}

/// An `output_index` as serde reads it into a `u64`: absent or `null` is `None`, anything
/// but an integer in range is [`FIELDS`].
#[inline(always)]
fn index(value: Option<scan::Value<'_>>) -> Result<Option<u64>, Rule> {
    match value {
        None => Ok(None),
        Some(v) if v.kind == Kind::Null => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or(FIELDS),
    }
}

/// Whether a scanned array (`raw` with its brackets) holds no element.
fn is_empty_array(raw: &str) -> bool {
    raw.get(1..raw.len().saturating_sub(1))
        .is_some_and(|inside| inside.trim_matches([' ', '\t', '\n', '\r']).is_empty())
}

/// The serde path, for what the scanner leaves to it: the type, then the fields the profile
/// reads for that type, each read by a derived struct that skips every other field unread.
#[cold]
fn slow_wire(event: EventRef<'_>) -> Result<Wire<'_>, Rule> {
    use super::json::{parse_object, shape_rule};
    let data = event.data();
    let TypeField { kind } = parse_object(data).ok_or_else(|| shape_rule(event, JSON, TYPE))?;
    let mut wire = Wire::of(EventKind::read(kind, event)?);
    // The data is a JSON object (its type was read), so what fails now is a field's shape.
    let SequenceField { sequence_number } = parse_object(data).ok_or(FIELDS)?;
    wire.sequence = sequence_number;
    match wire.kind {
        EventKind::TextDelta | EventKind::ArgumentsDelta => {
            let f: DeltaFields<'_> = parse_object(data).ok_or(FIELDS)?;
            (wire.output_index, wire.item_id, wire.delta) = (f.output_index, f.item_id, f.delta);
        }
        EventKind::ArgumentsDone => {
            let f: DoneFields<'_> = parse_object(data).ok_or(FIELDS)?;
            (wire.output_index, wire.id, wire.item_id, wire.arguments) =
                (f.output_index, f.id, f.item_id, f.arguments);
        }
        EventKind::ToolCallsCreated => {
            let f: ToolCallsFields<'_> = parse_object(data).ok_or(FIELDS)?;
            (wire.output_index, wire.item_id, wire.tool_call) =
                (f.output_index, f.item_id, f.tool_call);
        }
        kind if kind.has_snapshot() => {
            let f: SnapshotField<'_> = parse_object(data).ok_or(FIELDS)?;
            wire.response = f.response;
        }
        _ => {}
    }
    Ok(wire)
}

impl Profile for Stream {
    fn event(&mut self, event: &Event) -> Result<(), Rule> {
        self.event_ref(event.as_event_ref())
    }

    fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), Rule> {
        if self.completed && !self.failed_may_follow {
            return Err(AFTER_TERMINAL);
        }
        let wire = self.wire(event)?;
        if self.completed && wire.kind != EventKind::Failed {
            return Err(AFTER_TERMINAL);
        }
        if let Some(n) = wire.sequence {
            if self
                .sequence
                .is_some_and(|last| Some(n) != last.checked_add(1))
            {
                return Err(SEQUENCE);
            }
            self.sequence = Some(n);
        }
        let kind = wire.kind;
        self.apply(&wire)?;
        if self.error && self.failure.is_none() {
            // OpenAI's `error` carries its code and message at the top; the response's
            // terminal events in `response.error`.
            self.failure = Some(match kind {
                EventKind::Error => super::json::failure(event, "error", &[], &["code"]),
                EventKind::Failed => super::json::failure(
                    event,
                    "response.failed",
                    &["response", "error"],
                    &["code"],
                ),
                _ => super::json::failure(
                    event,
                    "response.completed",
                    &["response", "error"],
                    &["code"],
                ),
            });
        }
        Ok(())
    }

    fn is_terminated(&self) -> bool {
        self.completed
    }

    fn failure(&self) -> Option<crate::sequence::Failure> {
        self.failure.clone()
    }

    fn event_name(&self, event: EventRef<'_>) -> Utf8Bytes {
        super::json::name_or_type(event, "type")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::format;
    use alloc::string::ToString;

    /// What a reading of the fields amounts to, comparable: every field, written out.
    type Reading = Result<String, Rule>;

    fn reading(wire: Result<Wire<'_>, Rule>) -> Reading {
        let text = |t: &Option<Text<'_>>| t.as_ref().map(|t| t.0.to_string());
        wire.map(|w| {
            let response = w.response.as_ref().map(|r| {
                (
                    r.error.is_some(),
                    text(&r.id),
                    text(&r.status),
                    r.output.as_ref().map(|o| o.empty),
                )
            });
            format!(
                "{:?}",
                (
                    w.kind,
                    w.output_index,
                    text(&w.delta),
                    text(&w.arguments),
                    response,
                    text(&w.item_id),
                    text(&w.id),
                    w.tool_call.map(|IsObject(object)| object),
                )
            )
        })
    }

    fn field_value() -> impl proptest::strategy::Strategy<Value = String> {
        use alloc::vec;
        use proptest::prelude::*;
        prop_oneof![
            Just("\"response.output_text.delta\"".to_string()),
            Just("\"response.function_call_arguments.delta\"".to_string()),
            Just("\"response.function_call_arguments.done\"".to_string()),
            Just("\"response.tool_calls.created\"".to_string()),
            Just("\"response.created\"".to_string()),
            Just("\"response.in_progress\"".to_string()),
            Just("\"response.completed\"".to_string()),
            Just("\"response.failed\"".to_string()),
            Just("\"response.incomplete\"".to_string()),
            Just("\"error\"".to_string()),
            Just("\"response.output_item.added\"".to_string()),
            Just("\"response.output\\u005ftext.delta\"".to_string()),
            Just("\"a\\nb\\u00e9\\ud83d\\ude00\"".to_string()),
            Just("\"\\ud800\"".to_string()),
            Just("\"x\\q\"".to_string()),
            Just("0".to_string()),
            Just("7".to_string()),
            Just("-0".to_string()),
            Just("1.5".to_string()),
            Just("18446744073709551616".to_string()),
            Just("1e400".to_string()),
            Just("{\"name\":\"f\",\"arguments\":\"\\ud800\"}".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just("[]".to_string()),
            Just("[null]".to_string()),
            Just("[1,2]".to_string()),
            Just("{}".to_string()),
            Just("{\"error\":null}".to_string()),
            Just("{\"error\":{\"code\":1}}".to_string()),
            Just("{\"error\":1,\"error\":2}".to_string()),
            Just("{\"err\\u006fr\":1}".to_string()),
            Just("{\"error\":[".to_string()),
            Just("{\"id\":\"r1\",\"status\":\"in_progress\",\"output\":[]}".to_string()),
            Just("{\"id\":\"r\\u0031\",\"status\":\"completed\",\"output\":[ {} ]}".to_string()),
            Just("{\"status\":5}".to_string()),
            Just("{\"id\":[],\"output\":null}".to_string()),
            Just("{\"status\":\"\\ud800\"}".to_string()),
            Just("{\"output\":{}}".to_string()),
            Just("{\"output\":\"[]\"}".to_string()),
            Just("{\"output\":[ \n ]}".to_string()),
            Just("{\"output\":[],\"output\":[]}".to_string()),
            Just("{\"st\\u0061tus\":\"queued\"}".to_string()),
            "\"[a-z .]{0,12}\"",
        ]
    }

    /// The event types the profile reads fields of, and two it does not.
    const KINDS: [&str; 12] = [
        "response.created",
        "response.in_progress",
        "response.output_text.delta",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.done",
        "response.tool_calls.created",
        "response.output_item.added",
        "response.completed",
        "response.failed",
        "response.incomplete",
        "error",
        "response.mcp_call.arguments_delta",
    ];

    fn event_data() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("type"),
            Just("output_index"),
            Just("delta"),
            Just("arguments"),
            Just("response"),
            Just("item_id"),
            Just("id"),
            Just("tool_call"),
            Just("ty\\u0070e"),
        ];
        // Mostly a type the profile knows, first or last, so that every type's reading of
        // the other fields is tried.
        let kind = proptest::option::weighted(
            0.8,
            (proptest::sample::select(&KINDS[..]), proptest::bool::ANY),
        );
        let body = super::super::tests::named_object("type", kind, key, field_value());
        prop_oneof![
            8 => body,
            1 => Just("[1]".to_string()),
            1 => Just("{\"type\":\"x\"} x".to_string()),
            1 => Just(" {\"type\" : \"x\" }\n".to_string()),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// The scanner's reading of an event is serde's, field by field and rule by rule,
        /// with or without an `event:` field.
        #[test]
        fn scanned_fields_agree_with_serde(
            data in event_data(),
            name in proptest::option::of(proptest::sample::select(&KINDS[..])),
        ) {
            let event = super::super::tests::sse_event(name, &data)?;
            let fast = reading(Stream::new().wire(event.as_event_ref()));
            let slow = reading(slow_wire(event.as_event_ref()));
            proptest::prop_assert_eq!(fast, slow, "{}", data);
        }
    }

    /// Cases the property test found or that sit on the scanner's hand-over to serde.
    #[test]
    fn scanned_fields_agree_with_serde_on_found_cases() {
        for data in [
            r#"{"tool_call":"\ud800"}"#,
            r#"{"tool_call":1e400}"#,
            r#"{"tool_call":[1],"item_id":"a"}"#,
            r#"{"tool_call":{"x":"\ud800"},"id":"\u0061"}"#,
            r#"{"response":{"output":[ ],"status":"\u0071ueued"}}"#,
            r#"{"response":{"output":"[]"}}"#,
        ] {
            for kind in ["response.tool_calls.created", "response.created", "other"] {
                let data = data.replacen('{', &format!(r#"{{"type":"{kind}","#), 1);
                let event = Event::message(data.clone());
                let fast = reading(Stream::new().wire(event.as_event_ref()));
                let slow = reading(slow_wire(event.as_event_ref()));
                assert_eq!(fast, slow, "{data}");
            }
        }
        // A lone surrogate in a field the type reads is a field error; elsewhere it is not
        // read.
        let call = r#"{"type":"response.tool_calls.created","tool_call":"\ud800"}"#;
        let other = r#"{"type":"response.mcp_call.arguments_delta","tool_call":"\ud800"}"#;
        for (data, rule) in [(call, Err(FIELDS)), (other, Ok(()))] {
            let event = Event::message(data);
            let reading = Stream::new().wire(event.as_event_ref()).map(|_| ());
            assert_eq!(reading, rule, "{data}");
        }
    }

    #[test]
    fn arguments_done_checks_json_with_the_scanner_and_serde_past_its_depth() {
        let mut p = Stream::new();
        let created =
            r#"{"type":"response.created","response":{"status":"in_progress","output":[]}}"#;
        let progress = r#"{"type":"response.in_progress","response":{"status":"in_progress"}}"#;
        for data in [created, progress, progress] {
            p.event(&Event::message(data)).unwrap();
        }
        let deep = "[".repeat(200) + &"]".repeat(200);
        let escaped = serde_json::to_string(&deep).unwrap();
        let delta = format!(
            r#"{{"type":"response.function_call_arguments.delta","item_id":"fc","output_index":1,"delta":{escaped}}}"#
        );
        p.event(&Event::message(delta)).unwrap();
        let done = format!(
            r#"{{"type":"response.function_call_arguments.done","id":"fc","output_index":1,"arguments":{escaped}}}"#
        );
        assert_eq!(p.event(&Event::message(done)), Ok(()));
        assert_eq!(p.arguments(1), Some(deep.as_str()));
    }
}
