//! ORS tool calls (`POST /{env}/call`): `task_id`, then `chunk`*, then one `end` or `error`.
//!
//! | rule | what it asks |
//! |---|---|
//! | [`TASK_ID_FIRST`] | the first event is `task_id`; the only exception is an `error` alone (the reply to an unknown `task_id` on reconnect has no `task_id` event) |
//! | [`TASK_ID_ONCE`] | `task_id` is sent once |
//! | [`TASK_ID_NONEMPTY`] | the task id is not empty |
//! | [`UNKNOWN_EVENT`] | only `task_id`, `chunk`, `end` and `error`; the official client drops unnamed events |
//! | [`AFTER_TERMINAL`] | nothing follows `end` or `error` (so exactly one of them) |
//! | [`RESULT_TOO_LARGE`] | the reassembled result fits the cap ([`ToolCall::max_result`]) |
//! | [`RESULT_SHAPE`] | (`json`) a non-empty `end` payload is a `RunToolOutput` (`ToolResult`) |
//!
//! And warnings ([`Rule::warning`], from [`Profile::poll_warning`] and
//! [`Validator::warnings`](crate::sequence::Validator::warnings)): what the specification
//! allows (its own examples have no `metadata`) but the official Python client (PyPI
//! `ors-sdk` 0.1.0) fails on or corrupts.
//!
//! | warning | what the official client does |
//! |---|---|
//! | [`END_METADATA`] | (`json`) raises `KeyError` on an `ok` result whose `output` has no `metadata` |
//! | [`END_REWARD`] | (`json`) raises `KeyError` on an `ok` result whose `output` has no `reward` |
//! | [`END_EXTRA_KEY`] | (`json`) raises on a key its models do not have (they forbid extra keys), in the result, its `output` or a block |
//! | [`LEADING_SPACE`] | strips white space from the start of every value, so a `chunk` or `end` piece after the first that starts with some loses it (inside a JSON string, the result changes) |
//!
//! Use a fresh [`ToolCall`] for every connection: on a reconnect with the saved `task_id`
//! the server sends `task_id` again and replays the result from its first chunk (the official
//! client restarts its buffer too).
//!
//! Comments (the 10-second pings) are allowed anywhere. A tool *logic* error is an `end`
//! whose result has `ok: false` (`ToolResult::is_tool_error`, feature `json`); an HTTP-level
//! failure is an `error` event ([`Terminal::Error`]).
//!
//! ```
//! use ssekit::profile::ors::{Terminal, ToolCall};
//! use ssekit::sequence::Validator;
//! use ssekit::Event;
//!
//! let ev = |t: &'static str, d: &'static str| Event::builder().event(t).map(|b| b.data(d).build());
//! let mut v = Validator::new(ToolCall::new());
//! v.event(&ev("task_id", "abc")?)?;
//! v.event(&ev("chunk", "{\"ok\":true,\"output\":{\"blocks\":[],")?)?;
//! v.event(&ev("end", "\"metadata\":null,\"reward\":1.0,\"finished\":true}}")?)?;
//! v.finish()?;
//! # #[cfg(feature = "json")]
//! assert_eq!(v.profile().result().and_then(|r| r.output.as_ref()).and_then(|o| o.reward), Some(1.0));
//! assert!(matches!(v.profile().terminal(), Some(Terminal::End(_))));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

use crate::chunk::{ReassembleError, Reassembler};
use crate::event::Event;
use crate::sequence::{Profile, Rule};
use crate::text::Utf8Bytes;

/// The first event is `task_id` (or a lone `error`).
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::ors::TASK_ID_FIRST.id(), "ors.task-id-first");
/// ```
pub const TASK_ID_FIRST: Rule = Rule::new(
    "ors.task-id-first",
    "the first event is `task_id` (or a lone `error`)",
);

/// `task_id` is sent exactly once.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::ors::TASK_ID_ONCE.id(), "ors.task-id-once");
/// ```
pub const TASK_ID_ONCE: Rule = Rule::new("ors.task-id-once", "`task_id` is sent exactly once");

/// The task id is not empty.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::ors::TASK_ID_NONEMPTY.id(), "ors.task-id-nonempty");
/// ```
pub const TASK_ID_NONEMPTY: Rule =
    Rule::new("ors.task-id-nonempty", "the `task_id` data is not empty");

/// Only `task_id`, `chunk`, `end` and `error` events.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::ors::UNKNOWN_EVENT.id(), "ors.unknown-event");
/// ```
pub const UNKNOWN_EVENT: Rule = Rule::new(
    "ors.unknown-event",
    "events are `task_id`, `chunk`, `end` or `error`",
);

/// Nothing follows the terminal `end` or `error`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::ors::AFTER_TERMINAL.id(), "ors.after-terminal");
/// ```
pub const AFTER_TERMINAL: Rule = Rule::new(
    "ors.after-terminal",
    "nothing follows the terminal `end` or `error`",
);

/// The reassembled result fits the cap.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::ors::RESULT_TOO_LARGE.id(), "ors.result-too-large");
/// ```
pub const RESULT_TOO_LARGE: Rule = Rule::new(
    "ors.result-too-large",
    "the reassembled result fits the size cap",
);

/// A non-empty `end` payload parses as a `RunToolOutput`: `ok` and `output` (`blocks`, an
/// optional `metadata` object or null, an optional `reward` number or null, `finished`), or
/// `ok` and `error`; text blocks `type`, `text` and an optional `detail`, image blocks
/// `type`, `data`, `mimeType` and an optional `detail`. Keys the official client's models
/// want and keys they forbid are warnings: [`END_METADATA`], [`END_REWARD`],
/// [`END_EXTRA_KEY`].
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::ors::RESULT_SHAPE.id(), "ors.result-shape");
/// ```
pub const RESULT_SHAPE: Rule = Rule::new(
    "ors.result-shape",
    "the `end` payload is {\"ok\":true,\"output\":{blocks,metadata?,reward?,finished}} or {\"ok\":false,\"error\"}",
);

/// Warning: an `ok` result whose `output` has no `metadata` key. The specification's own
/// examples have none; the official client reads `output["metadata"]` and raises.
///
/// # Example
/// ```
/// let rule = ssekit::profile::ors::END_METADATA;
/// assert!(rule.is_warning() && rule.id() == "ors.end-metadata");
/// ```
pub const END_METADATA: Rule = Rule::warning(
    "ors.end-metadata",
    "end has no metadata; the official ors-sdk client raises on it",
);

/// Warning: an `ok` result whose `output` has no `reward` key; the official client reads
/// `output["reward"]` and raises.
///
/// # Example
/// ```
/// let rule = ssekit::profile::ors::END_REWARD;
/// assert!(rule.is_warning() && rule.id() == "ors.end-reward");
/// ```
pub const END_REWARD: Rule = Rule::warning(
    "ors.end-reward",
    "end has no reward; the official ors-sdk client raises on it",
);

/// Warning: the result, its `output` or one of its blocks has a key the official client's
/// pydantic models do not have; they forbid extra keys, so it raises.
///
/// # Example
/// ```
/// let rule = ssekit::profile::ors::END_EXTRA_KEY;
/// assert!(rule.is_warning() && rule.id() == "ors.end-extra-key");
/// ```
pub const END_EXTRA_KEY: Rule = Rule::warning(
    "ors.end-extra-key",
    "end has a key the official ors-sdk client's models forbid; it raises on it",
);

/// Warning: a `chunk` or `end` after the first piece of the result starts with white space.
/// The official client strips it from every value, so when the piece boundary is inside a
/// JSON string the result it assembles differs (ssekit's own chunker moves such a boundary).
///
/// # Example
/// ```
/// let rule = ssekit::profile::ors::LEADING_SPACE;
/// assert!(rule.is_warning() && rule.id() == "ors.leading-space");
/// ```
pub const LEADING_SPACE: Rule = Rule::warning(
    "ors.leading-space",
    "a piece of the result after the first starts with white space; the official ors-sdk client strips it, which changes the result",
);

/// The warnings, in the order they are reported; bit `i` of `ToolCall::warnings` is
/// `WARNINGS[i]`.
const WARNINGS: [Rule; 4] = [LEADING_SPACE, END_METADATA, END_REWARD, END_EXTRA_KEY];
/// Bit of [`LEADING_SPACE`] in `ToolCall::warnings`.
const WARN_LEADING_SPACE: u8 = 1;
/// Bit of [`END_METADATA`].
#[cfg(feature = "json")]
const WARN_METADATA: u8 = 1 << 1;
/// Bit of [`END_REWARD`].
#[cfg(feature = "json")]
const WARN_REWARD: u8 = 1 << 2;
/// Bit of [`END_EXTRA_KEY`].
#[cfg(feature = "json")]
const WARN_EXTRA_KEY: u8 = 1 << 3;

/// How a tool call ended.
///
/// # Example
/// ```
/// use ssekit::profile::ors::{Terminal, ToolCall};
/// use ssekit::sequence::Profile;
/// let mut p = ToolCall::new();
/// p.event(&ssekit::Event::builder().event("error")?.data("Session not found").build())?;
/// assert_eq!(p.terminal(), Some(&Terminal::Error("Session not found".into())));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Terminal {
    /// `end`: the reassembled result payload (possibly empty, as `/create_session` sends).
    End(Utf8Bytes),
    /// `error`: the HTTP-level error message (the tool could not run).
    Error(Utf8Bytes),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    Start,
    Open,
    Done,
}

/// The ORS tool-call stream profile; see the [module docs](self) for its rules.
///
/// # Example
/// ```
/// use ssekit::profile::ors::{ToolCall, AFTER_TERMINAL};
/// use ssekit::sequence::Validator;
/// let ev = |t: &'static str| ssekit::Event::builder().event(t).map(|b| b.data("x").build());
/// let mut v = Validator::new(ToolCall::new());
/// v.event(&ev("task_id")?)?;
/// v.event(&ev("error")?)?;
/// assert_eq!(v.event(&ev("end")?).unwrap_err().rule(), AFTER_TERMINAL);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug)]
pub struct ToolCall {
    state: State,
    task_id: Option<Utf8Bytes>,
    reassembler: Reassembler,
    terminal: Option<Terminal>,
    /// Warnings about the last event not polled yet, one bit per rule of [`WARNINGS`].
    warnings: u8,
    #[cfg(feature = "json")]
    check_result: bool,
    #[cfg(feature = "json")]
    result: Option<ToolResult>,
}

impl Default for ToolCall {
    /// A 16 MiB result cap; with `json`, results are parsed.
    fn default() -> Self {
        ToolCall::new()
    }
}

impl ToolCall {
    /// A profile with a 16 MiB result cap that (with `json`) parses the result.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::profile::ors::ToolCall::new().terminal().is_none());
    /// ```
    pub fn new() -> Self {
        ToolCall {
            state: State::Start,
            task_id: None,
            reassembler: Reassembler::new(),
            terminal: None,
            warnings: 0,
            #[cfg(feature = "json")]
            check_result: true,
            #[cfg(feature = "json")]
            result: None,
        }
    }

    /// Sets the cap on the reassembled result in bytes ([`RESULT_TOO_LARGE`] past it).
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::ors::{ToolCall, RESULT_TOO_LARGE};
    /// use ssekit::sequence::Profile;
    /// let mut p = ToolCall::new().max_result(3);
    /// p.event(&ssekit::Event::builder().event("task_id")?.data("t").build())?;
    /// let end = ssekit::Event::builder().event("end")?.data("{ }  ").build();
    /// assert_eq!(p.event(&end), Err(RESULT_TOO_LARGE));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_result(mut self, bytes: usize) -> Self {
        self.reassembler = Reassembler::new().max_size(bytes);
        self
    }

    /// Whether to parse a non-empty `end` payload as a `RunToolOutput` (default `true`;
    /// without the `json` feature nothing is parsed). Turn it off for streams whose `end`
    /// carries something else, such as `/create_session`'s `{"sid": ...}`.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// let mut p = ssekit::profile::ors::ToolCall::new().check_result(false);
    /// p.event(&ssekit::Event::builder().event("task_id")?.data("t").build())?;
    /// assert!(p.event(&ssekit::Event::builder().event("end")?.data("{\"sid\":\"t\"}").build()).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_result(self, on: bool) -> Self {
        #[cfg(feature = "json")]
        {
            let mut this = self;
            this.check_result = on;
            this
        }
        #[cfg(not(feature = "json"))]
        {
            let _ = on;
            self
        }
    }

    /// The task id, once seen.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::profile::ors::ToolCall::new().task_id().is_none());
    /// ```
    pub fn task_id(&self) -> Option<&Utf8Bytes> {
        self.task_id.as_ref()
    }

    /// How the call ended, once it did.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::profile::ors::ToolCall::new().terminal().is_none());
    /// ```
    pub fn terminal(&self) -> Option<&Terminal> {
        self.terminal.as_ref()
    }

    /// The parsed result of a non-empty `end` (feature `json`, with
    /// [`check_result`](Self::check_result) on).
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// let mut p = ssekit::profile::ors::ToolCall::new();
    /// p.event(&ssekit::Event::builder().event("task_id")?.data("t").build())?;
    /// p.event(&ssekit::Event::builder().event("end")?.data("{\"ok\":false,\"error\":\"bad\"}").build())?;
    /// assert!(p.result().is_some_and(|r| r.is_tool_error()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[cfg(feature = "json")]
    pub fn result(&self) -> Option<&ToolResult> {
        self.result.as_ref()
    }

    fn end(&mut self, event: &Event) -> Result<(), Rule> {
        let payload = self
            .reassembler
            .push_end(event.data_bytes())
            .map_err(reassemble_rule)?;
        #[cfg(feature = "json")]
        if self.check_result && !payload.is_empty() {
            let result: ToolResult =
                super::json::parse_object(payload.as_str()).ok_or(RESULT_SHAPE)?;
            if result.ok != result.output.is_some() || result.ok == result.error.is_some() {
                return Err(RESULT_SHAPE);
            }
            self.warnings |= typed::official_client_objections(payload.as_str());
            self.result = Some(result);
        }
        self.terminal = Some(Terminal::End(payload));
        Ok(())
    }
}

fn reassemble_rule(err: ReassembleError) -> Rule {
    match err {
        ReassembleError::TooLarge { .. } => RESULT_TOO_LARGE,
        _ => AFTER_TERMINAL,
    }
}

/// Whether `data`, a piece of the result after the first, starts with white space the
/// official client strips (Python's `str.lstrip`; a line feed there is where two `data:`
/// lines were joined, which it keeps).
fn stripped_by_the_official_client(data: &str) -> bool {
    data.chars()
        .next()
        .is_some_and(|c| c != '\n' && c.is_whitespace())
}

impl Profile for ToolCall {
    fn event(&mut self, event: &Event) -> Result<(), Rule> {
        self.warnings = 0;
        if self.state == State::Done {
            return Err(AFTER_TERMINAL);
        }
        let kind = event.event_type();
        if !matches!(kind, "task_id" | "chunk" | "end" | "error") {
            return Err(UNKNOWN_EVENT);
        }
        let later_piece = !self.reassembler.is_empty();
        match (self.state, kind) {
            (State::Start, "task_id") => {
                if event.data().is_empty() {
                    return Err(TASK_ID_NONEMPTY);
                }
                self.task_id = Some(event.data_bytes().clone());
                self.state = State::Open;
            }
            (State::Open, "task_id") => return Err(TASK_ID_ONCE),
            (_, "error") => {
                self.state = State::Done;
                self.terminal = Some(Terminal::Error(event.data_bytes().clone()));
            }
            (State::Start, _) => return Err(TASK_ID_FIRST),
            (_, "chunk") => self
                .reassembler
                .push_chunk(event.data_bytes())
                .map_err(reassemble_rule)?,
            _ => {
                self.state = State::Done;
                self.end(event)?;
            }
        }
        if matches!(kind, "chunk" | "end")
            && later_piece
            && stripped_by_the_official_client(event.data())
        {
            self.warnings |= WARN_LEADING_SPACE;
        }
        Ok(())
    }

    fn is_terminated(&self) -> bool {
        self.state == State::Done
    }

    fn failure(&self) -> Option<crate::sequence::Failure> {
        match &self.terminal {
            Some(Terminal::Error(message)) => Some(crate::sequence::Failure::new(
                "error",
                None,
                message.as_str(),
            )),
            _ => None,
        }
    }

    fn poll_warning(&mut self) -> Option<Rule> {
        let bit = self.warnings.trailing_zeros();
        let rule = WARNINGS.get(usize::try_from(bit).ok()?).copied()?;
        self.warnings &= self.warnings.wrapping_sub(1);
        Some(rule)
    }
}

#[cfg(feature = "json")]
pub use typed::{Block, ToolOutput, ToolResult};

#[cfg(feature = "json")]
mod typed {
    use alloc::string::String;
    use alloc::vec::Vec;

    use serde::{Deserialize, Serialize};
    use serde_json::{Map, Value};

    use super::{WARN_EXTRA_KEY, WARN_METADATA, WARN_REWARD};

    /// What the official client's pydantic models object to in `payload`, already parsed as
    /// a [`ToolResult`] (so the keys a [`ToolResult`] needs are there): a missing `metadata`
    /// or `reward` in `output` (where [`ToolOutput`] takes a default), and keys the models
    /// do not have (they forbid extra keys). One bit per warning rule.
    pub(super) fn official_client_objections(payload: &str) -> u8 {
        let extra = |object: &Map<String, Value>, known: &[&str]| {
            object.keys().any(|k| !known.contains(&k.as_str()))
        };
        let Ok(Value::Object(top)) = serde_json::from_str::<Value>(payload) else {
            return 0;
        };
        if top.get("ok") == Some(&Value::Bool(false)) {
            return if extra(&top, &["ok", "error"]) {
                WARN_EXTRA_KEY
            } else {
                0
            };
        }
        let Some(Value::Object(output)) = top.get("output") else {
            return 0;
        };
        let mut objections = 0;
        if !output.contains_key("metadata") {
            objections |= WARN_METADATA;
        }
        if !output.contains_key("reward") {
            objections |= WARN_REWARD;
        }
        let block_has_extra = |block: &Value| match block.as_object() {
            Some(b) if b.get("type") == Some(&Value::from("image")) => {
                extra(b, &["type", "data", "mimeType", "detail"])
            }
            Some(b) => extra(b, &["type", "text", "detail"]),
            None => false,
        };
        if extra(&top, &["ok", "output"])
            || extra(output, &["blocks", "metadata", "reward", "finished"])
            || output
                .get("blocks")
                .and_then(Value::as_array)
                .is_some_and(|blocks| blocks.iter().any(block_has_extra))
        {
            objections |= WARN_EXTRA_KEY;
        }
        objections
    }

    /// The result of a tool call (`RunToolOutput`): `{"ok":true,"output":{...}}` or
    /// `{"ok":false,"error":"..."}`. Serialising writes `metadata` and `reward` even when
    /// null, because the official ORS client reads them unconditionally.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::ors::ToolResult;
    /// let r: ToolResult = serde_json::from_str(
    ///     r#"{"ok":true,"output":{"blocks":[{"type":"text","text":"Correct!"}],"reward":1.0,"finished":true}}"#,
    /// )?;
    /// assert!(!r.is_tool_error());
    /// assert_eq!(
    ///     serde_json::to_string(&r)?,
    ///     r#"{"ok":true,"output":{"blocks":[{"type":"text","text":"Correct!","detail":null}],"metadata":null,"reward":1.0,"finished":true}}"#
    /// );
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[non_exhaustive]
    pub struct ToolResult {
        /// `false` for a tool logic error (bad input, wrong answer, unknown tool).
        pub ok: bool,
        /// The output, when `ok`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub output: Option<ToolOutput>,
        /// The error message, when not `ok`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        pub error: Option<String>,
    }

    impl ToolResult {
        /// A successful result (`ok: true`) with the given output.
        ///
        /// # Example
        /// ```
        /// use ssekit::profile::ors::{ToolOutput, ToolResult};
        /// let r = ToolResult::success(ToolOutput::text("Correct!").reward(1.0).finished(true));
        /// assert_eq!(
        ///     serde_json::to_string(&r)?,
        ///     r#"{"ok":true,"output":{"blocks":[{"type":"text","text":"Correct!","detail":null}],"metadata":null,"reward":1.0,"finished":true}}"#
        /// );
        /// # Ok::<(), serde_json::Error>(())
        /// ```
        pub fn success(output: ToolOutput) -> Self {
            ToolResult {
                ok: true,
                output: Some(output),
                error: None,
            }
        }

        /// A tool logic error (`ok: false`): bad input, a wrong answer, an unknown tool. It is
        /// sent in an `end` event, unlike an HTTP-level `error` event.
        ///
        /// # Example
        /// ```
        /// let r = ssekit::profile::ors::ToolResult::failure("Invalid answer format");
        /// assert_eq!(serde_json::to_string(&r)?, r#"{"ok":false,"error":"Invalid answer format"}"#);
        /// # Ok::<(), serde_json::Error>(())
        /// ```
        pub fn failure(message: impl Into<String>) -> Self {
            ToolResult {
                ok: false,
                output: None,
                error: Some(message.into()),
            }
        }

        /// Whether the tool ran and reported a logic error (`ok: false`), as opposed to an
        /// HTTP-level `error` event.
        ///
        /// # Example
        /// ```
        /// let r: ssekit::profile::ors::ToolResult = serde_json::from_str(r#"{"ok":false,"error":"x"}"#)?;
        /// assert!(r.is_tool_error());
        /// # Ok::<(), serde_json::Error>(())
        /// ```
        pub fn is_tool_error(&self) -> bool {
            !self.ok
        }
    }

    /// What a tool produced.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::ors::ToolOutput;
    /// let o: ToolOutput =
    ///     serde_json::from_str(r#"{"blocks":[],"metadata":{"n":1},"reward":null,"finished":false}"#)?;
    /// assert!(o.metadata.is_some() && o.reward.is_none() && !o.finished);
    /// // `metadata` is an object or null, as the official client's model has it.
    /// let number = r#"{"blocks":[],"metadata":5,"reward":null,"finished":false}"#;
    /// assert!(serde_json::from_str::<ToolOutput>(number).is_err());
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[non_exhaustive]
    pub struct ToolOutput {
        /// Content blocks.
        pub blocks: Vec<Block>,
        /// Free-form metadata: a JSON object, `null` when none (always serialised). The
        /// spec has `"metadata": obj|null` and the official client's model refuses anything
        /// else, so a number or a string here fails to parse and cannot be written.
        #[serde(default)]
        pub metadata: Option<Map<String, Value>>,
        /// The reward, if the tool gives one (always serialised).
        #[serde(default)]
        pub reward: Option<f64>,
        /// Whether the episode is over.
        pub finished: bool,
    }

    impl ToolOutput {
        /// An output of the given blocks: no metadata, no reward, not finished.
        ///
        /// # Example
        /// ```
        /// use ssekit::profile::ors::{Block, ToolOutput};
        /// let o = ToolOutput::new(vec![Block::text("a"), Block::text("b")]);
        /// assert_eq!((o.blocks.len(), o.reward, o.finished), (2, None, false));
        /// ```
        pub fn new(blocks: Vec<Block>) -> Self {
            ToolOutput {
                blocks,
                metadata: None,
                reward: None,
                finished: false,
            }
        }

        /// An output of one text block.
        ///
        /// # Example
        /// ```
        /// let o = ssekit::profile::ors::ToolOutput::text("hello");
        /// assert_eq!(o.blocks.len(), 1);
        /// ```
        pub fn text(text: impl Into<String>) -> Self {
            Self::new(alloc::vec![Block::text(text)])
        }

        /// Sets the reward.
        ///
        /// # Example
        /// ```
        /// assert_eq!(ssekit::profile::ors::ToolOutput::text("x").reward(0.5).reward, Some(0.5));
        /// ```
        pub fn reward(mut self, reward: f64) -> Self {
            self.reward = Some(reward);
            self
        }

        /// Sets whether the episode is over.
        ///
        /// # Example
        /// ```
        /// assert!(ssekit::profile::ors::ToolOutput::text("x").finished(true).finished);
        /// ```
        pub fn finished(mut self, finished: bool) -> Self {
            self.finished = finished;
            self
        }

        /// Sets the metadata.
        ///
        /// # Example
        /// ```
        /// let mut metadata = serde_json::Map::new();
        /// metadata.insert("n".into(), 1.into());
        /// let o = ssekit::profile::ors::ToolOutput::text("x").metadata(metadata);
        /// assert!(o.metadata.is_some());
        /// ```
        pub fn metadata(mut self, metadata: Map<String, Value>) -> Self {
            self.metadata = Some(metadata);
            self
        }
    }

    impl Block {
        /// A text block without detail.
        ///
        /// # Example
        /// ```
        /// use ssekit::profile::ors::Block;
        /// assert!(matches!(Block::text("hi"), Block::Text { ref text, .. } if text == "hi"));
        /// ```
        pub fn text(text: impl Into<String>) -> Self {
            Block::Text {
                text: text.into(),
                detail: None,
            }
        }
    }

    /// One content block of a tool output.
    ///
    /// # Example
    /// ```
    /// use ssekit::profile::ors::Block;
    /// let b: Block = serde_json::from_str(r#"{"type":"image","data":"AA==","mimeType":"image/png"}"#)?;
    /// assert!(matches!(b, Block::Image { ref mime_type, .. } if mime_type == "image/png"));
    /// # Ok::<(), serde_json::Error>(())
    /// ```
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
    #[serde(tag = "type", rename_all = "lowercase")]
    #[non_exhaustive]
    pub enum Block {
        /// Text.
        Text {
            /// The text.
            text: String,
            /// Optional detail.
            #[serde(default)]
            detail: Option<serde_json::Value>,
        },
        /// An image, base64-encoded.
        Image {
            /// Base64 data.
            data: String,
            /// The MIME type.
            #[serde(rename = "mimeType")]
            mime_type: String,
            /// Optional detail.
            #[serde(default)]
            detail: Option<serde_json::Value>,
        },
    }
}
