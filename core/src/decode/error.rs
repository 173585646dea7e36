//! What the decoder reports: a [`DecodeError`] when a limit is hit, and how a stream ended
//! ([`StreamEnd`]).

use core::fmt;

#[cfg(doc)]
use super::{Decoder, Limits, OnLimit};

/// A [`Limits`] violation. `offset` is the stream offset (bytes since the start of the stream,
/// BOM included) of the start of the line at fault, or of the input that did not fit; `size`
/// is how large the line, the event's data or the buffered input got (always over `limit`);
/// `limit` is the limit in force.
///
/// # Example
/// ```
/// use ssekit::{Config, DecodeError, Decoder, Limits};
/// let mut dec = Decoder::with_config(Config::default().limits(Limits::default().max_line(3)));
/// dec.feed_slice(b"id: 1\n")?;
/// assert_eq!(dec.next_frame(), Err(DecodeError::LineTooLong { offset: 0, size: 5, limit: 3 }));
/// # Ok::<(), DecodeError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DecodeError {
    /// A line exceeded `max_line` bytes.
    LineTooLong {
        /// Stream offset where the line starts.
        offset: u64,
        /// Bytes of the line read when the limit was hit, line ending excluded: its whole
        /// length when the ending had arrived, else the bytes seen so far (the line may be
        /// longer; the rest is skipped without being buffered).
        size: usize,
        /// The limit in force.
        limit: usize,
    },
    /// An event's data exceeded `max_event` bytes.
    EventTooLarge {
        /// Stream offset of the `data:` line that went over.
        offset: u64,
        /// Bytes the event's data would hold with that line (lines joined by LF).
        size: usize,
        /// The limit in force.
        limit: usize,
    },
    /// More than `max_buffered` bytes were fed without draining them with `next_frame`.
    BufferFull {
        /// Stream offset where the refused input would have started.
        offset: u64,
        /// Bytes that would be buffered with the refused input: those not drained yet plus
        /// the input.
        size: usize,
        /// The limit in force.
        limit: usize,
    },
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::LineTooLong {
                offset,
                size,
                limit,
            } => write!(
                f,
                "line at byte {offset} reached {size} bytes, over the {limit}-byte limit"
            ),
            DecodeError::EventTooLarge {
                offset,
                size,
                limit,
            } => write!(
                f,
                "event data would reach {size} bytes with the data line at byte {offset}, over the {limit}-byte limit"
            ),
            DecodeError::BufferFull {
                offset,
                size,
                limit,
            } => write!(
                f,
                "input at byte {offset} refused: {size} bytes would be buffered without draining frames, over the {limit}-byte limit"
            ),
        }
    }
}

impl core::error::Error for DecodeError {}

/// How a stream ended, from [`Decoder::finish`].
///
/// # Example
/// ```
/// use ssekit::{Decoder, StreamEnd};
/// let mut dec = Decoder::new();
/// dec.feed_slice(b"data: complete\n\ndata: cut")?;
/// while dec.next_frame()?.is_some() {}
/// assert_eq!(dec.finish(), StreamEnd::Truncated { unterminated_line: 9, open_event: false });
/// # Ok::<(), ssekit::DecodeError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum StreamEnd {
    /// Every byte belonged to a complete line and no event was left open.
    Clean,
    /// The stream stopped inside a line or an event; what was pending is discarded, as
    /// WHATWG requires.
    Truncated {
        /// Bytes of a final line that never got its line ending (also counts input that was
        /// fed but not drained, and a pending partial BOM).
        unterminated_line: u64,
        /// Whether `data:`, `event:` or `id:` fields were read after the last blank line.
        open_event: bool,
    },
    /// The decoder stopped at this error ([`OnLimit::FailStop`]); everything after it was
    /// discarded.
    Failed(DecodeError),
}
