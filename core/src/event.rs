//! The event value: what a decoder dispatches and what an encoder writes.

use crate::encode::EncodeError;
use crate::event_parts::{EventId, EventName};
use crate::frame_ref::EventRef;
use crate::text::Utf8Bytes;

/// One server-sent event: an optional type, an optional id and the data.
///
/// `Event` is `'static`, cheap to clone (reference counts, no copies) and always holds
/// valid UTF-8. Every `Event` can be encoded: its type and id never contain CR or LF and
/// its id never contains NUL, because both the [`EventBuilder`] and the decoder refuse them.
///
/// The `id` is the `id:` field sent *in this event's block*, if any. A browser's
/// `MessageEvent.lastEventId` is the stream's last event ID, which persists across events:
/// read it from [`Decoder::last_event_id`](crate::Decoder::last_event_id).
///
/// # Example
/// ```
/// use ssekit::Event;
/// let ev = Event::builder().event("chunk")?.id("7")?.data("hello").build();
/// assert_eq!(ev.event_type(), "chunk");
/// assert_eq!(ev.id(), Some("7"));
/// assert_eq!(ev.data(), "hello");
/// # Ok::<(), ssekit::EncodeError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Event {
    event_type: Option<Utf8Bytes>,
    id: Option<Utf8Bytes>,
    data: Utf8Bytes,
}

impl Event {
    /// Starts building an event.
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::builder().data("x").build();
    /// assert_eq!(ev.event_type(), "message");
    /// ```
    pub fn builder() -> EventBuilder {
        EventBuilder::default()
    }

    /// An unnamed event (type `message`) with the given data and no id.
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::message("hi");
    /// assert_eq!((ev.event_type(), ev.data()), ("message", "hi"));
    /// ```
    pub fn message(data: impl Into<Utf8Bytes>) -> Self {
        Event {
            event_type: None,
            id: None,
            data: data.into(),
        }
    }

    /// The event type: the `event:` field, or `"message"` when none was sent.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Event::message("x").event_type(), "message");
    /// ```
    pub fn event_type(&self) -> &str {
        self.event_type.as_ref().map_or("message", |t| t.as_str())
    }

    /// The `event:` field as sent, `None` when the block had none (or an empty one).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Event::message("x").event_field(), None);
    /// ```
    pub fn event_field(&self) -> Option<&Utf8Bytes> {
        self.event_type.as_ref()
    }

    /// The `id:` field of this event's block, if it had one. `Some("")` resets the
    /// stream's last event ID.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Event::message("x").id(), None);
    /// ```
    pub fn id(&self) -> Option<&str> {
        self.id.as_ref().map(|i| i.as_str())
    }

    /// The `id:` field as shared bytes.
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::builder().id("1")?.build();
    /// assert_eq!(ev.id_field().map(|i| i.as_str()), Some("1"));
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn id_field(&self) -> Option<&Utf8Bytes> {
        self.id.as_ref()
    }

    /// The data: the `data:` lines joined with LF.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Event::message("a\nb").data(), "a\nb");
    /// ```
    pub fn data(&self) -> &str {
        self.data.as_str()
    }

    /// The data as shared bytes (no copy).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::Event::message("a").data_bytes().len(), 1);
    /// ```
    pub fn data_bytes(&self) -> &Utf8Bytes {
        &self.data
    }

    /// The event as an [`EventRef`], the borrowed form
    /// [`Decoder::next_frame_ref`](crate::Decoder::next_frame_ref) hands out: one function
    /// can then read both (a [`Profile`](crate::sequence::Profile) does).
    ///
    /// # Example
    /// ```
    /// let event = ssekit::Event::message("x");
    /// assert_eq!(event.as_event_ref().data(), "x");
    /// assert_eq!(event.as_event_ref(), event);
    /// ```
    pub fn as_event_ref(&self) -> EventRef<'_> {
        EventRef {
            event_type: self.event_field().map(Utf8Bytes::as_str),
            id: self.id(),
            data: self.data(),
        }
    }

    /// An event named `name` with `data`: infallible, as `name` was checked when made (an
    /// [`EventName`] `const` at compile time).
    ///
    /// # Example
    /// ```
    /// use ssekit::{Event, EventName};
    /// const END: EventName = EventName::from_static("end");
    /// let ev = Event::named(END, "{}");
    /// assert_eq!((ev.event_type(), ev.data()), ("end", "{}"));
    /// ```
    pub fn named(name: EventName, data: impl Into<Utf8Bytes>) -> Self {
        Event::message(data).with_name(name)
    }

    /// This event with type `name` (an empty name means `message`).
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::message("x").with_name(ssekit::EventName::from_static("tick"));
    /// assert_eq!(ev.event_type(), "tick");
    /// ```
    #[must_use]
    pub fn with_name(mut self, name: EventName) -> Self {
        let name = name.into_inner();
        self.event_type = (!name.is_empty()).then_some(name);
        self
    }

    /// This event with id `id`: infallible, as an [`EventId`] was checked when made (a
    /// number always is valid).
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::message("x").with_id(7u32);
    /// assert_eq!(ev.id(), Some("7"));
    /// ```
    #[must_use]
    pub fn with_id(mut self, id: impl Into<EventId>) -> Self {
        self.id = Some(id.into().into_inner());
        self
    }

    /// Takes the data out of the event, sharing storage.
    ///
    /// # Example
    /// ```
    /// let data = ssekit::Event::message("payload").into_data();
    /// assert_eq!(data, "payload");
    /// ```
    pub fn into_data(self) -> Utf8Bytes {
        self.data
    }

    /// Builds an event from parts the decoder already validated (no CR/LF anywhere, no NUL in
    /// the id).
    pub(crate) fn from_decoded(
        event_type: Option<Utf8Bytes>,
        id: Option<Utf8Bytes>,
        data: Utf8Bytes,
    ) -> Self {
        Event {
            event_type,
            id,
            data,
        }
    }
}

/// Builds an [`Event`], validating each field as it is set.
///
/// `event` and `id` return [`EncodeError`] for anything that would change the meaning of
/// the stream when written (CR or LF in either, NUL in the id); nothing is escaped or
/// stripped silently. Data may contain any text: the encoder writes one `data:` line per
/// line of it.
///
/// # Example
/// ```
/// use ssekit::{Event, EncodeError};
/// assert!(matches!(Event::builder().id("1\n2"), Err(EncodeError::LineBreak { .. })));
/// let ev = Event::builder().event("end")?.data("{}").build();
/// assert_eq!(ev.event_type(), "end");
/// # Ok::<(), EncodeError>(())
/// ```
#[derive(Clone, Debug, Default)]
#[must_use]
pub struct EventBuilder {
    event: Event,
}

impl EventBuilder {
    /// Sets the event type. An empty type is the same as none (`message`).
    ///
    /// # Example
    /// ```
    /// let b = ssekit::Event::builder().event("delta")?;
    /// assert_eq!(b.build().event_type(), "delta");
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn event(mut self, event_type: impl Into<Utf8Bytes>) -> Result<Self, EncodeError> {
        let event_type = event_type.into();
        check_single_line(crate::encode::Field::Event, &event_type)?;
        self.event.event_type = (!event_type.is_empty()).then_some(event_type);
        Ok(self)
    }

    /// Sets the id. An empty id is sent as `id:` and resets the client's last event ID.
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::builder().id("42")?.build();
    /// assert_eq!(ev.id(), Some("42"));
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn id(mut self, id: impl Into<Utf8Bytes>) -> Result<Self, EncodeError> {
        let id = id.into();
        check_single_line(crate::encode::Field::Id, &id)?;
        if let Some(position) = memchr::memchr(0, id.as_bytes()) {
            return Err(EncodeError::Nul {
                field: crate::encode::Field::Id,
                position,
            });
        }
        self.event.id = Some(id);
        Ok(self)
    }

    /// Sets the data. Any text is allowed; line breaks become separate `data:` lines.
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::builder().data("a\nb").build();
    /// assert_eq!(ev.data(), "a\nb");
    /// ```
    pub fn data(mut self, data: impl Into<Utf8Bytes>) -> Self {
        self.event.data = data.into();
        self
    }

    /// Finishes the event.
    ///
    /// # Example
    /// ```
    /// let ev = ssekit::Event::builder().build();
    /// assert_eq!(ev.data(), "");
    /// ```
    pub fn build(self) -> Event {
        self.event
    }
}

/// Refuses CR and LF, which would end the field's line and start a new, injected one.
pub(crate) fn check_single_line(
    field: crate::encode::Field,
    value: &str,
) -> Result<(), EncodeError> {
    match memchr::memchr2(b'\r', b'\n', value.as_bytes()) {
        Some(position) => Err(EncodeError::LineBreak { field, position }),
        None => Ok(()),
    }
}
