//! Frames that borrow from the decoder: what [`Decoder::next_frame_ref`] returns.
//!
//! [`Decoder::next_frame`] hands out owned [`Frame`]s whose fields share the input's
//! [`Bytes`](bytes::Bytes): no copy, but each shared slice costs an atomic reference-count
//! update when it is made and another when it is dropped, and a multi-line event's joined
//! data is copied out once. A [`FrameRef`] instead points straight into the decoder's
//! buffers, the way `httparse` hands out a request that borrows the caller's buffer: no
//! reference count, no copy, no allocation, at the price of a borrow that ends before the
//! decoder is used again. Read the fields (parse the JSON, forward the text) and let go; call
//! [`FrameRef::to_frame`] to keep one.
//!
//! Both calls read the same stream the same way: any mix of them on one decoder yields the
//! frames `next_frame` alone would (a property test and the `decode_split` fuzz target hold
//! the two together).
//!
//! [`Decoder::next_frame_ref`]: crate::Decoder::next_frame_ref
//! [`Decoder::next_frame`]: crate::Decoder::next_frame

use crate::decode::Frame;
use crate::event::Event;
use crate::text::Utf8Bytes;

/// One unit of decoded stream, borrowed from the decoder; the counterpart of [`Frame`].
///
/// # Example
/// ```
/// use ssekit::{Decoder, FrameRef};
/// let mut dec = Decoder::new();
/// dec.feed_slice(b": hi\nevent: delta\ndata: x\n\n")?;
/// assert_eq!(dec.next_frame_ref()?, Some(FrameRef::Comment("hi")));
/// let Some(FrameRef::Event(ev)) = dec.next_frame_ref()? else { panic!() };
/// assert_eq!((ev.event_type(), ev.data()), ("delta", "x"));
/// # Ok::<(), ssekit::DecodeError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FrameRef<'a> {
    /// An event dispatched by a blank line (its data buffer was not empty).
    Event(EventRef<'a>),
    /// A comment line, without the colon and one leading space.
    Comment(&'a str),
    /// A valid `retry:` field, in milliseconds.
    Retry(u64),
    /// [`Mode::Raw`](crate::decode::Mode::Raw) only: a block that named an event type or set
    /// an id but had no `data:` line.
    Dataless(EventRef<'a>),
}

impl FrameRef<'_> {
    /// An owned copy, equal to what [`Decoder::next_frame`](crate::Decoder::next_frame)
    /// would have returned.
    ///
    /// # Example
    /// ```
    /// let mut dec = ssekit::Decoder::new();
    /// dec.feed_slice(b"data: kept\n\n")?;
    /// let kept = dec.next_frame_ref()?.map(|f| f.to_frame());
    /// assert_eq!(kept, Some(ssekit::Frame::Event(ssekit::Event::message("kept"))));
    /// # Ok::<(), ssekit::DecodeError>(())
    /// ```
    pub fn to_frame(&self) -> Frame {
        match *self {
            FrameRef::Event(ev) => Frame::Event(ev.to_event()),
            FrameRef::Comment(text) => Frame::Comment(Utf8Bytes::copy_from_str(text)),
            FrameRef::Retry(ms) => Frame::Retry(ms),
            FrameRef::Dataless(ev) => Frame::Dataless(ev.to_event()),
        }
    }
}

/// An event borrowed from the decoder; the counterpart of [`Event`].
///
/// # Example
/// ```
/// let mut dec = ssekit::Decoder::new();
/// dec.feed_slice(b"id: 7\ndata: a\ndata: b\n\n")?;
/// let Some(ssekit::FrameRef::Event(ev)) = dec.next_frame_ref()? else { panic!() };
/// assert_eq!((ev.event_type(), ev.id(), ev.data()), ("message", Some("7"), "a\nb"));
/// # Ok::<(), ssekit::DecodeError>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct EventRef<'a> {
    pub(crate) event_type: Option<&'a str>,
    pub(crate) id: Option<&'a str>,
    pub(crate) data: &'a str,
}

impl<'a> EventRef<'a> {
    /// The event type: the `event:` field, or `"message"` when none was sent.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::EventRef::default().event_type(), "message");
    /// ```
    pub fn event_type(&self) -> &'a str {
        self.event_type.unwrap_or("message")
    }

    /// The `event:` field as sent, `None` when the block had none (or an empty one).
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::EventRef::default().event_field(), None);
    /// ```
    pub fn event_field(&self) -> Option<&'a str> {
        self.event_type
    }

    /// The `id:` field of this event's block, if it had one.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::EventRef::default().id(), None);
    /// ```
    pub fn id(&self) -> Option<&'a str> {
        self.id
    }

    /// The data: the `data:` lines joined with LF.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::EventRef::default().data(), "");
    /// ```
    pub fn data(&self) -> &'a str {
        self.data
    }

    /// An owned copy.
    ///
    /// # Example
    /// ```
    /// let owned = ssekit::EventRef::default().to_event();
    /// assert_eq!(owned, ssekit::Event::message(""));
    /// ```
    pub fn to_event(&self) -> Event {
        Event::from_decoded(
            self.event_type.map(Utf8Bytes::copy_from_str),
            self.id.map(Utf8Bytes::copy_from_str),
            Utf8Bytes::copy_from_str(self.data),
        )
    }
}

impl<'a> From<&'a Event> for EventRef<'a> {
    fn from(event: &'a Event) -> Self {
        event.as_event_ref()
    }
}

impl PartialEq<Event> for EventRef<'_> {
    fn eq(&self, other: &Event) -> bool {
        self.event_field() == other.event_field().map(|t| t.as_str())
            && self.id() == other.id()
            && self.data() == other.data()
    }
}

impl PartialEq<Frame> for FrameRef<'_> {
    fn eq(&self, other: &Frame) -> bool {
        match (self, other) {
            (FrameRef::Event(a), Frame::Event(b)) | (FrameRef::Dataless(a), Frame::Dataless(b)) => {
                a == b
            }
            (FrameRef::Comment(a), Frame::Comment(b)) => *a == b.as_str(),
            (FrameRef::Retry(a), Frame::Retry(b)) => a == b,
            _ => false,
        }
    }
}
