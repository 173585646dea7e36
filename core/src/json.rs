//! JSON data (feature `json`): an [`Event`] whose data is a value serialized as compact JSON,
//! and the data of a received event parsed into a type, borrowing from it where the type
//! borrows (`&str` fields of an [`EventRef`] point into the decoder's buffer).

use serde::de::Deserialize;
use serde::ser::Serialize;

use crate::event::Event;
use crate::event_parts::EventName;
use crate::frame_ref::EventRef;

/// JSON data that could not be written or read: the `serde_json` error, with its line and
/// column when reading.
///
/// # Example
/// ```
/// let err = ssekit::Event::message("{oops").json::<serde_json::Value>().unwrap_err();
/// assert!(err.to_string().starts_with("the event data is not the JSON expected: "));
/// ```
#[derive(Debug)]
pub struct JsonError(serde_json::Error);

impl JsonError {
    /// The `serde_json` error underneath.
    ///
    /// # Example
    /// ```
    /// let err = ssekit::Event::message("[1,").json::<Vec<u8>>().unwrap_err();
    /// assert!(err.inner().is_eof());
    /// ```
    pub fn inner(&self) -> &serde_json::Error {
        &self.0
    }
}

impl core::fmt::Display for JsonError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        write!(f, "the event data is not the JSON expected: {}", self.0)
    }
}

impl core::error::Error for JsonError {
    fn source(&self) -> Option<&(dyn core::error::Error + 'static)> {
        Some(&self.0)
    }
}

impl Event {
    /// An unnamed event (type `message`) whose data is `value` as compact JSON (one line,
    /// as axum's `Event::json_data` writes it). Fails only where `serde_json` does (a map
    /// with non-string keys, a `Serialize` implementation that errs).
    ///
    /// # Example
    /// ```
    /// #[derive(serde::Serialize)]
    /// struct Tick { n: u32 }
    /// let ev = ssekit::Event::json_data(&Tick { n: 1 })?;
    /// assert_eq!(ev.data(), r#"{"n":1}"#);
    /// # Ok::<(), ssekit::JsonError>(())
    /// ```
    pub fn json_data<T: Serialize + ?Sized>(value: &T) -> Result<Event, JsonError> {
        serde_json::to_string(value)
            .map(Event::message)
            .map_err(JsonError)
    }

    /// An event named `name` whose data is `value` as compact JSON.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Event, EventName};
    /// const DELTA: EventName = EventName::from_static("delta");
    /// let ev = Event::named_json(DELTA, &serde_json::json!({"text": "Hel"}))?;
    /// assert_eq!((ev.event_type(), ev.data()), ("delta", r#"{"text":"Hel"}"#));
    /// # Ok::<(), ssekit::JsonError>(())
    /// ```
    pub fn named_json<T: Serialize + ?Sized>(
        name: EventName,
        value: &T,
    ) -> Result<Event, JsonError> {
        Event::json_data(value).map(|ev| ev.with_name(name))
    }

    /// The data parsed as JSON into `T`; `T` may borrow from the event (`&str` fields
    /// where the JSON string has no escapes).
    ///
    /// # Example
    /// ```
    /// #[derive(serde::Deserialize)]
    /// struct Delta<'a> { text: &'a str }
    /// let ev = ssekit::Event::message(r#"{"text":"Hel"}"#);
    /// assert_eq!(ev.json::<Delta>()?.text, "Hel");
    /// # Ok::<(), ssekit::JsonError>(())
    /// ```
    pub fn json<'a, T: Deserialize<'a>>(&'a self) -> Result<T, JsonError> {
        serde_json::from_str(self.data()).map_err(JsonError)
    }
}

impl<'a> EventRef<'a> {
    /// The data parsed as JSON into `T`, borrowing from the decoder's buffer where `T`
    /// borrows: no copy and no allocation for `&str` fields without escapes.
    ///
    /// # Example
    /// ```
    /// use ssekit::{Decoder, FrameRef};
    /// #[derive(serde::Deserialize)]
    /// struct Delta<'a> { delta: &'a str }
    /// let mut decoder = Decoder::new();
    /// decoder.feed_slice(b"data: {\"delta\":\"Hel\"}\n\n")?;
    /// if let Some(FrameRef::Event(ev)) = decoder.next_frame_ref()? {
    ///     assert_eq!(ev.json::<Delta>()?.delta, "Hel");
    /// }
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn json<T: Deserialize<'a>>(&self) -> Result<T, JsonError> {
        serde_json::from_str(self.data()).map_err(JsonError)
    }
}
