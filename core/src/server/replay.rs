//! [`ReplayBuffer`]: recent encoded events by id, for `Last-Event-ID` resumption.

use alloc::collections::VecDeque;
use alloc::vec::Vec;
use core::fmt;

use bytes::Bytes;

use crate::encode::{EncodeError, Encoder};
use crate::event::Event;
use crate::text::Utf8Bytes;

/// A bounded ring of the most recent events of one stream, kept encoded (ready to write) and
/// indexed by id. When a client reconnects with `Last-Event-ID`, [`since`](Self::since)
/// returns the events after that id, or a [`Gap`] when they can no longer all be replayed.
///
/// Bounded both in events and in bytes (defaults 1024 events, 4 MiB); the oldest events are
/// evicted first. An event larger than the byte bound on its own is not retained, and the
/// buffer is emptied, so no reconnect can silently skip it.
///
/// Ids should be unique within the stream; events without an id are retained too and
/// replayed after the id that precedes them. A client that received such an event before
/// it lost the connection receives it again (the client drops replayed events by their
/// ids, and it has none): give every event an id where a repeat matters.
///
/// # Example
/// ```
/// use ssekit::server::{Gap, ReplayBuffer};
/// use ssekit::Event;
///
/// let mut replay = ReplayBuffer::new(2, 1 << 20);
/// for id in ["1", "2", "3"] {
///     let wire = replay.push(&Event::builder().id(id)?.data("tick").build())?;
///     // write `wire` to every connected client
/// #   let _ = wire;
/// }
/// let missed: Vec<_> = replay.since("2").unwrap().collect();
/// assert_eq!(missed, [&b"id: 3\ndata: tick\n\n"[..]]);
/// assert_eq!(replay.since("1").unwrap_err(), Gap::Evicted); // "1" fell out of the ring
/// # Ok::<(), ssekit::EncodeError>(())
/// ```
#[derive(Clone, Debug)]
pub struct ReplayBuffer {
    entries: VecDeque<Entry>,
    bytes: usize,
    max_events: usize,
    max_bytes: usize,
    evicted: u64,
}

#[derive(Clone, Debug)]
struct Entry {
    id: Option<Utf8Bytes>,
    wire: Bytes,
}

impl Default for ReplayBuffer {
    /// 1024 events, 4 MiB.
    fn default() -> Self {
        ReplayBuffer::new(1024, 4 << 20)
    }
}

/// Why [`ReplayBuffer::since`] cannot resume the client.
///
/// Either way the client has missed events it cannot get from the buffer: send it a fresh
/// state (a snapshot event, or an error the application understands), then live events.
///
/// # Example
/// ```
/// use ssekit::server::{Gap, ReplayBuffer};
/// assert_eq!(ReplayBuffer::default().since("7").unwrap_err(), Gap::Unknown);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Gap {
    /// The id is not retained and older events have been evicted: it was most likely one of
    /// them, so the events after it are no longer all available.
    Evicted,
    /// The id is not retained and nothing was ever evicted: this buffer never saw it (an id
    /// from before a server restart, another stream, or a made-up one).
    Unknown,
}

impl fmt::Display for Gap {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Gap::Evicted => "the last event id was evicted from the replay buffer",
            Gap::Unknown => "the last event id is unknown to the replay buffer",
        })
    }
}

impl core::error::Error for Gap {}

impl ReplayBuffer {
    /// A buffer holding at most `max_events` events and `max_bytes` encoded bytes.
    ///
    /// # Example
    /// ```
    /// let replay = ssekit::server::ReplayBuffer::new(100, 64 << 10);
    /// assert!(replay.is_empty());
    /// ```
    pub fn new(max_events: usize, max_bytes: usize) -> Self {
        ReplayBuffer {
            entries: VecDeque::new(),
            bytes: 0,
            max_events,
            max_bytes,
            evicted: 0,
        }
    }

    /// Encodes `event`, retains it and returns the bytes to send.
    ///
    /// # Example
    /// ```
    /// let mut replay = ssekit::server::ReplayBuffer::default();
    /// let wire = replay.push(&ssekit::Event::builder().id("1")?.data("x").build())?;
    /// assert_eq!(&wire[..], b"id: 1\ndata: x\n\n");
    /// assert_eq!(replay.len(), 1);
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn push(&mut self, event: &Event) -> Result<Bytes, EncodeError> {
        let mut out = Vec::with_capacity(Encoder::new().encoded_len(event));
        Encoder::new().encode(event, &mut out)?;
        let wire = Bytes::from(out);
        self.push_encoded(event.id_field().cloned(), wire.clone());
        Ok(wire)
    }

    /// Retains bytes already encoded (one or more complete blocks, e.g. a `retry:` line and
    /// an event) under `id`.
    ///
    /// # Example
    /// ```
    /// use bytes::Bytes;
    /// let mut replay = ssekit::server::ReplayBuffer::default();
    /// replay.push_encoded(Some("a".into()), Bytes::from_static(b"id: a\ndata: 1\n\n"));
    /// replay.push_encoded(None, Bytes::from_static(b"data: 2\n\n"));
    /// assert_eq!(replay.since("a").unwrap().len(), 1);
    /// ```
    pub fn push_encoded(&mut self, id: Option<Utf8Bytes>, wire: Bytes) {
        if wire.len() > self.max_bytes || self.max_events == 0 {
            self.evicted += self.entries.len() as u64 + 1;
            self.entries.clear();
            self.bytes = 0;
            return;
        }
        while self.entries.len() >= self.max_events || self.bytes + wire.len() > self.max_bytes {
            let Some(old) = self.entries.pop_front() else {
                break;
            };
            self.bytes -= old.wire.len();
            self.evicted += 1;
        }
        self.bytes += wire.len();
        self.entries.push_back(Entry { id, wire });
    }

    /// The events after the one with id `last_event_id` (the client's `Last-Event-ID`), oldest
    /// first; empty when the client is up to date. A [`Gap`] when the id is not retained.
    ///
    /// # Example
    /// ```
    /// let mut replay = ssekit::server::ReplayBuffer::default();
    /// replay.push(&ssekit::Event::builder().id("1")?.data("x").build())?;
    /// assert_eq!(replay.since("1").unwrap().len(), 0);
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn since(&self, last_event_id: &str) -> Result<Replay<'_>, Gap> {
        let found = if last_event_id.is_empty() {
            None
        } else {
            self.entries
                .iter()
                .rposition(|e| e.id.as_ref().is_some_and(|id| id.as_str() == last_event_id))
        };
        match found {
            Some(position) => Ok(Replay {
                inner: self.entries.range(position + 1..),
            }),
            None if self.evicted > 0 => Err(Gap::Evicted),
            None => Err(Gap::Unknown),
        }
    }

    /// Every retained event, oldest first (for a client that wants history and sent no id).
    ///
    /// # Example
    /// ```
    /// let mut replay = ssekit::server::ReplayBuffer::default();
    /// replay.push(&ssekit::Event::message("x"))?;
    /// assert_eq!(replay.all().count(), 1);
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn all(&self) -> Replay<'_> {
        Replay {
            inner: self.entries.range(..),
        }
    }

    /// Events retained.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::server::ReplayBuffer::default().len(), 0);
    /// ```
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether nothing is retained.
    ///
    /// # Example
    /// ```
    /// assert!(ssekit::server::ReplayBuffer::default().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Encoded bytes retained.
    ///
    /// # Example
    /// ```
    /// let mut replay = ssekit::server::ReplayBuffer::default();
    /// replay.push(&ssekit::Event::message("x"))?;
    /// assert_eq!(replay.retained_bytes(), b"data: x\n\n".len());
    /// # Ok::<(), ssekit::EncodeError>(())
    /// ```
    pub fn retained_bytes(&self) -> usize {
        self.bytes
    }

    /// Events evicted (or refused as too large) since the buffer was created.
    ///
    /// # Example
    /// ```
    /// assert_eq!(ssekit::server::ReplayBuffer::default().evicted(), 0);
    /// ```
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}

/// The events to replay, from [`ReplayBuffer::since`]: encoded bytes, oldest first. Each item
/// is a reference-counted clone, so the buffer can keep growing while these are written.
///
/// # Example
/// ```
/// let mut replay = ssekit::server::ReplayBuffer::default();
/// replay.push(&ssekit::Event::builder().id("1")?.data("a").build())?;
/// replay.push(&ssekit::Event::builder().id("2")?.data("b").build())?;
/// let wire: Vec<bytes::Bytes> = replay.since("1").unwrap().collect();
/// assert_eq!(wire.concat(), b"id: 2\ndata: b\n\n");
/// # Ok::<(), ssekit::EncodeError>(())
/// ```
#[derive(Clone, Debug)]
pub struct Replay<'a> {
    inner: alloc::collections::vec_deque::Iter<'a, Entry>,
}

impl Iterator for Replay<'_> {
    type Item = Bytes;

    fn next(&mut self) -> Option<Bytes> {
        self.inner.next().map(|e| e.wire.clone())
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.inner.size_hint()
    }
}

impl ExactSizeIterator for Replay<'_> {}

#[cfg(test)]
mod tests {
    use super::*;

    fn ev(id: &'static str) -> Event {
        Event::builder().id(id).unwrap().data("x").build()
    }

    #[test]
    fn bounded_in_bytes_as_well_as_events() {
        let mut r = ReplayBuffer::new(100, 30);
        for id in ["1", "2", "3"] {
            r.push(&ev(id)).unwrap(); // 15 bytes each
        }
        assert_eq!(r.len(), 2);
        assert!(r.retained_bytes() <= 30);
        assert_eq!(r.since("1").unwrap_err(), Gap::Evicted);
        assert_eq!(r.since("2").unwrap().len(), 1);
    }

    #[test]
    fn an_oversized_event_empties_the_buffer_so_nobody_skips_it() {
        let mut r = ReplayBuffer::new(100, 20);
        r.push(&ev("1")).unwrap();
        r.push(
            &Event::builder()
                .id("2")
                .unwrap()
                .data("a long payload")
                .build(),
        )
        .unwrap();
        assert!(r.is_empty());
        assert_eq!(r.since("1").unwrap_err(), Gap::Evicted);
    }

    #[test]
    fn id_less_events_are_replayed_after_the_preceding_id() {
        let mut r = ReplayBuffer::default();
        r.push(&ev("1")).unwrap();
        r.push(&Event::message("no id")).unwrap();
        r.push(&ev("2")).unwrap();
        assert_eq!(r.since("1").unwrap().len(), 2);
        assert_eq!(r.since("").unwrap_err(), Gap::Unknown);
    }
}
