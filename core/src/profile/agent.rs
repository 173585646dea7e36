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
//! | [`FIELDS`] | each event carries the key fields the platform's table lists: `start` `run_id` and a string `session_id`; `step_*` a `step` (string or integer); `tool_call` a string `tool_name` and `arguments`, `tool_result` `tool_name` and `result`, `approval_requested` `tool_name` and `tool_input`; `content_delta` and `reasoning_delta` a string `delta`; `chunk` `content`, `reasoning` `text`, `reasoning_summary` `summary`, `context_handler_created` `context_handler_id`; `complete` `run_id`, `content` and `usage`; `error` `message`. No other field, and no field of other events, is read |
//! | [`STEP_PAIRED`] | `step_started` opens a step only when none is open; `step_completed` closes the open step with the same `step`; `complete` finds no step open |
//! | [`TOOL_RESULT_FOLLOWS_CALL`] | a `tool_result` answers an earlier unanswered `tool_call` (or `approval_requested`) of the same `tool_name` |
//! | [`TOOL_CALL_ANSWERED`] | at `complete`, every `tool_call` had its `tool_result` |
//! | [`AFTER_TERMINAL`] | nothing follows `complete` or `error` |
//! | [`TOO_LARGE`] | accumulated content and reasoning, and the names of the tools whose calls wait for a result, stay under the cap ([`Run::max_accumulated`]) |
//! | [`TOO_MANY_CALLS`] | at most [`Run::max_pending_calls`] calls (`tool_call`, `approval_requested`) wait for their result (65 536 by default) |
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

use alloc::collections::BTreeMap;
use alloc::string::{String, ToString};

use super::json::{self, Field, Fields, Key, Reads, Text};
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
/// A JSON `event` that is not a string (or a string with an escape that stands for no
/// character) or that is given twice names no event: it breaks this rule whatever the
/// event, since the profile cannot tell which fields to read.
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

/// Events carry the key fields the platform's table lists for them.
///
/// A field is read only in the events it is listed for, and only its type is checked
/// where the profile reads it: `step` (a string or an integer), `tool_name`, `delta` and
/// `session_id` (strings); the other key fields only need to be there (`null` counts: a tool
/// may return nothing). One of those missing (a `null` string counts as missing), given
/// twice or of another JSON type breaks the rule. Other fields, and the fields of other
/// events (`complete` with a `step` of `1.5`, orchestration events), are not looked at.
///
/// # Example
/// ```
/// use ssekit::profile::agent::{Run, FIELDS};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
///
/// let mut p = Run::new();
/// p.event(&Event::message(r#"{"event":"start","run_id":"r1","session_id":"s1"}"#))?;
/// // Not a field `content_delta` has: not read.
/// p.event(&Event::message(r#"{"event":"content_delta","delta":"Hi","step":1.5}"#))?;
/// let call = r#"{"event":"tool_call","tool_name":7,"arguments":{}}"#;
/// assert_eq!(p.event(&Event::message(call)), Err(FIELDS));
/// # Ok::<(), ssekit::sequence::Rule>(())
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
/// It answers an unanswered `tool_call` of its `tool_name` when there is one, else an
/// unanswered `approval_requested` of it; calls of one tool are told apart by nothing else,
/// so the profile keeps a count per tool, and answering costs O(log n) in the tools waiting.
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

/// What the profile keeps stays under the cap ([`Run::max_accumulated`]): the accumulated
/// content and reasoning, and the names of the tools whose calls wait for a result (one
/// name per tool, however many of its calls wait).
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::TOO_LARGE.id(), "agent.too-large");
/// ```
pub const TOO_LARGE: Rule = Rule::new(
    "agent.too-large",
    "accumulated content and reasoning, and the names of the tools waiting for a result, stay under the cap",
);

/// At most [`Run::max_pending_calls`] calls wait for their result.
///
/// Each `tool_call` and `approval_requested` waits until a `tool_result` answers it
/// ([`TOOL_RESULT_FOLLOWS_CALL`]); the one that would make more calls wait than the cap
/// allows breaks this rule, so no stream can make the profile keep an unbounded number of
/// them.
///
/// # Example
/// ```
/// use ssekit::profile::agent::{Run, TOO_MANY_CALLS};
/// use ssekit::sequence::Validator;
/// use ssekit::Event;
///
/// let mut v = Validator::new(Run::new().max_pending_calls(1));
/// v.event(&Event::message(r#"{"event":"start","run_id":"r1","session_id":"s1"}"#))?;
/// let call = r#"{"event":"tool_call","tool_name":"a","arguments":{}}"#;
/// v.event(&Event::message(call))?;
/// v.event(&Event::message(r#"{"event":"tool_result","tool_name":"a","result":1}"#))?;
/// v.event(&Event::message(call))?;
/// assert_eq!(v.event(&Event::message(call)).unwrap_err().rule(), TOO_MANY_CALLS);
/// # Ok::<(), ssekit::sequence::SequenceError>(())
/// ```
pub const TOO_MANY_CALLS: Rule = Rule::new(
    "agent.too-many-calls",
    "at most `max_pending_calls` tool calls wait for their result",
);

/// The slots of the fields the profile reads ([`json::Schema`]).
const EVENT: usize = 0;
const STEP: usize = 1;
const TOOL_NAME: usize = 2;
const DELTA: usize = 3;
const SESSION_ID: usize = 4;
const RUN_ID: usize = 5;
const CONTENT: usize = 6;
const USAGE: usize = 7;
const MESSAGE: usize = 8;
const ARGUMENTS: usize = 9;
const RESULT: usize = 10;
const TOOL_INPUT: usize = 11;
const TEXT: usize = 12;
const SUMMARY: usize = 13;
const CONTEXT_HANDLER_ID: usize = 14;

/// The fields the profile reads, and for which events ([`FIELDS`]).
pub(crate) struct Schema;

impl json::Schema<15> for Schema {
    const JSON: Rule = JSON;
    const NAME: Rule = NAME;
    const FIELDS: Rule = FIELDS;
    const READS: [Reads; 15] = [
        Reads::Text, // event
        Reads::Key,  // step
        Reads::Text, // tool_name
        Reads::Text, // delta
        Reads::Text, // session_id
        // The other key fields the spec lists, by presence (`null` counts: a tool may
        // return nothing).
        Reads::Present, // run_id
        Reads::Present, // content
        Reads::Present, // usage
        Reads::Present, // message
        Reads::Present, // arguments
        Reads::Present, // result
        Reads::Present, // tool_input
        Reads::Present, // text
        Reads::Present, // summary
        Reads::Present, // context_handler_id
    ];

    fn slot(key: &str) -> Option<usize> {
        Some(match key {
            "event" => EVENT,
            "step" => STEP,
            "tool_name" => TOOL_NAME,
            "delta" => DELTA,
            "session_id" => SESSION_ID,
            "run_id" => RUN_ID,
            "content" => CONTENT,
            "usage" => USAGE,
            "message" => MESSAGE,
            "arguments" => ARGUMENTS,
            "result" => RESULT,
            "tool_input" => TOOL_INPUT,
            "text" => TEXT,
            "summary" => SUMMARY,
            "context_handler_id" => CONTEXT_HANDLER_ID,
            _ => return None,
        })
    }

    fn reads(name: &str) -> u32 {
        let slots: &[usize] = match name {
            "start" => &[RUN_ID, SESSION_ID],
            "step_started" | "step_completed" => &[STEP],
            "tool_call" => &[TOOL_NAME, ARGUMENTS],
            "tool_result" => &[TOOL_NAME, RESULT],
            "approval_requested" => &[TOOL_NAME, TOOL_INPUT],
            "content_delta" | "reasoning_delta" => &[DELTA],
            "chunk" => &[CONTENT],
            "reasoning" => &[TEXT],
            "reasoning_summary" => &[SUMMARY],
            "context_handler_created" => &[CONTEXT_HANDLER_ID],
            "complete" => &[RUN_ID, CONTENT, USAGE],
            "error" => &[MESSAGE],
            _ => &[],
        };
        slots.iter().fold(0, |bits, slot| bits | 1 << slot)
    }
}

/// Whether the event carries the key fields the spec lists for `name` (those the rules
/// below read are checked where they are read).
fn has_key_fields(name: &str, fields: &Fields<'_, 15>) -> bool {
    let has = |slot| fields.has(slot);
    match name {
        "start" => has(RUN_ID) && has(SESSION_ID),
        "complete" => has(RUN_ID) && has(CONTENT) && has(USAGE),
        "error" => has(MESSAGE),
        "tool_call" => has(ARGUMENTS),
        "tool_result" => has(RESULT),
        "approval_requested" => has(TOOL_INPUT),
        "chunk" => has(CONTENT),
        "reasoning" => has(TEXT),
        "reasoning_summary" => has(SUMMARY),
        "context_handler_created" => has(CONTEXT_HANDLER_ID),
        _ => true,
    }
}

/// The default cap on accumulated content and reasoning: 16 MiB.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::DEFAULT_MAX_ACCUMULATED, 16 << 20);
/// ```
pub const DEFAULT_MAX_ACCUMULATED: usize = 16 << 20;

/// The default cap on calls waiting for their `tool_result` (`tool_call`s and
/// `approval_requested`s): 65 536.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::agent::DEFAULT_MAX_PENDING_CALLS, 65_536);
/// ```
pub const DEFAULT_MAX_PENDING_CALLS: usize = 65_536;

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
    /// What `error` reported.
    failure: Option<crate::sequence::Failure>,
    paused: bool,
    open_step: Option<Key>,
    /// Unanswered `tool_call`s: how many of each tool.
    calls: BTreeMap<String, usize>,
    /// Unanswered `approval_requested`s: how many of each tool.
    approvals: BTreeMap<String, usize>,
    /// All unanswered calls (the counts of both maps, summed).
    pending: usize,
    /// The bytes of the tool names kept as keys of both maps.
    names: usize,
    session_id: Option<String>,
    content: String,
    reasoning: String,
    max_accumulated: usize,
    max_pending_calls: usize,
}

impl Default for Run {
    /// A 16 MiB accumulation cap and at most 65 536 calls waiting for a result.
    fn default() -> Self {
        Run::new()
    }
}

impl Run {
    /// A fresh profile with a 16 MiB accumulation cap and at most 65 536 calls waiting for
    /// a result.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::agent::Run::new().content(), "");
    /// ```
    pub const fn new() -> Self {
        Run {
            started: false,
            terminal: false,
            failure: None,
            paused: false,
            open_step: None,
            calls: BTreeMap::new(),
            approvals: BTreeMap::new(),
            pending: 0,
            names: 0,
            session_id: None,
            content: String::new(),
            reasoning: String::new(),
            max_accumulated: DEFAULT_MAX_ACCUMULATED,
            max_pending_calls: DEFAULT_MAX_PENDING_CALLS,
        }
    }

    /// Sets the cap on accumulated content plus reasoning, plus the names of the tools
    /// whose calls wait for a result, in bytes ([`TOO_LARGE`] past it).
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

    /// Sets the cap on calls waiting for their `tool_result`: `tool_call`s and
    /// `approval_requested`s not yet answered ([`TOO_MANY_CALLS`] past it).
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::agent::Run::new().max_pending_calls(16);
    /// assert_eq!(p.pending_calls(), 0);
    /// ```
    pub const fn max_pending_calls(mut self, calls: usize) -> Self {
        self.max_pending_calls = calls;
        self
    }

    /// The calls waiting for their `tool_result`: `tool_call`s and `approval_requested`s
    /// not yet answered.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::agent::Run;
    /// use ssekit::sequence::Profile;
    /// use ssekit::Event;
    /// let mut p = Run::new();
    /// p.event(&Event::message(r#"{"event":"start","run_id":"r1","session_id":"s1"}"#))?;
    /// p.event(&Event::message(r#"{"event":"tool_call","tool_name":"a","arguments":{}}"#))?;
    /// assert_eq!(p.pending_calls(), 1);
    /// # Ok::<(), ssekit::sequence::Rule>(())
    /// ```
    pub fn pending_calls(&self) -> usize {
        self.pending
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

    /// Whether `more` bytes kept stay under the cap ([`TOO_LARGE`]).
    fn fits(&self, more: usize) -> Result<(), Rule> {
        if self.kept().saturating_add(more) > self.max_accumulated {
            return Err(TOO_LARGE);
        }
        Ok(())
    }

    /// The bytes kept: content, reasoning and the names of the tools waiting.
    fn kept(&self) -> usize {
        self.content
            .len()
            .saturating_add(self.reasoning.len())
            .saturating_add(self.names)
    }

    fn accumulate(&mut self, reasoning: bool, delta: &str) -> Result<(), Rule> {
        self.fits(delta.len())?;
        if reasoning {
            self.reasoning.push_str(delta);
        } else {
            self.content.push_str(delta);
        }
        Ok(())
    }

    /// A call of `tool` now waits for its result: a `tool_call`, or with `approval` an
    /// `approval_requested`. O(log n) in the distinct tools waiting.
    fn wait(&mut self, approval: bool, tool: &str) -> Result<(), Rule> {
        if self.pending >= self.max_pending_calls {
            return Err(TOO_MANY_CALLS);
        }
        let room = self.max_accumulated.saturating_sub(self.kept());
        let waiting = if approval {
            &mut self.approvals
        } else {
            &mut self.calls
        };
        if let Some(count) = waiting.get_mut(tool) {
            *count += 1;
        } else {
            if tool.len() > room {
                return Err(TOO_LARGE);
            }
            waiting.insert(tool.to_string(), 1);
            self.names += tool.len();
        }
        self.pending += 1;
        Ok(())
    }

    /// A `tool_result` of `tool` answers a waiting `tool_call` of it, else a waiting
    /// `approval_requested` of it ([`TOOL_RESULT_FOLLOWS_CALL`] when neither waits). All
    /// calls of one tool are alike, so a count per tool is all that is kept. O(log n) in
    /// the distinct tools waiting.
    fn answer(&mut self, tool: &str) -> Result<(), Rule> {
        /// Takes one waiting call of `tool` from `waiting`; whether it was the last.
        fn take(waiting: &mut BTreeMap<String, usize>, tool: &str) -> Option<bool> {
            let count = waiting.get_mut(tool)?;
            *count -= 1;
            let last = *count == 0;
            if last {
                waiting.remove(tool);
            }
            Some(last)
        }
        let last = take(&mut self.calls, tool)
            .or_else(|| take(&mut self.approvals, tool))
            .ok_or(TOOL_RESULT_FOLLOWS_CALL)?;
        if last {
            self.names -= tool.len();
        }
        self.pending -= 1;
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
        let fields = json::read::<Schema, 15>(event)?;
        if !has_key_fields(&fields.name, &fields) {
            return Err(FIELDS);
        }
        let Fields { name, mut values } = fields;
        let name: &str = &name;
        let mut take = |slot: usize| values.get_mut(slot).and_then(Option::take);
        if !self.started {
            if name != "start" {
                return Err(START_FIRST);
            }
            self.started = true;
            self.session_id = take(SESSION_ID)
                .and_then(Field::into_text)
                .map(|Text(s)| s.into_owned());
            return Ok(());
        }
        self.paused = false;
        let mut tool = || take(TOOL_NAME).and_then(Field::into_text).ok_or(FIELDS);
        match name {
            "start" => return Err(START_ONCE),
            "step_started" => {
                let step = take(STEP).and_then(Field::into_key).ok_or(FIELDS)?;
                if self.open_step.is_some() {
                    return Err(STEP_PAIRED);
                }
                self.open_step = Some(step);
            }
            "step_completed" => {
                let step = take(STEP).and_then(Field::into_key).ok_or(FIELDS)?;
                if self.open_step.as_ref() != Some(&step) {
                    return Err(STEP_PAIRED);
                }
                self.open_step = None;
            }
            "tool_call" => self.wait(false, &tool()?.0)?,
            "approval_requested" => {
                self.wait(true, &tool()?.0)?;
                self.paused = true;
            }
            "tool_result" => self.answer(&tool()?.0)?,
            "content_delta" | "reasoning_delta" => {
                let Text(delta) = take(DELTA).and_then(Field::into_text).ok_or(FIELDS)?;
                self.accumulate(name == "reasoning_delta", &delta)?;
            }
            "complete" => {
                if self.open_step.is_some() {
                    return Err(STEP_PAIRED);
                }
                if !self.calls.is_empty() {
                    return Err(TOOL_CALL_ANSWERED);
                }
                self.terminal = true;
            }
            "error" => {
                self.terminal = true;
                self.failure = Some(json::failure(event, "error", &[], &["code"]));
            }
            _ => {}
        }
        Ok(())
    }

    fn is_terminated(&self) -> bool {
        self.terminal || self.paused
    }

    fn failure(&self) -> Option<crate::sequence::Failure> {
        self.failure.clone()
    }

    fn event_name(&self, event: EventRef<'_>) -> Utf8Bytes {
        super::json::name_or_type(event, "event")
    }
}
