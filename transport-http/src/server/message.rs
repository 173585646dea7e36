//! [`Message`]: what a server's stream sends (an event, a comment, a reconnection time), and
//! [`encode_messages`], a stream of them (with or without `Result`) as SSE blocks.

use std::time::Duration;

use bytes::{Bytes, BytesMut};
use futures_core::Stream;
use futures_lite::StreamExt;
use ssekit::{EncodeError, Encoder, Event, Utf8Bytes};

/// One item of a server's event stream: an [`Event`], a comment (`: text`, ignored by
/// clients: a keep-alive, a note), or a reconnection time (`retry:`). Every `Message` can be
/// encoded: events are checked when built, comments when made.
///
/// # Example
/// ```
/// use std::time::Duration;
/// use ssekit_http::server::Message;
/// let items = [
///     Message::retry(Duration::from_secs(2)),
///     Message::comment("warming up")?,
///     Message::from(ssekit::Event::message("hello")),
/// ];
/// let wire: Vec<u8> = items.iter().flat_map(|m| m.encode()).collect();
/// assert_eq!(wire, b"retry: 2000\n\n: warming up\n\ndata: hello\n\n");
/// # Ok::<(), ssekit::EncodeError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message(Kind);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Kind {
    Event(Event),
    Comment(Utf8Bytes),
    Retry(u64),
}

impl From<Event> for Message {
    fn from(event: Event) -> Self {
        Message(Kind::Event(event))
    }
}

impl Message {
    /// A comment line; refused if `text` holds CR or LF (it would end the comment and
    /// inject a field).
    ///
    /// # Example
    /// ```
    /// assert!(ssekit_http::server::Message::comment("a\ndata: forged").is_err());
    /// ```
    pub fn comment(text: impl Into<Utf8Bytes>) -> Result<Message, EncodeError> {
        let text = text.into();
        // Checked now, so that encoding cannot fail later.
        Encoder::new().comment(&text, &mut BytesMut::new())?;
        Ok(Message(Kind::Comment(text)))
    }

    /// The client's reconnection time, in whole milliseconds.
    ///
    /// # Example
    /// ```
    /// let wire = ssekit_http::server::Message::retry(std::time::Duration::from_millis(1500)).encode();
    /// assert_eq!(wire, "retry: 1500\n\n");
    /// ```
    pub fn retry(time: Duration) -> Message {
        Message(Kind::Retry(
            u64::try_from(time.as_millis()).unwrap_or(u64::MAX),
        ))
    }

    /// The message as one SSE block (a comment and a `retry:` end in a blank line too, so
    /// each stands alone and no event's fields mix with it).
    ///
    /// # Example
    /// See [`Message`].
    pub fn encode(&self) -> Bytes {
        let encoder = Encoder::new();
        let mut out = BytesMut::new();
        // None of these fails: a growing buffer has room, and the parts were checked.
        let _ = match &self.0 {
            Kind::Event(event) => {
                out.reserve(encoder.encoded_len(event));
                encoder.encode(event, &mut out)
            }
            Kind::Comment(text) => encoder.comment(text, &mut out),
            Kind::Retry(millis) => encoder.retry(*millis, &mut out),
        };
        if !matches!(self.0, Kind::Event(_)) {
            out.extend_from_slice(b"\n");
        }
        out.freeze()
    }
}

/// The SSE blocks of `messages`, until its first `Err`: the stream then ends cleanly (the
/// client sees what was sent, then the end, and reconnects as after any end) and the error
/// goes to `on_error`, called once. What the transports' `SseBody::try_from_stream` runs.
///
/// # Example
/// ```
/// # futures_lite::future::block_on(async {
/// use futures_lite::StreamExt;
/// use ssekit::Event;
/// let items = futures_lite::stream::iter([Ok(Event::message("a")), Err("db gone"), Ok(Event::message("b"))]);
/// let mut failed = None;
/// let wire: Vec<bytes::Bytes> = ssekit_http::server::encode_messages(items, |e| failed = Some(e)).collect().await;
/// assert_eq!(wire, ["data: a\n\n"]);
/// assert_eq!(failed, Some("db gone"));
/// # });
/// ```
pub fn encode_messages<S, M, E, F>(messages: S, on_error: F) -> impl Stream<Item = Bytes>
where
    S: Stream<Item = Result<M, E>>,
    M: Into<Message>,
    F: FnOnce(E),
{
    let mut on_error = Some(on_error);
    messages
        .map(move |item| match item {
            Ok(message) => Some(message.into().encode()),
            Err(e) => {
                if let Some(report) = on_error.take() {
                    report(e);
                }
                None
            }
        })
        .take_while(Option::is_some)
        .filter_map(|block| block)
}
