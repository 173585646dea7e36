//! Built-in protocol profiles for the [`Validator`](crate::sequence::Validator).
//!
//! | profile | stream | event names from | needs |
//! |---|---|---|---|
//! | [`ors::ToolCall`] | ORS `POST /{env}/call` | `event:` | — (typed result: `json`) |
//! | [`chat::Completions`] | Chat Completions `data: {chunk}` … `data: [DONE]` | — | — (chunk JSON check: `json`) |
//! | `responses::Stream` | OpenAI Responses API (Open Responses Server) | JSON `type`, or `event:` | `json` |
//! | `agent::Run` | agent platform run stream | JSON `event` | `json` |
//! | `agent::Workflow` | agent platform workflow stream | JSON `event` | `json` |
//!
//! Every profile allows comments (keep-alives) anywhere, refuses anything after its terminal
//! event (the one exception: Responses lets OpenAI's `error` be followed by
//! `response.failed`), and reports a stream that stops before it as
//! [`SequenceError::Unterminated`](crate::sequence::SequenceError::Unterminated). Each rule
//! is a [`Rule`](crate::sequence::Rule) constant in the profile's module. In the JSON
//! profiles, data that is not a JSON object breaks the profile's `JSON` rule, and an object
//! with a field the profile reads for that event of the wrong JSON type
//! (`"output_index":"0"` in a text delta) breaks its `FIELDS` rule; fields of events the
//! profile does not read are not looked at.
//!
//! # Example
//! ```
//! use ssekit::profile::chat::{Completions, AFTER_DONE};
//! use ssekit::sequence::Validator;
//! use ssekit::Event;
//!
//! let mut v = Validator::new(Completions::new());
//! v.event(&Event::message("{\"choices\":[]}"))?;
//! v.event(&Event::message("[DONE]"))?;
//! assert_eq!(v.event(&Event::message("{}")).unwrap_err().rule(), AFTER_DONE);
//! # Ok::<(), ssekit::sequence::SequenceError>(())
//! ```

#[cfg(feature = "json")]
pub mod agent;
pub mod chat;
pub mod ors;
#[cfg(feature = "json")]
pub mod responses;
#[cfg(feature = "json")]
pub(crate) mod scan;
#[cfg(feature = "json")]
pub mod workflow;

/// Small JSON helpers shared by the profiles that read names and ids from `data`.
#[cfg(feature = "json")]
pub(crate) mod json {
    use alloc::borrow::Cow;
    use alloc::string::{String, ToString};
    use core::fmt;

    use serde::de::{self, Deserialize, Deserializer, Visitor};

    use crate::frame_ref::EventRef;
    use crate::text::Utf8Bytes;

    /// The string in `field` of the JSON object in `event`'s data, copied. Reporting only.
    pub(crate) fn name_field(event: EventRef<'_>, field: &str) -> Option<Utf8Bytes> {
        let value: serde_json::Value = serde_json::from_str(event.data()).ok()?;
        value
            .get(field)
            .and_then(serde_json::Value::as_str)
            .map(Utf8Bytes::copy_from_str)
    }

    /// The reporting name: the JSON field when there is one, else the SSE event type.
    pub(crate) fn name_or_type(event: EventRef<'_>, field: &str) -> Utf8Bytes {
        name_field(event, field).unwrap_or_else(|| Utf8Bytes::copy_from_str(event.event_type()))
    }

    /// Parses `data` as a JSON object into `T`. The first byte is checked because serde's
    /// derived structs also accept a JSON array of the fields. Parsing from `&str` lets
    /// serde_json skip UTF-8 checks of the strings it hands out (`Utf8Bytes::as_str` is O(1)).
    pub(crate) fn parse_object<'a, T: Deserialize<'a>>(data: &'a str) -> Option<T> {
        if !data
            .trim_start_matches([' ', '\t', '\n', '\r'])
            .starts_with('{')
        {
            return None;
        }
        serde_json::from_str(data).ok()
    }

    /// Why `event` did not parse as a profile's wire struct: `fields` when the data is a
    /// JSON object (so a field had the wrong type), else `json`. Reporting only.
    #[cold]
    pub(crate) fn shape_rule(
        event: EventRef<'_>,
        json: crate::sequence::Rule,
        fields: crate::sequence::Rule,
    ) -> crate::sequence::Rule {
        if is_object(event.data()) {
            fields
        } else {
            json
        }
    }

    /// Whether `data` is one JSON object (its contents are skipped, not stored).
    pub(crate) fn is_object(data: &str) -> bool {
        struct Object;
        impl<'de> Deserialize<'de> for Object {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct ObjectVisitor;
                impl<'de> Visitor<'de> for ObjectVisitor {
                    type Value = Object;
                    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                        f.write_str("a JSON object")
                    }
                    fn visit_map<A: de::MapAccess<'de>>(
                        self,
                        mut map: A,
                    ) -> Result<Object, A::Error> {
                        while map
                            .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                            .is_some()
                        {}
                        Ok(Object)
                    }
                }
                d.deserialize_map(ObjectVisitor)
            }
        }
        serde_json::from_str::<Object>(data).is_ok()
    }

    /// A JSON string, borrowed from the event data when it has no escapes.
    pub(crate) struct Text<'a>(pub(crate) Cow<'a, str>);

    impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct TextVisitor<'a>(core::marker::PhantomData<&'a ()>);
            impl<'de: 'a, 'a> Visitor<'de> for TextVisitor<'a> {
                type Value = Text<'a>;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string")
                }
                fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Text<'a>, E> {
                    Ok(Text(Cow::Borrowed(v)))
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Text<'a>, E> {
                    Ok(Text(Cow::Owned(v.to_string())))
                }
            }
            d.deserialize_str(TextVisitor(core::marker::PhantomData))
        }
    }

    /// An identifier sent as a JSON string or integer (`"step": 1`, `"block_id": "b1"`),
    /// kept in one canonical text form so that both compare.
    #[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
    pub(crate) struct Key(pub(crate) String);

    impl<'de> Deserialize<'de> for Key {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
            struct KeyVisitor;
            impl Visitor<'_> for KeyVisitor {
                type Value = Key;
                fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                    f.write_str("a string or an integer")
                }
                fn visit_str<E: de::Error>(self, v: &str) -> Result<Key, E> {
                    Ok(Key(v.to_string()))
                }
                fn visit_u64<E: de::Error>(self, v: u64) -> Result<Key, E> {
                    Ok(Key(v.to_string()))
                }
                fn visit_i64<E: de::Error>(self, v: i64) -> Result<Key, E> {
                    Ok(Key(v.to_string()))
                }
            }
            d.deserialize_any(KeyVisitor)
        }
    }
}
