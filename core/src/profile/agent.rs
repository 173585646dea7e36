//! Agent platform run streams (feature `json`): `start`, steps, tool calls, deltas, then
//! `complete` or `error`. [`Workflow`] (re-exported from [`workflow`](super::workflow))
//! covers workflow streams.
//!
//! Every event is a `data:`-only JSON object named by its `event` field (an `event:` line
//! is accepted too; when both are present they agree).
//!
//! | rule | what it asks |
//! |---|---|
//! | [`JSON`] | the data is a JSON object |
//! | [`NAME`] | the event is named (JSON `event` or `event:`), and both agree when both are sent |
//! | [`START_FIRST`] | the first event is `start` |
//! | [`START_ONCE`] | `start` is sent once |
//! | [`FIELDS`] | each event carries the key fields the platform's table lists: `start` `run_id` and `session_id`; `step_*` `step`; `tool_call` `tool_name` and `arguments`, `tool_result` `tool_name` and `result`, `approval_requested` `tool_name` and `tool_input`; `content_delta` and `reasoning_delta` a string `delta`; `chunk` `content`, `reasoning` `text`, `reasoning_summary` `summary`, `context_handler_created` `context_handler_id`; `complete` `run_id`, `content` and `usage`; `error` `message` |
//! | [`STEP_PAIRED`] | `step_started` opens a step only when none is open; `step_completed` closes the open step with the same `step`; `complete` finds no step open |
//! | [`TOOL_RESULT_FOLLOWS_CALL`] | a `tool_result` answers an earlier unanswered `tool_call` (or `approval_requested`) of the same `tool_name` |
//! | [`TOOL_CALL_ANSWERED`] | at `complete`, every `tool_call` had its `tool_result` |
//! | [`AFTER_TERMINAL`] | nothing follows `complete` or `error` |
//! | [`TOO_LARGE`] | accumulated content and reasoning stay under the cap |
//!
//! A stream may also end right after `approval_requested`: the run is paused until the
//! approval, which is not a truncation. Other events (`chunk`, `reasoning`,
//! `reasoning_summary`, `context_handler_created`, orchestration events) are allowed
//! between `start` and the terminal event. Keep-alive comments are allowed anywhere.
//!
//! ```
//! use ssekit::profile::agent::Run;
//! use ssekit::sequence::Validator;
//! use ssekit::Event;
//!
//! let mut v = Validator::new(Run::new());
//! for data in [
//!     r#"{"event":"start","run_id":"r1","session_id":"s1"}"#,
//!     r#"{"event":"step_started","step":1}"#,
//!     r#"{"event":"tool_call","tool_name":"search","arguments":{"q":"sse"}}"#,
//!     r#"{"event":"tool_result","tool_name":"search","result":"..."}"#,
//!     r#"{"event":"content_delta","delta":"Hi"}"#,
//!     r#"{"event":"step_completed","step":1}"#,
//!     r#"{"event":"complete","run_id":"r1","content":"Hi","usage":{}}"#,
//! ] {
//!     v.event(&Event::message(data))?;
//! }
//! v.finish()?;
//! assert_eq!(v.profile().content(), "Hi");
//! assert_eq!(v.profile().session_id(), Some("s1"));
//! # Ok::<(), ssekit::sequence::SequenceError>(())
//! ```

use alloc::string::{String, ToString};
use alloc::vec::Vec;

use serde::de::IgnoredAny;

use super::json::{Key, Text};
use crate::event::Event;
use crate::frame_ref::EventRef;
use crate::sequence::{Profile, Rule};
use crate::text::Utf8Bytes;

pub use super::workflow::Workflow;

/// The data is a JSON object.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::JSON.id(), "agent.json");
/// ```
pub const JSON: Rule = Rule::new("agent.json", "the data is a JSON object");

/// The event is named, consistently.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::NAME.id(), "agent.name");
/// ```
pub const NAME: Rule = Rule::new(
    "agent.name",
    "the event is named by JSON `event` (or `event:`), and both agree",
);

/// The first event is `start`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::START_FIRST.id(), "agent.start-first");
/// ```
pub const START_FIRST: Rule = Rule::new("agent.start-first", "the first event is `start`");

/// `start` is sent once.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::START_ONCE.id(), "agent.start-once");
/// ```
pub const START_ONCE: Rule = Rule::new("agent.start-once", "`start` is sent once");

/// Events carry the fields they are defined with.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::FIELDS.id(), "agent.fields");
/// ```
pub const FIELDS: Rule = Rule::new(
    "agent.fields",
    "events carry their key fields: `start` run_id and session_id, step events `step`, tool events `tool_name` (and arguments, result or tool_input), deltas a string `delta`, `complete` run_id, content and usage, `error` message",
);

/// Steps open and close in pairs.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::STEP_PAIRED.id(), "agent.step-paired");
/// ```
pub const STEP_PAIRED: Rule = Rule::new(
    "agent.step-paired",
    "`step_started` and `step_completed` pair by `step`, one step at a time, none open at `complete`",
);

/// A `tool_result` answers an earlier `tool_call` of the same tool.
///
/// # Example
/// ```
/// let id = ssekit::profile::agent::TOOL_RESULT_FOLLOWS_CALL.id();
/// assert_eq!(id, "agent.tool-result-follows-call");
/// ```
pub const TOOL_RESULT_FOLLOWS_CALL: Rule = Rule::new(
    "agent.tool-result-follows-call",
    "a `tool_result` answers an unanswered `tool_call` of the same `tool_name`",
);

/// Every `tool_call` is answered before `complete`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::TOOL_CALL_ANSWERED.id(), "agent.tool-call-answered");
/// ```
pub const TOOL_CALL_ANSWERED: Rule = Rule::new(
    "agent.tool-call-answered",
    "every `tool_call` has its `tool_result` before `complete`",
);

/// Nothing follows `complete` or `error`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::AFTER_TERMINAL.id(), "agent.after-terminal");
/// ```
pub const AFTER_TERMINAL: Rule = Rule::new(
    "agent.after-terminal",
    "nothing follows `complete` or `error`",
);

/// Accumulated content and reasoning stay under the cap.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::TOO_LARGE.id(), "agent.too-large");
/// ```
pub const TOO_LARGE: Rule = Rule::new(
    "agent.too-large",
    "accumulated content and reasoning stay under the cap",
);

#[derive(serde::Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    event: Option<Text<'a>>,
    #[serde(default)]
    step: Option<Key>,
    #[serde(borrow, default)]
    tool_name: Option<Text<'a>>,
    #[serde(borrow, default)]
    delta: Option<Text<'a>>,
    #[serde(borrow, default)]
    session_id: Option<Text<'a>>,
    /// The other key fields the spec lists, by presence (`null` counts: a tool may return
    /// nothing).
    #[serde(default, deserialize_with = "present")]
    run_id: bool,
    #[serde(default, deserialize_with = "present")]
    content: bool,
    #[serde(default, deserialize_with = "present")]
    usage: bool,
    #[serde(default, deserialize_with = "present")]
    message: bool,
    #[serde(default, deserialize_with = "present")]
    arguments: bool,
    #[serde(default, deserialize_with = "present")]
    result: bool,
    #[serde(default, deserialize_with = "present")]
    tool_input: bool,
    #[serde(default, deserialize_with = "present")]
    text: bool,
    #[serde(default, deserialize_with = "present")]
    summary: bool,
    #[serde(default, deserialize_with = "present")]
    context_handler_id: bool,
}

/// A field that is there, whatever its value (`null` included).
fn present<'de, D: serde::Deserializer<'de>>(field: D) -> Result<bool, D::Error> {
    <IgnoredAny as serde::Deserialize>::deserialize(field).map(|_| true)
}

impl Wire<'_> {
    /// Whether the event carries the key fields the spec lists for `name` (those the rules
    /// below read are checked where they are read).
    fn has_key_fields(&self, name: &str) -> bool {
        match name {
            "start" => self.run_id && self.session_id.is_some(),
            "complete" => self.run_id && self.content && self.usage,
            "error" => self.message,
            "tool_call" => self.arguments,
            "tool_result" => self.result,
            "approval_requested" => self.tool_input,
            "chunk" => self.content,
            "reasoning" => self.text,
            "reasoning_summary" => self.summary,
            "context_handler_created" => self.context_handler_id,
            _ => true,
        }
    }
}

/// The event name: JSON `event`, else the `event:` field; `None` when they disagree or
/// neither is there.
pub(crate) fn name_of<'a>(json: Option<&'a Text<'_>>, event: EventRef<'a>) -> Option<&'a str> {
    match (json, event.event_field()) {
        (Some(Text(json)), Some(sse)) => (json.as_ref() == sse).then_some(sse),
        (Some(Text(json)), None) => Some(json.as_ref()),
        (None, sse) => sse,
    }
}

/// The default cap on accumulated content and reasoning: 16 MiB.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::DEFAULT_MAX_ACCUMULATED, 16 << 20);
/// ```
pub const DEFAULT_MAX_ACCUMULATED: usize = 16 << 20;

/// The agent run stream profile; see the [module docs](self) for its rules.
///
/// # Example
/// ```
/// use ssekit::profile::agent::{Run, START_FIRST};
/// use ssekit::sequence::Profile;
/// let mut p = Run::new();
/// let complete = r#"{"event":"complete","run_id":"r1","content":"","usage":{}}"#;
/// assert_eq!(p.event(&ssekit::Event::message(complete)), Err(START_FIRST));
/// ```
#[derive(Clone, Debug)]
pub struct Run {
    started: bool,
    terminal: bool,
    paused: bool,
    open_step: Option<Key>,
    pending_calls: Vec<String>,
    awaiting_approval: Vec<String>,
    session_id: Option<String>,
    content: String,
    reasoning: String,
    max_accumulated: usize,
}

impl Default for Run {
    /// A 16 MiB accumulation cap.
    fn default() -> Self {
        Run::new()
    }
}

impl Run {
    /// A fresh profile with a 16 MiB accumulation cap.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::agent::Run::new().content(), "");
    /// ```
    pub const fn new() -> Self {
        Run {
            started: false,
            terminal: false,
            paused: false,
            open_step: None,
            pending_calls: Vec::new(),
            awaiting_approval: Vec::new(),
            session_id: None,
            content: String::new(),
            reasoning: String::new(),
            max_accumulated: DEFAULT_MAX_ACCUMULATED,
        }
    }

    /// Sets the cap on accumulated content plus reasoning, in bytes.
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::agent::Run::new().max_accumulated(1024);
    /// assert_eq!(p.reasoning(), "");
    /// ```
    pub const fn max_accumulated(mut self, bytes: usize) -> Self {
        self.max_accumulated = bytes;
        self
    }

    /// The `content_delta`s so far, joined.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::agent::Run::new().content(), "");
    /// ```
    pub fn content(&self) -> &str {
        &self.content
    }

    /// The `reasoning_delta`s so far, joined.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::agent::Run::new().reasoning(), "");
    /// ```
    pub fn reasoning(&self) -> &str {
        &self.reasoning
    }

    /// The `session_id` of `start`, for the next turn.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::agent::Run::new().session_id(), None);
    /// ```
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Whether the stream stopped at an `approval_requested` (the run waits for approval).
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::profile::agent::Run::new().is_paused());
    /// ```
    pub fn is_paused(&self) -> bool {
        self.paused && !self.terminal
    }

    fn accumulate(&mut self, reasoning: bool, delta: &str) -> Result<(), Rule> {
        let total = self.content.len() + self.reasoning.len() + delta.len();
        if total > self.max_accumulated {
            return Err(TOO_LARGE);
        }
        if reasoning {
            self.reasoning.push_str(delta);
        } else {
            self.content.push_str(delta);
        }
        Ok(())
    }
}

impl Profile for Run {
    fn event(&mut self, event: &Event) -> Result<(), Rule> {
        self.event_ref(event.as_event_ref())
    }

    fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), Rule> {
        if self.terminal {
            return Err(AFTER_TERMINAL);
        }
        let wire: Wire<'_> = super::json::parse_object(event.data())
            .ok_or_else(|| super::json::shape_rule(event, JSON, FIELDS))?;
        let name = name_of(wire.event.as_ref(), event).ok_or(NAME)?;
        if !wire.has_key_fields(name) {
            return Err(FIELDS);
        }
        if !self.started {
            if name != "start" {
                return Err(START_FIRST);
            }
            self.started = true;
            self.session_id = wire.session_id.map(|Text(s)| s.into_owned());
            return Ok(());
        }
        self.paused = false;
        let tool = || {
            wire.tool_name
                .as_ref()
                .map(|Text(t)| t.as_ref())
                .ok_or(FIELDS)
        };
        match name {
            "start" => return Err(START_ONCE),
            "step_started" => {
                let step = wire.step.ok_or(FIELDS)?;
                if self.open_step.is_some() {
                    return Err(STEP_PAIRED);
                }
                self.open_step = Some(step);
            }
            "step_completed" => {
                let step = wire.step.ok_or(FIELDS)?;
                if self.open_step.as_ref() != Some(&step) {
                    return Err(STEP_PAIRED);
                }
                self.open_step = None;
            }
            "tool_call" => {
                let tool = tool()?.to_string();
                self.pending_calls.push(tool);
            }
            "approval_requested" => {
                let tool = tool()?.to_string();
                self.awaiting_approval.push(tool);
                self.paused = true;
            }
            "tool_result" => {
                let tool = tool()?;
                if let Some(i) = self.pending_calls.iter().position(|t| t == tool) {
                    self.pending_calls.remove(i);
                } else if let Some(i) = self.awaiting_approval.iter().position(|t| t == tool) {
                    self.awaiting_approval.remove(i);
                } else {
                    return Err(TOOL_RESULT_FOLLOWS_CALL);
                }
            }
            "content_delta" | "reasoning_delta" => {
                let Text(delta) = wire.delta.as_ref().ok_or(FIELDS)?;
                self.accumulate(name == "reasoning_delta", delta)?;
            }
            "complete" => {
                if self.open_step.is_some() {
                    return Err(STEP_PAIRED);
                }
                if !self.pending_calls.is_empty() {
                    return Err(TOOL_CALL_ANSWERED);
                }
                self.terminal = true;
            }
            "error" => self.terminal = true,
            _ => {}
        }
        Ok(())
    }

    fn is_terminated(&self) -> bool {
        self.terminal || self.paused
    }

    fn event_name(&self, event: EventRef<'_>) -> Utf8Bytes {
        super::json::name_or_type(event, "event")
    }
}
