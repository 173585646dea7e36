//! [`EventName`] and [`EventId`]: an event's type and id, checked once when made, so that
//! building an event from them cannot fail.

use crate::encode::{EncodeError, Field};
use crate::event::check_single_line;
use crate::text::Utf8Bytes;

/// An event type that can be sent: no CR or LF (which would end its line and inject a
/// field). Check it once, where it is made (a `const` is checked at compile time), and
/// every event built with it is infallible.
///
/// # Example
/// ```
/// use ssekit::{Event, EventName};
/// const TICK: EventName = EventName::from_static("tick");
/// let ev = Event::named(TICK, "{\"n\":1}");
/// assert_eq!(ev.event_type(), "tick");
/// assert!(EventName::new("a\nb").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventName(Utf8Bytes);

impl EventName {
    /// A name known at compile time; in a `const` a CR or LF is a compile error, elsewhere a
    /// panic (a bug in the program, not in its input).
    ///
    /// # Example
    /// ```
    /// const DELTA: ssekit::EventName = ssekit::EventName::from_static("response.output_text.delta");
    /// assert_eq!(DELTA.as_str(), "response.output_text.delta");
    /// ```
    pub const fn from_static(name: &'static str) -> Self {
        let mut rest = name.as_bytes();
        while let [first, tail @ ..] = rest {
            assert!(
                *first != b'\r' && *first != b'\n',
                "an event name holds no CR or LF"
            );
            rest = tail;
        }
        EventName(Utf8Bytes::from_static(name))
    }

    /// A name from input: refused, with the offending byte's position, if it holds CR or LF.
    ///
    /// # Example
    /// ```
    /// use ssekit::{EncodeError, EventName};
    /// assert_eq!(EventName::new("ok")?.as_str(), "ok");
    /// assert!(matches!(EventName::new("x\r"), Err(EncodeError::LineBreak { position: 1, .. })));
    /// # Ok::<(), EncodeError>(())
    /// ```
    pub fn new(name: impl Into<Utf8Bytes>) -> Result<Self, EncodeError> {
        let name = name.into();
        check_single_line(Field::Event, &name)?;
        Ok(EventName(name))
    }

    /// The name.
    ///
    /// # Example
    /// See [`EventName::from_static`].
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn into_inner(self) -> Utf8Bytes {
        self.0
    }
}

/// An event id that can be sent: no CR, LF or NUL. Numbers are always valid, so
/// `EventId::from(n)` cannot fail.
///
/// # Example
/// ```
/// use ssekit::{Event, EventId};
/// let ev = Event::message("hi").with_id(EventId::from(42u64));
/// assert_eq!(ev.id(), Some("42"));
/// assert!(EventId::new("1\0").is_err());
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EventId(Utf8Bytes);

impl EventId {
    /// An id from input: refused, with the offending byte's position, if it holds CR, LF or
    /// NUL.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::EventId::new("resp_1:7")?.as_str(), "resp_1:7");
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn new(id: impl Into<Utf8Bytes>) -> Result<Self, EncodeError> {
        let id = id.into();
        check_single_line(Field::Id, &id)?;
        if let Some(position) = memchr::memchr(0, id.as_bytes()) {
            return Err(EncodeError::Nul {
                field: Field::Id,
                position,
            });
        }
        Ok(EventId(id))
    }

    /// The id.
    ///
    /// # Example
    /// See [`EventId::new`].
    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub(crate) fn into_inner(self) -> Utf8Bytes {
        self.0
    }
}

macro_rules! id_from_integer {
    ($($t:ty),*) => {$(
        impl From<$t> for EventId {
            fn from(n: $t) -> Self {
                EventId(Utf8Bytes::from(alloc::string::ToString::to_string(&n)))
            }
        }
    )*};
}

id_from_integer!(u8, u16, u32, u64, u128, usize, i8, i16, i32, i64, i128, isize);
