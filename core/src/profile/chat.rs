//! Chat Completions streams: `data: {chunk}` events, then `data: [DONE]`, then nothing.
//!
//! | rule | what it asks |
//! |---|---|
//! | [`AFTER_DONE`] | nothing follows `data: [DONE]` |
//! | [`CHUNK_JSON`] | (`json`) every data before `[DONE]` is a JSON object |
//!
//! The terminal event is `[DONE]`; a stream that stops before it is
//! [`Unterminated`](crate::sequence::SequenceError::Unterminated).
//!
//! ```
//! use ssekit::profile::chat::Completions;
//! use ssekit::sequence::{SequenceError, Validator};
//! let mut v = Validator::new(Completions::new());
//! v.event(&ssekit::Event::message(r#"{"choices":[{"delta":{"content":"Hi"}}]}"#))?;
//! assert!(matches!(v.finish(), Err(SequenceError::Unterminated { events: 1, .. })));
//! # Ok::<(), SequenceError>(())
//! ```

use crate::event::Event;
use crate::frame_ref::EventRef;
use crate::sequence::{Profile, Rule};

/// Nothing follows `data: [DONE]`.
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::chat::AFTER_DONE.id(), "chat.after-done");
/// ```
pub const AFTER_DONE: Rule = Rule::new("chat.after-done", "nothing follows `data: [DONE]`");

/// Every data before `[DONE]` is a JSON object (checked with feature `json`).
///
/// # Example
/// ```
/// assert_eq!(ssekit::profile::chat::CHUNK_JSON.id(), "chat.chunk-json");
/// ```
pub const CHUNK_JSON: Rule = Rule::new(
    "chat.chunk-json",
    "every event before `[DONE]` carries a JSON object",
);

/// The Chat Completions stream profile.
///
/// # Example
/// ```
/// use ssekit::sequence::Profile;
/// let mut p = ssekit::profile::chat::Completions::new();
/// p.event(&ssekit::Event::message("[DONE]"))?;
/// assert!(p.is_terminated());
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Completions {
    done: bool,
}

impl Completions {
    /// A fresh profile.
    ///
    /// # Example
    /// ```
    /// use ssekit::sequence::Profile;
    /// assert!(!ssekit::profile::chat::Completions::new().is_terminated());
    /// ```
    pub const fn new() -> Self {
        Completions { done: false }
    }
}

impl Profile for Completions {
    fn event(&mut self, event: &Event) -> Result<(), Rule> {
        self.event_ref(event.as_event_ref())
    }

    fn event_ref(&mut self, event: EventRef<'_>) -> Result<(), Rule> {
        if self.done {
            return Err(AFTER_DONE);
        }
        if event.data() == "[DONE]" {
            self.done = true;
            return Ok(());
        }
        #[cfg(feature = "json")]
        if !super::json::is_object(event.data()) {
            return Err(CHUNK_JSON);
        }
        Ok(())
    }

    fn is_terminated(&self) -> bool {
        self.done
    }
}
