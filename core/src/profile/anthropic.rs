//! Anthropic Messages API streams (feature `json`): `message_start`, content blocks one at a
//! time, `message_delta`, then `message_stop`, or an `error` at any point.
//!
//! Every event has an `event:` name and JSON data whose `type` is that name (the profile also
//! takes `data:`-only events, named by their `type`, as some gateways send them).
//!
//! | rule | what it asks |
//! |---|---|
//! | [`JSON`] | the data is a JSON object |
//! | [`TYPE`] | the data has a `type` string, given once |
//! | [`TYPE_MISMATCH`] | the `event:` field, when sent, is the JSON `type` |
//! | [`FIELDS`] | `message_start` carries a `message` object (its `id` a string, when sent); `content_block_start` an integer `index` and a `content_block` object with a string `type`; `content_block_delta` an `index` and a `delta` object with a string `type`, and the string its type names (`text`, `partial_json`, `thinking`, `signature`); `content_block_stop` an `index`; `message_delta` a `delta` object; `error` an `error` object with a string `type` and `message`. In a `delta` object, `type`, `text`, `partial_json`, `thinking`, `signature` and `stop_reason` are strings (or `null`) where sent. No other field, and no field of other events, is read |
//! | [`START_FIRST`] | the first event other than `ping` (and events the profile does not know) is `message_start`, or an `error` |
//! | [`START_ONCE`] | `message_start` is sent once |
//! | [`BLOCK_ORDER`] | `content_block_start` opens the next index (0, 1, 2, …) while no block is open, and no block starts after `message_delta` |
//! | [`BLOCK_OPEN`] | `content_block_delta` and `content_block_stop` name the open block's index |
//! | [`DELTA_TYPE`] | a delta fits its block: `text_delta` and `citations_delta` in a `text` block, `input_json_delta` in a `tool_use`, `server_tool_use` or `mcp_tool_use` block, `thinking_delta` and `signature_delta` in a `thinking` block, none in `redacted_thinking` |
//! | [`TOOL_INPUT_JSON`] | at `content_block_stop`, a tool block's `partial_json` pieces join into one JSON object (no pieces, or only empty ones: `{}`) |
//! | [`BLOCK_STOPPED`] | every block is stopped before `message_delta` and `message_stop` |
//! | [`MESSAGE_DELTA`] | `message_stop` follows a `message_delta` |
//! | [`AFTER_TERMINAL`] | nothing follows `message_stop` or `error` |
//! | [`TOO_LARGE`] | the text, thinking and tool input kept, the message id and the stop reason stay under the cap ([`Messages::max_accumulated`]) |
//! | [`TOO_MANY_BLOCKS`] | at most [`Messages::max_blocks`] content blocks (4096 by default) |
//! | [`UNKNOWN_EVENT`] (warning) | an event type the profile does not know |
//!
//! The event flow is the one Anthropic's streaming documentation gives
//! (<https://docs.anthropic.com/en/docs/build-with-claude/streaming>): "`message_start`:
//! contains a `Message` object with empty `content`"; then content blocks, "each of which
//! have a `content_block_start`, one or more `content_block_delta` events, and a
//! `content_block_stop` event", each with "an `index` that corresponds to its index in the
//! final Message `content` array"; then "one or more `message_delta` events"; then "a final
//! `message_stop` event". A block is streamed whole before the next starts, so the profile
//! keeps one open block and asks for the indices in order. It allows a block without
//! deltas: server tool results (`web_search_tool_result`) and `redacted_thinking` arrive
//! whole in their `content_block_start`. It allows more than one `message_delta`, as the
//! documentation does.
//!
//! `ping` may come anywhere before the terminal event. `error` ("we may occasionally send
//! errors in the event stream", e.g. `overloaded_error`) may come anywhere too, as the first
//! event or in the middle of a block: it ends the stream validly, but not successfully, and
//! [`Profile::failure`] reports it with Anthropic's error type and message.
//!
//! Unknown events: the documentation says "in accordance with our versioning policy, we may
//! add new event types, and your code should handle unknown event types gracefully". The
//! profile accepts an event of a type it does not know anywhere before the terminal event
//! (its data must still be a JSON object whose `type` is its name), reads nothing else of
//! it, and reports the [`UNKNOWN_EVENT`] warning. Likewise a block type it does not know
//! takes any delta, and a delta type it does not know fits any block; neither is kept.
//!
//! Tool input: the `partial_json` pieces of a tool block are joined and checked when the
//! block stops. With fine-grained tool streaming, Anthropic sends tool input unvalidated and
//! a stream cut at `max_tokens` may stop a block on partial JSON; a caller that asks for it
//! turns the check off with [`Messages::check_tool_input`].
//!
//! ```
//! use ssekit::profile::anthropic::Messages;
//! use ssekit::sequence::Validator;
//! use ssekit::Event;
//!
//! let mut v = Validator::new(Messages::new());
//! for (name, data) in [
//!     ("message_start", r#"{"type":"message_start","message":{"id":"msg_1","role":"assistant","content":[]}}"#),
//!     ("content_block_start", r#"{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#),
//!     ("ping", r#"{"type":"ping"}"#),
//!     ("content_block_delta", r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}}"#),
//!     ("content_block_stop", r#"{"type":"content_block_stop","index":0}"#),
//!     ("message_delta", r#"{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}"#),
//!     ("message_stop", r#"{"type":"message_stop"}"#),
//! ] {
//!     v.event(&Event::builder().event(name)?.data(data).build())?;
//! }
//! v.finish()?;
//! assert_eq!(v.profile().text(0), Some("Hello"));
//! assert_eq!(v.profile().message_id(), Some("msg_1"));
//! assert_eq!(v.profile().stop_reason(), Some("end_turn"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use alloc::string::String;
use alloc::vec::Vec;

use super::json::Text;
use super::scan::{self, Kind, ScanError};
use crate::event::Event;
use crate::frame_ref::EventRef;
use crate::sequence::{Failure, Profile, Rule};
use crate::text::Utf8Bytes;

/// The data is a JSON object.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, JSON};
/// use ssekit::sequence::Profile;
/// let mut p = Messages::new();
/// assert_eq!(p.event(&ssekit::Event::message("[1]")), Err(JSON));
/// ```
pub const JSON: Rule = Rule::new("anthropic.json", "the data is a JSON object");

/// The data has a `type` string.
///
/// A `type` that is not a string (or a string with an escape that stands for no character),
/// or that is given twice, names no event: it breaks this rule whatever the event.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, TYPE};
/// use ssekit::sequence::Profile;
/// let mut p = Messages::new();
/// assert_eq!(p.event(&ssekit::Event::message(r#"{"message":{}}"#)), Err(TYPE));
/// ```
pub const TYPE: Rule = Rule::new("anthropic.type", "the data has a `type` string, given once");

/// The `event:` field, when sent, is the JSON `type`: "each event will use an SSE event
/// name (e.g. `event: message_stop`), and include the matching event `type` in its data".
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, TYPE_MISMATCH};
/// use ssekit::sequence::Profile;
/// let mut p = Messages::new();
/// let ping = ssekit::Event::builder().event("ping")?.data(r#"{"type":"message_stop"}"#).build();
/// assert_eq!(p.event(&ping), Err(TYPE_MISMATCH));
/// # Ok::<(), ssekit::EncodeError>(())
/// ```
pub const TYPE_MISMATCH: Rule = Rule::new(
    "anthropic.type-mismatch",
    "the `event:` field and the JSON `type` agree",
);

/// Events carry the fields the profile reads, of the right JSON type.
///
/// A field is read only in the events it is listed for (see the [module docs](self));
/// one missing (a `null` counts as missing), given twice, or of another JSON type breaks
/// the rule. Other fields (`usage`, `model`, a block's `id` and `name`) are not looked at.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, FIELDS};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Messages::new();
/// p.event(&Event::message(r#"{"type":"message_start","message":{"id":"msg_1"}}"#))?;
/// let start = r#"{"type":"content_block_start","index":"0","content_block":{"type":"text"}}"#;
/// assert_eq!(p.event(&Event::message(start)), Err(FIELDS));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const FIELDS: Rule = Rule::new(
    "anthropic.fields",
    "events carry their fields: `message_start` a message object, block events an integer `index`, `content_block_start` a typed content_block, `content_block_delta` a typed delta with its string, `message_delta` a delta object, `error` an error object with string type and message",
);

/// The first event other than `ping` and events the profile does not know is
/// `message_start`, or an `error` (a failure before anything was sent).
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, START_FIRST};
/// use ssekit::sequence::Profile;
/// let mut p = Messages::new();
/// assert_eq!(p.event(&ssekit::Event::message(r#"{"type":"message_stop"}"#)), Err(START_FIRST));
/// ```
pub const START_FIRST: Rule = Rule::new(
    "anthropic.start-first",
    "the first event (pings aside) is `message_start`, or an `error`",
);

/// `message_start` is sent once.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::anthropic::START_ONCE.id(), "anthropic.start-once");
/// ```
pub const START_ONCE: Rule = Rule::new("anthropic.start-once", "`message_start` is sent once");

/// `content_block_start` opens the next index while no block is open, and before any
/// `message_delta`.
///
/// Blocks are streamed one at a time in the order of the final `content` array: the first
/// block is index 0, each next one the index after, and a block starts only once the
/// previous one has stopped.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, BLOCK_ORDER};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Messages::new();
/// p.event(&Event::message(r#"{"type":"message_start","message":{}}"#))?;
/// let start = r#"{"type":"content_block_start","index":1,"content_block":{"type":"text"}}"#;
/// assert_eq!(p.event(&Event::message(start)), Err(BLOCK_ORDER));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const BLOCK_ORDER: Rule = Rule::new(
    "anthropic.block-order",
    "`content_block_start` opens the next index (0, 1, 2, ...) while no block is open, before `message_delta`",
);

/// `content_block_delta` and `content_block_stop` name the open block's index.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, BLOCK_OPEN};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Messages::new();
/// p.event(&Event::message(r#"{"type":"message_start","message":{}}"#))?;
/// let stop = r#"{"type":"content_block_stop","index":0}"#;
/// assert_eq!(p.event(&Event::message(stop)), Err(BLOCK_OPEN));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const BLOCK_OPEN: Rule = Rule::new(
    "anthropic.block-open",
    "`content_block_delta` and `content_block_stop` name the open block's index",
);

/// A delta fits its block's type.
///
/// `text_delta` and `citations_delta` go in a `text` block; `input_json_delta` in a
/// `tool_use`, `server_tool_use` or `mcp_tool_use` block; `thinking_delta` and
/// `signature_delta` in a `thinking` block; a `redacted_thinking` block takes none. Block
/// and delta types the profile does not know fit anything.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, DELTA_TYPE};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Messages::new();
/// p.event(&Event::message(r#"{"type":"message_start","message":{}}"#))?;
/// p.event(&Event::message(r#"{"type":"content_block_start","index":0,"content_block":{"type":"text"}}"#))?;
/// let delta = r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{"}}"#;
/// assert_eq!(p.event(&Event::message(delta)), Err(DELTA_TYPE));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const DELTA_TYPE: Rule = Rule::new(
    "anthropic.delta-type",
    "a delta fits its block: text and citations deltas in text blocks, input_json_delta in tool blocks, thinking and signature deltas in thinking blocks",
);

/// A tool block's input, its `input_json_delta` pieces joined, is one JSON object when the
/// block stops; no pieces (or only empty ones) stand for `{}`.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, TOOL_INPUT_JSON};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Messages::new();
/// p.event(&Event::message(r#"{"type":"message_start","message":{}}"#))?;
/// p.event(&Event::message(r#"{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{}}}"#))?;
/// p.event(&Event::message(r#"{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#))?;
/// let stop = r#"{"type":"content_block_stop","index":0}"#;
/// assert_eq!(p.event(&Event::message(stop)), Err(TOOL_INPUT_JSON));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const TOOL_INPUT_JSON: Rule = Rule::new(
    "anthropic.tool-input-json",
    "a tool block's `partial_json` pieces join into one JSON object (none: `{}`) when it stops",
);

/// Every content block is stopped before `message_delta` and `message_stop`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::anthropic::BLOCK_STOPPED.id(), "anthropic.block-stopped");
/// ```
pub const BLOCK_STOPPED: Rule = Rule::new(
    "anthropic.block-stopped",
    "every content block is stopped before `message_delta` and `message_stop`",
);

/// `message_stop` follows a `message_delta` (which carries the `stop_reason`).
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, MESSAGE_DELTA};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Messages::new();
/// p.event(&Event::message(r#"{"type":"message_start","message":{}}"#))?;
/// assert_eq!(p.event(&Event::message(r#"{"type":"message_stop"}"#)), Err(MESSAGE_DELTA));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const MESSAGE_DELTA: Rule = Rule::new(
    "anthropic.message-delta",
    "`message_stop` follows a `message_delta`",
);

/// Nothing follows `message_stop` or `error`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::anthropic::AFTER_TERMINAL.id(), "anthropic.after-terminal");
/// ```
pub const AFTER_TERMINAL: Rule = Rule::new(
    "anthropic.after-terminal",
    "nothing follows `message_stop` or `error`",
);

/// What the profile keeps stays under the cap ([`Messages::max_accumulated`]): the text,
/// thinking and tool input of the blocks, the message id and the stop reason.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, TOO_LARGE};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Messages::new().max_accumulated(4);
/// assert_eq!(p.event(&Event::message(r#"{"type":"message_start","message":{"id":"msg_01"}}"#)), Err(TOO_LARGE));
/// ```
pub const TOO_LARGE: Rule = Rule::new(
    "anthropic.too-large",
    "the text, thinking and tool input kept, the message id and the stop reason stay under the cap",
);

/// At most [`Messages::max_blocks`] content blocks.
///
/// The profile keeps a record per block (its type, what it accumulated); the
/// `content_block_start` that would make more blocks than the cap allows breaks this rule,
/// so no stream can make it keep an unbounded number of records, not even of empty blocks.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, TOO_MANY_BLOCKS};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Messages::new().max_blocks(0);
/// p.event(&Event::message(r#"{"type":"message_start","message":{}}"#))?;
/// let start = r#"{"type":"content_block_start","index":0,"content_block":{"type":"text"}}"#;
/// assert_eq!(p.event(&Event::message(start)), Err(TOO_MANY_BLOCKS));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const TOO_MANY_BLOCKS: Rule = Rule::new(
    "anthropic.too-many-blocks",
    "the stream has at most `max_blocks` content blocks",
);

/// A warning: an event type the profile does not know.
///
/// Anthropic's versioning policy may add event types and asks clients to handle unknown
/// ones gracefully, so the profile accepts it (anywhere before the terminal event) and
/// reads nothing but its `type`; a client that matches only the documented event types may
/// still fail on it.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::{Messages, UNKNOWN_EVENT};
/// use ssekit::sequence::Profile;
/// let mut p = Messages::new();
/// assert_eq!(p.event(&ssekit::Event::message(r#"{"type":"future_event","x":1}"#)), Ok(()));
/// assert_eq!(p.poll_warning(), Some(UNKNOWN_EVENT));
/// assert!(UNKNOWN_EVENT.is_warning());
/// ```
pub const UNKNOWN_EVENT: Rule = Rule::warning(
    "anthropic.unknown-event",
    "an event type this profile does not know: Anthropic may add event types and asks clients to ignore them, but a client that matches only the documented ones may fail on it",
);

/// The default cap on what the profile keeps: 16 MiB.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::anthropic::DEFAULT_MAX_ACCUMULATED, 16 << 20);
/// ```
pub const DEFAULT_MAX_ACCUMULATED: usize = 16 << 20;

/// The default cap on content blocks: 4096.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::anthropic::DEFAULT_MAX_BLOCKS, 4096);
/// ```
pub const DEFAULT_MAX_BLOCKS: usize = 4096;

/// The event types the profile reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum EventKind {
    MessageStart,
    BlockStart,
    BlockDelta,
    BlockStop,
    MessageDelta,
    MessageStop,
    Ping,
    Error,
    Other,
}

impl EventKind {
    fn of(name: &str) -> EventKind {
        match name {
            "message_start" => EventKind::MessageStart,
            "content_block_start" => EventKind::BlockStart,
            "content_block_delta" => EventKind::BlockDelta,
            "content_block_stop" => EventKind::BlockStop,
            "message_delta" => EventKind::MessageDelta,
            "message_stop" => EventKind::MessageStop,
            "ping" => EventKind::Ping,
            "error" => EventKind::Error,
            _ => EventKind::Other,
        }
    }

    /// The kind named by the JSON `type` ([`TYPE`] when there is none), which the `event:`
    /// field, when sent, repeats ([`TYPE_MISMATCH`]).
    fn read(json: Option<Text<'_>>, event: EventRef<'_>) -> Result<EventKind, Rule> {
        let Some(Text(name)) = json else {
            return Err(TYPE);
        };
        if event.event_field().is_some_and(|sse| sse != name) {
            return Err(TYPE_MISMATCH);
        }
        Ok(EventKind::of(&name))
    }
}

/// The `message` of `message_start`: its id alone is read.
#[derive(serde::Deserialize)]
struct Message<'a> {
    #[serde(borrow, default)]
    id: Option<Text<'a>>,
}

/// An object of which only the `type` is read: a `content_block`, or the event itself.
#[derive(serde::Deserialize)]
struct Typed<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
}

/// The `delta` of `content_block_delta` and `message_delta`.
#[derive(serde::Deserialize)]
struct Delta<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    text: Option<Text<'a>>,
    #[serde(borrow, default)]
    partial_json: Option<Text<'a>>,
    #[serde(borrow, default)]
    thinking: Option<Text<'a>>,
    #[serde(borrow, default)]
    signature: Option<Text<'a>>,
    #[serde(borrow, default)]
    stop_reason: Option<Text<'a>>,
}

/// The `error` of an `error` event.
#[derive(serde::Deserialize)]
struct ErrorBody<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<Text<'a>>,
    #[serde(borrow, default)]
    message: Option<Text<'a>>,
}

/// An event's type and the fields the profile reads for that type ([`FIELDS`]); every
/// other field is skipped without being read or stored.
struct Wire<'a> {
    kind: EventKind,
    index: Option<u64>,
    message: Option<Message<'a>>,
    content_block: Option<Typed<'a>>,
    delta: Option<Delta<'a>>,
    error: Option<ErrorBody<'a>>,
}

impl Wire<'_> {
    fn of(kind: EventKind) -> Self {
        Wire {
            kind,
            index: None,
            message: None,
            content_block: None,
            delta: None,
            error: None,
        }
    }
}

/// The serde path: the fields of `message_start`.
#[derive(serde::Deserialize)]
struct StartFields<'a> {
    #[serde(borrow, default, deserialize_with = "object_or_null")]
    message: Option<Message<'a>>,
}

/// The serde path: the fields of `content_block_start`.
#[derive(serde::Deserialize)]
struct BlockStartFields<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default, deserialize_with = "object_or_null")]
    content_block: Option<Typed<'a>>,
}

/// The serde path: the fields of `content_block_delta` (and, without `index`, of
/// `message_delta`).
#[derive(serde::Deserialize)]
struct DeltaFields<'a> {
    #[serde(default)]
    index: Option<u64>,
    #[serde(borrow, default, deserialize_with = "object_or_null")]
    delta: Option<Delta<'a>>,
}

/// The serde path: the field of `message_delta`.
#[derive(serde::Deserialize)]
struct MessageDeltaFields<'a> {
    #[serde(borrow, default, deserialize_with = "object_or_null")]
    delta: Option<Delta<'a>>,
}

/// The serde path: the field of `content_block_stop`.
#[derive(serde::Deserialize)]
struct StopFields {
    #[serde(default)]
    index: Option<u64>,
}

/// The serde path: the field of `error`.
#[derive(serde::Deserialize)]
struct ErrorFields<'a> {
    #[serde(borrow, default, deserialize_with = "object_or_null")]
    error: Option<ErrorBody<'a>>,
}

/// `T` read from a JSON object, or `None` from `null`. serde's derived structs read a JSON
/// array too, by position; a nested field that is not an object (or null) breaks
/// [`FIELDS`] instead.
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

/// A string field as serde reads it into [`Text`]: absent or `null` is `None`, another type
/// or an escape that stands for no character is [`FIELDS`].
#[inline(always)]
fn text(value: Option<scan::Value<'_>>) -> Result<Option<Text<'_>>, Rule> {
    super::json::text(value).map_err(|()| FIELDS)
}

/// An `index` as serde reads it into a `u64`: absent or `null` is `None`, anything but an
/// integer in range is [`FIELDS`].
#[inline(always)]
fn index(value: Option<scan::Value<'_>>) -> Result<Option<u64>, Rule> {
    match value {
        None => Ok(None),
        Some(v) if v.kind == Kind::Null => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or(FIELDS),
    }
}

/// A nested object as the scanner reads it.
enum Nested<'a, const N: usize> {
    /// Absent, or `null`.
    Absent,
    /// The wanted fields.
    Fields([Option<scan::Value<'a>>; N]),
    /// A key with an escape: serde reads it.
    Slow,
}

/// The wanted fields of the nested object `value` (already scanned): [`FIELDS`] when it is
/// not an object or `null`, or gives a wanted key twice (serde's derived structs refuse
/// that too).
fn nested<'a, const N: usize>(
    value: Option<scan::Value<'a>>,
    slot: impl Fn(&str) -> Option<usize>,
) -> Result<Nested<'a, N>, Rule> {
    match value {
        None => Ok(Nested::Absent),
        Some(v) if v.kind == Kind::Null => Ok(Nested::Absent),
        Some(v) if v.kind == Kind::Object => match scan::object_with::<N>(v.raw, slot) {
            Ok(Some(fields)) if fields.escaped_key => Ok(Nested::Slow),
            Ok(Some(fields)) if fields.duplicate => Err(FIELDS),
            Ok(Some(fields)) => Ok(Nested::Fields(fields.values)),
            // Not reached: the value was scanned whole as part of the event.
            Ok(None) | Err(_) => Ok(Nested::Slow),
        },
        Some(_) => Err(FIELDS),
    }
}

fn message_slot(key: &str) -> Option<usize> {
    (key == "id").then_some(0)
}

fn typed_slot(key: &str) -> Option<usize> {
    (key == "type").then_some(0)
}

fn delta_slot(key: &str) -> Option<usize> {
    Some(match key {
        "type" => 0,
        "text" => 1,
        "partial_json" => 2,
        "thinking" => 3,
        "signature" => 4,
        "stop_reason" => 5,
        _ => return None,
    })
}

fn error_slot(key: &str) -> Option<usize> {
    Some(match key {
        "type" => 0,
        "message" => 1,
        _ => return None,
    })
}

/// Reads the event's type, then the fields the profile reads for that type, with the
/// allocation-free scanner; serde only for what the scanner leaves to it (escaped keys, a
/// key given twice at the top level, nesting past its depth).
fn wire(event: EventRef<'_>) -> Result<Wire<'_>, Rule> {
    let slot = |key: &str| {
        Some(match key {
            "type" => 0,
            "index" => 1,
            "message" => 2,
            "content_block" => 3,
            "delta" => 4,
            "error" => 5,
            _ => return None,
        })
    };
    let fields = match scan::object_with::<6>(event.data(), slot) {
        Ok(Some(fields)) if !fields.escaped_key && !fields.duplicate => fields,
        // Valid JSON that is not an object, or not JSON.
        Ok(None) | Err(ScanError::Invalid) => return Err(JSON),
        // Whether an escaped key is one the event's type reads, or a key given twice one
        // it reads (serde's derived structs refuse that), serde tells.
        Ok(Some(_)) | Err(ScanError::TooDeep) => return slow_wire(event),
    };
    let [kind, index_value, message, content_block, delta, error] = fields.values;
    let mut wire = Wire::of(EventKind::read(text(kind).map_err(|_| TYPE)?, event)?);
    macro_rules! nested_or_slow {
        ($value:expr, $slot:expr) => {
            match nested($value, $slot)? {
                Nested::Absent => None,
                Nested::Fields(fields) => Some(fields),
                Nested::Slow => return slow_wire(event),
            }
        };
    }
    match wire.kind {
        EventKind::MessageStart => {
            if let Some([id]) = nested_or_slow!(message, message_slot) {
                wire.message = Some(Message { id: text(id)? });
            }
        }
        EventKind::BlockStart => {
            wire.index = index(index_value)?;
            if let Some([kind]) = nested_or_slow!(content_block, typed_slot) {
                wire.content_block = Some(Typed { kind: text(kind)? });
            }
        }
        EventKind::BlockDelta | EventKind::MessageDelta => {
            if wire.kind == EventKind::BlockDelta {
                wire.index = index(index_value)?;
            }
            if let Some([kind, text_value, partial_json, thinking, signature, stop_reason]) =
                nested_or_slow!(delta, delta_slot)
            {
                wire.delta = Some(Delta {
                    kind: text(kind)?,
                    text: text(text_value)?,
                    partial_json: text(partial_json)?,
                    thinking: text(thinking)?,
                    signature: text(signature)?,
                    stop_reason: text(stop_reason)?,
                });
            }
        }
        EventKind::BlockStop => wire.index = index(index_value)?,
        EventKind::Error => {
            if let Some([kind, message]) = nested_or_slow!(error, error_slot) {
                wire.error = Some(ErrorBody {
                    kind: text(kind)?,
                    message: text(message)?,
                });
            }
        }
        // Other types: nothing more is read.
        EventKind::MessageStop | EventKind::Ping | EventKind::Other => {}
    }
    Ok(wire)
}

/// The serde path, for what the scanner leaves to it: the type, then the fields the profile
/// reads for that type, each read by a derived struct that skips every other field unread.
#[cold]
fn slow_wire(event: EventRef<'_>) -> Result<Wire<'_>, Rule> {
    use super::json::{parse_object, shape_rule};
    let data = event.data();
    let Typed { kind } = parse_object(data).ok_or_else(|| shape_rule(event, JSON, TYPE))?;
    let mut wire = Wire::of(EventKind::read(kind, event)?);
    // The data is a JSON object (its type was read), so what fails now is a field's shape.
    match wire.kind {
        EventKind::MessageStart => {
            let f: StartFields<'_> = parse_object(data).ok_or(FIELDS)?;
            wire.message = f.message;
        }
        EventKind::BlockStart => {
            let f: BlockStartFields<'_> = parse_object(data).ok_or(FIELDS)?;
            (wire.index, wire.content_block) = (f.index, f.content_block);
        }
        EventKind::BlockDelta => {
            let f: DeltaFields<'_> = parse_object(data).ok_or(FIELDS)?;
            (wire.index, wire.delta) = (f.index, f.delta);
        }
        EventKind::MessageDelta => {
            let f: MessageDeltaFields<'_> = parse_object(data).ok_or(FIELDS)?;
            wire.delta = f.delta;
        }
        EventKind::BlockStop => {
            let f: StopFields = parse_object(data).ok_or(FIELDS)?;
            wire.index = f.index;
        }
        EventKind::Error => {
            let f: ErrorFields<'_> = parse_object(data).ok_or(FIELDS)?;
            wire.error = f.error;
        }
        EventKind::MessageStop | EventKind::Ping | EventKind::Other => {}
    }
    Ok(wire)
}

/// Whether `input` is one JSON object: the scanner's answer, serde's past its depth.
fn is_json_object(input: &str) -> bool {
    match scan::object_with::<0>(input, |_| None) {
        Ok(Some(_)) => true,
        Ok(None) | Err(ScanError::Invalid) => false,
        Err(ScanError::TooDeep) => super::json::is_object(input),
    }
}

/// The kinds of content block whose deltas the profile checks ([`DELTA_TYPE`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BlockKind {
    /// `text`: `text_delta`, `citations_delta`.
    Text,
    /// `tool_use`, `server_tool_use`, `mcp_tool_use`: `input_json_delta`.
    Tool,
    /// `thinking`: `thinking_delta`, `signature_delta`.
    Thinking,
    /// `redacted_thinking`: no delta.
    RedactedThinking,
    /// A block type the profile does not check: any delta.
    Other,
}

impl BlockKind {
    fn of(name: &str) -> BlockKind {
        match name {
            "text" => BlockKind::Text,
            "tool_use" | "server_tool_use" | "mcp_tool_use" => BlockKind::Tool,
            "thinking" => BlockKind::Thinking,
            "redacted_thinking" => BlockKind::RedactedThinking,
            _ => BlockKind::Other,
        }
    }
}

/// What one content block accumulated.
#[derive(Clone, Debug)]
struct Block {
    kind: BlockKind,
    /// The text of a text block, the thinking of a thinking block, the joined
    /// `partial_json` of a tool block.
    content: String,
}

/// The Anthropic Messages stream profile; see the [module docs](self) for its rules.
///
/// # Example
/// ```
/// use ssekit::profile::anthropic::Messages;
/// use ssekit::sequence::{Profile, Validator};
/// use ssekit::Event;
///
/// let error = r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#;
/// let mut v = Validator::new(Messages::new());
/// v.event(&Event::builder().event("error")?.data(error).build())?;
/// v.finish()?;
/// let failure = v.profile().failure().unwrap();
/// assert_eq!(failure.code.as_deref(), Some("overloaded_error"));
/// assert_eq!(failure.message, "Overloaded");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct Messages {
    started: bool,
    terminal: bool,
    /// A `message_delta` was seen.
    message_delta: bool,
    /// The index of the block started and not yet stopped.
    open: Option<u64>,
    /// Every block started, by index.
    blocks: Vec<Block>,
    message_id: Option<String>,
    stop_reason: Option<String>,
    failure: Option<Failure>,
    warning: Option<Rule>,
    accumulated: usize,
    max_accumulated: usize,
    max_blocks: usize,
    check_tool_input: bool,
}

impl Default for Messages {
    /// A 16 MiB accumulation cap, at most 4096 blocks, tool input checked.
    fn default() -> Self {
        Messages::new()
    }
}

impl Messages {
    /// A fresh profile with a 16 MiB accumulation cap, at most 4096 blocks, and tool input
    /// checked ([`TOOL_INPUT_JSON`]).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::anthropic::Messages::new().blocks(), 0);
    /// ```
    pub const fn new() -> Self {
        Messages {
            started: false,
            terminal: false,
            message_delta: false,
            open: None,
            blocks: Vec::new(),
            message_id: None,
            stop_reason: None,
            failure: None,
            warning: None,
            accumulated: 0,
            max_accumulated: DEFAULT_MAX_ACCUMULATED,
            max_blocks: DEFAULT_MAX_BLOCKS,
            check_tool_input: true,
        }
    }

    /// Sets the cap on what the profile keeps, in bytes ([`TOO_LARGE`] past it): the text,
    /// thinking and tool input of the blocks, the message id and the stop reason.
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::anthropic::Messages::new().max_accumulated(1 << 20);
    /// assert_eq!(p.text(0), None);
    /// ```
    pub const fn max_accumulated(mut self, bytes: usize) -> Self {
        self.max_accumulated = bytes;
        self
    }

    /// Sets the cap on the number of content blocks ([`TOO_MANY_BLOCKS`] past it).
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::anthropic::Messages::new().max_blocks(64);
    /// assert_eq!(p.blocks(), 0);
    /// ```
    pub const fn max_blocks(mut self, blocks: usize) -> Self {
        self.max_blocks = blocks;
        self
    }

    /// Whether a tool block's joined input must be a JSON object when it stops
    /// ([`TOOL_INPUT_JSON`]; on by default). With fine-grained tool streaming Anthropic
    /// sends tool input unvalidated, and a block cut at `max_tokens` stops on partial JSON;
    /// a caller that streams that way can turn the check off and read
    /// [`tool_input`](Self::tool_input) itself.
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::anthropic::Messages::new().check_tool_input(false);
    /// assert_eq!(p.tool_input(0), None);
    /// ```
    pub const fn check_tool_input(mut self, check: bool) -> Self {
        self.check_tool_input = check;
        self
    }

    /// The `id` of the `message` in `message_start`.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::anthropic::Messages::new().message_id(), None);
    /// ```
    pub fn message_id(&self) -> Option<&str> {
        self.message_id.as_deref()
    }

    /// The `stop_reason` of the last `message_delta` that had one (`end_turn`, `tool_use`,
    /// `max_tokens`, ...).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::anthropic::Messages::new().stop_reason(), None);
    /// ```
    pub fn stop_reason(&self) -> Option<&str> {
        self.stop_reason.as_deref()
    }

    /// The content blocks started so far.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::anthropic::Messages::new().blocks(), 0);
    /// ```
    pub fn blocks(&self) -> usize {
        self.blocks.len()
    }

    /// The block at `index`, when it is of `kind`: what it accumulated.
    fn content(&self, index: u64, kind: BlockKind) -> Option<&str> {
        usize::try_from(index)
            .ok()
            .and_then(|index| self.blocks.get(index))
            .filter(|block| block.kind == kind)
            .map(|block| block.content.as_str())
    }

    /// The text of the text block at `index`, its `text_delta`s joined; `None` when the
    /// block is not a text block.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::anthropic::Messages::new().text(0), None);
    /// ```
    pub fn text(&self, index: u64) -> Option<&str> {
        self.content(index, BlockKind::Text)
    }

    /// The thinking of the thinking block at `index`, its `thinking_delta`s joined; `None`
    /// when the block is not a thinking block.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::anthropic::Messages::new().thinking(0), None);
    /// ```
    pub fn thinking(&self, index: u64) -> Option<&str> {
        self.content(index, BlockKind::Thinking)
    }

    /// The input of the tool block (`tool_use`, `server_tool_use`, `mcp_tool_use`) at
    /// `index`: its `partial_json` pieces joined, `""` when there were none (the input is
    /// then `{}`); `None` when the block is not a tool block.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::anthropic::Messages::new().tool_input(1), None);
    /// ```
    pub fn tool_input(&self, index: u64) -> Option<&str> {
        self.content(index, BlockKind::Tool)
    }

    /// Counts `bytes` more kept ([`TOO_LARGE`] past the cap).
    fn grow(&mut self, bytes: usize) -> Result<(), Rule> {
        let grown = self.accumulated.saturating_add(bytes);
        if grown > self.max_accumulated {
            return Err(TOO_LARGE);
        }
        self.accumulated = grown;
        Ok(())
    }

    /// The open block, when `index` names it ([`BLOCK_OPEN`]).
    fn open_block(&self, index: Option<u64>) -> Result<usize, Rule> {
        let index = index.ok_or(FIELDS)?;
        if self.open != Some(index) {
            return Err(BLOCK_OPEN);
        }
        usize::try_from(index)
            .ok()
            .filter(|&i| i < self.blocks.len())
            .ok_or(BLOCK_OPEN)
    }

    fn block_start(&mut self, wire: &Wire<'_>) -> Result<(), Rule> {
        let (
            Some(index),
            Some(Typed {
                kind: Some(Text(kind)),
            }),
        ) = (wire.index, &wire.content_block)
        else {
            return Err(FIELDS);
        };
        let next = self.blocks.len();
        if self.open.is_some() || self.message_delta || usize::try_from(index) != Ok(next) {
            return Err(BLOCK_ORDER);
        }
        if next >= self.max_blocks {
            return Err(TOO_MANY_BLOCKS);
        }
        self.blocks.push(Block {
            kind: BlockKind::of(kind),
            content: String::new(),
        });
        self.open = Some(index);
        Ok(())
    }

    fn block_delta(&mut self, wire: &Wire<'_>) -> Result<(), Rule> {
        let Some(delta) = &wire.delta else {
            return Err(FIELDS);
        };
        let Some(Text(delta_type)) = &delta.kind else {
            return Err(FIELDS);
        };
        // The block kind the delta fits, and the piece it adds to the block's content.
        let (fits, piece) = match delta_type.as_ref() {
            "text_delta" => (BlockKind::Text, delta.text.as_ref().ok_or(FIELDS)?),
            "input_json_delta" => (BlockKind::Tool, delta.partial_json.as_ref().ok_or(FIELDS)?),
            "thinking_delta" => (BlockKind::Thinking, delta.thinking.as_ref().ok_or(FIELDS)?),
            // The signature is checked by Anthropic, not kept.
            "signature_delta" => {
                delta.signature.as_ref().ok_or(FIELDS)?;
                return self.fits(wire.index, BlockKind::Thinking).map(|_| ());
            }
            // A citation is an object the profile does not read.
            "citations_delta" => return self.fits(wire.index, BlockKind::Text).map(|_| ()),
            // A delta type the profile does not know fits any block.
            _ => return self.open_block(wire.index).map(|_| ()),
        };
        let at = self.fits(wire.index, fits)?;
        let keeps = self.blocks.get(at).is_some_and(|block| block.kind == fits);
        if keeps {
            self.grow(piece.0.len())?;
            if let Some(block) = self.blocks.get_mut(at) {
                block.content.push_str(&piece.0);
            }
        }
        Ok(())
    }

    /// The open block named by `index` ([`BLOCK_OPEN`]), when a delta that fits `kind` fits
    /// it ([`DELTA_TYPE`]).
    fn fits(&self, index: Option<u64>, kind: BlockKind) -> Result<usize, Rule> {
        let at = self.open_block(index)?;
        match self.blocks.get(at).map(|block| block.kind) {
            Some(BlockKind::Other) => Ok(at),
            Some(block) if block == kind => Ok(at),
            _ => Err(DELTA_TYPE),
        }
    }

    fn block_stop(&mut self, wire: &Wire<'_>) -> Result<(), Rule> {
        let at = self.open_block(wire.index)?;
        let invalid_input = self.check_tool_input
            && self.blocks.get(at).is_some_and(|block| {
                block.kind == BlockKind::Tool
                    && !block.content.is_empty()
                    && !is_json_object(&block.content)
            });
        if invalid_input {
            return Err(TOOL_INPUT_JSON);
        }
        self.open = None;
        Ok(())
    }

    fn message_delta(&mut self, wire: &Wire<'_>) -> Result<(), Rule> {
        let Some(delta) = &wire.delta else {
            return Err(FIELDS);
        };
        if self.open.is_some() {
            return Err(BLOCK_STOPPED);
        }
        if let Some(Text(reason)) = &delta.stop_reason {
            let kept = self.stop_reason.as_ref().map_or(0, String::len);
            self.accumulated = self.accumulated.saturating_sub(kept);
            self.grow(reason.len())?;
            self.stop_reason = Some(String::from(reason.as_ref()));
        }
        self.message_delta = true;
        Ok(())
    }

    /// The rules, on the fields read from one event.
    fn apply(&mut self, wire: &Wire<'_>) -> Result<(), Rule> {
        let kind = wire.kind;
        if !self.started
            && !matches!(
                kind,
                EventKind::MessageStart | EventKind::Ping | EventKind::Error | EventKind::Other
            )
        {
            return Err(START_FIRST);
        }
        match kind {
            EventKind::MessageStart => {
                let message = wire.message.as_ref().ok_or(FIELDS)?;
                if self.started {
                    return Err(START_ONCE);
                }
                if let Some(Text(id)) = &message.id {
                    self.grow(id.len())?;
                    self.message_id = Some(String::from(id.as_ref()));
                }
                self.started = true;
                Ok(())
            }
            EventKind::BlockStart => self.block_start(wire),
            EventKind::BlockDelta => self.block_delta(wire),
            EventKind::BlockStop => self.block_stop(wire),
            EventKind::MessageDelta => self.message_delta(wire),
            EventKind::MessageStop => {
                if self.open.is_some() {
                    return Err(BLOCK_STOPPED);
                }
                if !self.message_delta {
                    return Err(MESSAGE_DELTA);
                }
                self.terminal = true;
                Ok(())
            }
            EventKind::Ping => Ok(()),
            EventKind::Error => {
                let Some(ErrorBody {
                    kind: Some(Text(code)),
                    message: Some(Text(message)),
                }) = &wire.error
                else {
                    return Err(FIELDS);
                };
                self.failure = Some(Failure::new(
                    "error",
                    Some(String::from(code.as_ref())),
                    message.as_ref(),
                ));
                self.terminal = true;
                Ok(())
            }
            EventKind::Other => {
                self.warning = Some(UNKNOWN_EVENT);
                Ok(())
            }
        }
    }
}

impl Profile for Messages {
    fn event(&mut self, event: &Event) -> Result<(), Rule> {
        self.event_ref(event.as_event_ref())
    }

    fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), Rule> {
        self.warning = None;
        if self.terminal {
            return Err(AFTER_TERMINAL);
        }
        let wire = wire(event)?;
        self.apply(&wire)
    }

    fn poll_warning(&mut self) -> Option<Rule> {
        self.warning.take()
    }

    fn is_terminated(&self) -> bool {
        self.terminal
    }

    fn failure(&self) -> Option<Failure> {
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
    fn reading(wire: Result<Wire<'_>, Rule>) -> Result<String, Rule> {
        let text = |t: &Option<Text<'_>>| t.as_ref().map(|t| t.0.to_string());
        wire.map(|w| {
            format!(
                "{:?}",
                (
                    w.kind,
                    w.index,
                    w.message.as_ref().map(|m| text(&m.id)),
                    w.content_block.as_ref().map(|b| text(&b.kind)),
                    w.delta.as_ref().map(|d| (
                        text(&d.kind),
                        text(&d.text),
                        text(&d.partial_json),
                        text(&d.thinking),
                        text(&d.signature),
                        text(&d.stop_reason),
                    )),
                    w.error.as_ref().map(|e| (text(&e.kind), text(&e.message))),
                )
            )
        })
    }

    const KINDS: [&str; 10] = [
        "message_start",
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
        "message_stop",
        "ping",
        "error",
        "future_event",
        "content_block_\\u0064elta",
    ];

    fn field_value() -> impl proptest::strategy::Strategy<Value = String> {
        use alloc::vec;
        use proptest::prelude::*;
        prop_oneof![
            Just("\"content_block_delta\"".to_string()),
            Just("\"text_delta\"".to_string()),
            Just("\"a\\nb\\u00e9\\ud83d\\ude00\"".to_string()),
            Just("\"\\ud800\"".to_string()),
            Just("0".to_string()),
            Just("7".to_string()),
            Just("-1".to_string()),
            Just("1.5".to_string()),
            Just("1e2".to_string()),
            Just("18446744073709551616".to_string()),
            Just("1e400".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just("[]".to_string()),
            Just("[\"text\"]".to_string()),
            Just("{}".to_string()),
            Just("{\"id\":\"msg_1\",\"content\":[]}".to_string()),
            Just("{\"id\":5}".to_string()),
            Just("{\"id\":\"a\",\"id\":\"b\"}".to_string()),
            Just("{\"i\\u0064\":\"msg\"}".to_string()),
            Just("{\"type\":\"text\",\"text\":\"\"}".to_string()),
            Just("{\"type\":\"tool_use\",\"input\":{}}".to_string()),
            Just("{\"type\":\"text_delta\",\"text\":\"Hi\",\"thinking\":1}".to_string()),
            Just("{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"a\\\"\"}".to_string()),
            Just("{\"stop_reason\":\"end_turn\",\"stop_sequence\":null}".to_string()),
            Just("{\"stop_reason\":[]}".to_string()),
            Just("{\"type\":\"overloaded_error\",\"message\":\"Overloaded\"}".to_string()),
            Just("{\"type\":\"x\",\"message\":\"\\ud800\"}".to_string()),
            Just("{\"typ\\u0065\":\"x\",\"message\":\"m\"}".to_string()),
            Just("{\"text\":1e400,\"x\":\"\\ud800\"}".to_string()),
            Just(format!("{{\"x\":{}1{}}}", "[".repeat(200), "]".repeat(200))),
            "\"[a-z_ .]{0,12}\"",
        ]
    }

    fn event_data() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("type"),
            Just("index"),
            Just("message"),
            Just("content_block"),
            Just("delta"),
            Just("error"),
            Just("usage"),
            Just("ty\\u0070e"),
            Just("ind\\u0065x"),
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
            1 => Just("{\"type\":\"ping\"} x".to_string()),
            1 => Just(" {\"type\" : \"ping\" }\n".to_string()),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// The scanner's reading of an event is serde's, field by field and rule by rule,
        /// with or without an `event:` field.
        #[test]
        fn scanned_fields_agree_with_serde(
            data in event_data(),
            name in proptest::option::of(proptest::sample::select(&KINDS[..8])),
        ) {
            let event = super::super::tests::sse_event(name, &data)?;
            let fast = reading(wire(event.as_event_ref()));
            let slow = reading(slow_wire(event.as_event_ref()));
            proptest::prop_assert_eq!(fast, slow, "{}", data);
        }
    }

    /// Cases on the scanner's hand-over to serde.
    #[test]
    fn scanned_fields_agree_with_serde_on_found_cases() {
        for data in [
            r#"{"delta":{"type":"text_delta","te\u0078t":"x"},"index":0}"#,
            r#"{"delta":{"type":"text_delta","text":"a","text":"b"},"index":0}"#,
            r#"{"delta":[],"index":0}"#,
            r#"{"delta":"x","index":"0"}"#,
            r#"{"message":{"id":"m","id":"n"}}"#,
            r#"{"message":{"\u0069d":"m"}}"#,
            r#"{"error":{"type":"e","message":"m","x":1e400}}"#,
            r#"{"content_block":{"type":"text"},"index":0,"index":0}"#,
            r#"{"usage":1,"usage":2}"#,
        ] {
            for kind in KINDS {
                let data = data.replacen('{', &format!(r#"{{"type":"{kind}","#), 1);
                let event = Event::message(data.clone());
                let fast = reading(wire(event.as_event_ref()));
                let slow = reading(slow_wire(event.as_event_ref()));
                assert_eq!(fast, slow, "{data}");
            }
        }
    }

    #[test]
    fn tool_input_is_checked_with_the_scanner_and_serde_past_its_depth() {
        let deep = |depth: usize| format!("{{\"a\":{}1{}}}", "[".repeat(depth), "]".repeat(depth));
        assert!(is_json_object(&deep(100)));
        // Past the scanner's depth serde answers, and its own limit is as deep.
        assert_eq!(
            is_json_object(&deep(200)),
            super::super::json::is_object(&deep(200))
        );
        assert!(is_json_object(" {} "));
        assert!(!is_json_object("[]"));
        assert!(!is_json_object("{\"a\":"));
        assert!(!is_json_object("{} {}"));
    }
}
