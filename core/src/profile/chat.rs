//! Chat Completions streams: `data: {chunk}` events, then `data: [DONE]`, then nothing; or
//! an `error` chunk, as OpenAI and the gateways that relay it send mid-stream.
//!
//! | rule | what it asks |
//! |---|---|
//! | [`AFTER_DONE`] | nothing follows `data: [DONE]` |
//! | [`CHUNK_JSON`] | (`json`) every data before `[DONE]` is a JSON object |
//! | [`AFTER_ERROR`] | (`json`) only `[DONE]` follows an `error` chunk |
//!
//! The terminal event is `[DONE]`; a stream that stops before it is
//! [`Unterminated`](crate::sequence::SequenceError::Unterminated).
//!
//! Errors (feature `json`): a chunk whose top-level `error` is an object (or a string) is the
//! provider's failure, as OpenAI sends it when a stream fails after it started
//! (`{"error":{"message":"…","type":"server_error","param":null,"code":null}}`) and as
//! gateways relay an upstream failure (often with `choices` beside it, and a numeric `code`).
//! It ends the stream validly, but not successfully: [`Profile::failure`] reports it as
//! `Failure { event: "error", code, message }`, `code` being the error's `code` (a string,
//! or a number written out) or, without one, its `type`. Relays differ in what comes next:
//! some send `[DONE]` after it, some close the stream. Both are valid: the stream may end
//! right after the error, or after one `[DONE]`; any other chunk after it breaks
//! [`AFTER_ERROR`]. An `error` of `null` is an ordinary chunk. Without feature `json` the
//! data is not read, and an error chunk is an ordinary chunk.
//!
//! The last chunk may carry usage alone (`{"choices":[],"usage":{…}}`, with
//! `stream_options: {"include_usage": true}`): an ordinary chunk.
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
use crate::sequence::{Failure, Profile, Rule};

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

/// Only `[DONE]` follows an `error` chunk (checked with feature `json`): the error ends the
/// stream, with or without a `[DONE]` after it.
///
/// # Example
/// ```
/// use ssekit::profile::chat::{Completions, AFTER_ERROR};
/// use ssekit::sequence::Profile;
/// use ssekit::Event;
/// let mut p = Completions::new();
/// p.event(&Event::message(r#"{"error":{"message":"Overloaded","type":"server_error","code":null}}"#))?;
/// assert!(p.is_terminated());
/// assert_eq!(p.failure().unwrap().code.as_deref(), Some("server_error"));
/// assert_eq!(p.event(&Event::message(r#"{"choices":[]}"#)), Err(AFTER_ERROR));
/// # Ok::<(), ssekit::sequence::Rule>(())
/// ```
pub const AFTER_ERROR: Rule = Rule::new(
    "chat.after-error",
    "only `data: [DONE]` follows an `error` chunk",
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
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Completions {
    done: bool,
    /// What an `error` chunk reported.
    failure: Option<Failure>,
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
        Completions {
            done: false,
            failure: None,
        }
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
        if self.failure.is_some() {
            return Err(AFTER_ERROR);
        }
        #[cfg(feature = "json")]
        match chunk(event.data()) {
            Chunk::NotObject => return Err(CHUNK_JSON),
            Chunk::Error => {
                self.failure = Some(super::json::failure(
                    event,
                    "error",
                    &["error"],
                    &["code", "type"],
                ));
            }
            Chunk::Plain => {}
        }
        Ok(())
    }

    fn is_terminated(&self) -> bool {
        self.done || self.failure.is_some()
    }

    fn failure(&self) -> Option<Failure> {
        self.failure.clone()
    }
}

/// What a data before `[DONE]` is.
#[cfg(feature = "json")]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Chunk {
    /// Not a JSON object ([`CHUNK_JSON`]).
    NotObject,
    /// A JSON object whose top-level `error` is an object or a string.
    Error,
    /// Any other JSON object.
    Plain,
}

/// Reads `data` with the allocation-free scanner (one pass, the `error` field located on
/// the way); serde reads what the scanner leaves to it (an escaped key, nesting past its
/// depth). A key given twice: the last, as serde's maps keep it.
#[cfg(feature = "json")]
fn chunk(data: &str) -> Chunk {
    use super::scan::{self, Kind, ScanError};
    match scan::object_with::<1>(data, |key| (key == "error").then_some(0)) {
        Ok(Some(fields)) if !fields.escaped_key => {
            let [error] = fields.values;
            match error.map(|error| error.kind) {
                Some(Kind::Object | Kind::String) => Chunk::Error,
                _ => Chunk::Plain,
            }
        }
        Ok(None) | Err(ScanError::Invalid) => Chunk::NotObject,
        Ok(Some(_)) | Err(ScanError::TooDeep) => slow_chunk(data),
    }
}

/// [`chunk`] with serde alone.
#[cfg(feature = "json")]
#[cold]
fn slow_chunk(data: &str) -> Chunk {
    use core::fmt;
    use serde::de::{self, Deserializer, IgnoredAny, MapAccess, Visitor};

    /// Whether the top-level `error` (the last one) is an object or a string.
    struct Top;
    impl<'de> Visitor<'de> for Top {
        type Value = bool;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
            let mut error = false;
            while let Some(super::json::Text(key)) = map.next_key()? {
                if key == "error" {
                    error = map.next_value::<IsError>()?.0;
                } else {
                    map.next_value::<IgnoredAny>()?;
                }
            }
            Ok(error)
        }
    }

    /// Whether a value is an object or a string.
    struct IsError(bool);
    impl<'de> de::Deserialize<'de> for IsError {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct Kind;
            impl<'de> Visitor<'de> for Kind {
                type Value = IsError;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a JSON value")
                }
                fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<IsError, A::Error> {
                    while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                    Ok(IsError(true))
                }
                fn visit_str<E: de::Error>(self, _: &str) -> Result<IsError, E> {
                    Ok(IsError(true))
                }
                fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<IsError, A::Error> {
                    while seq.next_element::<IgnoredAny>()?.is_some() {}
                    Ok(IsError(false))
                }
                fn visit_bool<E: de::Error>(self, _: bool) -> Result<IsError, E> {
                    Ok(IsError(false))
                }
                fn visit_u64<E: de::Error>(self, _: u64) -> Result<IsError, E> {
                    Ok(IsError(false))
                }
                fn visit_i64<E: de::Error>(self, _: i64) -> Result<IsError, E> {
                    Ok(IsError(false))
                }
                fn visit_f64<E: de::Error>(self, _: f64) -> Result<IsError, E> {
                    Ok(IsError(false))
                }
                fn visit_unit<E: de::Error>(self) -> Result<IsError, E> {
                    Ok(IsError(false))
                }
            }
            d.deserialize_any(Kind)
        }
    }

    if !super::json::is_object(data) {
        return Chunk::NotObject;
    }
    let mut de = serde_json::Deserializer::from_str(data);
    match de.deserialize_map(Top) {
        Ok(true) => Chunk::Error,
        // serde refuses a key or an `error` string it cannot decode (a lone surrogate);
        // such a chunk, rare on this path, reads as an ordinary one.
        Ok(false) | Err(_) => Chunk::Plain,
    }
}
