//! Agent platform workflow streams (feature `json`): `workflow_start`, then per block
//! `block_started` → `block_chunk` / `content_delta` / `reasoning_delta` → `block_output` →
//! `block_completed` or `block_error`, then `workflow_complete` or `workflow_error`.
//!
//! Events are `data:`-only JSON objects named by their `event` field (as in
//! [`agent`](super::agent)); blocks are told apart by `block_id` (a string or an integer)
//! and may run interleaved, as a DAG engine runs independent blocks.
//!
//! | rule | what it asks |
//! |---|---|
//! | [`JSON`] | the data is a JSON object |
//! | [`NAME`] | the event is named (JSON `event` or `event:`), and both agree when both are sent |
//! | [`START_FIRST`] | the first event is `workflow_start` |
//! | [`START_ONCE`] | `workflow_start` is sent once |
//! | [`FIELDS`] | each event carries the key fields the platform's table lists: `workflow_start` `execution_id`; `block_started` `block_id` and `block_type`; `block_chunk`, `content_delta` and `reasoning_delta` `block_id` and a string `delta`; `block_output` `block_id` and `output`; `block_completed` `block_id`; `block_error` `block_id` and `error`; `workflow_complete` `execution_id` and `result`; `workflow_error` `execution_id` and `error`. `block_id` is a string or an integer. No other field, and no field of other events, is read |
//! | [`BLOCK_STARTED_ONCE`] | a block id is started once |
//! | [`BLOCK_RUNNING`] | chunks, deltas, `block_output`, `block_completed` and `block_error` are about a started, unfinished block |
//! | [`OUTPUT_LAST`] | a block's chunks and deltas come before its one `block_output` |
//! | [`OUTPUT_BEFORE_COMPLETED`] | `block_completed` follows the block's `block_output` |
//! | [`BLOCKS_FINISHED`] | at `workflow_complete` no block is running |
//! | [`AFTER_TERMINAL`] | nothing follows `workflow_complete` or `workflow_error` |
//! | [`TOO_MANY_BLOCKS`] | the number of blocks stays under the cap ([`Workflow::max_blocks`]) |
//!
//! After a `block_error` other blocks may still start (an error-handler block); only
//! `workflow_error` ends the stream with a failure.
//!
//! ```
//! use ssekit::profile::agent::Workflow;
//! use ssekit::sequence::Validator;
//! use ssekit::Event;
//!
//! let mut v = Validator::new(Workflow::new());
//! for data in [
//!     r#"{"event":"workflow_start","execution_id":"e1"}"#,
//!     r#"{"event":"block_started","block_id":"a","block_type":"agent"}"#,
//!     r#"{"event":"content_delta","block_id":"a","delta":"Hi"}"#,
//!     r#"{"event":"block_output","block_id":"a","output":"Hi"}"#,
//!     r#"{"event":"block_completed","block_id":"a"}"#,
//!     r#"{"event":"workflow_complete","execution_id":"e1","result":{}}"#,
//! ] {
//!     v.event(&Event::message(data))?;
//! }
//! v.finish()?;
//! # Ok::<(), ssekit::sequence::SequenceError>(())
//! ```

use alloc::collections::BTreeMap;

use super::json::{self, Field, Fields, Key, Reads};
use crate::event::Event;
use crate::frame_ref::EventRef;
use crate::sequence::{Profile, Rule};
use crate::text::Utf8Bytes;

/// The data is a JSON object.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::JSON.id(), "workflow.json");
/// ```
pub const JSON: Rule = Rule::new("workflow.json", "the data is a JSON object");

/// The event is named, consistently.
///
/// A JSON `event` that is not a string (or a string with an escape that stands for no
/// character) or that is given twice names no event: it breaks this rule whatever the
/// event, since the profile cannot tell which fields to read.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::NAME.id(), "workflow.name");
/// ```
pub const NAME: Rule = Rule::new(
    "workflow.name",
    "the event is named by JSON `event` (or `event:`), and both agree",
);

/// The first event is `workflow_start`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::START_FIRST.id(), "workflow.start-first");
/// ```
pub const START_FIRST: Rule = Rule::new(
    "workflow.start-first",
    "the first event is `workflow_start`",
);

/// `workflow_start` is sent once.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::START_ONCE.id(), "workflow.start-once");
/// ```
pub const START_ONCE: Rule = Rule::new("workflow.start-once", "`workflow_start` is sent once");

/// Events carry the key fields the platform's table lists for them.
///
/// A field is read only in the events it is listed for, and only its type is checked
/// where the profile reads it: `block_id` (a string or an integer, compared as text) and
/// `delta` (a string); the other key fields (`execution_id`, `block_type`, `output`, `error`,
/// `result`) only need to be there (`null` counts). One of those missing (a `null`
/// `block_id` or `delta` counts as missing), given twice or of another JSON type breaks the
/// rule. Other fields, and the fields of other events, are not looked at.
///
/// # Example
/// ```
/// use ssekit::profile::workflow::{Workflow, FIELDS};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
///
/// let mut p = Workflow::new();
/// p.event(&Event::message(r#"{"event":"workflow_start","execution_id":"e1"}"#))?;
/// p.event(&Event::message(r#"{"event":"block_started","block_id":"a","block_type":"agent"}"#))?;
/// let delta = r#"{"event":"content_delta","block_id":"a","delta":{"text":"Hi"}}"#;
/// assert_eq!(p.event(&Event::message(delta)), Err(FIELDS));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const FIELDS: Rule = Rule::new(
    "workflow.fields",
    "events carry their key fields: `workflow_start` execution_id, block events `block_id` (and block_type, a string delta, output or error), `workflow_complete` execution_id and result, `workflow_error` execution_id and error",
);

/// A block is started once.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::BLOCK_STARTED_ONCE.id(), "workflow.block-started-once");
/// ```
pub const BLOCK_STARTED_ONCE: Rule = Rule::new(
    "workflow.block-started-once",
    "each `block_id` is started once",
);

/// Block events are about a running block.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::BLOCK_RUNNING.id(), "workflow.block-running");
/// ```
pub const BLOCK_RUNNING: Rule = Rule::new(
    "workflow.block-running",
    "block events are about a started, unfinished block",
);

/// Chunks and deltas precede the block's one `block_output`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::OUTPUT_LAST.id(), "workflow.output-last");
/// ```
pub const OUTPUT_LAST: Rule = Rule::new(
    "workflow.output-last",
    "a block's chunks and deltas come before its one `block_output`",
);

/// `block_completed` follows `block_output`.
///
/// # Example
/// ```
/// let id = ssekit::profile::workflow::OUTPUT_BEFORE_COMPLETED.id();
/// assert_eq!(id, "workflow.output-before-completed");
/// ```
pub const OUTPUT_BEFORE_COMPLETED: Rule = Rule::new(
    "workflow.output-before-completed",
    "`block_completed` follows the block's `block_output`",
);

/// No block is running at `workflow_complete`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::BLOCKS_FINISHED.id(), "workflow.blocks-finished");
/// ```
pub const BLOCKS_FINISHED: Rule = Rule::new(
    "workflow.blocks-finished",
    "no block is running at `workflow_complete`",
);

/// Nothing follows the terminal event.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::AFTER_TERMINAL.id(), "workflow.after-terminal");
/// ```
pub const AFTER_TERMINAL: Rule = Rule::new(
    "workflow.after-terminal",
    "nothing follows `workflow_complete` or `workflow_error`",
);

/// The number of blocks stays under the cap.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::TOO_MANY_BLOCKS.id(), "workflow.too-many-blocks");
/// ```
pub const TOO_MANY_BLOCKS: Rule = Rule::new(
    "workflow.too-many-blocks",
    "the number of blocks stays under the cap",
);

/// The default cap on distinct blocks in one workflow stream.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::DEFAULT_MAX_BLOCKS, 65_536);
/// ```
pub const DEFAULT_MAX_BLOCKS: usize = 65_536;

/// The slots of the fields the profile reads ([`json::Schema`]).
const EVENT: usize = 0;
const BLOCK_ID: usize = 1;
const DELTA: usize = 2;
const EXECUTION_ID: usize = 3;
const BLOCK_TYPE: usize = 4;
const OUTPUT: usize = 5;
const ERROR: usize = 6;
const RESULT: usize = 7;

/// The fields the profile reads, and for which events ([`FIELDS`]).
pub(crate) struct Schema;

impl json::Schema<8> for Schema {
    const JSON: Rule = JSON;
    const NAME: Rule = NAME;
    const FIELDS: Rule = FIELDS;
    const READS: [Reads; 8] = [
        Reads::Text,    // event
        Reads::Key,     // block_id
        Reads::Text,    // delta
        Reads::Present, // execution_id
        Reads::Present, // block_type
        Reads::Present, // output
        Reads::Present, // error
        Reads::Present, // result
    ];

    fn slot(key: &str) -> Option<usize> {
        Some(match key {
            "event" => EVENT,
            "block_id" => BLOCK_ID,
            "delta" => DELTA,
            "execution_id" => EXECUTION_ID,
            "block_type" => BLOCK_TYPE,
            "output" => OUTPUT,
            "error" => ERROR,
            "result" => RESULT,
            _ => return None,
        })
    }

    fn reads(name: &str) -> u32 {
        let slots: &[usize] = match name {
            "workflow_start" => &[EXECUTION_ID],
            "block_started" => &[BLOCK_ID, BLOCK_TYPE],
            "block_chunk" | "content_delta" | "reasoning_delta" => &[BLOCK_ID, DELTA],
            "block_output" => &[BLOCK_ID, OUTPUT],
            "block_completed" => &[BLOCK_ID],
            "block_error" => &[BLOCK_ID, ERROR],
            "workflow_complete" => &[EXECUTION_ID, RESULT],
            "workflow_error" => &[EXECUTION_ID, ERROR],
            _ => &[],
        };
        slots.iter().fold(0, |bits, slot| bits | 1 << slot)
    }
}

/// Whether the event carries the key fields the spec lists for `name` (`block_id`, which
/// the rules below read, is checked where it is read).
fn has_key_fields(name: &str, fields: &Fields<'_, 8>) -> bool {
    let has = |slot| fields.has(slot);
    match name {
        "workflow_start" => has(EXECUTION_ID),
        "block_started" => has(BLOCK_TYPE),
        "block_chunk" | "content_delta" | "reasoning_delta" => has(DELTA),
        "block_output" => has(OUTPUT),
        "block_error" => has(ERROR),
        "workflow_complete" => has(EXECUTION_ID) && has(RESULT),
        "workflow_error" => has(EXECUTION_ID) && has(ERROR),
        _ => true,
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Block {
    Running,
    Output,
    Finished,
}

/// The workflow stream profile; see the [module docs](self) for its rules.
///
/// # Example
/// ```
/// use ssekit::profile::workflow::{Workflow, BLOCK_RUNNING};
/// use ssekit::sequence::Profile;
/// let mut p = Workflow::new();
/// p.event(&ssekit::Event::message(r#"{"event":"workflow_start","execution_id":"e1"}"#))?;
/// let chunk = ssekit::Event::message(r#"{"event":"block_chunk","block_id":"x","delta":"."}"#);
/// assert_eq!(p.event(&chunk), Err(BLOCK_RUNNING));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
#[derive(Clone, Debug)]
pub struct Workflow {
    started: bool,
    terminal: bool,
    failed: bool,
    /// What `workflow_error` reported.
    failure: Option<crate::sequence::Failure>,
    blocks: BTreeMap<Key, Block>,
    running: usize,
    max_blocks: usize,
}

impl Default for Workflow {
    /// A cap of 65 536 blocks.
    fn default() -> Self {
        Workflow::new()
    }
}

impl Workflow {
    /// A fresh profile.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::workflow::Workflow::new().running(), 0);
    /// ```
    pub const fn new() -> Self {
        Workflow {
            started: false,
            terminal: false,
            failed: false,
            failure: None,
            blocks: BTreeMap::new(),
            running: 0,
            max_blocks: DEFAULT_MAX_BLOCKS,
        }
    }

    /// Sets the cap on distinct blocks ([`TOO_MANY_BLOCKS`] past it).
    ///
    /// # Example
    /// ```
    /// let p = ssekit::profile::workflow::Workflow::new().max_blocks(16);
    /// assert_eq!(p.running(), 0);
    /// ```
    pub const fn max_blocks(mut self, blocks: usize) -> Self {
        self.max_blocks = blocks;
        self
    }

    /// Blocks started and not yet completed or failed.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::profile::workflow::Workflow::new().running(), 0);
    /// ```
    pub fn running(&self) -> usize {
        self.running
    }

    /// Whether the workflow ended with `workflow_error`.
    ///
    /// # Example
    /// ```
    /// assert!(!ssekit::profile::workflow::Workflow::new().is_error());
    /// ```
    pub fn is_error(&self) -> bool {
        self.failed
    }

    fn block(&mut self, name: &str, id: Key) -> Result<(), Rule> {
        if name == "block_started" {
            if self.blocks.contains_key(&id) {
                return Err(BLOCK_STARTED_ONCE);
            }
            if self.blocks.len() >= self.max_blocks {
                return Err(TOO_MANY_BLOCKS);
            }
            self.blocks.insert(id, Block::Running);
            self.running += 1;
            return Ok(());
        }
        let state = match self.blocks.get_mut(&id) {
            Some(state) if *state != Block::Finished => state,
            _ => return Err(BLOCK_RUNNING),
        };
        match (name, *state) {
            ("block_output", Block::Running) => *state = Block::Output,
            ("block_output", _) => return Err(OUTPUT_LAST),
            ("block_completed", Block::Running) => return Err(OUTPUT_BEFORE_COMPLETED),
            ("block_completed" | "block_error", _) => {
                *state = Block::Finished;
                self.running -= 1;
            }
            (_, Block::Output) => return Err(OUTPUT_LAST),
            _ => {}
        }
        Ok(())
    }
}

impl Profile for Workflow {
    fn event(&mut self, event: &Event) -> Result<(), Rule> {
        self.event_ref(event.as_event_ref())
    }

    fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), Rule> {
        if self.terminal {
            return Err(AFTER_TERMINAL);
        }
        let fields = json::read::<Schema, 8>(event)?;
        if !has_key_fields(&fields.name, &fields) {
            return Err(FIELDS);
        }
        let Fields { name, mut values } = fields;
        let name: &str = &name;
        if !self.started {
            if name != "workflow_start" {
                return Err(START_FIRST);
            }
            self.started = true;
            return Ok(());
        }
        match name {
            "workflow_start" => Err(START_ONCE),
            "block_started" | "block_chunk" | "content_delta" | "reasoning_delta"
            | "block_output" | "block_completed" | "block_error" => {
                let id = values
                    .get_mut(BLOCK_ID)
                    .and_then(Option::take)
                    .and_then(Field::into_key)
                    .ok_or(FIELDS)?;
                self.block(name, id)
            }
            "workflow_complete" if self.running > 0 => Err(BLOCKS_FINISHED),
            "workflow_complete" | "workflow_error" => {
                self.terminal = true;
                self.failed = name == "workflow_error";
                if self.failed {
                    let failure = json::failure(event, "workflow_error", &["error"], &["code"]);
                    self.failure = Some(failure);
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn is_terminated(&self) -> bool {
        self.terminal
    }

    fn failure(&self) -> Option<crate::sequence::Failure> {
        self.failure.clone()
    }

    fn event_name(&self, event: EventRef<'_>) -> Utf8Bytes {
        super::json::name_or_type(event, "event")
    }
}
