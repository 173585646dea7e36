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
//! | [`FIELDS`] | every `block_*` event and every delta carries `block_id` |
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

use super::agent::name_of;
use super::json::{Key, Text};
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

/// Block events carry `block_id`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::workflow::FIELDS.id(), "workflow.fields");
/// ```
pub const FIELDS: Rule = Rule::new(
    "workflow.fields",
    "block events and deltas carry `block_id`",
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

#[derive(serde::Deserialize)]
struct Wire<'a> {
    #[serde(borrow, default)]
    event: Option<Text<'a>>,
    #[serde(default)]
    block_id: Option<Key>,
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
/// p.event(&ssekit::Event::message(r#"{"event":"workflow_start"}"#))?;
/// let chunk = ssekit::Event::message(r#"{"event":"block_chunk","block_id":"x","delta":"."}"#);
/// assert_eq!(p.event(&chunk), Err(BLOCK_RUNNING));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
#[derive(Clone, Debug)]
pub struct Workflow {
    started: bool,
    terminal: bool,
    failed: bool,
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
        let wire: Wire<'_> = super::json::parse_object(event.data())
            .ok_or_else(|| super::json::shape_rule(event, JSON, FIELDS))?;
        let name = name_of(wire.event.as_ref(), event).ok_or(NAME)?;
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
                let id = wire.block_id.ok_or(FIELDS)?;
                self.block(name, id)
            }
            "workflow_complete" if self.running > 0 => Err(BLOCKS_FINISHED),
            "workflow_complete" | "workflow_error" => {
                self.terminal = true;
                self.failed = name == "workflow_error";
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn is_terminated(&self) -> bool {
        self.terminal
    }

    fn event_name(&self, event: EventRef<'_>) -> Utf8Bytes {
        super::json::name_or_type(event, "event")
    }
}
