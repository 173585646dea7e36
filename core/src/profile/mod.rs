//! Built-in protocol profiles for the [`Validator`](crate::sequence::Validator).
//!
//! | profile | stream | event names from | needs |
//! |---|---|---|---|
//! | [`ors::ToolCall`] | ORS `POST /{env}/call` | `event:` | — (typed result: `json`) |
//! | [`chat::Completions`] | Chat Completions `data: {chunk}` … `data: [DONE]`, or an `error` chunk (then `[DONE]` or the end) | — | — (chunk JSON check and `error` chunks: `json`) |
//! | `responses::Stream` | OpenAI Responses API (Open Responses Server) | JSON `type`, or `event:` | `json` |
//! | `agent::Run` | agent platform run stream | JSON `event` | `json` |
//! | `agent::Workflow` | agent platform workflow stream | JSON `event` | `json` |
//! | `anthropic::Messages` | Anthropic Messages API | `event:` and JSON `type` | `json` |
//! | `a2a::Stream` | A2A `message/stream` and `tasks/resubscribe` (JSON-RPC responses) | JSON `result.kind` | `json` |
//!
//! Every profile allows comments (keep-alives) anywhere, refuses anything after its terminal
//! event (the exceptions are what providers send: Responses lets OpenAI's `error` be followed
//! by `response.failed`, chat lets a relayed `error` chunk be followed by `[DONE]`, and an A2A
//! task waiting for input may end the stream or go on), and reports a stream that stops
//! before it as [`SequenceError::Unterminated`](crate::sequence::SequenceError::Unterminated).
//! A terminal event that reports the provider's failure is kept as
//! [`Profile::failure`](crate::sequence::Profile::failure). Each rule
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
pub mod a2a;
#[cfg(feature = "json")]
pub mod agent;
#[cfg(feature = "json")]
pub mod anthropic;
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

    use serde::de::{self, Deserialize, DeserializeSeed, Deserializer, IgnoredAny, Visitor};

    use super::scan::{self, Kind, ScanError};
    use crate::frame_ref::EventRef;
    use crate::sequence::Rule;
    use crate::text::Utf8Bytes;

    /// The string in `field` of the JSON object in `event`'s data, copied. Reporting only.
    ///
    /// The scanner reads it; serde reads what the scanner leaves to it (an escaped key,
    /// nesting past [`scan::MAX_DEPTH`]), skipping the other fields without a depth limit, so
    /// a deeply nested event is still named by its field. `None` when the data is not a JSON
    /// object or the field is not a string.
    pub(crate) fn name_field(event: EventRef<'_>, field: &str) -> Option<Utf8Bytes> {
        let data = event.data();
        let slot = |key: &str| (key == field).then_some(0);
        let name = match scan::object_with::<1>(data, slot) {
            // A key given twice: the last, as serde's maps keep it.
            Ok(Some(fields)) if !fields.escaped_key => text(fields.values[0]).ok().flatten(),
            Ok(None) | Err(ScanError::Invalid) => None,
            Ok(Some(_)) | Err(ScanError::TooDeep) => {
                let [name] = parse_fields(data, slot, &[Reads::Text], 1)?;
                name.and_then(Field::into_text)
            }
        };
        name.map(|Text(name)| Utf8Bytes::copy_from_str(&name))
    }

    /// The reporting name: the JSON field when there is one, else the SSE event type.
    pub(crate) fn name_or_type(event: EventRef<'_>, field: &str) -> Utf8Bytes {
        name_field(event, field).unwrap_or_else(|| Utf8Bytes::copy_from_str(event.event_type()))
    }

    /// The failure a terminal event `name` reports: the value at `path` in its data (the
    /// data itself for an empty path): a string is the message; an object gives the first of
    /// `codes` it has as the code (a string, or a number written out) and its `message`.
    /// The data, cut to [`FAILURE_DATA`] bytes, when nothing is
    /// found there or no message: a failure is never dropped for its shape. Reporting only.
    #[cold]
    pub(crate) fn failure(
        event: EventRef<'_>,
        name: &str,
        path: &[&str],
        codes: &[&str],
    ) -> crate::sequence::Failure {
        use serde_json::Value;
        let data = event.data();
        let parsed: Option<Value> = serde_json::from_str(data).ok();
        let found = path
            .iter()
            .try_fold(parsed.as_ref(), |at, key| at.map(|v| v.get(key)))
            .flatten();
        let code = |object: &serde_json::Map<String, Value>| {
            codes.iter().find_map(|key| match object.get(*key)? {
                Value::String(code) => Some(code.clone()),
                Value::Number(code) => Some(code.to_string()),
                _ => None,
            })
        };
        let whole = || String::from(cut(data, FAILURE_DATA));
        let (code, message) = match found {
            Some(Value::String(message)) => (None, message.clone()),
            Some(Value::Object(object)) => (
                code(object),
                match object.get("message") {
                    Some(Value::String(message)) => message.clone(),
                    _ => whole(),
                },
            ),
            _ => (None, whole()),
        };
        crate::sequence::Failure::new(name, code, message)
    }

    /// How much of an unreadable failure event's data a [`failure`] keeps.
    pub(crate) const FAILURE_DATA: usize = 1000;

    /// `text` cut to at most `max` bytes, at a character boundary.
    fn cut(text: &str, max: usize) -> &str {
        let mut end = text.len().min(max);
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.get(..end).unwrap_or_default()
    }

    /// Parses `data` as a JSON object into `T` (not an array: [`opens_an_object`]). Parsing
    /// from `&str` lets serde_json skip UTF-8 checks of the strings it hands out
    /// (`Utf8Bytes::as_str` is O(1)).
    pub(crate) fn parse_object<'a, T: Deserialize<'a>>(data: &'a str) -> Option<T> {
        if !opens_an_object(data) {
            return None;
        }
        serde_json::from_str(data).ok()
    }

    /// Whether `data`'s first byte past JSON whitespace opens an object: serde's derived
    /// structs and maps also take a JSON array, which the profiles do not.
    fn opens_an_object(data: &str) -> bool {
        data.trim_start_matches([' ', '\t', '\n', '\r'])
            .starts_with('{')
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

    /// How a profile reads a field of an event.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    pub(crate) enum Reads {
        /// A string ([`Text`]); `null` reads as absent.
        Text,
        /// A string or an integer ([`Key`]); `null` reads as absent.
        Key,
        /// Only whether the field is there, whatever its value (`null` included).
        Present,
    }

    /// A field as read ([`Reads`]).
    pub(crate) enum Field<'a> {
        Text(Text<'a>),
        Key(Key),
        Present,
    }

    impl<'a> Field<'a> {
        /// The string of a field read as [`Reads::Text`].
        pub(crate) fn into_text(self) -> Option<Text<'a>> {
            match self {
                Field::Text(text) => Some(text),
                _ => None,
            }
        }

        /// The key of a field read as [`Reads::Key`].
        pub(crate) fn into_key(self) -> Option<Key> {
            match self {
                Field::Key(key) => Some(key),
                _ => None,
            }
        }
    }

    /// What a JSON profile whose events are named by a JSON field (agent, workflow) reads of
    /// an event: slot 0 is the name, the other `N - 1` slots are fields, each read one way
    /// and only for the event names that read it ([`Schema::reads`]). Every other field,
    /// and the fields of other event names, are skipped without being read or stored.
    pub(crate) trait Schema<const N: usize> {
        /// The data is not a JSON object.
        const JSON: Rule;
        /// The name is not a string, is given twice, disagrees with `event:`, or is missing
        /// and there is no `event:` either.
        const NAME: Rule;
        /// A field read for the event's name is of another JSON type, or given twice.
        const FIELDS: Rule;
        /// How each slot is read (slot 0, the name: [`Reads::Text`]).
        const READS: [Reads; N];
        /// The slot of a top-level key (the name's, or one some event name reads).
        fn slot(key: &str) -> Option<usize>;
        /// The slots read for the event named `name`, one bit per slot.
        fn reads(name: &str) -> u32;
    }

    /// An event's name and the fields read for it (`None`: absent, or `null` where that
    /// reads as absent).
    pub(crate) struct Fields<'a, const N: usize> {
        pub(crate) name: Cow<'a, str>,
        pub(crate) values: [Option<Field<'a>>; N],
    }

    impl<const N: usize> Fields<'_, N> {
        /// Whether the field in `slot` is there.
        pub(crate) fn has(&self, slot: usize) -> bool {
            self.values.get(slot).is_some_and(Option::is_some)
        }
    }

    /// Whether bit `slot` of `bits` is set.
    fn bit(bits: u32, slot: usize) -> bool {
        u32::try_from(slot)
            .ok()
            .and_then(|slot| bits.checked_shr(slot))
            .is_some_and(|bits| bits & 1 == 1)
    }

    /// The event name: the JSON name, else the `event:` field; `None` when they disagree or
    /// neither is there.
    fn name_of<'a>(json: Option<Text<'a>>, event: EventRef<'a>) -> Option<Cow<'a, str>> {
        match (json, event.event_field()) {
            (Some(Text(json)), Some(sse)) => (json == sse).then_some(Cow::Borrowed(sse)),
            (Some(Text(json)), None) => Some(json),
            (None, sse) => sse.map(Cow::Borrowed),
        }
    }

    /// Reads `event` by schema `S`: the name first, then the fields the name reads. The
    /// allocation-free scanner reads them; serde reads what the scanner leaves to it (an
    /// escaped key, a key of the schema given twice, nesting past its depth), and both read
    /// alike (a property test holds them together).
    pub(crate) fn read<'a, S: Schema<N>, const N: usize>(
        event: EventRef<'a>,
    ) -> Result<Fields<'a, N>, Rule> {
        let scanned = match scan::object_with::<N>(event.data(), S::slot) {
            Ok(Some(fields)) if !fields.escaped_key && !fields.duplicate => fields.values,
            // Valid JSON that is not an object, or not JSON: serde's `is_object` says no.
            Ok(None) | Err(ScanError::Invalid) => return Err(S::JSON),
            // Whether an escaped key or one given twice is one the event's name reads, serde
            // tells.
            Ok(Some(_)) | Err(ScanError::TooDeep) => return read_slow::<S, N>(event),
        };
        let json = text(scanned.first().copied().flatten()).map_err(|()| S::NAME)?;
        let name = name_of(json, event).ok_or(S::NAME)?;
        let mut values: [Option<Field<'a>>; N] = [const { None }; N];
        // The slots the name reads, lowest first.
        let mut reads = S::reads(&name) & !1;
        while reads != 0 {
            let slot = reads.trailing_zeros() as usize;
            reads &= reads - 1;
            if let (Some(value), Some(&scanned), Some(&how)) =
                (values.get_mut(slot), scanned.get(slot), S::READS.get(slot))
            {
                *value = field(scanned, how).map_err(|()| S::FIELDS)?;
            }
        }
        Ok(Fields { name, values })
    }

    /// [`read`] with serde alone: the name (a struct of one field), then the fields its name
    /// reads (a struct of those fields), each skipping every other field unread.
    #[cold]
    pub(crate) fn read_slow<'a, S: Schema<N>, const N: usize>(
        event: EventRef<'a>,
    ) -> Result<Fields<'a, N>, Rule> {
        let data = event.data();
        let named = parse_fields(data, S::slot, &S::READS, 1)
            .ok_or_else(|| shape_rule(event, S::JSON, S::NAME))?;
        let json = named
            .into_iter()
            .next()
            .flatten()
            .and_then(Field::into_text);
        let name = name_of(json, event).ok_or(S::NAME)?;
        let reads = S::reads(&name) & !1;
        // The data is a JSON object (its name was read), so what fails now is a field.
        let values = parse_fields(data, S::slot, &S::READS, reads).ok_or(S::FIELDS)?;
        Ok(Fields { name, values })
    }

    /// A scanned field read as serde reads it into `Option<Text>`, `Option<Key>` or (for
    /// [`Reads::Present`]) `IgnoredAny`; `Err` where serde fails.
    fn field(value: Option<scan::Value<'_>>, how: Reads) -> Result<Option<Field<'_>>, ()> {
        match (value, how) {
            (None, _) => Ok(None),
            (Some(_), Reads::Present) => Ok(Some(Field::Present)),
            (Some(v), _) if v.kind == Kind::Null => Ok(None),
            (Some(v), Reads::Text) => Ok(text(Some(v))?.map(Field::Text)),
            (Some(v), Reads::Key) => match v.kind {
                Kind::String => Ok(text(Some(v))?.map(|Text(s)| Field::Key(Key(s.into_owned())))),
                Kind::Number if is_integer(v.raw) => Ok(Some(Field::Key(Key(v.raw.to_string())))),
                _ => Err(()),
            },
        }
    }

    /// A scanned string field as serde reads it into `Option<Text>`: absent or `null` is
    /// `None`, another type or an escape that stands for no character is `Err`.
    #[inline(always)]
    pub(crate) fn text(value: Option<scan::Value<'_>>) -> Result<Option<Text<'_>>, ()> {
        match value {
            None => Ok(None),
            Some(v) if v.kind == Kind::Null => Ok(None),
            Some(v) if v.kind != Kind::String => Err(()),
            Some(v) if !v.escaped => Ok(Some(Text(Cow::Borrowed(v.raw)))),
            Some(v) => {
                let mut decoded = String::with_capacity(v.raw.len());
                scan::unescape_into(v.raw, &mut decoded).ok_or(())?;
                Ok(Some(Text(Cow::Owned(decoded))))
            }
        }
    }

    /// Whether serde_json hands the (scanned, valid) number `raw` to a visitor as an
    /// integer, as [`Key`] needs: digits in `u64` range, or a minus and digits in `i64`
    /// range other than `-0`; a fraction, an exponent, or a larger number is a float. The
    /// integer's text is then `raw` itself (JSON allows no leading zeros).
    fn is_integer(raw: &str) -> bool {
        let (negative, digits) = match raw.strip_prefix('-') {
            Some(digits) => (true, digits),
            None => (false, raw),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return false;
        }
        match digits.parse::<u64>() {
            Ok(magnitude) if negative => (1..=1 << 63).contains(&magnitude),
            Ok(_) => true,
            Err(_) => false,
        }
    }

    /// The fields of the JSON object `data` whose slots are in `wanted`, read as `reads`
    /// says, every other field skipped unread (as serde's derived structs do; a wanted field
    /// given twice fails, as there). `None` when `data` is not a JSON object or a wanted
    /// field does not read.
    fn parse_fields<'a, const N: usize>(
        data: &'a str,
        slot: impl Fn(&str) -> Option<usize>,
        reads: &[Reads; N],
        wanted: u32,
    ) -> Option<[Option<Field<'a>>; N]> {
        if !opens_an_object(data) {
            return None;
        }
        let seed = FieldsSeed {
            slot,
            reads,
            wanted,
        };
        let mut de = serde_json::Deserializer::from_str(data);
        let fields = seed.deserialize(&mut de).ok()?;
        de.end().ok()?;
        Some(fields)
    }

    /// The serde reading of [`parse_fields`].
    struct FieldsSeed<'r, F, const N: usize> {
        slot: F,
        reads: &'r [Reads; N],
        wanted: u32,
    }

    impl<'de, F: Fn(&str) -> Option<usize>, const N: usize> DeserializeSeed<'de>
        for FieldsSeed<'_, F, N>
    {
        type Value = [Option<Field<'de>>; N];

        fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
            d.deserialize_map(self)
        }
    }

    impl<'de, F: Fn(&str) -> Option<usize>, const N: usize> Visitor<'de> for FieldsSeed<'_, F, N> {
        type Value = [Option<Field<'de>>; N];

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("a JSON object")
        }

        fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut values: [Option<Field<'de>>; N] = [const { None }; N];
            let mut seen = 0u32;
            while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                let slot = (self.slot)(&key).filter(|&slot| bit(self.wanted, slot));
                let (Some(slot), Some(value), Some(how)) = (
                    slot,
                    slot.and_then(|slot| values.get_mut(slot)),
                    slot.and_then(|slot| self.reads.get(slot)),
                ) else {
                    map.next_value::<IgnoredAny>()?;
                    continue;
                };
                if bit(seen, slot) {
                    return Err(de::Error::custom("duplicate field"));
                }
                seen |= 1 << slot;
                *value = match how {
                    Reads::Text => map.next_value::<Option<Text<'de>>>()?.map(Field::Text),
                    Reads::Key => map.next_value::<Option<Key>>()?.map(Field::Key),
                    Reads::Present => {
                        map.next_value::<IgnoredAny>()?;
                        Some(Field::Present)
                    }
                };
            }
            Ok(values)
        }
    }
}

#[cfg(all(test, feature = "json"))]
pub(crate) mod tests {
    use alloc::format;
    use alloc::string::{String, ToString};
    use alloc::vec;
    use alloc::vec::Vec;

    use super::json::{read, read_slow, Field, Fields, Schema};
    use crate::event::Event;
    use crate::sequence::Rule;

    /// What a reading of an event amounts to, comparable: the name and every field.
    fn reading<const N: usize>(fields: Result<Fields<'_, N>, Rule>) -> Result<String, Rule> {
        fields.map(|Fields { name, values }| {
            let values: Vec<String> = values
                .into_iter()
                .map(|value| match value {
                    None => "-".to_string(),
                    Some(Field::Text(text)) => format!("text {:?}", text.0),
                    Some(Field::Key(key)) => format!("key {:?}", key.0),
                    Some(Field::Present) => "present".to_string(),
                })
                .collect();
            format!("{name:?} {values:?}")
        })
    }

    /// The scanner's reading and serde's agree on `event`.
    fn agree<S: Schema<N>, const N: usize>(event: &Event) -> Result<(), String> {
        let fast = reading(read::<S, N>(event.as_event_ref()));
        let slow = reading(read_slow::<S, N>(event.as_event_ref()));
        if fast == slow {
            Ok(())
        } else {
            Err(format!("{fast:?} != {slow:?} for {:?}", event.data()))
        }
    }

    const NAMES: [&str; 24] = [
        "start",
        "step_started",
        "step_completed",
        "tool_call",
        "tool_result",
        "approval_requested",
        "content_delta",
        "reasoning_delta",
        "chunk",
        "reasoning",
        "reasoning_summary",
        "context_handler_created",
        "complete",
        "error",
        "delegation_start",
        "workflow_start",
        "block_started",
        "block_chunk",
        "block_output",
        "block_completed",
        "block_error",
        "workflow_complete",
        "workflow_error",
        "node_progress",
    ];

    fn value() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let deep = format!("{}1{}", "[".repeat(200), "]".repeat(200));
        prop_oneof![
            proptest::sample::select(&NAMES[..]).prop_map(|name| format!("\"{name}\"")),
            Just("\"content\\u005fdelta\"".to_string()),
            Just("\"a\\nb\\u00e9\\ud83d\\ude00\"".to_string()),
            Just("\"\\ud800\"".to_string()),
            Just("0".to_string()),
            Just("7".to_string()),
            Just("-0".to_string()),
            Just("-5".to_string()),
            Just("1.5".to_string()),
            Just("1e2".to_string()),
            Just("18446744073709551615".to_string()),
            Just("18446744073709551616".to_string()),
            Just("-9223372036854775808".to_string()),
            Just("-9223372036854775809".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just("[]".to_string()),
            Just("[\"a\"]".to_string()),
            Just("{}".to_string()),
            Just("{\"x\":\"\\ud800\"}".to_string()),
            Just(deep),
            "\"[a-z .]{0,8}\"",
        ]
    }

    /// A JSON object of up to five `key`: `value` fields and, where `name` gives one, the
    /// name field `name_key` first (`true`) or last: what the profiles' scanned readings
    /// are held to serde's on.
    pub(crate) fn named_object(
        name_key: &'static str,
        name: impl proptest::strategy::Strategy<Value = Option<(&'static str, bool)>>,
        key: impl proptest::strategy::Strategy<Value = &'static str>,
        value: impl proptest::strategy::Strategy<Value = String>,
    ) -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let fields = proptest::collection::vec((key, value), 0..6);
        (name, fields).prop_map(move |(name, fields)| {
            let mut fields: Vec<String> = fields
                .into_iter()
                .map(|(k, v)| format!("\"{k}\":{v}"))
                .collect();
            match name {
                Some((name, true)) => fields.insert(0, format!("\"{name_key}\":\"{name}\"")),
                Some((name, false)) => fields.push(format!("\"{name_key}\":\"{name}\"")),
                None => {}
            }
            format!("{{{}}}", fields.join(","))
        })
    }

    /// An event with `data`, named by an `event:` field where `name` gives one.
    pub(crate) fn sse_event(
        name: Option<&str>,
        data: &str,
    ) -> Result<Event, proptest::test_runner::TestCaseError> {
        Ok(match name {
            Some(name) => Event::builder()
                .event(name.to_string())
                .map_err(|e| proptest::test_runner::TestCaseError::fail(format!("{e:?}")))?
                .data(data.to_string())
                .build(),
            None => Event::message(data.to_string()),
        })
    }

    fn event_data() -> impl proptest::strategy::Strategy<Value = String> {
        use proptest::prelude::*;
        let key = prop_oneof![
            Just("event"),
            Just("step"),
            Just("tool_name"),
            Just("delta"),
            Just("session_id"),
            Just("run_id"),
            Just("content"),
            Just("usage"),
            Just("message"),
            Just("arguments"),
            Just("result"),
            Just("tool_input"),
            Just("text"),
            Just("summary"),
            Just("context_handler_id"),
            Just("block_id"),
            Just("execution_id"),
            Just("block_type"),
            Just("output"),
            Just("error"),
            Just("ev\\u0065nt"),
            Just("d\\u0065lta"),
            Just("x"),
        ];
        // Mostly a known name, first or last, so that every name's reading of the other
        // fields is tried.
        let name = proptest::option::weighted(
            0.8,
            (proptest::sample::select(&NAMES[..]), proptest::bool::ANY),
        );
        let body = named_object("event", name, key, value());
        prop_oneof![
            8 => body,
            1 => Just("[1]".to_string()),
            1 => Just("{\"event\":\"start\"} x".to_string()),
            1 => Just(" {\"event\" : \"error\" , \"message\" : 1 }\n".to_string()),
        ]
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(4096))]

        /// The scanner's reading of an agent or workflow event is serde's, field by field
        /// and rule by rule, with or without an `event:` field.
        #[test]
        fn scanned_fields_agree_with_serde(
            data in event_data(),
            name in proptest::option::of(proptest::sample::select(&NAMES[..])),
        ) {
            let event = sse_event(name, &data)?;
            agree::<super::agent::Schema, 15>(&event).map_err(proptest::test_runner::TestCaseError::fail)?;
            agree::<super::workflow::Schema, 8>(&event).map_err(proptest::test_runner::TestCaseError::fail)?;
        }
    }

    /// The reporting name of an event is read past the scanner's depth, from an escaped
    /// key, and not from what is not a JSON object or not a string.
    #[test]
    fn the_reporting_name_is_read_at_any_depth() {
        use super::json::name_or_type;
        let deep = format!("{}1{}", "[".repeat(100_000), "]".repeat(100_000));
        for (data, name) in [
            (format!(r#"{{"event":"x","y":{deep}}}"#), "x"),
            (format!(r#"{{"y":{deep},"event":"x"}}"#), "x"),
            (r#"{"ev\u0065nt":"x\u0079"}"#.to_string(), "xy"),
            (r#"{"event":"x","event":"y"}"#.to_string(), "y"),
            (r#"{"event":1}"#.to_string(), "message"),
            (r#"{"event":"\ud800"}"#.to_string(), "message"),
            (r#"{"event":"x""#.to_string(), "message"),
            (format!(r#"{{"event":"x","y":{deep}"#), "message"),
            (r#"["event","x"]"#.to_string(), "message"),
        ] {
            let event = Event::message(data.clone());
            assert_eq!(
                name_or_type(event.as_event_ref(), "event").as_str(),
                name,
                "{:.40}",
                data
            );
        }
    }
}
